"""Nothing socium runs sends a byte beyond the loopback (design, round 4): a run, an LLM run and a report,
with every proxy variable pointed at a loopback sink that records each connection it gets.

Why a sink: HTTP clients (aiohttp with ``trust_env``, urllib, requests) send any request for a non-loopback
host to ``HTTP(S)_PROXY``; a library phoning home (telemetry, a CDN fetch, an update check) reaches the sink
instead of the network and is counted. Loopback hosts are exempt (``NO_PROXY``), as the model server is.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import yaml

from socium.llm.fake_server import FakeOpenAIServer

SRC = Path(__file__).resolve().parents[2] / "src"


class _Sink:
    """A loopback TCP listener that records the first bytes of every connection and answers nothing."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.got: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(30.0)  # a loaded machine may send the request line late: wait for it, do not record b""
            try:
                self.got.append(conn.recv(200))
            except OSError:
                self.got.append(b"")
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


def _run(cmd: list[str], sink: _Sink) -> subprocess.CompletedProcess[str]:
    proxy = f"http://127.0.0.1:{sink.port}"
    env = {
        **os.environ,
        "PYTHONPATH": str(SRC),
        "OMP_WAIT_POLICY": "PASSIVE",
        **{k: proxy for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")},
        "NO_PROXY": "127.0.0.1,localhost,::1",
        "no_proxy": "127.0.0.1,localhost,::1",
    }
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def _socium(args: list[str], sink: _Sink) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "socium.cli", *args], sink)


def test_the_sink_sees_a_request_for_another_host() -> None:
    """The guard below can fail: a plain urllib fetch of a foreign host under the same environment reaches it."""
    sink = _Sink()
    try:
        code = (
            "import urllib.request\n"
            "try: urllib.request.urlopen('http://example.invalid/x', timeout=3)\n"
            "except Exception: pass"
        )
        _run([sys.executable, "-c", code], sink)
    finally:
        sink.close()
    assert len(sink.got) == 1 and b"example.invalid" in sink.got[0], sink.got


def test_a_run_an_llm_run_and_a_report_send_nothing_beyond_the_loopback(tmp_path) -> None:
    sink = _Sink()
    try:
        base = {
            "name": "loop",
            "seed": 1,
            "steps": 2,
            "population": {"n_agents": 20, "mean_activity": 0.5},
            "seed_posts": [{"author": 0, "content": "x"}],
        }
        rules = tmp_path / "rules.yaml"
        rules.write_text(yaml.safe_dump({**base, "policy": {"kind": "random"}}))
        r = _socium(["run", str(rules), "--out", str(tmp_path / "r1"), "--quiet"], sink)
        assert r.returncode == 0, r.stderr
        r = _socium(["report", str(tmp_path / "r1")], sink)
        assert r.returncode == 0, r.stderr
        with FakeOpenAIServer() as srv:
            llm = tmp_path / "llm.yaml"
            llm_cfg = {"backend": "openai", "base_urls": [srv.base_url], "model": "m", "retries": 0}
            llm.write_text(yaml.safe_dump({**base, "policy": {"kind": "llm"}, "llm": llm_cfg}))
            r = _socium(["run", str(llm), "--out", str(tmp_path / "r2"), "--quiet"], sink)
            assert r.returncode == 0, r.stderr
            assert srv.n_requests > 0  # the model server on the loopback was reached directly
    finally:
        sink.close()
    assert sink.got == [], sink.got  # not one connection meant for another host
