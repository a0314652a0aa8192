"""A resumed run serves the answers its stopped step had received from the trace and asks only the rest
(issue 36, left over; ``socium.llm.resume_replay``).

Before, ``socium run --resume`` redid the stopped step by asking the server for every call again, the ones
already answered (and logged as the aborted step's calls) included: paid twice, and with a server that
answers differently each time, the resumed agents were told something else. Every check here counts
requests the loopback server received; none depends on timing.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import duckdb
import yaml
from test_reliability_signal import HoldingServer, _socium

from socium.config.loading import config_from_dict
from socium.llm.cache import MemoryCache
from socium.llm.factory import build_backend
from socium.llm.fake_server import FakeOpenAIServer
from socium.llm.model_free import ScriptedBackend
from socium.llm.resume_replay import ResumeReplay, StoppedAnswers, current, serving
from socium.llm.types import user_request
from socium.llm.wrappers import find_wrapper
from socium.simulator.simulation import Simulation
from socium.trace.store import VOLATILE, trace_digest

STEPS, CUT = 4, 2  # the run is stopped in step CUT
SLOTS = 4  # llm.max_concurrency: a request is sent only once an answer before it was read (see the test)


def _cfg(url: str) -> dict:
    return {
        "name": "resume-replay",
        "seed": 3,
        "steps": STEPS,
        "population": {"n_agents": 30, "mean_activity": 0.6},
        "graph": {"kind": "random_out", "params": {"out_degree": 4}},
        "policy": {"kind": "llm"},
        "llm": {"backend": "openai", "base_urls": [url], "model": "m", "max_concurrency": SLOTS, "timeout_s": 300.0},
        "seed_posts": [{"author": i, "content": f"opening post {i}"} for i in range(4)],
    }


def _q(path: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(path / "trace.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


COMMITTED = "metadata->>'aborted_step' IS NULL"
REPLAYED = "outcome = 'ok' AND attempts = 0"


class ArrivalHoldingServer(HoldingServer):
    """Holds the answers of the requests that *arrived* after ``hold_after`` (``HoldingServer`` looks at the
    count when it answers, so a burst arriving together is held whole)."""

    def __init__(self, hold_after: int, **kwargs: Any) -> None:
        super().__init__(hold_after, **kwargs)
        self._late: set[asyncio.Task[Any]] = set()  # handlers of requests that arrived late (server loop only)

    def reply_for(self, body: dict[str, Any]) -> Any:
        if self.n_requests > self.hold_after:  # just counted: this request's arrival number
            task = asyncio.current_task()
            assert task is not None
            self._late.add(task)
        return super().reply_for(body)

    async def _decode(self, delay: float) -> None:
        task = asyncio.current_task()
        if task in self._late:
            self._late.discard(task)  # type: ignore[arg-type]
            self.held += 1
            while not self.release.is_set() and not self._stopping:
                await asyncio.sleep(0.01)
            self.held -= 1
        await FakeOpenAIServer._decode(self, delay)


def _stop_when_held(proc: subprocess.Popen[str], srv: HoldingServer, received: int, held: int) -> str:
    """SIGTERM once the server has received ``received`` requests and holds ``held`` answers (the stopped step's
    requests all on the wire, the answered ones answered), then let it answer again."""
    deadline = time.monotonic() + 240
    try:
        while (srv.n_requests, srv.held) != (received, held):
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, ((srv.n_requests, srv.held), (received, held))
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        srv.release.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out


def comparable(path: Path) -> dict[str, str]:
    """Every table's digest; the call log's without the stopped step's rows (``aborted_step``), ``call_id``
    (those rows shift the later ids) and ``attempts`` (a replayed answer's row sent nothing: checked apart)."""
    digest = trace_digest(path / "trace.duckdb")
    cols = [
        c for (c, *_r) in _q(path, "DESCRIBE llm_calls") if c not in VOLATILE["llm_calls"] | {"call_id", "attempts"}
    ]
    digest["llm_calls"] = repr(_q(path, f"SELECT {', '.join(cols)} FROM llm_calls WHERE {COMMITTED} ORDER BY ALL"))
    return digest


def test_resume_serves_the_stopped_steps_answers_and_asks_the_server_only_the_rest(tmp_path):
    with ArrivalHoldingServer(hold_after=10**9, delay_s=0.05) as srv:
        ref = tmp_path / "ref"  # the uninterrupted run, against the same server (same config, same URL)
        Simulation(config_from_dict(_cfg(srv.base_url)), ref).run()
        per_step = dict(_q(ref, "SELECT step, sum(attempts) FROM llm_calls GROUP BY ALL"))
        assert srv.n_requests == sum(per_step.values())
        # no re-asks in step CUT (every fake answer is valid), so the step's requests all go out at once
        assert _q(ref, f"SELECT count(*) FROM llm_calls WHERE step = {CUT} AND request_id NOT LIKE '%-0'")[0][0] == 0
        before = sum(n for s, n in per_step.items() if s < CUT)
        from_cut = sum(n for s, n in per_step.items() if s >= CUT)
        answered = per_step[CUT] // 2
        assert answered > 0 and answered + SLOTS < per_step[CUT]
        n0 = srv.n_requests
        srv.hold_after = n0 + before + answered  # the rest of step CUT is held until the run is stopped
        # With SLOTS connection slots, the client sends a request only when an answer before it was read (and
        # logged: the slot is freed on the way back up to the call log, in one turn of its loop). So once the
        # server holds SLOTS requests that arrived after the `answered` ones, all of those were read: known by
        # counting, not by waiting.
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(_cfg(srv.base_url)))
        out = tmp_path / "run"
        proc = _socium(str(path), "--out", str(out))
        log = _stop_when_held(proc, srv, n0 + before + answered + SLOTS, SLOTS)
        stopped = srv.received() - n0
        assert f"stopped after step {CUT - 1}" in log and "Traceback" not in log, log
        assert stopped == before + answered + SLOTS
        ok_before = _q(
            out, f"SELECT count(*) FROM llm_calls WHERE metadata->>'aborted_step' = '{CUT}' AND outcome = 'ok'"
        )
        kept = int(ok_before[0][0])
        assert kept == answered  # the held ones are `interrupted` rows: asked again on resume
        # resumed: only what the stopped step had no answer for goes to the server
        sim = Simulation(config_from_dict(_cfg(srv.base_url)), out, resume=True)
        assert any(f"step {CUT}: {kept} answers" in n for n in sim.notes), sim.notes
        stats = sim.run()
        asked = srv.n_requests - n0 - stopped
    assert asked == from_cut - kept, (asked, from_cut, kept)  # before: from_cut (every answered call asked again)
    assert stats[0].step == CUT and stats[0].replayed_calls == kept and all(s.replayed_calls == 0 for s in stats[1:])
    # the trace: every request the server received is counted once in sum(attempts); replayed rows sent nothing
    assert _q(out, "SELECT sum(attempts) FROM llm_calls")[0][0] == stopped + asked
    replayed = _q(out, f"SELECT request_hash, response, step FROM llm_calls WHERE {REPLAYED} AND {COMMITTED}")
    assert len(replayed) == kept and {r[2] for r in replayed} == {CUT}
    recorded = dict(_q(out, f"SELECT request_hash, response FROM llm_calls WHERE outcome = 'ok' AND NOT ({COMMITTED})"))
    assert all(recorded[h] == text for h, text, _s in replayed)  # the answers the stopped run had received
    # and the resumed run equals the uninterrupted one, table for table (attempts: the replayed rows' 0 aside)
    assert comparable(out) == comparable(ref)
    got = dict(_q(out, f"SELECT request_id, attempts FROM llm_calls WHERE {COMMITTED}"))
    want = dict(_q(ref, "SELECT request_id, attempts FROM llm_calls"))
    ids = {r[0] for r in _q(out, f"SELECT request_id FROM llm_calls WHERE {REPLAYED} AND {COMMITTED}")}
    assert got == {rid: 0 if rid in ids else n for rid, n in want.items()}
    # a later resume's budget counts each answer's tokens once (in the stopped step's row)
    from socium.trace.queries.calls import spend_by_backend

    con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
    try:
        spent = spend_by_backend(con)["default"]
    finally:
        con.close()
    ref_tokens = _q(ref, "SELECT sum(prompt_tokens + completion_tokens) FROM llm_calls")[0][0]
    extra = _q(
        out, f"SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM llm_calls WHERE NOT ({COMMITTED})"
    )
    assert spent == (stopped + asked, ref_tokens - sum_replayed_tokens(out) + extra[0][0])
    from socium.reporting.card import simulation_card

    assert simulation_card(out)["llm_usage"]["replayed_calls"] == kept
    assert "replayed_calls" not in simulation_card(ref)["llm_usage"]


