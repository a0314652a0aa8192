"""socium.explore: see what every agent saw.

``socium explore RUN_OR_EXPERIMENT_DIR`` serves a local web app (Solara) over one run's trace or an
experiment folder of runs, read-only, through the named trace queries in
:mod:`socium.trace.queries.explore`. Solara is an optional extra (``pip install 'socium[explore]'``):
this module imports it only when the server starts, so the rest of socium never needs it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from socium.errors import UsageError

EXTRA = "explore"


def require_solara() -> None:
    """Raise a UsageError naming the extra to install when Solara is missing."""
    if importlib.util.find_spec("solara") is None:
        raise UsageError(
            f"socium explore needs Solara, which is not installed: pip install 'socium[{EXTRA}]' "
            f"(or, from a checkout, pip install -e '.[{EXTRA}]')"
        )


def server_command(port: int, host: str = "127.0.0.1") -> list[str]:
    """The command that serves the app (Solara's own server, production mode, no browser, no network)."""
    return [
        sys.executable, "-m", "solara", "run", "socium.explore.app", "--host", host, "--port", str(port),
        "--production", "--no-open", "--no-check-version", "--no-ssg", "--log-level", "warning",
    ]  # fmt: skip


def server_env(path: str | Path) -> dict[str, str]:
    """The environment the server runs in: the path to open (the app reads it on first request)."""
    from socium.explore.app import ENV

    return {**os.environ, ENV: str(Path(path).resolve())}


def serve(path: str | Path, port: int = 8765, host: str = "127.0.0.1") -> None:
    """Serve the explorer over ``path`` until interrupted; this process becomes the server.

    The path is opened once here first, so a wrong folder fails at once with a message, not in the
    browser. Replacing the process (rather than starting a child) means Ctrl-C and ``kill`` reach the
    server itself and no orphan keeps the port."""
    require_solara()
    from socium.explore.source import open_source

    open_source(path).close()
    os.execve(sys.executable, server_command(port, host), server_env(path))
