"""Retry, circuit breaker, budget, concurrency, caching, round-robin and usage wrappers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest

from socium.errors import BudgetExceeded, LLMError
from socium.llm.base import check_results, generate_sync
from socium.llm.cache import MemoryCache
from socium.llm.model_free import GarbageBackend, LatencyBackend, ScriptedBackend
from socium.llm.parsing import parse_json_lenient
from socium.llm.types import LLMRequest, LLMResult, user_request
from socium.llm.usage import MeteredBackend
from socium.llm.wrappers import (
    BudgetLedger,
    CachingBackend,
    CircuitBreaker,
    ConcurrencyLimit,
    RetryingBackend,
    RoundRobinBackend,
    TokenBudget,
    max_request_tokens,
)

SCHEMA = {"type": "object", "properties": {"action": {"enum": ["post", "like"]}}, "required": ["action"]}


class FlakyBackend:
    """Fails each request ``fail_times`` times with ``kind`` before answering."""

    model_name = "flaky"

    def __init__(self, fail_times: int, kind: str = "rate_limit", retry_after_s: float | None = None) -> None:
        self.fail_times = fail_times
        self.kind = kind
        self.retry_after_s = retry_after_s
        self.seen: dict[str, int] = {}
        self.batches: list[int] = []

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        self.batches.append(len(requests))
        out = []
        for r in requests:
            n = self.seen.get(r.request_id, 0)
            self.seen[r.request_id] = n + 1
            if n < self.fail_times:
                out.append(LLMResult.failure(r.request_id, "nope", self.kind, retry_after_s=self.retry_after_s))  # type: ignore[arg-type]
            else:
                out.append(LLMResult(request_id=r.request_id, text="ok", prompt_tokens=3, completion_tokens=2))
        return out

    def close(self) -> None:
        pass


def reqs(n: int, prefix: str = "q") -> list[LLMRequest]:
    return [user_request(f"{prefix}{i}", f"prompt {i}") for i in range(n)]


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, d: float) -> None:
        self.delays.append(d)


def test_retry_succeeds_after_transient_429_and_honours_retry_after() -> None:
    inner = FlakyBackend(fail_times=2, retry_after_s=7.0)
    sleep = RecordingSleep()
    be = RetryingBackend(inner, max_attempts=4, base_delay_s=0.01, max_delay_s=10.0, seed=3, sleep=sleep)
    res = generate_sync(be, reqs(3))
    assert all(r.ok and r.attempts == 3 for r in res)
    assert len(sleep.delays) == 6 and all(d >= 7.0 for d in sleep.delays)
    assert inner.batches[0] == 3  # the batch went out whole first


def test_retry_after_is_capped_by_max_delay_and_deadline_stops_retrying() -> None:
    # a server asking to come back in a day must not park the run: each wait is at most max_delay_s
    sleep = RecordingSleep()
    be = RetryingBackend(
        FlakyBackend(fail_times=2, retry_after_s=86400.0),
        max_attempts=4,
        base_delay_s=0.01,
        max_delay_s=2.0,
        seed=3,
        sleep=sleep,
    )
    (res,) = generate_sync(be, reqs(1))
    assert res.ok and res.attempts == 3 and sleep.delays == [2.0, 2.0]
    # a total deadline: no retry starts that would end past it; the reason says so
    sleep = RecordingSleep()
    be = RetryingBackend(
        FlakyBackend(fail_times=9, kind="server", retry_after_s=5.0),
        max_attempts=9,
        max_delay_s=5.0,
        deadline_s=12.0,
        sleep=sleep,
        clock=lambda: sum(sleep.delays),
    )
    (res,) = generate_sync(be, reqs(1))
    assert not res.ok and res.attempts == 3 and sleep.delays == [5.0, 5.0]
    assert "deadline" in (res.error or "")


def test_retry_gives_up_after_max_attempts_and_skips_client_errors() -> None:
    sleep = RecordingSleep()
    be = RetryingBackend(
        FlakyBackend(fail_times=10, kind="server"),
        max_attempts=3,
        base_delay_s=1.0,
        max_delay_s=1.5,
        seed=0,
        sleep=sleep,
    )
    (res,) = generate_sync(be, reqs(1))
    assert not res.ok and res.attempts == 3
    assert sleep.delays[0] <= 1.0 and all(0.5 <= d <= 1.5 for d in sleep.delays)

    client = FlakyBackend(fail_times=10, kind="client")
    (res,) = generate_sync(RetryingBackend(client, sleep=RecordingSleep()), reqs(1))
    assert res.attempts == 1 and client.seen == {"q0": 1}


def test_retry_jitter_is_seeded() -> None:
    def delays(seed: int) -> list[float]:
        s = RecordingSleep()
        generate_sync(RetryingBackend(FlakyBackend(3, "timeout"), max_attempts=4, seed=seed, sleep=s), reqs(1))
        return s.delays

    assert delays(5) == delays(5) and delays(5) != delays(6)


def test_circuit_breaker_opens_fails_fast_and_recovers() -> None:
    now = [0.0]
    inner = FlakyBackend(fail_times=1, kind="server")
    cb = CircuitBreaker(inner, failure_threshold=3, reset_after_s=10, clock=lambda: now[0])
    first = generate_sync(cb, reqs(3, "a"))  # three first-time failures open it
    assert all(r.error_kind == "server" for r in first) and cb.state == "open"
    calls_before = sum(inner.batches)
    blocked = generate_sync(cb, reqs(5, "b"))
    assert all(r.error_kind == "circuit_open" and not r.retryable for r in blocked)
    assert sum(inner.batches) == calls_before  # failed fast: inner never called
    now[0] = 11.0
    assert cb.state == "half_open"
    probe = generate_sync(cb, reqs(2, "a"))  # a0 answered on its second call: the probe succeeds
    assert all(r.ok for r in probe) and cb.state == "closed"


def test_circuit_breaker_failed_probe_reopens() -> None:
    now = [0.0]
    cb = CircuitBreaker(
        FlakyBackend(fail_times=99, kind="timeout"), failure_threshold=2, reset_after_s=5, clock=lambda: now[0]
    )
    generate_sync(cb, reqs(2))
    now[0] = 6.0
    res = generate_sync(cb, reqs(3, "p"))
    assert res[0].error_kind == "timeout" and [r.error_kind for r in res[1:]] == ["circuit_open"] * 2
    assert cb.state == "open"


def test_retry_stops_at_open_circuit() -> None:
    inner = FlakyBackend(fail_times=99, kind="server")
    be = RetryingBackend(
        CircuitBreaker(inner, failure_threshold=2, reset_after_s=60), max_attempts=10, sleep=RecordingSleep()
    )
    res = generate_sync(be, reqs(2))
    assert all(r.error_kind == "circuit_open" for r in res)
    assert sum(inner.batches) == 2  # once each; every retry hit the open breaker


def test_token_budget_reserves_the_worst_case_and_is_never_passed() -> None:
    inner = ScriptedBackend(["one two three"])  # 3 completion + 2 prompt tokens per call
    one = max_request_tokens(reqs(1)[0])  # prompt bytes + template allowance + max_tokens
    tb = TokenBudget(inner, max_total_tokens=2 * one + 3)
    generate_sync(tb, reqs(2))  # 10 tokens really used
    assert tb.used_tokens == 10
    with pytest.raises(BudgetExceeded, match="token budget"):  # 10 + 2 worst cases would not fit
        generate_sync(tb, reqs(2, "x"))
    assert len(inner.calls) == 2  # refused before any of the batch was sent


def test_call_budget_refuses_batch_that_does_not_fit() -> None:
    inner = ScriptedBackend(["x"])
    tb = TokenBudget(inner, max_calls=5)
    generate_sync(tb, reqs(4))
    with pytest.raises(BudgetExceeded, match="call budget"):
        generate_sync(tb, reqs(2, "z"))
    assert len(inner.calls) == 4
    generate_sync(tb, reqs(1, "w"))


def test_budget_is_exact_under_concurrency_counts_retries_and_starts_from_spent() -> None:
    # 40 concurrent requests against a budget of 25 calls of which 5 were spent before (a resumed
    # run): exactly 20 calls go out, the rest are typed 'budget' failures, never sent.
    ledger = BudgetLedger(max_calls=25, spent_calls=5)
    be = RetryingBackend(
        TokenBudget(FlakyBackend(fail_times=1, kind="server"), ledger=ledger, typed=True),
        max_attempts=3,
        sleep=RecordingSleep(),
    )
    res = generate_sync(be, reqs(40))
    sent = [r for r in res if r.ok]
    refused = [r for r in res if r.error_kind == "budget"]
    assert ledger.spent_calls == 25 and ledger.reserved_calls == 0
    assert sum(r.attempts for r in sent) + 5 <= 25 and len(sent) + len(refused) == 40
    assert all("call budget spent" in (r.error or "") for r in refused)
    # the same with a slow inner backend: reservations, not results, decide
    inner = LatencyBackend(0.01)
    tb = TokenBudget(inner, ledger=BudgetLedger(max_calls=7), typed=True)
    res = generate_sync(ConcurrencyLimit(tb, 64), reqs(30, "c"))
    assert sum(r.ok for r in res) == 7 and inner.calls == 7


def test_cache_hit_avoids_inner_call_and_dedupes_batch() -> None:
    inner = ScriptedBackend(lambda r: f"answer to {r.messages[-1].content}")
    cache = MemoryCache()
    be = CachingBackend(inner, cache)
    a = [user_request("a1", "same"), user_request("a2", "same"), user_request("a3", "other")]
    res = generate_sync(be, a)
    assert len(inner.calls) == 2  # duplicate within the batch sent once
    assert [r.request_id for r in res] == ["a1", "a2", "a3"]
    assert res[1].cached and res[1].text == res[0].text == "answer to same"
    res2 = generate_sync(be, [user_request("b1", "other", metadata={"agent_id": 9})])
    assert len(inner.calls) == 2 and res2[0].cached and res2[0].request_id == "b1"
    assert res2[0].text == "answer to other" and res2[0].attempts == 0
    # a different sampling parameter is a different question
    generate_sync(be, [user_request("c1", "other", temperature=0.1)])
    assert len(inner.calls) == 3


def test_cache_does_not_store_failures() -> None:
    inner = FlakyBackend(fail_times=1, kind="server")
    cache = MemoryCache()
    be = CachingBackend(inner, cache)
    (r1,) = generate_sync(be, reqs(1))
    (r2,) = generate_sync(be, reqs(1))
    assert not r1.ok and r2.ok and not r2.cached and len(cache) == 1


def test_concurrency_limit_caps_in_flight() -> None:
    inner = LatencyBackend(0.02)
    be = ConcurrencyLimit(inner, max_concurrency=4)

    async def two_callers() -> list[list[LLMResult]]:
        return list(await asyncio.gather(be.generate(reqs(10, "x")), be.generate(reqs(10, "y"))))

    out = asyncio.run(two_callers())
    assert inner.max_in_flight == 4 and inner.calls == 20
    assert [r.request_id for r in out[0]] == [f"x{i}" for i in range(10)]
    # a second event loop gets a fresh semaphore rather than an "attached to another loop" error
    assert len(generate_sync(be, reqs(3))) == 3


def test_round_robin_spreads_and_keeps_order() -> None:
    a, b, c = (ScriptedBackend(lambda r, n=n: n, model_name="m") for n in "abc")
    rr = RoundRobinBackend([a, b, c])
    res = generate_sync(rr, reqs(7))
    assert [r.request_id for r in res] == [f"q{i}" for i in range(7)]
    assert [r.text for r in res] == list("abcabca")
    res = generate_sync(rr, reqs(2, "n"))
    assert [r.text for r in res] == ["b", "c"]  # continues where the last batch stopped


def test_garbage_through_retry_every_request_gets_one_result() -> None:
    inner = GarbageBackend(seed=11, error_rate=0.4, garbage_rate=0.3, retry_after_s=0.0)
    metered = MeteredBackend(RetryingBackend(inner, max_attempts=3, base_delay_s=0.0, sleep=RecordingSleep()))
    batch = [user_request(f"g{i}", f"p{i}", json_schema=SCHEMA) for i in range(300)]
    res = generate_sync(metered, batch)
    assert [r.request_id for r in res] == [r.request_id for r in batch]
    parsed = failed = unparsable = 0
    for r in res:
        if not r.ok:
            failed += 1
            continue
        try:
            assert parse_json_lenient(r.text)["action"] in ("post", "like")
            parsed += 1
        except ValueError:
            unparsable += 1
    assert parsed + failed + unparsable == 300
    assert failed < 300 * 0.4 * 0.4  # retries recovered most transient failures
    assert inner.calls > 300 and parsed > 100 and unparsable > 30
    s = metered.stats.summary()
    assert s["calls"] == 300 and s["attempts"] == inner.calls and s["errors"] == failed


def test_usage_stats_latency_percentiles() -> None:
    m = MeteredBackend(LatencyBackend(0.0))
    generate_sync(m, reqs(5))
    lat = m.stats.latency()
    assert lat["p50"] == 0.0 and m.stats.calls == 5 and m.stats.total_tokens > 0
    assert set(m.stats.summary()) >= {"calls", "errors", "total_tokens", "latency_s", "errors_by_kind"}


def test_wrappers_reject_wrong_result_count() -> None:
    class Dropper(ScriptedBackend):
        async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
            return (await super().generate(requests))[:-1]

    with pytest.raises(LLMError, match="2 results for 3"):
        generate_sync(MeteredBackend(Dropper(["x"])), reqs(3))
    with pytest.raises(LLMError):
        check_results(reqs(2), [LLMResult(request_id="q1"), LLMResult(request_id="q0")], "x")


def test_scripted_backend_cycles_and_garbage_is_seeded() -> None:
    s = ScriptedBackend(["a", "b"])
    assert [r.text for r in generate_sync(s, reqs(3))] == ["a", "b", "a"]

    def texts(seed: int) -> list[str | None]:
        g = GarbageBackend(seed=seed, error_rate=0.5, garbage_rate=0.2)
        return [r.text or r.error for r in generate_sync(g, reqs(40))]

    assert texts(1) == texts(1) and texts(1) != texts(2)
    ok = [r for r in generate_sync(GarbageBackend(0, 0.0, 0.0), [user_request("s", "p", json_schema=SCHEMA)])]
    assert json.loads(ok[0].text)["action"] in ("post", "like")


def test_budget_shares_split_what_is_left_and_count_calls_made_elsewhere() -> None:
    """The Ray split (socium.llm.budget_shares): shares sum to what is left, follow the agents per
    shard, and calls reported back by actors are added to the driver's ledger as the trace counts them."""
    from socium.llm.budget_shares import apply_allowance, count_calls, shard_allowances, split_shares
    from socium.llm.types import LLMRequest, LLMResult

    assert split_shares(10, [1, 1, 1]) == [4, 3, 3] and split_shares(7, [0, 0]) == [4, 3]
    assert split_shares(9, [6, 3, 0]) == [6, 3, 0] and split_shares(-5, [1, 2]) == [0, 0]
    led = BudgetLedger(max_tokens=1000, max_calls=20, spent_calls=8, spent_tokens=400)
    shares = shard_allowances({"default": led}, [3, 1])
    assert shares == [{"default": (9, 450)}, {"default": (3, 150)}]
    actor = BudgetLedger(max_tokens=1000, max_calls=20)  # an actor's own ledger starts from the full budget
    apply_allowance(actor, shares[1]["default"], "Ray shard 1 of 2")
    assert actor.reserve(10) is None and actor.reserve(10) is None and actor.reserve(10) is None
    why = actor.reserve(10)
    assert why is not None and "call budget" in why and "Ray shard 1 of 2" in why
    req = LLMRequest(request_id="r", messages=[], metadata={})
    res = LLMResult(request_id="r", text="{}", prompt_tokens=30, completion_tokens=5, attempts=2)
    count_calls({"default": led}, [("k", req, res, "m")])
    assert (led.spent_calls, led.spent_tokens) == (10, 435)
    assert shard_allowances({}, [1, 2]) is None
