"""Issue 31, builds 6 and 9: the circuit breaker opens on a failure rate, and request deadlines run from
each request's own start.

On 1969b96 the breaker counted "consecutive" failures in completion order: ten requests that hung
together and timed out together (a slow tail finishes last) opened it at 3.7% failures, and a run
against a healthy server with a slow tail stopped with exit 4. ``llm.request_deadline_s`` was measured
from the start of the step's whole batch, so requests queued behind others lost their retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import duckdb
import pytest

from socium.config.loading import config_from_dict
from socium.llm.base import generate_sync
from socium.llm.types import LLMRequest, LLMResult, user_request
from socium.llm.wrappers import CircuitBreaker, RetryingBackend
from socium.simulator.simulation import Simulation
from socium.testing.fault_server import FaultyOpenAIServer


class PatternBackend:
    """Answers request ``q<i>`` with a timeout when ``fails(i)``, else ok; results in request order (the
    order a breaker sees them, i.e. completion order)."""

    model_name = "pattern"

    def __init__(self, fails) -> None:
        self.fails = fails
        self.calls = 0

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        out = []
        for r in requests:
            self.calls += 1
            if self.fails(int(r.request_id.lstrip("qp"))):
                out.append(LLMResult.failure(r.request_id, "timeout after 60s", "timeout"))
            else:
                out.append(LLMResult(request_id=r.request_id, text="ok", prompt_tokens=1, completion_tokens=1))
        return out

    def close(self) -> None:
        pass


def reqs(n: int, prefix: str = "q") -> list[LLMRequest]:
    return [user_request(f"{prefix}{i}", f"prompt {i}") for i in range(n)]


def test_a_slow_tail_timing_out_together_does_not_open_the_breaker() -> None:
    # 270 requests: the 10 that hung finish last, together (3.7% failures, as in the report)
    cb = CircuitBreaker(PatternBackend(lambda i: i >= 260), failure_threshold=10, reset_after_s=30)
    got = generate_sync(cb, reqs(270))
    assert sum(not r.ok for r in got) == 10
    assert cb.state == "closed" and cb.times_opened == 0
    assert all(r.ok for r in generate_sync(cb, reqs(5, "p")))  # the next step is served, not failed fast


def test_a_server_that_is_down_still_opens_it_after_threshold_failures() -> None:
    inner = PatternBackend(lambda i: True)
    cb = CircuitBreaker(inner, failure_threshold=10, reset_after_s=30)
    generate_sync(cb, reqs(10))
    assert cb.state == "open" and "10 of the last 10 requests failed" in cb.opened_by
    blocked = generate_sync(cb, reqs(3, "p"))
    assert [r.error_kind for r in blocked] == ["circuit_open"] * 3 and "timeout" in blocked[0].error


@pytest.mark.parametrize(("every", "opens"), [(2, True), (3, False), (10, False)])
def test_it_opens_at_half_of_the_window_failing(every, opens) -> None:
    cb = CircuitBreaker(PatternBackend(lambda i: i % every == 0), failure_threshold=10, window=100)
    generate_sync(cb, reqs(300))
    assert (cb.times_opened > 0) is opens


class QueuedBackend:
    """Each batch waits ``queue_s`` on a fake clock (requests queued behind a concurrency limit), then every
    request takes ``latency_s`` of its own; ``q0`` fails once with a retryable error."""

    model_name = "queued"

    def __init__(self, clock: list[float], queue_s: float, latency_s: float) -> None:
        self.clock, self.queue_s, self.latency_s = clock, queue_s, latency_s
        self.seen: dict[str, int] = {}

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        self.clock[0] += self.queue_s + self.latency_s
        out = []
        for r in requests:
            n = self.seen[r.request_id] = self.seen.get(r.request_id, 0) + 1
            if r.request_id == "q0" and n == 1:
                out.append(LLMResult.failure(r.request_id, "HTTP 503", "server", latency_s=self.latency_s))
            else:
                out.append(
                    LLMResult(request_id=r.request_id, text="ok", prompt_tokens=1, completion_tokens=1, latency_s=1)
                )
        return out

    def close(self) -> None:
        pass


async def _no_sleep(_d: float) -> None:
    return None


def test_the_deadline_runs_from_the_requests_own_start_not_the_batchs() -> None:
    now = [0.0]
    inner = QueuedBackend(now, queue_s=100.0, latency_s=1.0)  # waited 100 s for a slot, answered in 1 s
    be = RetryingBackend(
        inner, max_attempts=3, base_delay_s=0.1, deadline_s=50.0, sleep=_no_sleep, clock=lambda: now[0]
    )
    got = generate_sync(be, reqs(4))
    assert all(r.ok for r in got), [r.error for r in got]
    assert inner.seen["q0"] == 2


def test_a_request_past_its_own_deadline_is_not_retried() -> None:
    now = [0.0]
    inner = QueuedBackend(now, queue_s=0.0, latency_s=60.0)  # its own first attempt took 60 s
    be = RetryingBackend(
        inner, max_attempts=3, base_delay_s=0.1, deadline_s=50.0, sleep=_no_sleep, clock=lambda: now[0]
    )
    got = generate_sync(be, reqs(2))
    assert not got[0].ok and "deadline would pass" in got[0].error and got[1].ok


class SlowAndFlaky:
    """``q0`` is slow (0.3 s); ``q1`` fails at once, then answers; records the order things happen."""

    model_name = "slowflaky"

    def __init__(self) -> None:
        self.events: list[str] = []
        self.seen: dict[str, int] = {}

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        out = []
        for r in requests:
            n = self.seen[r.request_id] = self.seen.get(r.request_id, 0) + 1
            self.events.append(f"start {r.request_id}#{n}")
            if r.request_id == "q0":
                await asyncio.sleep(0.3)
            self.events.append(f"end {r.request_id}#{n}")
            if r.request_id == "q1" and n == 1:
                out.append(LLMResult.failure(r.request_id, "connection reset", "connection"))
            else:
                out.append(LLMResult(request_id=r.request_id, text="ok", prompt_tokens=1, completion_tokens=1))
        return out

    def close(self) -> None:
        pass


def test_per_request_retries_do_not_wait_for_the_slowest_of_the_batch() -> None:
    inner = SlowAndFlaky()
    be = RetryingBackend(inner, max_attempts=3, base_delay_s=0.001, per_request=True)
    got = generate_sync(be, reqs(2))
    assert all(r.ok for r in got)
    assert inner.events.index("start q1#2") < inner.events.index("end q0#1")


def test_a_run_against_a_server_with_a_hanging_tail_completes(tmp_path) -> None:
    """Every step ~15 of 300 requests hang and time out together: the run must finish, not exit 4."""
    with FaultyOpenAIServer({"hang": 0.05}, seed=4, hang_s=30.0) as srv:
        cfg = config_from_dict(
            {
                "name": "tail",
                "seed": 3,
                "steps": 2,
                "population": {"n_agents": 300, "mean_activity": 1.0, "activity": "uniform"},
                "graph": {"kind": "random_out", "params": {"out_degree": 3}},
                "policy": {"kind": "llm"},
                "llm_agents": {"reask": False},
                "llm": {
                    "backend": "openai",
                    "base_urls": [srv.base_url],
                    "model": "m",
                    "timeout_s": 0.5,
                    "retries": 0,
                    "max_concurrency": 64,
                    "circuit_breaker_threshold": 10,
                },
                "seed_posts": [{"author": 0, "content": "hello"}],
            }
        )
        Simulation(cfg, tmp_path / "r").run()
    assert srv.injected["hang"] >= 20
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM steps WHERE step >= 0").fetchone()[0] == 2
    con.close()


class LatencyBackend:
    """Answers each request with the next (ok, latency_s) of a script; the breaker reads the clock below."""

    model_name = "latency"

    def __init__(self) -> None:
        self.script: list[tuple[bool, float]] = []

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        out = []
        for r in requests:
            ok, latency = self.script.pop(0)
            if ok:
                out.append(LLMResult(request_id=r.request_id, text="ok", latency_s=latency))
            else:
                out.append(LLMResult.failure(r.request_id, f"timeout after {latency}s", "timeout", latency_s=latency))
        return out

    def close(self) -> None:
        pass


@pytest.mark.parametrize(("hung_sent_at", "opens"), [(-5.0, False), (0.5, True)])
def test_the_window_is_the_latest_sent_so_hung_requests_finishing_together_do_not_open_it(hung_sent_at, opens) -> None:
    """At 10^4 agents, hangs (3.5%) came to hold most connection slots and for a while almost every request to
    *finish* was a timeout: a window in completion order opened (benchmarks/drill_llm_faults.py --scale). A
    request that hung was sent before those in the window and does not count; a server that hangs on
    every request sends its timeouts after the window's requests, and still opens it."""
    now = [0.0]
    inner = LatencyBackend()
    cb = CircuitBreaker(inner, failure_threshold=10, reset_after_s=30, clock=lambda: now[0])
    inner.script = [(True, 0.1)] * 100  # a healthy stretch: answered 0.1 s after they were sent
    generate_sync(cb, reqs(100))
    now[0] = 10.0  # 60 requests time out together after 10 s, sent at 10 - latency
    inner.script = [(False, 10.0 - hung_sent_at)] * 60
    got = generate_sync(cb, reqs(60, "p"))
    assert all(r.error_kind == "timeout" for r in got)
    assert (cb.times_opened > 0) is opens and (cb.state == "open") is opens
