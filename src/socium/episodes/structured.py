"""One structured call: schema-constrained request, lenient parse, validation, one re-ask.

Every model call of an episode (a turn, a script, an end-of-episode answer, a judgement) goes
through :func:`ask_structured`, so they share one failure policy: model output is untrusted, a
reply that fails validation is shown its error once, and a second failure is returned as a typed
outcome with the reason and the raw text, never dropped and never turned into a silent default.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from pydantic import ValidationError

from socium.agents.retry import retry_turns
from socium.llm.base import LLMBackend
from socium.llm.parsing import parse_json_lenient
from socium.llm.types import ChatMessage, LLMRequest
from socium.platform.text import clean_text

T = TypeVar("T")
MAX_RAW_CHARS = 8000
#: llama.cpp turns ``maxLength: n`` into n nested optional rules and crashes on large n (4000
#: segfaults in llama-cpp-python 0.3.x); strings in the schema *sent* are capped at this.
WIRE_MAX_STRING_CHARS = 1000
CHARS_PER_TOKEN = 3
_REASK_ECHO_CHARS = 2000


@dataclass
class Outcome(Generic[T]):
    """A validated value, or why there is none; ``raw`` is the last reply (bounded)."""

    value: T | None
    raw: str | None
    error: str | None
    attempts: int

    @property
    def ok(self) -> bool:
        return self.error is None


def _clean(text: str, limit: int) -> str:
    return clean_text(text, limit).text


def short_error(exc: Exception) -> str:
    """First validation problem with its location, bounded: it goes back into a prompt."""
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        loc = ".".join(str(x) for x in e["loc"])
        return f"{loc}: {e['msg']}"[:300] if loc else str(e["msg"])[:300]
    return str(exc)[:300]


def request_seed(seed: int, *key: int | str) -> int:
    """A request seed that depends only on the episode seed and the call's identity, never on order."""
    ints = [k if isinstance(k, int) else int.from_bytes(hashlib.sha256(k.encode()).digest()[:4], "little") for k in key]
    return int(np.random.SeedSequence(seed, spawn_key=tuple(ints)).generate_state(1)[0] & 0x7FFFFFFF)


def wire_schema(
    schema: dict[str, Any] | None, max_tokens: int, max_string_chars: int | None = None
) -> dict[str, Any] | None:
    """The schema as sent: every string's ``maxLength`` capped so a reply fits in ``max_tokens``.

    A string the grammar lets run past the token cap ends as truncated, invalid JSON; capping it
    at about 3 characters per token makes constrained decoding close the object in time. The
    reply is still validated against the full model, whose bounds are never loosened.
    ``max_string_chars`` caps further (the same utterance cap in every mode keeps lengths comparable).
    """
    if schema is None:
        return None
    cap = min(WIRE_MAX_STRING_CHARS, max(16, CHARS_PER_TOKEN * max_tokens), max_string_chars or WIRE_MAX_STRING_CHARS)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            if out.get("type") == "string":
                out["maxLength"] = min(int(out.get("maxLength", cap)), cap)
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


async def ask_structured(
    backend: LLMBackend,
    request_id: str,
    messages: list[dict[str, str]],
    schema: dict[str, Any] | None,
    validate: Callable[[Any], T],
    *,
    seed: int,
    max_tokens: int,
    temperature: float,
    metadata: dict[str, Any],
    reask: bool = True,
    max_string_chars: int | None = None,
) -> Outcome[T]:
    """Ask, validate with ``validate(parsed_json)`` (raises ValueError/ValidationError), re-ask once.

    A backend failure (HTTP error, context overflow) is not re-asked here: the retry wrapper in the
    backend stack already handled transient ones, and the same prompt would overflow again.
    """
    msgs = list(messages)
    schema = wire_schema(schema, max_tokens, max_string_chars)
    last_err = ""
    raw: str | None = None
    attempts = 0
    for attempt in range(2 if reask else 1):
        attempts += 1
        req = LLMRequest(
            request_id=f"{request_id}-{attempt}",
            messages=[ChatMessage(**m) for m in msgs],
            json_schema=schema,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=request_seed(seed, request_id, attempt),
            metadata={**metadata, "attempt": attempt},
        )
        res = (await backend.generate([req]))[0]
        if not res.ok:
            return Outcome(None, None, _clean(f"backend error ({res.error_kind}): {res.error}", 500), attempts)
        raw = _clean(res.text, MAX_RAW_CHARS)  # stored in the trace: no NULs, no lone surrogates, bounded
        try:
            return Outcome(validate(parse_json_lenient(res.text)), raw, None, attempts)
        except (ValueError, ValidationError) as exc:
            last_err = _clean(short_error(exc), 300)
            msgs = msgs + retry_turns(raw[:_REASK_ECHO_CHARS], last_err)
    return Outcome(None, raw, f"invalid output{' after re-ask' if reask else ''}: {last_err}", attempts)
