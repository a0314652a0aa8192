"""Requests cut off by a signal (SIGTERM, Ctrl-C) or a cancelled task still reach the call log.

Why: a stopped run used to lose the interrupted step's model calls, both from the trace and from the
budget the resumed run reads back from it (a call budget of 1,500: the server answered 1,557; runs stopped
by SIGTERM had sent 87 requests that were in no trace). The step is rightly not committed, but a request
the server received was made and may be paid for.

How: :func:`recording_interruptions` (the caching layer, which hands every fresh result to the call log)
opens a note for the requests it sends. The layers below add to it as the cancellation or the signal's
exception unwinds through them: the connection-limit layer adds the attempt that was on the wire
(:func:`sending`: past the limit, so sent or being sent; a request still queued for a slot was not), the
retry layer adds the attempts it had already finished (:func:`note_finished`). Each request with at least
one attempt becomes a failed result of kind ``interrupted`` in the call log, which the driver writes as an
aborted step's calls (``metadata.aborted_step``); the budget ledger of a resumed run counts them. The note
is a :class:`~contextvars.ContextVar` holding one dict: the tasks the lower layers start copy the context,
so they all add to the same dict without any layer knowing the others.

Limit: only HTTP backends have the connection-limit layer; an in-process engine's interrupted call
reached no server, and is recorded only where the retry layer had finished attempts of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

from socium.llm.cache import ResultCache, put_many
from socium.llm.types import LLMRequest, LLMResult

#: request_id -> attempts made of a request whose answer will never be read (set by the caching layer).
_NOTE: ContextVar[dict[str, int] | None] = ContextVar("socium_interrupted_attempts", default=None)

#: The ``error`` of an interrupted request's call-log row.
INTERRUPTED = "interrupted: the run was stopped (signal or cancellation) before this request's answer was read"


def _add(request_id: str, attempts: int) -> None:
    note = _NOTE.get()
    if note is not None and attempts > 0:
        note[request_id] = note.get(request_id, 0) + attempts


@contextmanager
def sending(req: LLMRequest) -> Iterator[None]:
    """Around one attempt handed to the server: if it is cut off, count it as made (the server may have it)."""
    try:
        yield
    except BaseException:
        _add(req.request_id, 1)
        raise


def note_finished(req: LLMRequest, attempts: int) -> None:
    """The retry layer's finished attempts of ``req``, when it is cut off between or during retries."""
    _add(req.request_id, attempts)


def open_note() -> tuple[dict[str, int], Token[dict[str, int] | None]]:
    """Start noting the attempts of requests about to be sent (what :func:`recording_interruptions` opens);
    close with :func:`close_note`, and on a cut-off hand the note to :func:`salvage` first."""
    note: dict[str, int] = {}
    return note, _NOTE.set(note)


def close_note(token: Token[dict[str, int] | None]) -> None:
    _NOTE.reset(token)


def salvage(
    cache: ResultCache,
    sent: Sequence[tuple[str, LLMRequest]],
    note: Mapping[str, int],
    model: str,
    meta: Mapping[str, Any] | None = None,
) -> None:
    """Hand the cache one ``interrupted`` failure per request of ``sent`` that reached the server (``note``)."""
    rows = [
        (key, req, LLMResult.failure(req.request_id, INTERRUPTED, "interrupted", attempts=note[req.request_id]))
        for key, req in sent
        if note.get(req.request_id, 0) > 0
    ]
    if rows:
        put_many(cache, rows, model, meta)


@contextmanager
def recording_interruptions(
    cache: ResultCache,
    sent: Sequence[tuple[str, LLMRequest]],
    model: str,
    meta: Mapping[str, Any] | None = None,
) -> Iterator[None]:
    """Around sending ``sent`` (``(cache key, request)`` pairs): when they are cut off, hand the cache one
    ``interrupted`` failure per request that reached the server, with the attempts it made, then re-raise."""
    note, token = open_note()
    try:
        yield
    except BaseException:
        salvage(cache, sent, note, model, meta)
        raise
    finally:
        close_note(token)
