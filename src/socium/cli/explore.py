"""``socium explore``: a local web app showing a run (or an experiment's runs) through each agent's eyes."""

from __future__ import annotations

from pathlib import Path

import typer

from socium.cli.app import _fail, app, console
from socium.errors import SociumError


@app.command()
def explore(
    path: Path = typer.Argument(..., help="A run directory (holding trace.duckdb) or an experiment folder of runs."),
    port: int = typer.Option(8765, "--port", help="Port to serve on (localhost only)."),
) -> None:
    """Open a run or experiment in the browser, read-only: timeline, each agent's feeds, prompts and
    responses, each post's cascade and audience, the LLM call log. Needs the `explore` extra."""
    from socium.explore import require_solara, serve  # lazy: CLI start-up
    from socium.explore.source import open_source  # lazy: CLI start-up

    try:
        runs = open_source(path).runs  # a wrong folder says so whether or not the extra is installed
        require_solara()
    except SociumError as exc:
        _fail(exc)
        return
    what = "1 run" if "." in runs else f"{len(runs)} runs"
    console.print(f"socium explore: {path} ({what}) at http://127.0.0.1:{port}/ (Ctrl-C stops)")
    serve(path, port=port)
