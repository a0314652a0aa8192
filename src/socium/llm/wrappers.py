"""Composable wrappers that add caching, retries, circuit breaking, concurrency limits, budgets,
usage accounting and load balancing to any backend.

Each is itself an :class:`~socium.llm.base.LLMBackend`, so policies stack in whatever order a
run needs and every backend (HTTP, embedded, vLLM, test doubles) gets the same behaviour.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import numpy as np

from socium.errors import BudgetExceeded
from socium.llm.base import BackendWrapper, LLMBackend, LoopLocal, check_results
from socium.llm.breaker import CircuitBreaker
from socium.llm.cache import ResultCache, get_many, put_many
from socium.llm.interrupted import note_finished, recording_interruptions, sending
from socium.llm.priority_gate import RETRYING, PriorityGate
from socium.llm.slot_meter import SlotMeter
from socium.llm.types import LLMRequest, LLMResult

__all__ = [
    "CachingBackend",
    "CircuitBreaker",
    "ConcurrencyLimit",
    "RetryingBackend",
    "RoundRobinBackend",
    "BudgetLedger",
    "TokenBudget",
    "find_wrapper",
]

Sleep = Callable[[float], Awaitable[None]]


class CachingBackend(BackendWrapper):
    """Serve repeated requests from a cache keyed by :meth:`LLMRequest.cache_key`.

    Identical requests within one batch are sent once, so a first run gets the same answers a
    replay of it will. Every fresh result is handed to the cache (which may log failures); only
    successes are served back.
    """

    def __init__(self, inner: LLMBackend, cache: ResultCache, meta: Mapping[str, Any] | None = None) -> None:
        super().__init__(inner)
        self.cache = cache
        self.meta = dict(meta or {})
        self.hits = 0
        self.misses = 0

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        model = self.inner.model_name
        keys = [r.cache_key(model) for r in requests]
        found = get_many(self.cache, keys)
        out: list[LLMResult | None] = [None] * len(requests)
        first_of_key: dict[str, int] = {}
        to_send: list[int] = []
        for i, (req, key) in enumerate(zip(requests, keys)):
            hit = found.get(key)
            if hit is not None:
                out[i] = hit.model_copy(update={"request_id": req.request_id, "cached": True, "attempts": 0})
                self.hits += 1
            elif key not in first_of_key:
                first_of_key[key] = i
                to_send.append(i)
        if to_send:
            sent = [requests[i] for i in to_send]
            with recording_interruptions(self.cache, [(keys[i], requests[i]) for i in to_send], model, self.meta):
                fresh = check_results(sent, await self.inner.generate(sent), self.inner)
            self.misses += len(sent)
            for i, res in zip(to_send, fresh):
                out[i] = res
            put_many(self.cache, [(keys[i], requests[i], res) for i, res in zip(to_send, fresh)], model, self.meta)
        for i, req in enumerate(requests):
            if out[i] is None:  # duplicate of a request sent in this batch
                src = out[first_of_key[keys[i]]]
                assert src is not None
                out[i] = src.model_copy(update={"request_id": req.request_id, "cached": src.ok, "attempts": 0})
                self.hits += int(src.ok)
        return [r for r in out if r is not None]


class RetryingBackend(BackendWrapper):
    """Retry transient failures (429, 5xx, timeouts, connection errors, unusable 200 bodies) with
    jittered exponential backoff, honouring the server's Retry-After up to ``max_delay_s``.

    The batch goes out once; each failed request then retries on its own so one slow, rate-limited
    request does not hold back the others. Jitter comes from a seeded generator so runs are
    repeatable; ``sleep`` is injectable so tests need not wait. A Retry-After is a hint, never an
    order: a server answering ``Retry-After: 86400`` must not park a run for a day, so every wait is
    capped by ``max_delay_s``, and no retry starts once ``deadline_s`` (all attempts and waits of
    one request together) would be passed.
    """

    def __init__(
        self,
        inner: LLMBackend,
        max_attempts: int = 4,
        base_delay_s: float = 0.5,
        max_delay_s: float = 30.0,
        seed: int | None = 0,
        sleep: Sleep | None = None,
        deadline_s: float | None = None,
        clock: Callable[[], float] = time.perf_counter,
        per_request: bool = False,
    ) -> None:
        super().__init__(inner)
        self.per_request = per_request  # HTTP: each request goes out (and retries) on its own
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.max_attempts = max_attempts
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.deadline_s = deadline_s
        self.clock = clock
        self.rng = np.random.default_rng(seed)
        self._sleep: Sleep = sleep or asyncio.sleep
        self.retries = 0
        self.delays: list[float] = []

    def backoff(self, attempt: int, retry_after_s: float | None) -> float:
        """Delay before attempt ``attempt + 1``: half-to-full jittered exponential, at least
        Retry-After, at most ``max_delay_s``."""
        expo = min(self.max_delay_s, self.base_delay_s * (2.0 ** (attempt - 1)))
        delay = expo * float(self.rng.uniform(0.5, 1.0))
        if retry_after_s is not None:
            delay = max(delay, retry_after_s)
        return min(delay, self.max_delay_s)

    async def _retry(self, req: LLMRequest, first: LLMResult, t0: float) -> LLMResult:
        result = first
        attempt = 1
        made = first.attempts  # calls that reached the model: a budget refusal or open breaker made none
        try:
            while result.retryable and attempt < self.max_attempts:
                delay = self.backoff(attempt, result.retry_after_s)
                if self.deadline_s is not None and self.clock() - t0 + delay >= self.deadline_s:
                    note = f" (no retry: the {self.deadline_s:g}s request deadline would pass)"
                    result = result.model_copy(update={"error": f"{result.error}{note}"})
                    break
                self.delays.append(delay)
                await self._sleep(delay)
                attempt += 1
                self.retries += 1
                token = RETRYING.set(True)  # served before first attempts at the connection limit (priority_gate)
                try:
                    result = check_results([req], await self.inner.generate([req]), self.inner)[0]
                finally:
                    RETRYING.reset(token)
                made += result.attempts
        except BaseException:  # stopped mid-retry: the finished attempts still count (socium.llm.interrupted)
            note_finished(req, made)
            raise
        return result.model_copy(update={"attempts": made, "latency_s": self.clock() - t0})

    def _started(self, result: LLMResult, sent: float, done: float) -> float:
        """When a request's first attempt began: its deadline runs from there, not from the batch's start (a
        request queued behind ``max_concurrency`` others had spent it before it was sent: 19 of 106 failed)."""
        return max(sent, done - result.latency_s) if result.latency_s > 0 else sent

    async def _one(self, req: LLMRequest) -> LLMResult:
        sent = self.clock()
        first = check_results([req], await self.inner.generate([req]), self.inner)[0]
        if not first.retryable:
            return first
        return await self._retry(req, first, self._started(first, sent, self.clock()))

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        if self.per_request and len(requests) > 1:  # a failed request retries at once, not after the batch
            got = await asyncio.gather(*(self._one(q) for q in requests), return_exceptions=True)
            for g in got:  # raised only once every request has settled: none is left running unseen
                if isinstance(g, BaseException):
                    raise g
            return [g for g in got if isinstance(g, LLMResult)]
        t0 = self.clock()
        first = check_results(requests, await self.inner.generate(requests), self.inner)
        if not any(r.retryable for r in first):
            return first
        done = self.clock()
        return list(
            await asyncio.gather(
                *(
                    self._retry(q, r, self._started(r, t0, done)) if r.retryable else asyncio.sleep(0, r)
                    for q, r in zip(requests, first)
                )
            )
        )


class ConcurrencyLimit(BackendWrapper):
    """At most ``max_concurrency`` requests in flight at once, across all concurrent callers.

    Requests are sent one per inner call so a slow one does not hold a whole chunk's slots; meant
    for HTTP backends where batching happens on the server. A retry waiting for a slot goes before the first
    attempts waiting (:class:`~socium.llm.priority_gate.PriorityGate`): in one queue it could wait past its
    ``request_deadline_s`` behind requests never tried. ``meter`` counts the slots held over time (the run's
    per-step ``slots N% busy, idle M%``; :mod:`socium.llm.slot_meter`).
    """

    def __init__(self, inner: LLMBackend, max_concurrency: int, longest_first: bool = False) -> None:
        super().__init__(inner)
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self.longest_first = longest_first  # llm.request_order: longest prompts take free slots first
        self.meter = SlotMeter(max_concurrency)
        self._sem = LoopLocal(lambda: PriorityGate(self.max_concurrency, self.longest_first, self.meter))

    async def _one(self, sem: PriorityGate, req: LLMRequest) -> LLMResult:
        await sem.acquire(size=sum(len(m.content) for m in req.messages) if self.longest_first else 0)
        try:
            with sending(req):  # past the limit: on the wire, so cut off it still counts (socium.llm.interrupted)
                return check_results([req], await self.inner.generate([req]), self.inner)[0]
        finally:
            sem.release()

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        sem = self._sem.get()
        if len(requests) == 1:  # the common case (one agent's call): no task to create and gather
            return [await self._one(sem, requests[0])]
        return list(await asyncio.gather(*(self._one(sem, r) for r in requests)))


def max_request_tokens(req: LLMRequest) -> int:
    """An upper bound on the tokens one call of ``req`` can cost, known before it is sent.

    Byte-level BPE tokenizers never make a token of less than one byte, so the prompt's UTF-8 size
    bounds its tokens; chat templates add a few special tokens per message; the completion is
    capped at ``max_tokens``. Reserving this much is what lets concurrent requests never overrun a
    token budget.
    """
    prompt = sum(len(m.content.encode("utf-8", "surrogatepass")) + 16 for m in req.messages)
    return prompt + 16 + req.max_tokens


class BudgetLedger:
    """Calls and tokens spent and reserved against a run's budgets: the one place they are checked.

    Starts from what the trace already holds (``spent_calls``/``spent_tokens``), so a resumed run
    continues the same budget. A request reserves one call and :func:`max_request_tokens` before it
    is sent and settles to what it really cost when it returns, so any number of concurrent requests
    can never together pass a budget.
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        max_calls: int | None = None,
        *,
        spent_calls: int = 0,
        spent_tokens: int = 0,
    ) -> None:
        self.max_tokens = max_tokens
        self.max_calls = max_calls
        self.spent_calls = int(spent_calls)
        self.spent_tokens = int(spent_tokens)
        self.reserved_calls = 0
        self.reserved_tokens = 0
        self.note = ""  # a refusal in the terms of a share of a larger budget (Ray actors: budget_shares)

    def refusal(self, tokens: int) -> str | None:
        """Why a request needing ``tokens`` (upper bound) cannot be reserved now; None if it can."""
        if self.max_calls is not None and self.spent_calls + self.reserved_calls + 1 > self.max_calls:
            why, used = "call budget", f"{self.spent_calls} of {self.max_calls} calls used"
        elif self.max_tokens is not None and self.spent_tokens + self.reserved_tokens + tokens > self.max_tokens:
            why, used = "token budget", f"{self.spent_tokens} of {self.max_tokens} tokens used, and the next "
            used += f"request may cost up to {tokens}"
        else:
            return None
        return f"{why}: {self.note}" if self.note else f"{why} spent: {used}"  # a Ray share: its own numbers

    def reserve(self, tokens: int) -> str | None:
        why = self.refusal(tokens)
        if why is None:
            self.reserved_calls += 1
            self.reserved_tokens += tokens
        return why

    def settle(self, reserved_tokens: int, calls: int, tokens: int) -> None:
        self.reserved_calls -= 1
        self.reserved_tokens -= reserved_tokens
        self.spent_calls += calls
        self.spent_tokens += tokens

    @property
    def in_flight(self) -> int:
        return self.reserved_calls


