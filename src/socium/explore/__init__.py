"""socium.explore: see what every agent saw.

``socium explore RUN_OR_EXPERIMENT_DIR`` serves a local web app (Solara) over one run's trace or an
experiment folder of runs, read-only, through the named trace queries in
:mod:`socium.trace.queries.explore`. Solara is an optional extra (``pip install 'socium[explore]'``):
this module imports it only when the server starts, so the rest of socium never needs it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socium.errors import UsageError

if TYPE_CHECKING:
    from socium.explore.source import Source
    from socium.trace.store import TraceStore

EXTRA = "explore"


def require_solara() -> None:
    """Raise a UsageError naming the extra to install when Solara is missing."""
    if importlib.util.find_spec("solara") is None:
        raise UsageError(
            f"socium explore needs Solara, which is not installed: pip install 'socium[{EXTRA}]' "
            f"(or, from a checkout, pip install -e '.[{EXTRA}]')"
        )


def check_port(port: int, option: str = "--port", host: str = "127.0.0.1") -> socket.socket:
    """A socket bound to ``host:port`` (0: a free port the system picks), for the server to listen on;
    a port out of range or in use is a UsageError naming ``option``.

    Binding here, before the server starts, is what lets the caller announce the port really served
    (``--port 0``) and fail with one line, not a traceback from inside the server thread."""
    if not 0 <= port <= 65535:
        raise UsageError(f"{option} {port}: not a port (0 to 65535; 0 picks a free one)")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"{option} {port}: cannot serve on {host}:{port} ({exc.strerror}); pick another") from None
    sock.listen(128)  # a browser opening the announced URL before the server is up waits instead of being refused
    return sock


def url_of(sock: socket.socket) -> str:
    """The URL a bound socket serves (its real port, also when 0 was asked for)."""
    host, port = sock.getsockname()[:2]
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"


def asgi_app(allowed_hosts: Sequence[str] = ()) -> Any:
    """Solara's Starlette app with its CDN route answered from local files (:mod:`.offline`) and the export
    downloads streamed beside it (:mod:`.export`), all behind :class:`~socium.explore.guard.HostGuard`
    (loopback Host and Origin only)."""
    from socium.explore.app import (
        current_root,
    )  # lazy: solara (the explore extra), only when serving; the CLI imports this package
    from socium.explore.export import (
        ExportRoute,
    )  # lazy: solara (the explore extra), only when serving; the CLI imports this package
    from socium.explore.files import (
        FolderFiles,
    )  # lazy: solara (the explore extra), only when serving; the CLI imports this package
    from socium.explore.guard import (
        HostGuard,
    )  # lazy: solara (the explore extra), only when serving; the CLI imports this package
    from socium.explore.offline import (
        local_assets,
        offline_solara,
    )  # lazy: solara (the explore extra), only when serving; the CLI imports this package

    offline_solara()
    import solara.server.starlette

    return HostGuard(FolderFiles(ExportRoute(local_assets(solara.server.starlette.app)), current_root), allowed_hosts)


class Server:
    """The explorer's HTTP server (uvicorn, as Solara's own) on a bound socket, in this thread or another."""

    def __init__(self, sock: socket.socket, allowed_hosts: Sequence[str] = ()) -> None:
        import uvicorn

        class Uvicorn(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield  # :meth:`run` handles SIGINT/SIGTERM itself: uvicorn re-raises them after, dying of them

        self.sock = sock
        self.base_url = url_of(sock)
        config = uvicorn.Config(
            asgi_app(allowed_hosts), log_level="warning", timeout_graceful_shutdown=2, server_header=False
        )
        self.server = Uvicorn(config)
        self.thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve in this thread until SIGINT or SIGTERM (a second one stops at once), then close the
        socket and return: stopping the explorer is how it is meant to end, not an error."""
        stops = (signal.SIGINT, signal.SIGTERM)

        def stop(signum: int, frame: Any) -> None:
            if self.server.should_exit:
                self.server.force_exit = True
            self.server.should_exit = True

        main = threading.current_thread() is threading.main_thread()
        old = {s: signal.signal(s, stop) for s in stops} if main else {}
        try:
            self.server.run(sockets=[self.sock])
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            self.sock.close()

    def start(self, timeout: float = 60) -> None:
        """Serve from a daemon thread (no signal handlers: uvicorn sets them only in the main thread)."""
        self.thread = threading.Thread(target=self.run, name="socium-explore", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise UsageError(f"the explorer did not start serving at {self.base_url}")
            time.sleep(0.05)

    def serving(self) -> bool:
        """Whether the server thread still serves (it stops when its socket fails)."""
        return self.thread is not None and self.thread.is_alive()

    def stop_serving(self) -> None:
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)


