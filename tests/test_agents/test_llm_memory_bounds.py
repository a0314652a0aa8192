"""Per-run LLM structures stay bounded: the response cache is an LRU, a config-built fake server keeps
no request bodies, window memory is one joined string per agent in a columnar slot array, the trace
writer's DuckDB has a memory limit.
(Issue 17: resident memory per LLM agent grew every step.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import small_config
from socium.agents.call_recording import RecordingCache
from socium.agents.memory import WindowMemory
from socium.errors import ConfigError
from socium.llm.base import generate_sync
from socium.llm.cache import MemoryCache
from socium.llm.factory import build_backend
from socium.llm.fake_server import FakeOpenAIServer
from socium.llm.types import LLMResult, user_request
from socium.simulator.simulation import Simulation
from socium.trace.store import TraceStore


def _res(i: int) -> LLMResult:
    return LLMResult(request_id=f"r{i}", text=f"answer {i}")


def test_memory_cache_is_a_bounded_lru() -> None:
    c = MemoryCache(max_entries=3)
    for i in range(3):
        c.put(f"k{i}", None, _res(i), "m")  # type: ignore[arg-type]
    assert c.get("k0") is not None  # k0 is now the most recent
    c.put("k3", None, _res(3), "m")  # type: ignore[arg-type]
    assert len(c) == 3 and "k1" not in c and "k0" in c and "k3" in c


def test_unbounded_cache_keeps_everything_for_replay() -> None:
    c = MemoryCache()
    for i in range(5000):
        c.put(f"k{i}", None, _res(i), "m")  # type: ignore[arg-type]
    assert len(c) == 5000 and c.get("k0") is not None


def test_run_cache_is_bounded_but_still_records_every_call() -> None:
    c = RecordingCache()
    n = RecordingCache.MAX_ENTRIES + 50
    for i in range(n):
        c.put(f"k{i}", None, _res(i), "m")  # type: ignore[arg-type]
    assert len(c) == RecordingCache.MAX_ENTRIES
    assert len(c.drain()) == n and c.drain() == []  # call records leave memory when the step commits


def test_fake_server_can_count_without_keeping_bodies() -> None:
    with FakeOpenAIServer(lambda b: "ok", record=False) as srv:
        be = build_backend({"backend": "openai", "model": "m", "base_urls": [srv.base_url], "retries": 0})
        generate_sync(be, [user_request(f"x{i}", "hi") for i in range(4)])
        be.close()
    assert srv.n_requests == 4 and srv.requests == [] and srv.headers == []


def test_config_built_fake_backend_keeps_no_bodies() -> None:
    be = build_backend({"backend": "fake", "retries": 0})
    try:
        generate_sync(be, [user_request(f"x{i}", "hi") for i in range(3)])
        server = _find_server(be)
        assert server.n_requests == 3 and server.requests == []
    finally:
        be.close()


def _find_server(be: object) -> FakeOpenAIServer:
    node = be
    while node is not None:
        if hasattr(node, "server"):
            return node.server  # type: ignore[no-any-return, attr-defined]
        node = getattr(node, "inner", None)
    raise AssertionError("no fake server in the backend stack")


def test_window_memory_keeps_the_last_lines_in_order() -> None:
    w = WindowMemory(3)
    for i in range(5):
        w.add(7, i, "action", f"line {i}")
    w.add(7, 5, "observation", "not kept: a window remembers actions and messages only")
    w.add(8, 5, "message", "hello")
    assert w.get(7) == ["line 2", "line 3", "line 4"] and w.recall(8, 5) == ["hello"]
    assert w[7][-1] == "line 4" and w.get(9) == [] and w.recall(9, 0) == []
    one = WindowMemory(1)
    one.add(1, 0, "action", "a")
    one.add(1, 1, "action", "b")
    assert one.get(1) == ["b"]
    with pytest.raises(KeyError):
        one[0]


def test_window_memory_stays_bounded_over_many_steps() -> None:
    """After any number of adds an agent holds at most ``size`` lines in one string, and the slot
    array grows only with agent ids, not with steps."""
    w = WindowMemory(4, n_agents=100)
    for step in range(200):
        for agent in range(0, 100, 3):
            w.add(agent, step, "action", f"step {step}: like_post post_id={agent * step}")
    slots = w._slots
    assert len(slots) == 100 and len(w) == 34
    assert all(isinstance(v, str) for v in slots[::3]) and slots[1] is None
    assert w.get(99) == [f"step {s}: like_post post_id={99 * s}" for s in range(196, 200)]
    longest = max(len(v) for v in slots[::3])
    assert longest <= 4 * len("step 199: like_post post_id=19701") + 3
    w.add(250, 0, "action", "a new agent id grows the slots")
    assert len(w._slots) >= 251 and w.get(250) == ["a new agent id grows the slots"]


def test_window_memory_bytes_per_agent_are_bounded() -> None:
    """Five 84-character lines per agent cost one string and one slot, not a tuple, five strings and
    a dict entry: under 600 bytes an agent (issue 17's budget is 4 KB per LLM agent in all)."""
    n = 2000
    w = WindowMemory(5, n_agents=n)
    for step in range(8):
        for agent in range(n):
            w.add(
                agent,
                step,
                "action",
                f"step {step}: create_post content='{agent:06d} thinks the new lanes help'".ljust(84),
            )
    size = w._slots.nbytes + sum(sys.getsizeof(v) for v in w._slots)
    assert all(len(w.get(a)) == 5 for a in range(0, n, 97))
    assert size / n < 600


def test_window_memory_separator_in_text_cannot_split_a_line() -> None:
    w = WindowMemory(3)
    w.add(0, 0, "action", f"hostile{WindowMemory.SEP}text")
    w.add(0, 1, "action", "second")
    assert w.get(0) == ["hostile text", "second"]


def test_trace_writer_bounds_duckdb_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def limit(store: TraceStore) -> str:
        return str(store.con.execute("SELECT current_setting('memory_limit')").fetchone()[0])

    monkeypatch.delenv("SOCIUM_TRACE_MEMORY_LIMIT", raising=False)
    store = TraceStore(tmp_path / "a.duckdb")
    default = limit(store)
    store.close()
    monkeypatch.setenv("SOCIUM_TRACE_MEMORY_LIMIT", "1GB")
    store = TraceStore(tmp_path / "b.duckdb")
    raised = limit(store)
    store.close()
    assert default != raised and default.startswith("12") and "MiB" in default  # 128MB, as DuckDB prints it
    monkeypatch.setenv("SOCIUM_TRACE_MEMORY_LIMIT", "lots")
    with pytest.raises(ConfigError, match="SOCIUM_TRACE_MEMORY_LIMIT='lots'"):
        TraceStore(tmp_path / "c.duckdb")


def test_llm_run_structures_stay_bounded_over_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's per-agent and per-run structures hold no more after many steps than their bounds:
    the response cache its LRU size, each agent's window ``memory_size`` lines, the memory slots
    one per agent, the call records nothing once a step has committed."""
    monkeypatch.setattr(RecordingCache, "MAX_ENTRIES", 8)
    n, steps = 30, 6
    cfg = small_config(
        steps=steps,
        population={"n_agents": n, "mean_activity": 0.9},
        policy={"kind": "llm"},
        llm={"backend": "random"},
        llm_agents={"memory_size": 2},
    )
    sim = Simulation(cfg, tmp_path / "run", force=True)
    try:
        for _ in range(steps):
            sim.step()
            cache = sim.policy._cache
            assert len(cache) <= 8 and cache.pending == []
            assert all(len(sim.world.memory.get(a)) <= 2 for a in range(n))
            assert len(sim.world.memory._slots) == n
        assert cache.puts > 8  # more answers passed through than the cache keeps
        assert max(len(sim.world.memory.get(a)) for a in range(n)) == 2  # the window bound was reached
    finally:
        sim.close()