class TokenBudget(BackendWrapper):
    """Enforce a token and/or call budget exactly, per attempt, across concurrent requests.

    Sits inside the retry wrapper so every attempt is counted. A request that does not fit waits
    for the requests in flight to settle (they may cost less than reserved) and is then refused:
    with ``typed=True`` as a failed result of kind ``budget`` (the simulator then stops the step
    without losing the calls already made), otherwise by raising :class:`BudgetExceeded` before it
    is sent.
    """

    def __init__(
        self,
        inner: LLMBackend,
        max_total_tokens: int | None = None,
        max_calls: int | None = None,
        *,
        ledger: BudgetLedger | None = None,
        typed: bool = False,
    ) -> None:
        super().__init__(inner)
        self.ledger = ledger if ledger is not None else BudgetLedger(max_total_tokens, max_calls)
        self.typed = typed

    @property
    def used_tokens(self) -> int:
        return self.ledger.spent_tokens

    @property
    def used_calls(self) -> int:
        return self.ledger.spent_calls

    async def _one(self, req: LLMRequest) -> LLMResult:
        ledger = self.ledger
        need = max_request_tokens(req)
        why = ledger.reserve(need)
        while why is not None and ledger.in_flight:
            await asyncio.sleep(0.005)  # in-flight requests settle below their reservation
            why = ledger.reserve(need)
        if why is not None:
            if not self.typed:
                raise BudgetExceeded(why)
            return LLMResult.failure(req.request_id, why, "budget", attempts=0)
        calls, tokens = 1, 0  # cancelled mid-call: it may have reached the server, count it
        try:
            res = check_results([req], await self.inner.generate([req]), self.inner)[0]
            calls = 0 if res.error_kind == "circuit_open" else 1  # a fail-fast never reached the model
            tokens = 0 if res.cached else res.total_tokens
            return res
        finally:
            ledger.settle(need, calls, tokens)

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        if not self.typed and not self.ledger.in_flight:  # refuse a whole batch before any of it is sent
            led = self.ledger
            need = sum(max_request_tokens(r) for r in requests)
            if led.max_calls is not None and led.spent_calls + len(requests) > led.max_calls:
                raise BudgetExceeded(
                    f"call budget: {led.spent_calls} of {led.max_calls} calls used, "
                    f"a batch of {len(requests)} does not fit"
                )
            if led.max_tokens is not None and led.spent_tokens + need > led.max_tokens:
                raise BudgetExceeded(
                    f"token budget: {led.spent_tokens} of {led.max_tokens} tokens used, "
                    f"a batch that may cost up to {need} does not fit"
                )
        if len(requests) == 1:
            return [await self._one(requests[0])]
        return list(await asyncio.gather(*(self._one(r) for r in requests)))


