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
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from socium.errors import UsageError

if TYPE_CHECKING:
    from socium.trace.store import TraceStore

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
    from socium.explore.app import ENV  # lazy: solara (the explore extra): the app module imports it

    return {**os.environ, ENV: str(Path(path).resolve())}


def serve(path: str | Path, port: int = 8765, host: str = "127.0.0.1") -> None:
    """Serve the explorer over ``path`` until interrupted; this process becomes the server.

    The path is opened once here first, so a wrong folder fails at once with a message, not in the
    browser. Replacing the process (rather than starting a child) means Ctrl-C and ``kill`` reach the
    server itself and no orphan keeps the port."""
    require_solara()
    # lazy: duckdb, only when serving (socium.explore is imported by the CLI)
    from socium.explore.source import open_source

    open_source(path).close()
    os.execve(sys.executable, server_command(port, host), server_env(path))


class LiveServer(Protocol):
    """The explorer served from a running process (Solara's threaded Starlette server)."""

    base_url: str

    def stop_serving(self) -> None: ...


def prepare_live(port: int, host: str = "127.0.0.1") -> None:
    """What ``--explore`` can do before the run starts: check the extra and the port (a UsageError
    naming what is wrong, before any run folder is made) and import the server (about 2 s, which would
    otherwise be counted in step 0's wall time). Calling it again repeats only the checks."""
    require_solara()
    import socket

    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UsageError(
                f"--explore-port {port}: cannot serve on {host}:{port} ({exc.strerror}); pick another"
            ) from None
    warnings.filterwarnings("ignore", message="Cookies with samesite=none")  # plain http on localhost: lax is right
    os.environ.setdefault("MPLBACKEND", "Agg")  # Solara would set the notebook backend, which a run has no use for
    os.environ["SOLARA_APP"] = "socium.explore.app"
    os.environ["SERVER_NAME"], os.environ["SERVER_PORT"] = host, str(port)
    import solara.server.starlette  # noqa: F401
    from solara.server import settings

    # lazy: solara, only in the server process
    import socium.explore.app  # noqa: F401 (the app Solara serves, imported now rather than on the first step)

    settings.main.mode = "production"
    settings.ssg.enabled = False
    settings.telemetry.mixpanel_enable = False  # nothing leaves this machine


def serve_live(
    store: TraceStore, run_dir: str | Path, steps: int, port: int = 8765, host: str = "127.0.0.1"
) -> LiveServer:
    """Serve the explorer over the run ``store`` writes, from a daemon thread of this process; call it
    in the writer's thread before the first step.

    Why in-process: DuckDB admits one writing process and a second process may not even read the file
    while it is written, so the explorer reads through a cursor of the writer's own connection. The
    server thread waits on its socket while nobody looks; a page costs the run only the queries it makes.
    ``store.before_close`` lets the explorer go first (DuckDB refuses to close a connection whose
    cursor is mid-query). A port in use is a UsageError naming it (the run has not started yet)."""
    prepare_live(port, host)
    from solara.server.starlette import ServerStarlette

    from socium.explore.app import use_source  # lazy: solara (the explore extra), only when serving
    from socium.explore.source import Source  # lazy: duckdb, only when serving

    src = Source.live(store.con, run_dir, steps)
    store.before_close.append(src.detach)
    use_source(src)
    server = ServerStarlette(port=port, host=host, log_level="warning")
    server.serve_threaded()
    server.wait_until_serving(timeout=60)
    return cast(LiveServer, server)
