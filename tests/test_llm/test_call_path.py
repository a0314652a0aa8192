"""One request through the fused call path (``socium.llm.call_path``) gives what the layered stack gives:
the same results, usage, call-log rows, cache hits, retries, breaker and budget refusals, interruptions."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from socium.agents.call_recording import RecordingCache
from socium.llm import usage
from socium.llm.base import new_event_loop
from socium.llm.call_path import plan_of
from socium.llm.factory import build_backend
from socium.llm.interrupted import INTERRUPTED
from socium.llm.resume_replay import ResumeReplay, StoppedAnswers, serving
from socium.llm.types import user_request
from socium.llm.wrappers import CachingBackend, CircuitBreaker, ConcurrencyLimit, RetryingBackend, find_wrapper
from socium.testing.fault_server import FaultyOpenAIServer


def _llm(url: str, **kw: Any) -> dict[str, Any]:
    return {"backend": "openai", "base_urls": [url], "model": "m", "max_concurrency": 4, **kw}


def test_the_http_stack_is_recognised_and_nothing_else() -> None:
    url = "http://127.0.0.1:9/v1"
    full = build_backend(_llm(url, call_budget=10), cache=RecordingCache(), typed_budget=True)
    caching, resume, retrying, budget, breaker, limit, bottom, send = plan_of(full.inner)  # type: ignore[misc]
    assert (type(caching), type(resume), type(retrying), type(breaker), type(limit)) == (
        CachingBackend,
        ResumeReplay,
        RetryingBackend,
        CircuitBreaker,
        ConcurrencyLimit,
    )
    assert budget is not None and send is not None and send.__self__ is bottom
    bare = build_backend(_llm(url, retries=0, circuit_breaker_threshold=None))  # no cache given
    assert plan_of(bare.inner)[:5] == (None, None, None, None, None)  # type: ignore[index]
    assert plan_of(build_backend({"backend": "random"}).inner) is None  # not HTTP: no connection limit
    limit = find_wrapper(full, ConcurrencyLimit)

    class MyCache(CachingBackend):  # a subclass may change what a layer does: the layered path
        pass

    assert plan_of(MyCache(limit, RecordingCache())) is None
    assert plan_of(ConcurrencyLimit(RetryingBackend(limit.inner), 2)) is not None  # bottom is any backend
    assert plan_of(RetryingBackend(CachingBackend(limit, RecordingCache()))) is None  # another order


def _run(
    layered: bool, monkeypatch: pytest.MonkeyPatch, faults: dict[str, float], llm: dict[str, Any], resumed: bool = False
) -> Any:
    """Requests one at a time (repeats included), then concurrently, through a fresh server and stack;
    ``resumed``: as a resumed step, with recorded answers for some of them (``resume_replay.serving``)."""
    with monkeypatch.context() as m:
        if layered:
            m.setattr(usage, "plan_of", lambda _inner: None)
        with FaultyOpenAIServer(faults, seed=3) as srv:
            cache = RecordingCache()
            stack = build_backend(_llm(srv.base_url, **llm), cache=cache, typed_budget=True)
            reqs = [user_request(f"r{i}", f"prompt {i % 9}", seed=i % 9) for i in range(14)]

            record = {r.cache_key("m"): (f"recorded {i}", 5, 2, "stop", i) for i, r in enumerate(reqs) if i % 3 == 1}

            async def go() -> list[Any]:
                with serving(StoppedAnswers(1, record) if resumed else None):
                    one_by_one = [(await stack.generate([r]))[0] for r in reqs]
                    together = await asyncio.gather(*(stack.generate([r]) for r in reqs[:6]))
                return one_by_one + [g[0] for g in together]

            loop = new_event_loop()
            try:
                results = loop.run_until_complete(go())
                stack.close()
            finally:
                loop.close()
            injected = dict(srv.injected)
    caching = find_wrapper(stack, CachingBackend)
    retry = find_wrapper(stack, RetryingBackend)
    breaker = find_wrapper(stack, CircuitBreaker)
    resume = find_wrapper(stack, ResumeReplay)
    summary = stack.stats.summary()
    summary.pop("latency_s")
    return {
        "results": [r.model_dump(exclude={"latency_s", "error"}) for r in results],
        "errors": [(r.error or "").split(" (")[0].split(";")[0] for r in results],
        "usage": summary,
        "log": [(k, q.request_id, r.error_kind, r.attempts, r.text) for k, q, r, _ in cache.drain()],
        "hits": (caching.hits, caching.misses) if caching else None,
        "retries": retry.retries if retry else None,
        "breaker": (breaker.times_opened, breaker.recent_failures) if breaker else None,
        "injected": injected,
        "replayed": resume.replayed if resume else None,
    }


@pytest.mark.parametrize(
    ("faults", "llm"),
    [
        ({}, {}),
        ({"server_error": 0.3, "non_json": 0.1, "truncated": 0.1}, {"retries": 2}),
        ({"rate_limit": 0.3, "bad_usage": 0.2}, {"retries": 1, "circuit_breaker_threshold": None}),
        ({"server_error": 1.0}, {"retries": 0, "circuit_breaker_threshold": 3, "circuit_breaker_reset_s": 60}),
        ({"server_error": 0.2}, {"retries": 1, "call_budget": 9}),
        ({}, {"retries": 0, "cache": False, "request_order": "longest_first"}),
    ],
)
def test_fused_and_layered_paths_agree(
    monkeypatch: pytest.MonkeyPatch, faults: dict[str, float], llm: dict[str, Any]
) -> None:
    llm = {"retry_base_delay_s": 0.001, "retry_max_delay_s": 0.002, **llm}
    fused = _run(False, monkeypatch, faults, llm)
    layered = _run(True, monkeypatch, faults, llm)
    assert fused == layered
    if "call_budget" in llm:
        assert any(r["error_kind"] == "budget" for r in fused["results"])
    if llm.get("circuit_breaker_threshold") == 3:
        assert fused["breaker"][0] == 1 and any(r["error_kind"] == "circuit_open" for r in fused["results"])


def test_a_resumed_steps_recorded_answers_are_served_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = {"retries": 1, "retry_base_delay_s": 0.001, "retry_max_delay_s": 0.002}
    fused = _run(False, monkeypatch, {"server_error": 0.2}, llm, resumed=True)
    assert fused == _run(True, monkeypatch, {"server_error": 0.2}, llm, resumed=True)
    assert fused["replayed"] > 0 and any(r["text"].startswith("recorded") for r in fused["results"])


@pytest.mark.parametrize("layered", [False, True])
def test_a_cancelled_request_on_the_wire_reaches_the_call_log(monkeypatch: pytest.MonkeyPatch, layered: bool) -> None:
    if layered:
        monkeypatch.setattr(usage, "plan_of", lambda _inner: None)
    with FaultyOpenAIServer({"hang": 1.0}, hang_s=30.0) as srv:
        cache = RecordingCache()
        stack = build_backend(_llm(srv.base_url, max_concurrency=1), cache=cache, typed_budget=True)

        async def go() -> None:
            sent = asyncio.ensure_future(stack.generate([user_request("a", "hi")]))
            queued = asyncio.ensure_future(stack.generate([user_request("b", "waits for the one slot")]))
            while srv.injected.get("hang", 0) < 1:
                await asyncio.sleep(0.01)
            for t in (sent, queued):
                t.cancel()
            await asyncio.gather(sent, queued, return_exceptions=True)

        loop = new_event_loop()
        try:
            loop.run_until_complete(go())
            stack.close()
        finally:
            loop.close()
    rows = cache.drain()
    # the request on the wire counts one attempt; the one still waiting for a slot was never sent
    assert [(q.request_id, r.error_kind, r.attempts, r.error) for _, q, r, _ in rows] == [
        ("a", "interrupted", 1, INTERRUPTED)
    ]
