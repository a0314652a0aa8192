"""A step's call log compacted in chunks (``CallLog``) writes the rows the whole list did (``call_rows``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from conftest import small_config
from socium.agents import call_log
from socium.agents.call_log import CallLog, RenderedRequest, call_rows
from socium.llm.types import ChatMessage, LLMRequest, LLMResult
from socium.simulator.llm_health import step_problem
from socium.simulator.simulation import Simulation
from socium.trace.store import trace_digest


def _call(i: int, step: Any, agent: Any, rid: str, ok: bool = True) -> tuple[str, Any, LLMResult, str]:
    req = LLMRequest(
        request_id=rid,
        messages=[ChatMessage(role="user", content=f"prompt {i} \u00e9\x00")],  # cleaned in the log
        json_schema={"type": "object", "n": i},
        seed=i,
        metadata={"step": step, "agent_id": agent, "perspective": "local"},
    )
    res = (
        LLMResult(request_id=rid, text=f"answer {i}", prompt_tokens=10 + i, completion_tokens=i, latency_s=0.5)
        if ok
        else LLMResult.failure(rid, f"boom {i}", "timeout", attempts=2)
    )
    return f"key{i}", (req if i % 2 else RenderedRequest(req)), res, "m"


def test_chunked_log_gives_call_rows_exactly() -> None:
    # agents out of order, a repeated agent with two request ids, missing step/agent, a failure
    calls = [
        _call(0, 3, 17, "s3-a17"),
        _call(1, 3, 2, "s3-a2-b"),
        _call(2, 3, 2, "s3-a2-a"),
        _call(3, None, None, "narrator"),
        _call(4, 3, 40, "s3-a40", ok=False),
        _call(5, 3, 0, "s3-a0"),
        _call(6, 2, 99, "s2-a99"),
        _call(7, 3, 17, "s3-a17"),  # same request id as call 0: arrival order decides
    ]
    log = CallLog(every=3)  # compacts after the 2nd and 3rd extend below, the rest at rows()
    for part in (calls[:2], calls[2:3], calls[3:6], calls[6:]):
        log.extend(part)
    assert len(log._batches) == 2 and log._pending  # some calls really were compacted before rows()
    got = log.rows(100).to_pydict()
    want = call_rows(calls, 100)
    assert list(got) == list(want)
    assert got == want
    assert sorted(got["call_id"]) == list(range(100, 108))  # every call once
    assert log.n == 8 and log.tokens == sum(c[2].prompt_tokens + c[2].completion_tokens for c in calls)
    assert [r.request_id for r in log.kept] == ["s3-a40"]
    assert log.rows(100).to_pydict() == want  # asking again (the abort path) gives the same rows
    in_order = [_call(i, 1, i, f"r{i}") for i in range(7)]  # already in call_rows' order: nothing moved
    log = CallLog(every=3)
    log.extend(in_order)
    assert log.rows(0).to_pydict() == call_rows(in_order, 0)


def test_health_check_reads_the_kept_failures() -> None:
    llm = type("L", (), {"max_invalid_fraction": 0.2})()
    log = CallLog(every=2)
    log.extend([_call(i, 0, i, f"r{i}", ok=i != 3) for i in range(5)])
    assert step_problem(log.n, log.kept, llm, 0) is None  # 1 of 5 failed: not more than 20%
    log.extend([_call(9, 0, 9, "r9", ok=False)])
    problem = step_problem(log.n, log.kept, llm, 0)
    assert problem is not None and "2 of 6 model calls" in str(problem) and "timeout" in str(problem)


def _run(path: Path, every: int | None, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], list[int]]:
    """Digest and calls per step; ``every=None``: the log before CallLog (all calls, call_rows at commit)."""
    if every is None:
        monkeypatch.setattr(call_log, "COMPACT_EVERY", 10**9)
        monkeypatch.setattr(CallLog, "rows", lambda self, first: pa.table(call_rows(self._pending, first)))
    else:
        monkeypatch.setattr(call_log, "COMPACT_EVERY", every)
    cfg = small_config(
        steps=3,
        population={"n_agents": 60, "mean_activity": 0.5},
        policy={"kind": "llm"},
        llm={"backend": "random", "max_concurrency": 1},
        roles={"fact_checker": 0.1},
        surveys=[{"question": "How do you feel?", "every": 1}],
        interviews=[{"step": 1, "agents": [0, 1, 2], "question": "Why?"}],  # rows name their call ids
    )
    sim = Simulation(cfg, path)
    stats = sim.run()
    return trace_digest(path / "trace.duckdb"), [s.llm_calls for s in stats]


def test_step_with_more_calls_than_a_chunk_writes_every_row_once(tmp_path: Path, monkeypatch) -> None:
    chunked, per_step = _run(tmp_path / "chunked", 4, monkeypatch)
    whole, per_step_whole = _run(tmp_path / "whole", None, monkeypatch)
    assert per_step == per_step_whole and min(per_step) > 3 * 4  # each step held several chunks
    whole.pop("runs"), chunked.pop("runs")
    assert chunked == whole  # the trace of the whole list, call ids included
    con = duckdb.connect(str(tmp_path / "chunked" / "trace.duckdb"), read_only=True)
    try:
        ids = [r[0] for r in con.execute("SELECT call_id FROM llm_calls ORDER BY call_id").fetchall()]
        assert ids == list(range(sum(per_step)))  # every call exactly once, ids contiguous
        by_step = con.execute("SELECT step, count(*) FROM llm_calls GROUP BY step ORDER BY step").fetchall()
        assert [n for _, n in by_step] == per_step
        asked = con.execute("SELECT count(DISTINCT request_id) FROM llm_calls WHERE metadata->>'survey'").fetchone()
        assert asked is not None and asked[0] > 0  # survey calls (added after the agents' chunks) are in it
        linked = con.execute("SELECT count(*) FROM interviews i JOIN llm_calls c USING (call_id)").fetchone()
        assert linked is not None and linked[0] == 3  # interviews name their calls' ids
    finally:
        con.close()
