"""Request/result records shared by every backend and wrapper.

Results carry failures as data (``error``/``error_kind``) instead of exceptions so one bad call in
a batch of thousands never loses the other answers; the wrappers decide what is worth retrying.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - a core dependency; json alone gives the same keys, slower
    _orjson = None  # type: ignore[assignment]

Role = Literal["system", "user", "assistant"]

ErrorKind = Literal[
    "rate_limit",  # HTTP 429
    "server",  # HTTP 5xx
    "timeout",
    "connection",
    "bad_response",  # HTTP 200 whose body is unusable: truncated, not JSON, no content, nonsense usage
    "client",  # HTTP 4xx other than 429: the request itself is wrong, retrying will not help
    "circuit_open",
    "budget",  # the run's call or token budget could not cover this request; it was not sent
    "replay_miss",
    "interrupted",  # the run stopped (a signal) before its answer was read; the server may have it
    "other",
]

#: Error kinds a retry may cure: the server was busy, unreachable or answered garbage, not the request wrong.
RETRYABLE_KINDS: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection", "bad_response"})


class ChatMessage(BaseModel):
    """One chat turn; frozen so cached requests cannot be mutated after hashing."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role = Field(description="Who speaks: system, user or assistant.")
    content: str = Field(description="The turn's text.")


class LLMRequest(BaseModel):
    """One generation asked of a backend."""

    model_config = ConfigDict(extra="forbid")

    request_id: str = Field(description="Caller-chosen id, unique within a batch; echoed in the result.")
    messages: list[ChatMessage] = Field(description="The conversation to complete.")
    json_schema: dict[str, Any] | None = Field(
        None, description="JSON schema the answer must follow (constrained decoding where the server supports it)."
    )
    max_tokens: int = Field(256, ge=1, description="Upper bound on completion tokens.")
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="Sampling temperature.")
    seed: int | None = Field(None, description="Sampling seed, where the server honours one.")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Trace context (step, agent_id, perspective, ...); never part of the cache key.",
    )

    def cache_key(self, model: str = "") -> str:
        """Hash of everything that determines the answer, so reruns and replays find the same entry.

        ``request_id`` and ``metadata`` are left out on purpose: the same prompt asked by another
        agent or at another step is the same question to the model.
        """
        text = _fast_key_text(model, self) if _orjson is not None else None
        if text is None:
            payload = {
                "model": model,
                "messages": [[m.role, m.content] for m in self.messages],
                "schema": self.json_schema,
                "max_tokens": self.max_tokens,
                "temperature": self.temperature,
                "seed": self.seed,
            }
            text = json_key_text(payload)
        return hashlib.sha256(text).hexdigest()

    def params(self) -> dict[str, Any]:
        """The sampling parameters alone, as stored in the call log."""
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "json_schema": self.json_schema,
        }

    def params_json(self) -> str:
        """:meth:`params` as the call log's ``params`` column stores it:
        ``json.dumps(params, sort_keys=True, separators=(",", ":"))``, whichever encoder wrote it.

        Why: ``json`` took ~30 us per call for an action schema, the largest part of writing a
        step's ``llm_calls`` rows; orjson writes the schema in ~6 us. Where orjson's bytes could
        differ (see :func:`_fast_key_text`) or hold non-ASCII text or DEL (json escapes them), json
        writes them. Before, the column had json's default ``", "`` and ``": "`` separators: read it as
        JSON, not as text.
        """
        schema = _fast_schema(self.json_schema) if _orjson is not None else None
        if schema is None or not schema.isascii() or b"\x7f" in schema:  # json escapes DEL too
            return json.dumps(self.params(), sort_keys=True, separators=(",", ":"))
        return b"".join(
            (
                b'{"json_schema":',
                schema,
                b',"max_tokens":',
                _scalar(self.max_tokens),
                b',"seed":',
                _scalar(self.seed),
                b',"temperature":',
                _scalar(self.temperature),
                b"}",
            )
        ).decode("ascii")


_ORJSON_STRICT = (
    (_orjson.OPT_SORT_KEYS | _orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME)
    | _orjson.OPT_PASSTHROUGH_SUBCLASS
    if _orjson is not None
    else 0
)


