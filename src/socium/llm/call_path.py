"""One request through the standard HTTP wrapper stack in one coroutine, with the layers' own semantics.

Why: an agent's turn sends one request at a time (``LLMPolicy.ask``), and through the stack
:func:`~socium.llm.factory.build_backend` composes (usage, cache and call log, retries, circuit breaker,
connection limit, HTTP client) each layer cost a coroutine and its frame, a one-element list in and out,
a result check, and for two of them a context manager: 80-150 µs of driver CPU per call on top of the
HTTP client's own (docs/inference.md, "Third round of issue 41"). Here the common path of those layers
runs inline, reading and updating the same layer objects (their counters, the cache, the breaker's
window, the connection gate), and every uncommon path hands the request to the layer whose path it is:

- a cache hit is served as :class:`~socium.llm.wrappers.CachingBackend` serves it, and a resumed step's
  recorded answer as :class:`~socium.llm.resume_replay.ResumeReplay` serves it;
- a first attempt that failed transiently goes to :meth:`RetryingBackend._retry
  <socium.llm.wrappers.RetryingBackend._retry>`, whose re-sends go down the layered stack;
- a token or call budget (rare, and with its own batch refusal) is the layered
  :class:`~socium.llm.wrappers.TokenBudget` and what is below it;
- a circuit breaker that is not closed answers through its own ``generate`` (fail fast or probe);
- a bottom that is not the aiohttp client (round-robin, a fake server's owner) is called as a backend.

The stack is recognised by exact layer types in the order ``build_backend`` composes them (a subclass,
a custom layer or another order: the layered path, unchanged). Cut off by a signal or a cancellation,
the request is noted as the layers note it (:mod:`socium.llm.interrupted`): sent attempts count.
tests/test_llm/test_call_path.py runs the same requests, faults and stops through both paths.
"""

from __future__ import annotations

from typing import Any

from socium.llm.base import check_results
from socium.llm.breaker import CircuitBreaker
from socium.llm.cache import get_many, put_many
from socium.llm.interrupted import close_note, note_finished, open_note, salvage
from socium.llm.resume_replay import ResumeReplay
from socium.llm.resume_replay import current as stopped_answers
from socium.llm.types import LLMRequest, LLMResult
from socium.llm.wrappers import CachingBackend, ConcurrencyLimit, RetryingBackend, TokenBudget

Plan = tuple[Any, Any, Any, Any, Any, ConcurrencyLimit, Any, Any]


def plan_of(top: Any) -> Plan | None:
    """``(caching, resume, retrying, budget, breaker, limit, bottom, send)`` under a usage layer whose inner is
    ``top`` (absent layers None; ``send``: the bottom's own one-request call, where it is the aiohttp client),
    or None when the stack is not the one :func:`~socium.llm.factory.build_backend` composes for HTTP."""
    b = top
    caching = resume = retrying = budget = breaker = None
    if type(b) is CachingBackend:
        caching, b = b, b.inner
        if type(b) is ResumeReplay:  # a resumed step's recorded answers, just inside the cache
            resume, b = b, b.inner
    if type(b) is RetryingBackend:
        retrying, b = b, b.inner
    if type(b) is TokenBudget:
        budget, b = b, b.inner
    if type(b) is CircuitBreaker:
        breaker, b = b, b.inner
    if type(b) is not ConcurrencyLimit:
        return None
    bottom: Any = b.inner
    send = bottom.send if getattr(type(bottom), "SENDS_ONE", False) else None
    return caching, resume, retrying, budget, breaker, b, bottom, send


async def call_one(plan: Plan, req: LLMRequest) -> LLMResult:
    """The result the layered stack would give for ``[req]`` (under the usage layer, which records it).

    One coroutine for all the layers: each coroutine frame in the chain is also resumed every time the
    request's task is (connection, answer, body), so the chain's depth is paid several times per call."""
    caching, resume, retrying, budget, breaker, limit, bottom, send = plan
    note = None
    if caching is not None:
        model = caching.inner.model_name
        key = req.cache_key(model)
        hit = get_many(caching.cache, (key,)).get(key)
        if hit is not None:
            caching.hits += 1
            return hit.model_copy(update={"request_id": req.request_id, "cached": True, "attempts": 0})
        note, token = open_note()  # as CachingBackend's recording_interruptions
    try:
        res = None
        if resume is not None and (answers := stopped_answers()) is not None:  # ResumeReplay (same cache key)
            res = answers.result(key, req.request_id)
            if res is not None:
                resume.replayed += 1
        if res is None:
            sent = retrying.clock() if retrying is not None else 0.0
            if budget is not None:  # the layered budget and what is below it
                res = _only(req, await budget.generate([req]), budget)
            elif breaker is not None and breaker.opened_at is not None:  # open or half open: fail fast or probe
                res = _only(req, await breaker.generate([req]), breaker)
            else:  # ConcurrencyLimit, the client, then the breaker's window
                gate = limit._sem.get()
                await gate.acquire(size=sum(len(m.content) for m in req.messages) if limit.longest_first else 0)
                try:
                    try:
                        res = await (send(bottom.session(), req) if send is not None else _bottom(bottom, req))
                    except BaseException:  # past the limit: on the wire, so cut off it still counts (``sending``)
                        note_finished(req, 1)
                        raise
                finally:
                    gate.release()
                if breaker is not None:
                    breaker._observe((res,))
            if retrying is not None and res.retryable:  # RetryingBackend: its re-sends go down the layers
                res = await retrying._retry(req, res, retrying._started(res, sent, retrying.clock()))
    except BaseException:
        if note is not None:
            salvage(caching.cache, ((key, req),), note, model, caching.meta)
        raise
    finally:
        if note is not None:
            close_note(token)
    if caching is not None:
        caching.misses += 1
        put_many(caching.cache, ((key, req, res),), model, caching.meta)
    return res


async def _bottom(bottom: Any, req: LLMRequest) -> LLMResult:
    return _only(req, await bottom.generate([req]), bottom)


def _only(req: LLMRequest, results: list[LLMResult], who: object) -> LLMResult:
    return check_results([req], results, who)[0]
