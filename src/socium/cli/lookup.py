"""Commands that look things up: SQL over a run's trace (query), its card, one agent (interview),
the config reference (config-schema) and the data folder (data)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Literal

import typer
from rich.table import Table

from socium.cli.app import _fail, _read_run, _result_table, app, console, err_console
from socium.core.console_text import neutralise, plain
from socium.errors import SociumError
from socium.trace.run_facts import not_a_run_hint

TABLE_ROWS = 50  # a table is for reading; csv and json print every row unless --limit says otherwise


@app.command()
def query(
    run_dir: Path,
    sql: str,
    limit: int | None = typer.Option(
        None,
        "--limit",
        min=1,
        help="Rows to print (default: 50 as a table, every row as csv or json; an --out file gets every row).",
    ),
    fmt: Literal["table", "csv", "json", "parquet"] = typer.Option(
        "table", "--format", help="Output format; parquet needs --out."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write every row to this file instead of printing."),
) -> None:
    """Run read-only SQL over a run's trace (tables and views such as cascade_metrics).

    A table shows at most --limit rows (50) and says when more were left out; csv and json print every row
    unless --limit is given (they are for other programs, which a silent cut would mislead); --out writes all
    of them (CSV, JSON or Parquet).
    The SQL sees the trace and nothing else: DuckDB's external access is off (no reading or writing
    other files, no ATTACH, no extension installs) and its settings are locked.
    """
    import duckdb

    from socium.trace.store import open_trace, require_store  # lazy: CLI start-up

    if fmt == "parquet" and out is None:
        _fail(SociumError("--format parquet writes a file: add --out FILE.parquet"))
    _refuse_not_a_run(run_dir, "query")
    try:
        con = open_trace(require_store(run_dir), sandbox=True)
    except SociumError as exc:
        _fail(exc)
        return
    try:
        if out is not None:
            from socium.trace.query_output import write_table  # lazy: CLI start-up

            rel = con.sql(sql)
            if rel is None:
                raise SociumError("--out: the statement returns no rows to write")
            n = write_table(rel.to_arrow_table(), out, "csv" if fmt == "table" else fmt)
            console.print(f"wrote {n} rows to {out}")
            return
        cur = con.execute(sql)
        if cur is None:  # empty SQL or only comments: DuckDB returns no cursor (was an AttributeError traceback)
            raise SociumError("SQL: no statement to run (empty, or only comments)")
        cols = [d[0] for d in cur.description] if cur.description else []
        if limit is None and fmt == "table":  # csv and json without --limit: every row
            limit = TABLE_ROWS
        rows = cur.fetchall() if limit is None else cur.fetchmany(limit + 1)
    except SociumError as exc:
        _fail(exc)
        return
    except duckdb.Error as exc:
        _fail(SociumError(f"query failed: {exc}"))
        return
    finally:
        con.close()
    truncated = limit is not None and len(rows) > limit
    rows = rows[:limit]
    if fmt == "table":
        cells = [["NULL" if v is None else str(v) for v in r] for r in rows]
        console.print(_result_table(cols, cells, wider="--format csv prints every value whole"))
    else:
        from socium.trace.query_output import format_rows  # lazy: CLI start-up

        text = format_rows(cols, rows, fmt)
        # On a terminal, escape sequences in trace data (agent text) are shown inert, never obeyed. CSV escapes
        # control and bidi characters everywhere (format_rows: people read CSV too); JSON escapes C0 itself and
        # gives a pipe the values exactly once decoded (programs read it).
        sys.stdout.write("\n".join(neutralise(line) for line in text.split("\n")) if sys.stdout.isatty() else text)
    if truncated:
        note = f"(output truncated to the first {limit} rows; raise --limit, or --out FILE writes every row)"
        err_console.print(note, highlight=False)


def _refuse_not_a_run(path: Path, command: str) -> None:
    """An experiment, sweep or episodes folder is not a run: say where its runs are ("no trace found" did not)."""

    hint = not_a_run_hint(path, command)
    if hint is not None:
        _fail(SociumError(hint))


@app.command()
def card(run_dir: Path, as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """Print the run's Simulation Card: perspective, who saw what, model, seeds, totals."""
    from socium.reporting.card import card_value, simulation_card  # lazy: CLI start-up

    _refuse_not_a_run(run_dir, "card")
    c = _read_run(simulation_card, run_dir)
    if as_json:
        sys.stdout.write(json.dumps(c, indent=2, default=str) + "\n")
        return
    if c.get("smoke_run"):
        console.print(plain(c["smoke_run"], "bold red"))
    table = Table("field", "value", title=f"Simulation Card: {run_dir}")
    for k, v in c.items():
        table.add_row(k, card_value(v))
    console.print(table)


