"""A resumed run reads the answers its stopped step already received from the trace, and asks only the rest.

Why (issue 36, left over): a run stopped mid-step (SIGTERM, Ctrl-C, a server that went down, a budget)
keeps every call the step made in the call log (``metadata.aborted_step``, :mod:`socium.llm.interrupted`),
but ``socium run --resume`` redid the step by asking the model again for every call, the answered ones
included. On a paid endpoint that paid twice for the same answers, and with a server that does not answer
the same request the same way twice, the resumed step's agents were told something else than the stopped
run had been told.

How: on resume the driver reads the stopped step's answered calls (``outcome = 'ok'``, first answer per
request hash: :func:`socium.trace.queries.calls.stopped_step_answers`) into :class:`StoppedAnswers` and serves
them while it redoes that step (:func:`serving`, a :class:`~contextvars.ContextVar`, so the tasks each layer
starts see it, as the interrupted-call note does). :class:`ResumeReplay` sits just inside the caching layer
(:func:`socium.llm.factory.build_backend` puts it there): a request whose cache key (the key the replay backend
and the cache use: same request hash, same answer) is in the record gets the recorded answer without reaching
the retry, budget, breaker or connection layers; every other request goes on to the server. Calls that were
cut off (``interrupted``) or failed were never answered and are asked again.

What the trace says: a served answer is a call-log row of the committed step like any other (same request,
response and tokens as the stopped run's row), with ``attempts = 0`` because this session sent nothing for
it: ``sum(attempts)`` stays the requests the servers received, so the budget ledger a later resume reads
counts each answer once (and the tokens of such rows are not counted again:
:func:`socium.trace.queries.calls.spend_by_backend`). ``outcome = 'ok' AND attempts = 0`` marks them; a
cache hit is never logged, so nothing else has that shape. The Simulation Card counts them
(``llm_usage.replayed_calls``).

With Ray the driver sends each shard the answers of its own agents with the batch
(:mod:`socium.simulator.ray_executor`); the actor serves them the same way.

Limits: a policy whose backend stack is not built by :func:`~socium.llm.factory.build_backend` (a test's
``backend_factory``) has no :class:`ResumeReplay` layer and asks again, as before; so does a run with
``llm.cache: false`` (it keeps no call log). The answer served is the one logged, which the log keeps
without control characters and at most 100,000 characters long (``socium.agents.call_log``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from socium.llm.base import BackendWrapper, LLMBackend, check_results
from socium.llm.types import LLMRequest, LLMResult

#: (response, prompt tokens, completion tokens, finish reason, agent id) of one answered call
Answer = tuple[str, int, int, str | None, int | None]


@dataclass(frozen=True)
class StoppedAnswers:
    """The answers a stopped step received, by request hash (``llm_calls.request_hash``)."""

    step: int
    answers: dict[str, Answer] = field(default_factory=dict)

    @classmethod
    def from_rows(
        cls, step: int, rows: Iterable[tuple[str, str | None, int | None, int | None, str | None, int | None]]
    ) -> StoppedAnswers:
        """From ``(request hash, response, prompt tokens, completion tokens, finish reason, agent id)`` rows in
        call order; the first answer of a hash is kept (as the cache serves the first)."""
        answers: dict[str, Answer] = {}
        for key, text, pt, ct, fr, agent in rows:
            answers.setdefault(key, (text or "", int(pt or 0), int(ct or 0), fr, None if agent is None else int(agent)))
        return cls(step, answers)

    def __len__(self) -> int:
        return len(self.answers)

    def result(self, key: str, request_id: str) -> LLMResult | None:
        """The recorded answer to the request with cache key ``key``, as a result that reached no server."""
        got = self.answers.get(key)
        if got is None:
            return None
        text, pt, ct, fr, _agent = got
        return LLMResult(
            request_id=request_id,
            text=text,
            prompt_tokens=pt,
            completion_tokens=ct,
            finish_reason=fr,
            cached=True,
            attempts=0,
        )

    def for_agents(self, agents: set[int]) -> StoppedAnswers | None:
        """The answers of calls made for ``agents`` (and those made for no agent): one Ray shard's part.
        None when there are none (nothing to send)."""
        part = {k: a for k, a in self.answers.items() if a[4] is None or a[4] in agents}
        return StoppedAnswers(self.step, part) if part else None


_SERVING: ContextVar[StoppedAnswers | None] = ContextVar("socium_stopped_step_answers", default=None)


@contextmanager
def serving(answers: StoppedAnswers | None) -> Iterator[None]:
    """Serve ``answers`` (None: nothing) to the requests made inside this block and the tasks it starts."""
    token = _SERVING.set(answers)
    try:
        yield
    finally:
        _SERVING.reset(token)


def current() -> StoppedAnswers | None:
    """The answers being served here (the driver hands each Ray shard its part of them)."""
    return _SERVING.get()


def is_replayed(result: LLMResult) -> bool:
    """Whether ``result`` was read from a stopped step's record rather than asked (see the module docstring)."""
    return result.ok and result.cached and result.attempts == 0


class ResumeReplay(BackendWrapper):
    """Answer requests from the stopped step's record while :func:`serving` one; pass the rest on.

    Outside a resumed step it only looks up the context variable, so a run that is not resumed sends exactly
    what it sent before. ``replayed`` counts the answers it served (this process only)."""

    def __init__(self, inner: LLMBackend) -> None:
        super().__init__(inner)
        self.replayed = 0

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        answers = _SERVING.get()
        if answers is None or not requests:
            return await self.inner.generate(requests)
        model = self.inner.model_name
        out: list[LLMResult | None] = [answers.result(r.cache_key(model), r.request_id) for r in requests]
        ask = [i for i, r in enumerate(out) if r is None]
        self.replayed += len(requests) - len(ask)
        if ask:
            sent = [requests[i] for i in ask]
            for i, res in zip(ask, check_results(sent, await self.inner.generate(sent), self.inner)):
                out[i] = res
        return [r for r in out if r is not None]


__all__ = ["ResumeReplay", "StoppedAnswers", "current", "is_replayed", "serving"]