def sum_replayed_tokens(path: Path) -> int:
    sql = f"SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM llm_calls WHERE {REPLAYED} AND {COMMITTED}"
    return int(_q(path, sql)[0][0])


def test_the_replay_layer_serves_recorded_keys_only_inside_a_resumed_step_and_passes_the_rest_on():
    def stack():
        cfg = {"backend": "scripted", "model": "s", "retries": 0, "scripted_responses": ['{"type": "do_nothing"}']}
        backend = build_backend(cfg, cache=MemoryCache())
        return backend, find_wrapper(backend, ScriptedBackend), find_wrapper(backend, ResumeReplay)

    backend, model, layer = stack()
    assert layer is not None  # build_backend puts it just inside the cache layer
    reqs = [user_request(f"r{i}", f"question {i}", seed=i) for i in range(3)]
    key = reqs[1].cache_key("s")
    record = StoppedAnswers.from_rows(CUT, [(key, "recorded", 5, 2, "stop", 7), ("other", "x", 1, 1, None, None)])
    asyncio.run(backend.generate(reqs))  # outside a resumed step: every request is asked
    assert [r.request_id for r in model.calls] == ["r0", "r1", "r2"] and layer.replayed == 0

    async def resumed():
        with serving(record):
            assert current() is record
            return await backend.generate(reqs)

    backend, model, layer = stack()
    got = asyncio.run(resumed())
    assert [r.request_id for r in model.calls] == ["r0", "r2"] and current() is None  # r1: from the record
    assert got[1].text == "recorded" and got[1].attempts == 0 and got[1].cached and got[1].request_id == "r1"
    assert (got[1].prompt_tokens, got[1].completion_tokens, got[1].finish_reason) == (5, 2, "stop")
    assert got[0].attempts == 1 and not got[0].cached and layer.replayed == 1
    # one Ray shard's part: its agents' answers and those made for no agent
    part = record.for_agents({7})
    assert part is not None and set(part.answers) == {key, "other"}
    other = record.for_agents({8})
    assert other is not None and set(other.answers) == {"other"}
    assert StoppedAnswers.from_rows(CUT, [(key, "x", 1, 1, None, 3)]).for_agents({4}) is None


