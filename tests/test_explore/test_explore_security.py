"""The explorer held to the standard of the run (issue 36, items 1, 2, 11, 12 and 15's explorer parts):
nothing leaves the loopback, only this machine's pages may talk to it, exports stream, a FIFO is not a
run, a bad port is one ``error:`` line, and a closed tab lets go of the trace."""

from __future__ import annotations

import asyncio
import http.server
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.errors import UsageError
from socium.explore import source as source_mod
from socium.explore.export import ExportRoute, csv_chunks, link, register, rows_bytes
from socium.explore.guard import HostGuard
from socium.explore.source import open_source
from socium.simulator.simulation import Simulation
from socium.trace.queries import explore as q

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sec") / "run"
    cfg = small_config(
        steps=2,
        seed=5,
        population={"n_agents": 20, "mean_activity": 0.5},
        policy={"kind": "llm"},
        llm={"backend": "random", "max_concurrency": 1},
    )
    Simulation(cfg, path).run()
    return path


# ---- the Host / Origin guard (item 2) ---------------------------------------------------------------


def _asgi(app: Any, scope: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages ``app`` sends for one request (no body), in order."""
    sent: list[dict[str, Any]] = []

    async def main() -> None:
        done = asyncio.Event()
        asked = False

        async def receive() -> dict[str, Any]:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await done.wait()  # the client stays until the response is complete, then goes
            return {"type": "http.disconnect"}

        async def send(msg: dict[str, Any]) -> None:
            sent.append(dict(msg))
            if msg["type"] != "http.response.start" and not msg.get("more_body", False):
                done.set()

        await app(scope, receive, send)

    asyncio.run(main())
    return sent


def _scope(kind: str, host: str | None, origin: str | None = None, path: str = "/") -> dict[str, Any]:
    headers = [(b"host", host.encode())] if host is not None else []
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return {"type": kind, "path": path, "headers": headers, "method": "GET", "query_string": b"", "root_path": ""}


def _reached(kind: str, host: str | None, origin: str | None = None, allowed: tuple[str, ...] = ()) -> bool:
    hits: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        hits.append(scope["type"])

    sent = _asgi(HostGuard(inner, allowed), _scope(kind, host, origin))
    if hits:
        return True
    if kind == "websocket":
        assert sent == [{"type": "websocket.close", "code": 1008, "reason": sent[0]["reason"]}]
    else:
        assert sent[0]["status"] == 403
    return False


@pytest.mark.parametrize("kind", ["http", "websocket"])
def test_only_loopback_hosts_and_same_machine_origins_get_through(kind: str) -> None:
    for host in ("127.0.0.1:8765", "localhost:8765", "LOCALHOST", "[::1]:8765", "127.9.9.9", "app.localhost:1"):
        assert _reached(kind, host), host
        assert _reached(kind, host, origin="http://127.0.0.1:8765"), host
    # DNS rebinding: the attacker's name resolved to 127.0.0.1, the browser still sends its Host
    for host in ("evil.example:8765", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example:1", "", None):
        assert not _reached(kind, host), host
    # a page of another site (a cross-origin WebSocket, a cross-site form or fetch)
    for origin in ("http://evil.example", "https://evil.example:8765", "null", "file://", "http://127.0.0.1.nip.io"):
        assert not _reached(kind, "127.0.0.1:8765", origin=origin), origin
    # a host the user names is allowed, as Host and as Origin
    assert _reached(kind, "lab.box:8765", origin="http://lab.box:8765", allowed=("lab.box",))
    assert not _reached(kind, "evil.example", allowed=("lab.box",))


# ---- ports (item 12) ---------------------------------------------------------------------------------


def _one_error_line(output: str, *needles: str) -> None:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), output
    assert "Traceback" not in output and all(n in lines[0] for n in needles), output


@pytest.mark.parametrize("port", ["-1", "70000", "65536"])
def test_a_port_out_of_range_is_one_error_line(run_dir: Path, tmp_path: Path, port: str) -> None:
    pytest.importorskip("solara")
    res = CliRunner().invoke(app, ["explore", str(run_dir), "--port", port])
    assert res.exit_code == 2
    _one_error_line(res.output, f"--port {port}", "0 to 65535")
    out = tmp_path / "r"
    res = CliRunner().invoke(
        app, ["run", str(ROOT / "examples/quickstart.yaml"), "--out", str(out), "--explore", "--explore-port", port]
    )
    assert res.exit_code == 2 and not out.exists()
    _one_error_line(res.output, f"--explore-port {port}")


def test_a_busy_port_is_one_error_line(run_dir: Path) -> None:
    pytest.importorskip("solara")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        res = CliRunner().invoke(app, ["explore", str(run_dir), "--port", port])
    assert res.exit_code == 2
    _one_error_line(res.output, f"--port {port}", "pick another")


# ---- FIFOs are not runs (item 11) ---------------------------------------------------------------------


def _within(seconds: float, fn: Any) -> Any:
    """``fn()``'s result (or exception) if it returns within ``seconds``; a hang fails the test."""
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 (handed back to the test)
            box["error"] = exc

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"hung for {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_a_fifo_named_trace_duckdb_is_not_a_run(tmp_path: Path, run_dir: Path) -> None:
    (tmp_path / "pipe").mkdir()
    os.mkfifo(tmp_path / "pipe" / "trace.duckdb")
    with pytest.raises(UsageError, match="no run here"):
        _within(10, lambda: open_source(tmp_path / "pipe"))
    with pytest.raises(UsageError, match="not a regular file"):
        _within(10, lambda: open_source(tmp_path / "pipe" / "trace.duckdb"))
    # beside a real run, only the real run is listed (and opening the folder does not block)
    shutil.copytree(run_dir, tmp_path / "real")
    src = _within(10, lambda: open_source(tmp_path))
    assert src.labels() == ["real"]
    src.close()
    res = _within(30, lambda: CliRunner().invoke(app, ["explore", str(tmp_path / "pipe")]))
    assert res.exit_code == 2
    _one_error_line(res.output, "no run here")


# ---- the trace is let go when nobody reads it (item 15) ---------------------------------------------


def test_an_idle_explorer_lets_go_of_the_trace(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_mod, "IDLE_S", 0.3)
    src = open_source(run_dir)
    assert src.view(0)(q.committed_steps) == 2
    assert src._cons  # open while pages are read
    deadline = time.monotonic() + 60  # a wait, not a bound: it ends as soon as the trace is let go
    while src._cons and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not src._cons
    writer = duckdb.connect(str(run_dir / "trace.duckdb"))  # what `socium run --resume` needs
    writer.close()
    assert src.view(0)(q.committed_steps) == 2  # and the next page opens it again
    src.close()


# ---- exports stream (item 11) -------------------------------------------------------------------------


def _lazy(n_batches: int, size: int) -> Iterator[list[dict[str, Any]]]:
    for b in range(n_batches):
        yield [{"i": b * size + k, "text": f"row {b * size + k} " + "x" * 80} for k in range(size)]


def test_a_csv_export_is_written_a_batch_at_a_time() -> None:
    """300,000 rows (~30 MB of CSV) leave with the memory of about one batch, not the file's."""
    tracemalloc.start()
    total = 0
    for chunk in csv_chunks(_lazy(60, 5_000), ["i", "text"]):
        total += len(chunk)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert total > 28_000_000
    assert peak < total / 4, (peak, total)  # built whole it was ~10x the file


def test_the_export_route_streams_the_registered_rows(tmp_path: Path) -> None:
    rows = [{"a": 1, "b": '=HYPERLINK("x") <script>'}, {"a": 2, "b": None}]
    token = register("t", lambda: iter([rows[:1], rows[1:]]), ["a", "b"])

    async def nothing(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the export route answers itself")

    route = ExportRoute(nothing)
    for fmt in ("csv", "parquet"):
        sent = _asgi(route, _scope("http", "127.0.0.1", path=link(token, "t", fmt)))
        assert sent[0]["status"] == 200
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        assert body == rows_bytes([rows], ["a", "b"], fmt) or fmt == "parquet"
        if fmt == "parquet":
            import io

            import pyarrow.parquet as pq

            assert pq.read_table(io.BytesIO(body)).to_pylist() == rows
        headers = dict(sent[0]["headers"])
        assert f"t.{fmt}".encode() in headers[b"content-disposition"]
    assert _asgi(route, _scope("http", "127.0.0.1", path=link("nope", "t", "csv")))[0]["status"] == 404
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("socium-export-*.parquet"))


# ---- a served explorer: no byte leaves the loopback; foreign hosts refused; the trace let go ---------


class _Sink(http.server.BaseHTTPRequestHandler):
    """A proxy that answers nothing and remembers every request (a CONNECT for HTTPS, a GET for HTTP)."""

    seen: list[str] = []

    def _record(self) -> None:
        _Sink.seen.append(f"{self.command} {self.path}")
        self.send_response(502)
        self.end_headers()

    do_GET = do_POST = do_CONNECT = do_HEAD = do_PUT = _record

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def proxy_sink() -> Iterator[str]:
    _Sink.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _direct(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """GET ``url`` without any proxy (this test's own requests must not reach the sink)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _ws_handshake(url: str, origin: str) -> str:
    """The status line a WebSocket upgrade to the kernel channel gets with ``Origin: origin``."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(
            (
                "GET /jupyter/api/kernels/k/channels?session_id=s HTTP/1.1\r\n"
                f"Host: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                f"Origin: {origin}\r\n\r\n"
            ).encode()
        )
        return s.recv(200).decode("latin-1").split("\r\n", 1)[0]


@pytest.mark.browser
def test_nothing_leaves_the_loopback_and_foreign_pages_are_refused(run_dir: Path, proxy_sink: str) -> None:
    """The explorer starts, serves pages (in Chromium when installed, and by plain HTTP), is asked for a
    CDN asset it does not hold, and stops, with every proxy variable pointed at a sink: the sink sees
    nothing. Solara's defaults sent a start event with the public IP, a stop event, and fetched the asset."""
    pytest.importorskip("solara")
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy",)}
    for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env[k] = proxy_sink
    cmd = [sys.executable, "-m", "socium.cli.main", "explore", str(run_dir), "--port", "0"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    requested: list[str] = []
    try:
        assert proc.stdout is not None
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", proc.stdout.readline())
        assert found and found.group(1) != "0"  # --port 0 announces the port really served
        url = found.group(0).rstrip("/")
        for _ in range(120):
            try:
                _direct(url)
                break
            except OSError:
                time.sleep(0.5)
        assert _direct(f"{url}/run/0")[0] == 200
        assert _direct(f"{url}/_solara/cdn/requirejs@2.3.6/require.js")[0] == 200  # installed: served locally
        assert _direct(f"{url}/_solara/cdn/left-pad@1.3.0/index.js")[0] == 404  # not installed: never fetched
        # DNS rebinding and a cross-origin kernel
        assert _direct(f"{url}/run/0", {"Host": "evil.example:1"})[0] == 403
        assert _direct(f"{url}/", {"Origin": "http://evil.example"})[0] == 403
        assert " 403 " in _ws_handshake(url, "http://evil.example") + " "
        assert " 403 " not in _ws_handshake(url, url) + " "
        if CHROMIUM is not None:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page()
                page.on("request", lambda r: requested.append(r.url))
                page.set_default_timeout(60_000)
                for path in ("/run/0", "/run/0/agent/1", "/run/0/calls"):
                    page.goto(url + path)
                    page.locator(".v-card, .post, .call").first.wait_for()
                page.close()
                browser.close()
            # the tab is closed: within the idle time the trace can be written again (resume)
            # loose: the explorer process may be slow to notice under load
            deadline = time.monotonic() + source_mod.IDLE_S + 60
            while True:
                try:
                    duckdb.connect(str(run_dir / "trace.duckdb")).close()
                    break
                except duckdb.Error:
                    assert time.monotonic() < deadline, "the explorer still holds the trace"
                    time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0, err
    assert _Sink.seen == []
    assert all(u.startswith(url) or u.startswith("data:") or u.startswith("blob:") for u in requested), [
        u for u in requested if not u.startswith(url)
    ]


def test_an_emulator_only_experiment_opens_and_serves_only_its_own_files(tmp_path: Path) -> None:
    """A forecast/counterfactual folder (results and report, no run) opens; its files are served, nothing
    else is (no ``..``, no symlink out of the folder, no other suffix), HTML sandboxed."""
    from socium.explore.files import FolderFiles, file_link

    (tmp_path / "report").mkdir()
    (tmp_path / "results.json").write_text('{"nrmse": 0.1}')
    (tmp_path / "report" / "report.html").write_text("<h1>report</h1><script>alert(1)</script>")
    (tmp_path / "report" / "fan.png").write_bytes(b"\x89PNG")
    (tmp_path / "report" / "secret.key").write_text("no")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text("{}")
    (tmp_path / "report" / "link.json").symlink_to(outside)
    src = open_source(tmp_path)
    assert src.labels() == [] and src.is_experiment
    assert src.files == ["results.json", "report/fan.png", "report/report.html"]

    async def nothing(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the file route answers itself")

    route = FolderFiles(nothing, lambda: tmp_path)

    def get(path: str) -> tuple[int, dict[bytes, bytes], bytes]:
        sent = _asgi(route, _scope("http", "127.0.0.1", path=path))
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return sent[0]["status"], dict(sent[0]["headers"]), body

    status, headers, body = get(file_link("report/report.html"))
    assert status == 200 and body.startswith(b"<h1>report") and headers[b"content-security-policy"] == b"sandbox"
    assert get(file_link("results.json"))[2] == b'{"nrmse": 0.1}'
    for bad in ("report/secret.key", "report/link.json", "../" + outside.name, "report/../../x.json", "/etc/passwd"):
        assert get(file_link(bad))[0] == 404, bad