@app.command()
def interview(
    run_dir: Path,
    question: str,
    agent: int = typer.Option(..., "--agent", help="Agent id to ask."),
    backend: str | None = typer.Option(None, "--backend", help="Override the run's llm.backend (e.g. embedded)."),
    record: bool = typer.Option(
        False, "--record", help="Store the answer in the run's `interviews` table (with its LLM call)."
    ),
) -> None:
    """Ask one agent of a finished run a question (its persona and memory at the end of the run)."""
    from socium.experiments.interview import interview as ask  # lazy: CLI start-up
    from socium.reporting.card import smoke_banner  # lazy: CLI start-up
    from socium.simulator.run_setup import load_run_config  # lazy: CLI start-up

    try:
        answer = ask(run_dir, agent, question, {"backend": backend} if backend else None, record=record)
        run_llm = load_run_config(run_dir, allow_plugins=True).llm  # read only, nothing is built
    except SociumError as exc:
        _fail(exc)
        return
    banner = smoke_banner(backend or (run_llm.backend if run_llm else None))
    if banner:  # on stderr: stdout stays the answer alone, for scripts
        err_console.print(plain(banner, "bold red"))
    console.print(answer, markup=False, highlight=False)


@app.command("config-schema")
def config_schema(
    markdown: bool = typer.Option(
        False, "--markdown", help="A readable reference: every section and key with default and meaning."
    ),
) -> None:
    """Print the experiment config's JSON schema (or, with --markdown, a reference of every key)."""
    from socium.config.experiment import ExperimentConfig  # lazy: CLI start-up

    if markdown:
        from socium.config.doc import config_markdown  # lazy: CLI start-up

        sys.stdout.write(config_markdown(ExperimentConfig) + "\n")
        return
    sys.stdout.write(json.dumps(ExperimentConfig.model_json_schema(), indent=2) + "\n")


@app.command()
def data(
    action: list[str] | None = typer.Argument(
        None,
        metavar="[fetch [NAME ...]]",
        help="fetch NAME ...: download data sets (twitter15, oasis, ced, ...; none = all).",
    ),
    deadline: float = typer.Option(
        3600.0, "--deadline", min=1.0, help="fetch: give up after this many seconds in all (what verified is kept)."
    ),
) -> None:
    """Where socium looks for the research data sets, what it finds, and the command that fetches each.

    `socium data fetch [NAME ...]` downloads them (pinned versions, sha256-checked) into $SOCIUM_DATA_DIR or
    the per-user data folder, printing each one's source, version, size, licence and citation first.
    """
    from socium.data.datadir import ENV_VAR, describe  # lazy: CLI start-up

    words = list(action or [])
    if words:
        if words[0] != "fetch":
            _fail(SociumError(f"socium data: unknown action {words[0]!r}; use `socium data fetch [NAME ...]`"))
        _data_fetch(words[1:], deadline)
        return
    tried, used, entries = describe()
    console.print(f"data folder: {used}  ({'found' if used.is_dir() else 'MISSING'})", highlight=False)
    console.print(f"looked in (set {ENV_VAR} to choose): " + ", ".join(str(t) for t in tried), highlight=False)
    table = Table("data set", "used for", "fetch with", "found")
    table.columns[0].overflow = "fold"  # the whole path, folded, never cut with an ellipsis
    table.columns[2].overflow = "fold"
    for e in entries:
        table.add_row(e.relpath, e.purpose, "" if e.found else e.command, "yes" if e.found else "no")
    console.print(table)
    if not all(e.found for e in entries):
        console.print("`socium data fetch` gets every missing data set (see docs/data.md).", highlight=False)


def _data_fetch(names: list[str], deadline: float) -> None:
    from socium.data.fetch import FetchInterrupted, fetch  # lazy: CLI start-up

    try:
        fetch(
            names,
            say=lambda s: console.print(plain(s), highlight=False),
            show_progress=console.is_terminal,
            deadline=deadline,
        )
    except FetchInterrupted as exc:
        err_console.print(plain("error:", "bold red"), plain(exc))
        raise typer.Exit(130) from None
    except SociumError as exc:
        _fail(exc)