def test_the_call_log_counts_replayed_answers_and_the_ray_budget_count_skips_them():
    from socium.agents.call_log import CallLog
    from socium.llm.budget_shares import count_calls
    from socium.llm.types import LLMResult
    from socium.llm.wrappers import BudgetLedger

    req = user_request("a", "q")
    served = StoppedAnswers.from_rows(0, [("k", "t", 3, 4, None, None)]).result("k", "a")
    assert served is not None
    fresh = LLMResult(request_id="a", text="t", prompt_tokens=3, completion_tokens=4)
    log = CallLog()
    log.extend([("k", req, served, "m"), ("k2", req, fresh, "m")])
    assert log.replayed == 1 and log.n == 2
    led = BudgetLedger(max_calls=10, max_tokens=100)
    count_calls({"default": led}, [("k", req, served, "m"), ("k2", req, fresh, "m")])
    assert (led.spent_calls, led.spent_tokens) == (1, 7)  # the served answer was paid in the stopped step


def test_a_sync_call_made_inside_a_running_loop_keeps_the_answers_being_served():
    """``run_coro_sync`` inside a running loop runs the coroutine on a worker thread: it gets the caller's context
    (without it, a policy called that way, as in Jupyter, asked the stopped step's answered calls again)."""
    from socium.llm.base import run_coro_sync

    record = StoppedAnswers(0, {})

    async def seen() -> StoppedAnswers | None:
        return current()

    async def outer() -> StoppedAnswers | None:
        with serving(record):
            return run_coro_sync(seen())

    assert asyncio.run(outer()) is record
