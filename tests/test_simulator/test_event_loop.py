"""The LLM event loop: uvloop where installed, asyncio's own loop otherwise, the same trace either way."""

import asyncio
import sys
import threading

import duckdb
import pytest

from socium.config.loading import config_from_dict
from socium.llm import base
from socium.reporting.card import simulation_card
from socium.simulator.simulation import Simulation
from socium.trace.store import trace_digest


def _no_uvloop(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` now raises ImportError


def _fresh_thread_loop(monkeypatch):
    monkeypatch.setattr(base, "_THREAD", threading.local())  # the next sync call makes a new loop


def test_uvloop_is_used_when_installed_and_can_be_switched_off(monkeypatch):
    uvloop = pytest.importorskip("uvloop")
    monkeypatch.delenv(base.EVENT_LOOP_ENV, raising=False)
    loop = base.new_event_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()
    assert base.event_loop_kind() == f"uvloop {uvloop.__version__}"
    monkeypatch.setenv(base.EVENT_LOOP_ENV, "asyncio")
    loop = base.new_event_loop()
    try:
        assert not isinstance(loop, uvloop.Loop)
    finally:
        loop.close()
    assert base.event_loop_kind() == "asyncio"


def test_without_uvloop_the_default_loop_runs_sync_calls(monkeypatch):
    _no_uvloop(monkeypatch)
    _fresh_thread_loop(monkeypatch)
    assert base.event_loop_kind() == "asyncio"

    async def which():
        return type(asyncio.get_running_loop()).__module__

    assert base.run_coro_sync(which()).startswith("asyncio")

    async def nested():  # a sync call made inside a running loop goes to a worker thread's own loop
        return base.run_coro_sync(which())

    assert asyncio.run(nested()).startswith("asyncio")


def _cfg():
    return config_from_dict(
        {
            "name": "loops",
            "seed": 5,
            "steps": 3,
            "population": {"n_agents": 30, "mean_activity": 0.6},
            "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
            "policy": {"kind": "llm"},
            "llm": {"backend": "fake", "max_concurrency": 8},
            "seed_posts": [{"author": i, "content": f"opening post {i} about the new tram line"} for i in range(8)],
        }
    )


def _event_loop_of(run_dir):
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        return con.execute("SELECT event_loop FROM runs").fetchone()[0]
    finally:
        con.close()


def test_uvloop_and_asyncio_give_the_same_trace_over_http(tmp_path, monkeypatch):
    """The fake OpenAI server over real HTTP, once per loop: identical tables, each loop recorded."""
    pytest.importorskip("uvloop")
    monkeypatch.delenv(base.EVENT_LOOP_ENV, raising=False)
    _fresh_thread_loop(monkeypatch)
    Simulation(_cfg(), tmp_path / "uv").run()
    with monkeypatch.context() as m:
        _no_uvloop(m)
        _fresh_thread_loop(m)
        Simulation(_cfg(), tmp_path / "plain").run()
    uv, plain = trace_digest(tmp_path / "uv" / "trace.duckdb"), trace_digest(tmp_path / "plain" / "trace.duckdb")
    assert uv == plain
    con = duckdb.connect(str(tmp_path / "uv" / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM llm_calls WHERE outcome = 'ok'").fetchone()[0] > 0
    con.close()
    assert _event_loop_of(tmp_path / "uv").startswith("uvloop ")
    assert _event_loop_of(tmp_path / "plain") == "asyncio"
    assert simulation_card(tmp_path / "uv")["llm"]["event_loop"].startswith("uvloop ")
    assert simulation_card(tmp_path / "plain")["llm"]["event_loop"] == "asyncio"
