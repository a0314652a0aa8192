"""The circuit breaker: stop calling a backend that keeps failing, then probe it again after a pause.

Moved out of :mod:`socium.llm.wrappers` (which re-exports it) when its window became one of send order.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Sequence

from socium.llm.base import BackendWrapper, LLMBackend, check_results
from socium.llm.types import LLMRequest, LLMResult


class CircuitBreaker(BackendWrapper):
    """Stop calling a backend that keeps failing, then probe it again after a pause.

    Opens on a failure *rate*: when at least ``failure_threshold`` of the last ``window`` requests failed
    transiently and they are at least ``failure_rate`` of them (client errors are the request's fault and
    do not count). Why not a streak: failures were counted "consecutive" in completion order, so ten
    requests that hung together and timed out together (a slow tail: they finish last) opened it at 3.7%
    failures and stopped a healthy 10^4-agent run; a server that is really down fails nearly every
    request and still opens it after ``failure_threshold`` of them.

    "The last ``window`` requests" are the latest *sent* of those that have finished (sent at the end minus
    its ``latency_s``, which the HTTP client measures from the send), not the latest to finish. Why: with
    3.5% of requests hanging until ``llm.timeout_s`` at 10^4 agents, the hung requests came to hold most of
    the 64 connection slots, so for a while nearly everything that *finished* was a timeout, and a window in
    completion order opened at 50% (benchmarks/drill_llm_faults.py --scale, step 0). A request that hung is
    old by the time it fails and falls outside the window of newer ones; a server that hangs on every
    request still opens it once the first timeouts arrive (they are then the newest sends), and one that
    refuses connections at once. While open every request fails fast with
    ``error_kind='circuit_open'``, which retry wrappers do not retry, and an error text that
    names the real cause (the last failure: connection refused, HTTP status, timeout), so the
    call log and the run's stop message say why. After ``reset_after_s`` one
    request goes through as a probe: success closes the circuit, failure reopens it.
    """

    def __init__(
        self,
        inner: LLMBackend,
        failure_threshold: int = 5,
        reset_after_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        failure_rate: float = 0.5,
        window: int = 100,
    ) -> None:
        super().__init__(inner)
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        if not 0.0 < failure_rate <= 1.0:
            raise ValueError("failure_rate must lie in (0, 1]")
        self.failure_threshold = failure_threshold
        self.failure_rate = failure_rate
        self.reset_after_s = reset_after_s
        self.clock = clock
        self.window = max(window, failure_threshold)
        # the finished requests sent latest: a min-heap of (sent at, finish order, transient failure)
        self.recent: list[tuple[float, int, bool]] = []
        self._failed = 0  # transient failures in ``recent``
        self._finished = 0
        self.opened_at: float | None = None
        self.times_opened = 0
        self.last_cause: str | None = None  # the failure that made it open, for the fail-fast message
        self.opened_by = ""

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return "closed"
        return "half_open" if self.clock() - self.opened_at >= self.reset_after_s else "open"

    def _fail_fast(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        assert self.opened_at is not None
        wait = max(0.0, self.reset_after_s - (self.clock() - self.opened_at))
        msg = f"circuit open: {self.opened_by} (last: {self.last_cause}); next probe in {wait:.1f}s"
        return [LLMResult.failure(r.request_id, msg, "circuit_open", attempts=0) for r in requests]

    @property
    def recent_failures(self) -> int:
        return self._failed

    def _remember(self, sent: float, failed: bool) -> None:
        """Keep the outcome if its request is among the ``window`` latest sent of those finished."""
        self._finished += 1
        item = (sent, self._finished, failed)
        if len(self.recent) < self.window:
            heapq.heappush(self.recent, item)
        elif item > self.recent[0]:
            self._failed -= heapq.heapreplace(self.recent, item)[2]
        else:
            return  # sent before every request in the window (it hung): a slow tail, not the server now
        self._failed += failed

    def _observe(self, results: Sequence[LLMResult]) -> None:
        now = self.clock()
        for r in results:
            if r.retryable:
                self.last_cause = f"{r.error_kind}: {r.error}"
            elif not r.ok:
                continue  # the request's own fault (400, context too long): says nothing about the server
            self._remember(now - max(r.latency_s, 0.0), r.retryable)
            failed = self.recent_failures
            rate_ok = failed < self.failure_threshold or failed < self.failure_rate * len(self.recent)
            if self.opened_at is None and not rate_ok:
                self.opened_at = self.clock()
                self.times_opened += 1
                self.opened_by = f"{failed} of the last {len(self.recent)} requests failed"

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
                self.last_cause = f"{probe[0].error_kind}: {probe[0].error}"
                self.opened_at = self.clock()
                return probe + self._fail_fast(requests[1:])
            self.opened_at = None
            self.recent.clear()  # a fresh start: the failures before the pause are history
            self._failed = 0
            rest = requests[1:]
            if not rest:
                return probe
            more = check_results(rest, await self.inner.generate(rest), self.inner)
            self._observe(more)
            return probe + more
        results = check_results(requests, await self.inner.generate(requests), self.inner)
        self._observe(results)
        return results