class LiveServer(Server):
    """The explorer of a running run: the server and the live source it reads."""

    def __init__(self, sock: socket.socket, source: Source) -> None:
        super().__init__(sock)
        self.source = source

    def finish(self, how: str) -> None:
        """The run has ended (``how``: "exit status 0") and closed its trace: pages now read the finished
        file and the live marker says how the run ended."""
        self.source.finish(how)


def serve(path: str | Path, sock: socket.socket, allowed_hosts: Sequence[str] = ()) -> None:
    """Serve the explorer over ``path`` on ``sock`` (from :func:`check_port`) until interrupted.

    In this process (not ``python -m solara run``): Solara's command line turns on telemetry and the CDN
    proxy by default and checks PyPI for a newer version; here the server is built offline and behind the
    Host/Origin guard."""
    require_solara()
    from socium.explore.app import (
        use_source,
    )  # lazy: solara (the explore extra), only when serving; the CLI imports this package
    from socium.explore.source import (
        open_source,
    )  # lazy: solara (the explore extra), only when serving; the CLI imports this package

    src = open_source(path)
    use_source(src)
    threading.Thread(target=src.warm, name="socium-explore-warm", daemon=True).start()
    try:
        Server(sock, allowed_hosts).run()
    finally:
        src.close()


def prepare_live(port: int, host: str = "127.0.0.1") -> socket.socket:
    """What ``--explore`` can do before the run starts: check the extra and the port (a UsageError
    naming what is wrong, before any run folder is made) and import the server (about 2 s, which would
    otherwise be counted in step 0's wall time). Returns the bound socket the server will listen on."""
    require_solara()
    sock = check_port(port, "--explore-port", host)
    from socium.explore.offline import (
        offline_solara,
    )  # lazy: solara (the explore extra), only when serving; the CLI imports this package

    offline_solara()
    # lazy: solara; the app Solara serves, imported now rather than on the first step
    import socium.explore.app  # noqa: F401

    return sock


def serve_live(store: TraceStore, run_dir: str | Path, steps: int, sock: socket.socket) -> LiveServer:
    """Serve the explorer over the run ``store`` writes, from a daemon thread of this process; call it
    in the writer's thread before the first step.

    Why in-process: DuckDB admits one writing process and a second process may not even read the file
    while it is written, so the explorer reads through a cursor of the writer's own connection. The
    server thread waits on its socket while nobody looks; a page costs the run only the queries it makes.
    ``store.before_close`` lets the explorer go first (DuckDB refuses to close a connection whose
    cursor is mid-query). When the run ends, :meth:`Source.finish` makes the pages read the finished file."""
    from socium.explore.app import (
        use_source,
    )  # lazy: solara (the explore extra), only when serving; the CLI imports this package
    from socium.explore.source import (
        Source,
    )  # lazy: solara (the explore extra), only when serving; the CLI imports this package

    src = Source.live(store.con, run_dir, steps)
    store.before_close.append(src.detach)
    use_source(src)
    server = LiveServer(sock, src)
    server.start()
    return server
