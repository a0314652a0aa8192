"""``socium explore``: a local web app showing a run (or an experiment's runs) through each agent's eyes."""

from __future__ import annotations

from pathlib import Path

import typer

from socium.cli.app import _fail, app, console
from socium.errors import SociumError


@app.command()
def explore(
    path: Path = typer.Argument(..., help="A run directory (holding trace.duckdb) or an experiment folder of runs."),
    port: int = typer.Option(8765, "--port", help="Port to serve on (localhost only; 0 picks a free one)."),
    allow_host: list[str] = typer.Option(
        [],
        "--allow-host",
        help="A host name the browser may use besides localhost/127.0.0.1 (repeatable; e.g. an SSH tunnel's name).",
    ),
) -> None:
    """Open a run or experiment in the browser, read-only: timeline, each agent's feeds, prompts and
    responses, each post's cascade and audience, the LLM call log. Needs the `explore` extra."""
    from socium.explore import (
        check_port,
        require_solara,
        serve,
        url_of,
    )  # lazy: solara (the explore extra) loads only for this command
    from socium.explore.source import open_source  # lazy: solara (the explore extra) loads only for this command

    try:
        src = open_source(path)  # a wrong folder says so whether or not the extra is installed
        runs = src.runs
        src.close()
        require_solara()
        sock = check_port(port)
    except SociumError as exc:
        _fail(exc)
        return
    what = "1 run" if "." in runs else f"{len(runs)} runs"
    console.print(f"socium explore: {path} ({what}) at {url_of(sock)} (Ctrl-C stops)", soft_wrap=True)
    console.file.flush()
    try:
        serve(path, sock, allow_host)
    except SociumError as exc:
        _fail(exc)
