"""The ``socium`` command line. Thin: every command calls a function a library user could call.

The app and its shared helpers live in :mod:`socium.cli.app`; each command in the module named for what
it does. Importing them here registers the commands, in this order (the order ``socium --help`` lists).
"""

from __future__ import annotations

# Import order is registration order, the order `socium --help` lists the commands: keep it, unsorted.
# isort: off
from socium.cli.app import _as_flags as _as_flags
from socium.cli.app import _duckdb_error as _duckdb_error
from socium.cli.app import _fail as _fail
from socium.cli.app import _FlagCommand as _FlagCommand
from socium.cli.app import _Group as _Group
from socium.cli.app import _print_report_tables as _print_report_tables
from socium.cli.app import _result_table as _result_table
from socium.cli.app import _root as _root
from socium.cli.app import _version as _version
from socium.cli.app import app as app
from socium.cli.app import console as console
from socium.cli.app import err_console as err_console
from socium.cli.run import _refuse_resume_overrides as _refuse_resume_overrides
from socium.cli.run import run as run
from socium.cli.lookup import card as card
from socium.cli.lookup import config_schema as config_schema
from socium.cli.lookup import data as data
from socium.cli.lookup import interview as interview
from socium.cli.lookup import query as query
from socium.cli.experiments import experiment as experiment
from socium.cli.experiments import fit as fit
from socium.cli.experiments import report as report
from socium.cli.experiments import seeds as seeds
from socium.cli.experiments import sensitivity as sensitivity
from socium.cli.experiments import sweep as sweep
from socium.cli.experiments import validate as validate
from socium.cli.episodes import episodes as episodes
from socium.cli.episodes import export_sft_cmd as export_sft_cmd
from socium.cli.episodes import group_episodes as group_episodes
from socium.cli.population import population_app as population_app
from socium.cli.population import population_generate as population_generate
# isort: on


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
