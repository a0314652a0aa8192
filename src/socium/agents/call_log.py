"""Rows of ``llm_calls``: requests serialised once for the step's call log, and the columns written.

Moved out of :mod:`socium.agents.llm_policy` (which re-exports these names): the trace writers
(simulation, interviews, episodes) need only these, not the policy.
"""

from __future__ import annotations

import json
from typing import Any

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
        self.prompt_json = json.dumps(
            [{"role": m.role, "content": clean_text(m.content, 200_000).text} for m in req.messages],
            ensure_ascii=False,
        )  # always valid UTF-8 JSON

    def __getstate__(self) -> tuple[str, dict[str, Any], str, str]:
        return self.request_id, self.metadata, self.params_json, self.prompt_json

    def __setstate__(self, state: tuple[str, dict[str, Any], str, str]) -> None:
        self.request_id, self.metadata, self.params_json, self.prompt_json = state


def rendered_calls(calls: list[tuple[str, Any, LLMResult, str]]) -> list[tuple[str, Any, LLMResult, str]]:
    """Calls with their requests replaced by :class:`RenderedRequest` (same ``llm_calls`` rows)."""
    return [(k, r if isinstance(r, RenderedRequest) else RenderedRequest(r), res, m) for k, r, res, m in calls]


def call_rows(calls: list[tuple[str, Any, LLMResult, str]], first_id: int) -> dict[str, list]:
    """``llm_calls`` columns for the calls of one step, in a deterministic order."""
    cols: dict[str, list] = {
        k: []
        for k in (
            "call_id",
            "step",
            "agent_id",
            "perspective",
            "request_id",
            "request_hash",
            "model",
            "params",
            "prompt",
            "response",
            "prompt_tokens",
            "completion_tokens",
            "latency_s",
            "finish_reason",
            "outcome",
            "error",
            "attempts",
            "metadata",
        )
    }
    keyed = [
        ((c[1].metadata.get("step") or 0), (c[1].metadata.get("agent_id") or 0), c[1].request_id, i)
        for i, c in enumerate(calls)
    ]
    calls = rendered_calls([calls[k[3]] for k in sorted(keyed)])
    for i, (key, req, res, model) in enumerate(calls):
        md = req.metadata
        for k, v in (
            ("call_id", first_id + i),
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
