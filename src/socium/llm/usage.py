"""Usage accounting: what a run cost in tokens, calls, errors and latency.

Kept separate from the budget so reporting never changes behaviour; a run's summary is read from
the :class:`UsageStats` that :func:`~socium.llm.factory.build_backend` attaches.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from socium.llm.base import BackendWrapper, LLMBackend, check_results
from socium.llm.call_path import call_one, plan_of
from socium.llm.types import LLMRequest, LLMResult


class UsageStats:
    """Per-run usage: tokens, calls, attempts, errors by kind, latency distribution."""

    def __init__(self) -> None:
        self.calls = 0
        self.attempts = 0
        self.cached = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.errors: Counter[str] = Counter()
        self._latencies = array("d")

    def record(self, result: LLMResult) -> None:
        self.calls += 1
        self.attempts += result.attempts
        if result.cached:
            self.cached += 1
        else:  # a cached answer cost nothing this run
            self.prompt_tokens += result.prompt_tokens
            self.completion_tokens += result.completion_tokens
        if not result.ok:
            self.errors[result.error_kind or "other"] += 1
        elif not result.cached:
            self._latencies.append(result.latency_s)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def latency(self) -> dict[str, float]:
        """Mean/p50/p95/max of successful, uncached calls (NaN when there are none)."""
        if not self._latencies:
            nan = float("nan")
            return {"mean": nan, "p50": nan, "p95": nan, "max": nan}
        a = np.frombuffer(self._latencies, dtype=np.float64)
        return {
            "mean": float(a.mean()),
            "p50": float(np.percentile(a, 50)),
            "p95": float(np.percentile(a, 95)),
            "max": float(a.max()),
        }

    def summary(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "attempts": self.attempts,
            "cached": self.cached,
            "errors": self.error_count,
            "errors_by_kind": dict(self.errors),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "latency_s": self.latency(),
        }


class MeteredBackend(BackendWrapper):
    """Feeds every result passing through into a :class:`UsageStats`.

    One request under the standard HTTP stack goes through its layers in one coroutine
    (:mod:`socium.llm.call_path`: same results, counters and call log, less CPU per call)."""

    def __init__(self, inner: LLMBackend, stats: UsageStats | None = None) -> None:
        super().__init__(inner)
        self.stats = stats if stats is not None else UsageStats()

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if len(requests) == 1 and (plan := plan_of(self.inner)) is not None:
            res = await call_one(plan, requests[0])
            self.stats.record(res)
            return [res]
        results = check_results(requests, await self.inner.generate(requests), self.inner)
        for r in results:
            self.stats.record(r)
        return results
