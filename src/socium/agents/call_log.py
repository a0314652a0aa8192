"""Rows of ``llm_calls``: requests serialised once for the step's call log, and the columns written.

Moved out of :mod:`socium.agents.llm_policy` (which re-exports these names): the trace writers
(simulation, interviews, episodes) need only these, not the policy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from socium.llm.resume_replay import is_replayed
from socium.llm.types import LLMRequest, LLMResult
from socium.platform.text import clean_text


class RenderedRequest:
    """A request as the call log stores it: its prompt and parameters already serialised to the JSON
    strings of ``llm_calls``. Why: a step holds every call until it commits, and a live
    :class:`LLMRequest` (message objects, a per-call JSON schema of nested dicts) costs several times
    its two strings in small Python objects; with Ray it also crosses the wire that way."""

    __slots__ = ("metadata", "params_json", "prompt_json", "request_id")

    def __init__(self, req: LLMRequest) -> None:
        self.request_id = req.request_id
        self.metadata = req.metadata
        self.params_json = req.params_json()  # compact, keys sorted (LLMRequest.params_json)
        self.prompt_json = prompt_json(req.messages)  # always valid UTF-8 JSON

    def __getstate__(self) -> tuple[str, dict[str, Any], str, str]:
        return self.request_id, self.metadata, self.params_json, self.prompt_json

    def __setstate__(self, state: tuple[str, dict[str, Any], str, str]) -> None:
        self.request_id, self.metadata, self.params_json, self.prompt_json = state


#: The most characters of one message the ``prompt`` column keeps.
PROMPT_MAX_CHARS = 200_000


def prompt_json(messages: Sequence[Any]) -> str:
    """The ``prompt`` column: ``json.dumps([{"role": .., "content": clean_text(content).text}, ..],
    ensure_ascii=False)``, byte for byte, written with orjson.

    Why: ``json`` took ~30 µs per call for a 1.5 KB prompt here (a third of rendering a call-log row),
    orjson ~1 µs. For strings the two write the same bytes (the same escapes, ``\\uXXXX`` lower-case for
    the other control characters, everything else as raw UTF-8: checked over every code point in
    tests/test_agents/test_call_log_json.py); the separators json puts between items (``", "`` and
    ``": "``) are written here. A message with a NUL, a lone surrogate (which orjson refuses) or over
    :data:`PROMPT_MAX_CHARS` characters is cleaned first (:func:`clean_text`), as before; any other
    is already what ``clean_text`` would return.
    """
    parts = []
    for m in messages:
        text = m.content
        if "\x00" in text or len(text) > PROMPT_MAX_CHARS:
            text = clean_text(text, PROMPT_MAX_CHARS).text
        try:
            content = orjson.dumps(text)
        except TypeError:  # a lone surrogate: clean_text replaces it
            content = orjson.dumps(clean_text(text, PROMPT_MAX_CHARS).text)
        parts.append(b'{"role": ' + orjson.dumps(m.role) + b', "content": ' + content + b"}")
    return (b"[" + b", ".join(parts) + b"]").decode("utf-8")


def rendered_calls(calls: list[tuple[str, Any, LLMResult, str]]) -> list[tuple[str, Any, LLMResult, str]]:
    """Calls with their requests replaced by :class:`RenderedRequest` (same ``llm_calls`` rows)."""
    return [(k, r if isinstance(r, RenderedRequest) else RenderedRequest(r), res, m) for k, r, res, m in calls]


#: ``llm_calls`` columns as :func:`call_rows` returns them (``call_id`` first), with their Arrow types.
CALL_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("call_id", pa.int64()),
    ("step", pa.int64()),
    ("agent_id", pa.int64()),
    ("perspective", pa.string()),
    ("request_id", pa.string()),
    ("request_hash", pa.string()),
    ("model", pa.string()),
    ("params", pa.string()),
    ("prompt", pa.string()),
    ("response", pa.string()),
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("latency_s", pa.float64()),
    ("finish_reason", pa.string()),
    ("outcome", pa.string()),
    ("error", pa.string()),
    ("attempts", pa.int64()),
    ("metadata", pa.string()),
)


def _sort_key(md: dict[str, Any]) -> tuple[Any, Any]:
    return (md.get("step") or 0), (md.get("agent_id") or 0)


def call_rows(calls: list[tuple[str, Any, LLMResult, str]], first_id: int) -> dict[str, list]:
    """``llm_calls`` columns for the calls of one step, in a deterministic order."""
    keyed = [(*_sort_key(c[1].metadata), c[1].request_id, i) for i, c in enumerate(calls)]
    ordered = rendered_calls([calls[k[3]] for k in sorted(keyed)])
    return {"call_id": list(range(first_id, first_id + len(ordered))), **_columns(ordered)}


def _columns(calls: list[tuple[str, RenderedRequest, LLMResult, str]]) -> dict[str, list]:
    """``llm_calls`` columns but ``call_id`` for rendered calls, in their order."""
    cols: dict[str, list] = {k: [] for k, _ in CALL_COLUMNS[1:]}
    for key, req, res, model in calls:
        md = req.metadata
        for k, v in (
            ("step", md.get("step")),
            ("agent_id", md.get("agent_id")),
            ("perspective", md.get("perspective")),
            ("request_id", req.request_id),
            ("request_hash", key),
            ("model", model),
            ("params", req.params_json),
            ("prompt", req.prompt_json),
            ("response", clean_text(res.text, 100_000).text if res.ok else None),
            ("prompt_tokens", res.prompt_tokens),
            ("completion_tokens", res.completion_tokens),
            ("latency_s", res.latency_s),
            ("finish_reason", res.finish_reason),
            ("outcome", "ok" if res.ok else (res.error_kind or "other")),
            ("error", None if res.error is None else clean_text(res.error, 2000).text),
            ("attempts", res.attempts),
            ("metadata", json.dumps(md, sort_keys=True, default=str)),
        ):
            cols[k].append(v)
    return cols


#: Calls a :class:`CallLog` holds as Python objects before it turns them into one Arrow batch.
COMPACT_EVERY = 1024

_ORDER = ("_step", "_agent", "request_id", "_seq")  # call_rows' order: step, agent, request id, arrival
_SCHEMA = pa.schema([*CALL_COLUMNS[1:], ("_step", pa.int64()), ("_agent", pa.int64()), ("_seq", pa.int64())])


class CallLog:
    """The model calls of one step until it commits, kept as ``llm_calls`` columns in Arrow batches.

    Why: a step holds every call until its transaction (a step is committed whole or not at all, so
    rows cannot go to the trace earlier). As objects a call costs 4.3-5.0 KB in ``bench_http.py``'s
    runs, and over half of that is the :class:`LLMResult` (a pydantic model: ~2.2 KB around a
    35-character answer) and the metadata dict; every ``COMPACT_EVERY`` calls they become Arrow
    columns (the row's bytes, no Python objects), so the driver's heap no longer grows with the step.

    :meth:`rows` gives exactly :func:`call_rows` over every call in the order they were added (same
    ``call_id`` s, same row order). The step's health check needs only :attr:`n` and :attr:`kept`
    (the results that failed or carry an error kind, kept as objects: rare by design).
    """

    def __init__(self, every: int | None = None) -> None:
        self.every = every or COMPACT_EVERY
        self.n = 0  # calls added
        self.tokens = 0  # prompt + completion tokens of all of them
        self.replayed = 0  # of them answered from a stopped step's record on resume (socium.llm.resume_replay)
        self.kept: list[LLMResult] = []  # results with an error or an error kind (step_problem reads them)
        self._pending: list[tuple[str, Any, LLMResult, str]] = []
        self._batches: list[pa.Table] = []

    def __len__(self) -> int:
        return self.n

    def extend(self, calls: list[tuple[str, Any, LLMResult, str]]) -> None:
        for c in calls:
            res = c[2]
            self.tokens += (res.prompt_tokens or 0) + (res.completion_tokens or 0)
            if res.error is not None or res.error_kind is not None:
                self.kept.append(res)
            elif is_replayed(res):
                self.replayed += 1
        self._pending.extend(calls)
        self.n += len(calls)
        if len(self._pending) >= self.every:
            self._compact()

    def _compact(self) -> None:
        calls, self._pending = rendered_calls(self._pending), []
        if not calls:
            return
        cols: dict[str, Any] = _columns(calls)
        keys = [_sort_key(r.metadata) for _, r, _, _ in calls]
        cols["_step"] = [int(k[0]) for k in keys]
        cols["_agent"] = [int(k[1]) for k in keys]
        first = self.n - len(calls)
        cols["_seq"] = list(range(first, first + len(calls)))
        self._batches.append(pa.table(cols, schema=_SCHEMA))

    def rows(self, first_id: int) -> pa.Table:
        """The ``llm_calls`` rows of every call added, ids from ``first_id`` (as :func:`call_rows`)."""
        self._compact()
        if not self._batches:
            return pa.table({k: pa.array([], type=t) for k, t in CALL_COLUMNS})
        tbl = pa.concat_tables(self._batches)  # no copy: the batches become the chunks of its columns
        order = pc.sort_indices(tbl, sort_keys=[(k, "ascending") for k in _ORDER]).to_numpy()
        if (order[1:] < order[:-1]).any():  # agents' calls arrive in order; later ones (surveys, ...) may not
            tbl = tbl.take(order)
        self._batches = [tbl]  # sorted now, and held once (the abort path asks again)
        ids = pa.array(np.arange(first_id, first_id + tbl.num_rows, dtype=np.int64))
        return tbl.drop_columns(["_step", "_agent", "_seq"]).add_column(0, "call_id", ids)
