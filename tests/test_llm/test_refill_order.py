"""Issue 41, third round: a slot freed by an answer is refilled (the next request sent) before that answer,
or any other answer of the same wave, is parsed; and the order of sending leaves the trace unchanged.

Order is checked by counting events (sends seen by the server, parses seen by the policy), never by time."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import duckdb
import pytest

from socium.agents import llm_policy
from socium.agents.llm_policy import LLMPolicy
from socium.config.loading import config_from_dict
from socium.llm.base import LLMBackend
from socium.llm.priority_gate import PriorityGate, refills_sent
from socium.llm.types import LLMRequest, LLMResult
from socium.llm.wrappers import CachingBackend, ConcurrencyLimit
from socium.simulator.simulation import Simulation


def test_releasers_wait_until_the_slots_they_freed_are_refilled() -> None:
    """Two answers land in one turn: both refills run before either answer is parsed (without
    refills_sent, the loop's FIFO order parses both answers first)."""

    async def go(refill: bool) -> list[str]:
        gate = PriorityGate(2)
        log: list[str] = []
        landed = asyncio.get_running_loop().create_future()

        async def holder(name: str) -> None:
            await gate.acquire(retry=False)
            await landed  # the wave's answers arrive together
            gate.release()
            if refill:
                await refills_sent()
            log.append(f"parse {name}")

        async def waiter(name: str) -> None:
            await gate.acquire(retry=False)
            log.append(f"send {name}")
            gate.release()

        tasks = [asyncio.create_task(holder(n)) for n in ("a", "b")]
        await asyncio.sleep(0)
        tasks += [asyncio.create_task(waiter(n)) for n in ("c", "d")]
        await asyncio.sleep(0)
        assert gate.waiting == (0, 2)
        landed.set_result(None)
        await asyncio.gather(*tasks)
        assert gate.free == 2
        await refills_sent()  # nothing pending: returns at once
        return log

    assert asyncio.run(go(True)) == ["send c", "send d", "parse a", "parse b"]
    assert asyncio.run(go(False)) == ["parse a", "parse b", "send c", "send d"]


def test_a_cancelled_waiter_does_not_hold_up_refills_sent() -> None:
    async def go() -> list[str]:
        gate = PriorityGate(1)
        log: list[str] = []
        await gate.acquire(retry=False)
        gone = asyncio.create_task(gate.acquire(retry=False))
        nxt = asyncio.create_task(gate.acquire(retry=False))
        await asyncio.sleep(0)
        gate.release()  # handed to `gone` ...
        gone.cancel()  # ... which is cut off before it runs: it passes the slot on to `nxt`
        await refills_sent()
        log.append(f"after refill, next holds the slot: {nxt.done()}")
        with pytest.raises(asyncio.CancelledError):
            await gone
        gate.release()
        return log

    assert asyncio.run(go()) == ["after refill, next holds the slot: True"]


class _WaveServer(LLMBackend):
    """Answers requests in waves of ``size`` (all of a wave in one turn, like a GPU batch); each answer a
    function of the request alone. Logs each send."""

    model_name = "wave"

    def __init__(self, size: int, total: int, log: list[str]) -> None:
        self.size, self.left, self.log = size, total, log
        self.wave: list[asyncio.Future[None]] = []

    async def generate(self, requests: list[LLMRequest]) -> list[LLMResult]:  # type: ignore[override]
        (req,) = requests
        self.log.append(f"send {req.metadata['agent_id']}")
        fut = asyncio.get_running_loop().create_future()
        self.wave.append(fut)
        self.left -= 1
        if len(self.wave) == self.size or self.left == 0:  # the wave's answers land together, in a later turn
            asyncio.get_running_loop().call_soon(_land, self.wave)
            self.wave = []
        await fut
        return [LLMResult(request_id=req.request_id, text='{"type": "do_nothing"}')]

    def close(self) -> None:
        pass


def _land(wave: list[asyncio.Future[None]]) -> None:
    for f in wave:
        f.set_result(None)


def _cfg(n: int, steps: int = 1) -> Any:
    return config_from_dict(
        {
            "name": "refill",
            "seed": 3,
            "steps": steps,
            "population": {"n_agents": n, "activity": "uniform", "mean_activity": 1.0},
            "graph": {"kind": "random_out", "params": {"out_degree": n - 1}},
            "recsys": {"kind": "chronological", "k": 3},
            "policy": {"kind": "llm"},
            "llm": {"backend": "random"},
            "seed_posts": [{"author": 0, "content": "a seed post"}],
        }
    )


def test_policy_sends_the_next_wave_before_parsing_the_last(tmp_path: Path, monkeypatch: Any) -> None:
    log: list[str] = []
    parse = llm_policy.validate_answer

    def logged(answer: Any, obs: Any, *a: Any) -> Any:
        log.append(f"parse {obs.agent_id}")
        return parse(answer, obs, *a)

    monkeypatch.setattr(llm_policy, "validate_answer", logged)
    n, slots = 8, 2
    cfg = _cfg(n)
    server = _WaveServer(slots, n, log)
    pol = LLMPolicy(cfg, backend_factory=lambda cache: CachingBackend(ConcurrencyLimit(server, slots), cache))
    Simulation(cfg, tmp_path / "r", policy=pol).run()
    sends = [e for e in log if e.startswith("send")]
    assert sends == [f"send {a}" for a in range(n)]  # one call per agent, in arrival order
    for wave in range(n // slots - 1):  # each wave's answers are parsed only after the next wave went out
        last_parse = max(log.index(f"parse {a}") for a in range(wave * slots, (wave + 1) * slots))
        first_parse = min(log.index(f"parse {a}") for a in range(wave * slots, (wave + 1) * slots))
        next_sends = [log.index(f"send {a}") for a in range((wave + 1) * slots, (wave + 2) * slots)]
        assert max(next_sends) < first_parse <= last_parse, log


def _calls(run: Path) -> list[tuple]:
    with duckdb.connect(str(run / "trace.duckdb"), read_only=True) as con:
        calls = con.execute(
            "SELECT step, agent_id, request_id, request_hash, params, prompt, response FROM llm_calls "
            "ORDER BY step, agent_id, request_id"
        ).fetchall()
        acts = con.execute("SELECT * FROM actions ORDER BY ALL").fetchall()
    return calls + acts


@pytest.mark.parametrize("slots", [1, 3])
def test_trace_is_the_same_whatever_the_order_of_sending(tmp_path: Path, slots: int, monkeypatch: Any) -> None:
    """The same requests (seeds from their keys) and the same answers (a function of the request) whether
    answers are parsed before or after the refills and at any number in flight: same llm_calls and actions."""
    cfg = _cfg(6, steps=2)

    def run(where: str, refill: bool) -> list[tuple]:
        if not refill:
            monkeypatch.setattr(llm_policy, "refills_sent", _no_wait)
        from socium.llm.model_free import RandomBackend  # lazy: the answers' source, a test helper here

        inner = RandomBackend(seed=5, model_name="random")
        pol = LLMPolicy(cfg, backend_factory=lambda cache: CachingBackend(ConcurrencyLimit(inner, slots), cache))
        Simulation(cfg, tmp_path / where, policy=pol).run()
        monkeypatch.undo()
        return _calls(tmp_path / where)

    with_refill, without = run("a", True), run("b", False)
    assert with_refill == without
    assert len([r for r in with_refill if isinstance(r[2], str) and r[2].startswith("s")]) >= 6


async def _no_wait() -> None:
    return None


def _chunked_run(tmp_path: Path, monkeypatch: Any, overlap: bool) -> tuple[list[str], list[tuple], int]:
    """12 agents in chunks of 4 (the floor: twice the 2 in flight), answers in waves of 2: the event log
    (observe / send / parse per agent), the trace's calls and actions, and how often ``executor.run`` ran."""
    from socium.simulator import step_agents  # lazy: only these tests look inside the step

    log: list[str] = []
    parse, observe = llm_policy.validate_answer, step_agents.StepAgents.observe

    def logged_parse(answer: Any, obs: Any, *a: Any) -> Any:
        log.append(f"parse {obs.agent_id}")
        return parse(answer, obs, *a)

    def logged_observe(self: Any, users: Any, *a: Any, **k: Any) -> Any:
        log.extend(f"observe {u}" for u in users.tolist())
        return observe(self, users, *a, **k)

    monkeypatch.setattr(llm_policy, "validate_answer", logged_parse)
    monkeypatch.setattr(step_agents.StepAgents, "observe", logged_observe)
    if not overlap:
        monkeypatch.setattr(step_agents.StepAgents, "overlapped_batch", lambda self, n: None)
    n = 12
    base = _cfg(n).model_dump(mode="json", exclude_none=True)
    cfg = config_from_dict(
        {
            **base,
            "llm": {**base["llm"], "max_concurrency": 2},
            "executor": {"step_chunk": 4, "concurrency_per_actor": 1},
        }
    )
    server = _WaveServer(2, n, log)
    pol = LLMPolicy(cfg, backend_factory=lambda cache: CachingBackend(ConcurrencyLimit(server, 2), cache))
    sim = Simulation(cfg, tmp_path / ("overlap" if overlap else "serial"), policy=pol)
    runs = 0
    inner = sim.executor.run

    def counted(obs: Any) -> Any:
        nonlocal runs
        runs += 1
        return inner(obs)

    sim.executor.run = counted  # type: ignore[method-assign]
    assert len(sim.agent_steps.chunks(sim.active_agents(0))) == 3
    sim.run()
    sim.close()
    monkeypatch.undo()
    return log, _calls(tmp_path / ("overlap" if overlap else "serial")), runs


def test_the_next_chunk_is_observed_and_sent_while_this_ones_answers_are_out(tmp_path: Path, monkeypatch: Any) -> None:
    """Chunks of a step overlap: chunk 1's agents are observed and its first requests sent before chunk 0's
    last answer is parsed (one after the other, nothing of chunk 1 happens before chunk 0 is done); the
    trace is the same either way."""
    log, trace, runs = _chunked_run(tmp_path, monkeypatch, overlap=True)
    serial_log, serial_trace, serial_runs = _chunked_run(tmp_path, monkeypatch, overlap=False)
    assert runs == 0 and serial_runs == 3  # the overlapped path decides without executor.run, chunk by chunk
    for got in (log, serial_log):  # every agent observed, sent and parsed once
        for what in ("observe", "send", "parse"):
            assert sorted(int(e.split()[1]) for e in got if e.startswith(what)) == list(range(12))

    def first(events: list[str], what: str, agents: range) -> int:
        return min(events.index(f"{what} {a}") for a in agents)

    def last(events: list[str], what: str, agents: range) -> int:
        return max(events.index(f"{what} {a}") for a in agents)

    chunk0, chunk1 = range(0, 4), range(4, 8)
    assert first(log, "observe", chunk1) < last(log, "parse", chunk0)
    assert first(log, "send", chunk1) < last(log, "parse", chunk0)
    assert first(serial_log, "observe", chunk1) > last(serial_log, "parse", chunk0)
    assert trace == serial_trace and trace