def json_key_text(payload: Any) -> bytes:
    """``json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` as UTF-8
    (lone surrogates kept, as ``surrogatepass`` writes them): what a cache key is the sha256 of."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")  # hostile text must still hash


def _scalar(v: Any) -> bytes:
    if type(v) is int:
        return b"%d" % v
    if v is None:
        return b"null"
    if type(v) is float and math.isfinite(v):  # json writes float.__repr__; json.dumps took ~7 us of a key
        return float.__repr__(v).encode("ascii")
    return json.dumps(v).encode("ascii")  # floats as Python's repr writes them, as json does


def _fast_schema(schema: dict[str, Any] | None) -> bytes | None:
    """:func:`json_key_text` of a schema written by orjson, or None where the two might differ (see
    :func:`_fast_key_text`): a cheap byte scan sends any schema with a '.', '-' or ``null`` to json."""
    if schema is None:
        return b"null"
    try:
        out = _orjson.dumps(schema, option=_ORJSON_STRICT)
    except TypeError:
        return None
    if b"." in out or b"-" in out or b"null" in out:
        return None
    return out


def _fast_key_text(model: str, req: LLMRequest) -> bytes | None:
    """:func:`json_key_text` of a cache key's payload, written by orjson, or None where it might differ.

    Why: ``json`` made this ~30 us of CPU per call for an action schema, the largest single cost of
    building a request. orjson writes the same bytes for strings (same escapes, UTF-8), integers
    and keys (sorted by code point); it refuses (TypeError) what it would write otherwise or json
    refuses: a lone surrogate, an integer past 64 bits, a non-string key, subclasses, dataclasses,
    dates. Its floats differ from Python's repr only below 1e-4 (``1e-7`` / ``0.00001`` for
    ``1e-07`` / ``1e-05``) and for NaN and infinities (``null``): a schema holding a '.', a '-' or
    a ``null`` goes to json (a cheap byte scan; floats are rare in schemas, socium's have none).
    The top-level scalars are written here as json writes them. tests/test_llm/test_llm_cache_replay.py
    compares the two on hostile text and thousands of floats.
    """
    schema = _fast_schema(req.json_schema)
    if schema is None:
        return None
    try:
        messages = _orjson.dumps([[m.role, m.content] for m in req.messages])
        name = _orjson.dumps(model)
    except TypeError:
        return None
    return b"".join(
        (
            b'{"max_tokens":',
            _scalar(req.max_tokens),
            b',"messages":',
            messages,
            b',"model":',
            name,
            b',"schema":',
            schema,
            b',"seed":',
            _scalar(req.seed),
            b',"temperature":',
            _scalar(req.temperature),
            b"}",
        )
    )


class LLMResult(BaseModel):
    """The answer to one request, or why there is none."""

    model_config = ConfigDict(extra="forbid")

    request_id: str = Field(description="The request's id.")
    text: str = Field("", description="Completion text; empty when the call failed.")
    prompt_tokens: int = Field(0, ge=0, description="Prompt tokens as counted by the server.")
    completion_tokens: int = Field(0, ge=0, description="Completion tokens as counted by the server.")
    latency_s: float = Field(0.0, ge=0.0, description="Wall time of the call, all attempts included.")
    finish_reason: str | None = Field(None, description="Why generation stopped (stop, length, ...).")
    error: str | None = Field(None, description="Short reason the call failed; None on success.")
    error_kind: ErrorKind | None = Field(None, description="Failure class; drives retry decisions.")
    retry_after_s: float | None = Field(None, ge=0.0, description="Server's Retry-After hint, in seconds.")
    cached: bool = Field(False, description="Answered from the cache without calling the model.")
    attempts: int = Field(1, ge=0, description="Calls made for this result (retries included; 0 for a cache hit).")

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def retryable(self) -> bool:
        return self.error is not None and self.error_kind in RETRYABLE_KINDS

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def failure(
        cls,
        request_id: str,
        error: str,
        kind: ErrorKind = "other",
        *,
        retry_after_s: float | None = None,
        latency_s: float = 0.0,
        attempts: int = 1,
    ) -> LLMResult:
        return cls(
            request_id=request_id,
            error=error,
            error_kind=kind,
            retry_after_s=retry_after_s,
            latency_s=max(0.0, latency_s),
            attempts=attempts,
        )


def user_request(request_id: str, prompt: str, *, system: str | None = None, **kwargs: Any) -> LLMRequest:
    """Shorthand for the common one-user-turn request (tests, examples, interviews)."""
    msgs = [ChatMessage(role="system", content=system)] if system else []
    msgs.append(ChatMessage(role="user", content=prompt))
    return LLMRequest(request_id=request_id, messages=msgs, **kwargs)
