"""In-process test doubles for :class:`~socium.llm.base.LLMBackend`.

Shipped in the package (not under tests/) so users can run whole simulations, benchmarks and
their own tests without a model, and so the CLI can offer ``backend: random`` for smoke runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Union

import numpy as np

from socium.llm.schema_sample import sample_from_schema
from socium.llm.types import LLMRequest, LLMResult

Responder = Callable[[LLMRequest], Union[str, LLMResult]]


def count_tokens(text: str) -> int:
    """Whitespace word count: a deterministic stand-in for a tokenizer."""
    return len(text.split())


def prompt_tokens(req: LLMRequest) -> int:
    return sum(count_tokens(m.content) for m in req.messages)


def request_rng(req: LLMRequest, seed: int) -> np.random.Generator:
    """An RNG determined by the seed and the request's content, not by call order.

    Answers then stay the same however requests are batched, split or retried.
    """
    digest = hashlib.sha256(f"{seed}:{req.cache_key()}:{req.request_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def schema_answer(req: LLMRequest, seed: int = 0) -> str:
    """A schema-valid JSON answer (or a few words when no schema is given)."""
    rng = request_rng(req, seed)
    if req.json_schema is None:
        return (
            " ".join(str(w) for w in sample_from_schema({"type": "array", "items": {"type": "string"}}, rng, depth=3))
            or "ok"
        )
    return json.dumps(sample_from_schema(req.json_schema, rng))


def _as_result(req: LLMRequest, answer: str | LLMResult, latency_s: float = 0.0) -> LLMResult:
    if isinstance(answer, LLMResult):
        return answer.model_copy(update={"request_id": req.request_id})
    return LLMResult(
        request_id=req.request_id,
        text=answer,
        prompt_tokens=prompt_tokens(req),
        completion_tokens=count_tokens(answer),
        latency_s=latency_s,
        finish_reason="stop",
    )


class ScriptedBackend:
    """Answers from a fixed list (cycled in call order) or a function of the request.

    Records every request it saw in ``calls`` so tests can assert what reached the model.
    """

    def __init__(self, responses: Sequence[str] | Responder, model_name: str = "scripted") -> None:
        if not callable(responses):
            responses = list(responses)
            if not responses:
                raise ValueError("ScriptedBackend needs at least one response")
        self._responses = responses
        self._next = 0
        self.model_name = model_name
        self.calls: list[LLMRequest] = []
        self.closed = False

    def _answer(self, req: LLMRequest) -> str | LLMResult:
        if callable(self._responses):
            return self._responses(req)
        text = self._responses[self._next % len(self._responses)]
        self._next += 1
        return text

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        out = []
        for req in requests:
            self.calls.append(req)
            out.append(_as_result(req, self._answer(req)))
        return out

    def close(self) -> None:
        self.closed = True

    def __repr__(self) -> str:
        return f"ScriptedBackend(model_name={self.model_name!r})"


class RandomBackend:
    """Schema-valid random answers, reproducible per (seed, request); the model-free smoke backend."""

    def __init__(self, seed: int = 0, model_name: str = "random") -> None:
        self.seed = seed
        self.model_name = model_name
        self.calls = 0

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        self.calls += len(requests)
        return [_as_result(r, schema_answer(r, self.seed)) for r in requests]

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"RandomBackend(seed={self.seed})"


class GarbageBackend:
    """A misbehaving server: a seeded fraction of calls fail (429 with Retry-After, 503, timeout,
    connection reset) and another fraction return unparseable text.

    For testing that wrappers and the simulator survive bad backends without losing or duplicating
    results. Failures are drawn per call from one seeded generator, so a retried request can
    succeed on a later attempt.
    """

    FAILURES = ("rate_limit", "server", "timeout", "connection")
    GARBAGE = ("", "{", "not json at all", '{"action": ', "```json\n{]\n```", "\x00\x01\x02", "null", "[1, 2")

    def __init__(
        self,
        seed: int = 0,
        error_rate: float = 0.3,
        garbage_rate: float = 0.2,
        *,
        retry_after_s: float = 0.01,
        responder: Responder | None = None,
        model_name: str = "garbage",
    ) -> None:
        if not (0.0 <= error_rate <= 1.0 and 0.0 <= garbage_rate <= 1.0 and error_rate + garbage_rate <= 1.0):
            raise ValueError("error_rate and garbage_rate must lie in [0, 1] and sum to at most 1")
        self.rng = np.random.default_rng(seed)
        self.error_rate = error_rate
        self.garbage_rate = garbage_rate
        self.retry_after_s = retry_after_s
        self.responder = responder
        self.model_name = model_name
        self.calls = 0
        self.failures = 0
        self.garbage = 0

    def _one(self, req: LLMRequest) -> LLMResult:
        self.calls += 1
        u = float(self.rng.random())
        if u < self.error_rate:
            self.failures += 1
            kind = self.FAILURES[int(self.rng.integers(len(self.FAILURES)))]
            if kind == "rate_limit":
                return LLMResult.failure(
                    req.request_id, "HTTP 429: rate limited", "rate_limit", retry_after_s=self.retry_after_s
                )
            if kind == "server":
                return LLMResult.failure(req.request_id, "HTTP 503: overloaded", "server")
            if kind == "timeout":
                return LLMResult.failure(req.request_id, "timeout", "timeout")
            return LLMResult.failure(req.request_id, "connection error: reset by peer", "connection")
        if u < self.error_rate + self.garbage_rate:
            self.garbage += 1
            return _as_result(req, self.GARBAGE[int(self.rng.integers(len(self.GARBAGE)))])
        answer = self.responder(req) if self.responder is not None else schema_answer(req)
        return _as_result(req, answer)

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        return [self._one(r) for r in requests]

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"GarbageBackend(error_rate={self.error_rate}, garbage_rate={self.garbage_rate})"


class LatencyBackend:
    """Each request takes ``delay_s`` of (async) wall time: models a remote server for throughput
    benchmarks and concurrency tests. ``max_in_flight`` records the peak number of concurrent calls.
    """

    def __init__(self, delay_s: float, responder: Responder | None = None, model_name: str = "latency") -> None:
        self.delay_s = float(delay_s)
        self.responder = responder
        self.model_name = model_name
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls = 0

    async def _one(self, req: LLMRequest) -> LLMResult:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        answer = self.responder(req) if self.responder is not None else schema_answer(req)
        return _as_result(req, answer, latency_s=self.delay_s)

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"LatencyBackend(delay_s={self.delay_s})"