class RoundRobinBackend:
    """Spread requests over several backends (e.g. one vLLM server per GPU) in turn."""

    def __init__(self, backends: Sequence[LLMBackend]) -> None:
        if not backends:
            raise ValueError("RoundRobinBackend needs at least one backend")
        self.backends = list(backends)
        self.model_name = self.backends[0].model_name
        self._offset = 0

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        n = len(self.backends)
        groups: list[list[int]] = [[] for _ in range(n)]
        for i in range(len(requests)):
            groups[(self._offset + i) % n].append(i)
        self._offset = (self._offset + len(requests)) % n
        used = [(b, idx) for b, idx in zip(self.backends, groups) if idx]
        parts = await asyncio.gather(*(b.generate([requests[i] for i in idx]) for b, idx in used))
        out: list[LLMResult | None] = [None] * len(requests)
        for (b, idx), part in zip(used, parts):
            part = check_results([requests[i] for i in idx], part, repr(b))
            for i, res in zip(idx, part):
                out[i] = res
        return [r for r in out if r is not None]

    def close(self) -> None:
        for b in self.backends:
            b.close()

    def __repr__(self) -> str:
        return f"RoundRobinBackend({self.backends!r})"


def find_wrapper(backend: Any, cls: type) -> Any | None:
    """The first layer of type ``cls`` in a wrapper stack (e.g. to read its counters)."""
    seen = 0
    while backend is not None and seen < 64:
        if isinstance(backend, cls):
            return backend
        backend = getattr(backend, "inner", None)
        seen += 1
    return None
