"""Composable wrappers that add caching, retries, circuit breaking, concurrency limits, budgets,
usage accounting and load balancing to any backend.

Each is itself an :class:`~socium.llm.base.LLMBackend`, so policies stack in whatever order a
run needs and every backend (HTTP, embedded, vLLM, test doubles) gets the same behaviour.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Mapping, Sequence

import numpy as np

from ..errors import BudgetExceeded
from .base import BackendWrapper, LLMBackend, LoopLocal, check_results
from .cache import ResultCache, get_many, put_many
from .types import LLMRequest, LLMResult
from .usage import MeteredBackend, UsageStats

__all__ = [
    "CachingBackend",
    "CircuitBreaker",
    "ConcurrencyLimit",
    "MeteredBackend",
    "RetryingBackend",
    "RoundRobinBackend",
    "TokenBudget",
    "UsageStats",
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
    """Retry transient failures (429, 5xx, timeouts, connection errors) with jittered exponential
    backoff, honouring the server's Retry-After.

    The batch goes out once; each failed request then retries on its own so one slow, rate-limited
    request does not hold back the others. Jitter comes from a seeded generator so runs are
    repeatable; ``sleep`` is injectable so tests need not wait.
    """

    def __init__(
        self,
        inner: LLMBackend,
        max_attempts: int = 4,
        base_delay_s: float = 0.5,
        max_delay_s: float = 30.0,
        seed: int | None = 0,
        sleep: Sleep | None = None,
    ) -> None:
        super().__init__(inner)
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.max_attempts = max_attempts
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.rng = np.random.default_rng(seed)
        self._sleep: Sleep = sleep or asyncio.sleep
        self.retries = 0
        self.delays: list[float] = []

    def backoff(self, attempt: int, retry_after_s: float | None) -> float:
        """Delay before attempt ``attempt + 1``: half-to-full jittered exponential, at least Retry-After."""
        expo = min(self.max_delay_s, self.base_delay_s * (2.0 ** (attempt - 1)))
        delay = expo * float(self.rng.uniform(0.5, 1.0))
        if retry_after_s is not None:
            delay = max(delay, retry_after_s)
        return delay

    async def _retry(self, req: LLMRequest, first: LLMResult, t0: float) -> LLMResult:
        result = first
        attempt = 1
        while result.retryable and attempt < self.max_attempts:
            delay = self.backoff(attempt, result.retry_after_s)
            self.delays.append(delay)
            await self._sleep(delay)
            attempt += 1
            self.retries += 1
            result = check_results([req], await self.inner.generate([req]), self.inner)[0]
        return result.model_copy(update={"attempts": attempt, "latency_s": time.perf_counter() - t0})

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        t0 = time.perf_counter()
        first = check_results(requests, await self.inner.generate(requests), self.inner)
        if not any(r.retryable for r in first):
            return first
        return list(await asyncio.gather(*(self._retry(q, r, t0) if r.retryable else _done(r)
                                           for q, r in zip(requests, first))))


async def _done(result: LLMResult) -> LLMResult:
    return result


class CircuitBreaker(BackendWrapper):
    """Stop calling a backend that keeps failing, then probe it again after a pause.

    Opens after ``failure_threshold`` consecutive transient failures (client errors are the
    request's fault and do not count); while open every request fails fast with
    ``error_kind='circuit_open'``, which retry wrappers do not retry. After ``reset_after_s`` one
    request goes through as a probe: success closes the circuit, failure reopens it.
    """

    def __init__(
        self,
        inner: LLMBackend,
        failure_threshold: int = 5,
        reset_after_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(inner)
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        self.failure_threshold = failure_threshold
        self.reset_after_s = reset_after_s
        self.clock = clock
        self.consecutive_failures = 0
        self.opened_at: float | None = None
        self.times_opened = 0

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return "closed"
        return "half_open" if self.clock() - self.opened_at >= self.reset_after_s else "open"

    def _fail_fast(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        assert self.opened_at is not None
        wait = max(0.0, self.reset_after_s - (self.clock() - self.opened_at))
        msg = f"circuit open after {self.failure_threshold} consecutive failures; next probe in {wait:.1f}s"
        return [LLMResult.failure(r.request_id, msg, "circuit_open", attempts=0) for r in requests]

    def _observe(self, results: Sequence[LLMResult]) -> None:
        for r in results:
            if r.retryable:
                self.consecutive_failures += 1
                if self.consecutive_failures >= self.failure_threshold and self.opened_at is None:
                    self.opened_at = self.clock()
                    self.times_opened += 1
            elif r.ok:
                self.consecutive_failures = 0

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        state = self.state
        if state == "open":
            return self._fail_fast(requests)
        if state == "half_open":
            self.opened_at = self.clock()  # concurrent callers fail fast while the probe runs
            probe = check_results(requests[:1], await self.inner.generate(requests[:1]), self.inner)
            if not probe[0].ok and probe[0].retryable:
                self.opened_at = self.clock()
                return probe + self._fail_fast(requests[1:])
            self.opened_at = None
            self.consecutive_failures = 0
            rest = requests[1:]
            if not rest:
                return probe
            more = check_results(rest, await self.inner.generate(rest), self.inner)
            self._observe(more)
            return probe + more
        results = check_results(requests, await self.inner.generate(requests), self.inner)
        self._observe(results)
        return results


class ConcurrencyLimit(BackendWrapper):
    """At most ``max_concurrency`` requests in flight at once, across all concurrent callers.

    Requests are sent one per inner call so a slow one does not hold a whole chunk's slots; meant
    for HTTP backends where batching happens on the server.
    """

    def __init__(self, inner: LLMBackend, max_concurrency: int) -> None:
        super().__init__(inner)
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self._sem = LoopLocal(lambda: asyncio.Semaphore(self.max_concurrency))

    async def _one(self, sem: asyncio.Semaphore, req: LLMRequest) -> LLMResult:
        async with sem:
            return check_results([req], await self.inner.generate([req]), self.inner)[0]

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        sem = self._sem.get()
        return list(await asyncio.gather(*(self._one(sem, r) for r in requests)))


class TokenBudget(BackendWrapper):
    """Raise :class:`BudgetExceeded` instead of sending once the token or call budget is spent.

    Raised before a batch goes out, never halfway through one, so the simulator can stop cleanly
    after its last committed step. Calls count attempts (retries included); a batch is refused
    when it would exceed the call budget. Tokens are known only afterwards, so the token budget
    may be overrun by at most the batch that crosses it.
    """

    def __init__(self, inner: LLMBackend, max_total_tokens: int | None = None, max_calls: int | None = None) -> None:
        super().__init__(inner)
        self.max_total_tokens = max_total_tokens
        self.max_calls = max_calls
        self.used_tokens = 0
        self.used_calls = 0

    def check(self, n_requests: int) -> None:
        if self.max_total_tokens is not None and self.used_tokens >= self.max_total_tokens:
            raise BudgetExceeded(
                f"token budget spent: {self.used_tokens} of {self.max_total_tokens} tokens used"
            )
        if self.max_calls is not None and self.used_calls + n_requests > self.max_calls:
            raise BudgetExceeded(
                f"call budget: {self.used_calls} of {self.max_calls} calls used, "
                f"a batch of {n_requests} does not fit"
            )

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        self.check(len(requests))
        results = check_results(requests, await self.inner.generate(requests), self.inner)
        for r in results:
            self.used_tokens += r.total_tokens if not r.cached else 0
            self.used_calls += r.attempts
        return results


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
