"""The ``socium`` command line. Thin: every command calls a function a library user could call.

The app and its shared helpers live in :mod:`socium.cli.app`; each command in the module named for what
it does. Importing them here registers the commands, in this order (the order ``socium --help`` lists).
"""

from __future__ import annotations

# Import order is registration order, the order `socium --help` lists the commands: keep it, unsorted.
# isort: off
from socium.cli.app import app
from socium.cli import run
from socium.cli import lookup
from socium.cli import experiments
from socium.cli import episodes
from socium.cli import population
from socium.cli import explore
from socium.cli import forecast
# isort: on

COMMAND_MODULES = (run, lookup, experiments, episodes, population, explore, forecast)
"""Imported for what importing does: each registers its commands on :data:`app`, in this order."""


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
