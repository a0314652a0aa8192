"""Lenient JSON extraction from model output.

Even with constrained decoding the text is not always strict JSON: llama.cpp's grammar lets raw
newlines into strings, chat models wrap answers in code fences, and unconstrained servers add
prose before or after the object. Rejecting those would waste otherwise usable actions.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)
#: 19 digits in a row: a number orjson might read as a float where json reads an int (past 64 bits).
_LONG_NUMBER = re.compile(r"[0-9]{19}")


def _balanced_object(text: str, start: int) -> str | None:
    """The ``{...}`` starting at ``start``, matching braces outside strings; None if unclosed."""
    depth = 0
    in_str = False
    escape = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def _short(text: str, n: int = 60) -> str:
    text = text.strip().replace("\n", "\\n")
    return text if len(text) <= n else text[:n] + "..."


def _strict_object(text: str) -> dict[str, Any] | None:
    """``text`` read by orjson when it is one strict JSON object orjson reads as ``json.loads`` does; else None.

    Why: ``json.loads(..., strict=False)`` builds a decoder per call; for a 40-character answer that
    was most of this function's ~14 µs per activation. Where orjson accepts a text it gives what json
    gives (duplicate keys: the last value; floats correctly rounded), except integers past 64 bits,
    which it reads as floats: a text with 19 digits in a row is left to json. What orjson refuses (raw
    control characters in strings, NaN, 1e400, a lone surrogate escape, nesting past 1,024) json reads
    as before, on the lenient path. tests/test_llm/test_parsing_fast.py compares the two.
    """
    if text[:1] != "{" or _LONG_NUMBER.search(text) is not None:
        return None
    try:
        value = orjson.loads(text)
    except ValueError:  # orjson.JSONDecodeError
        return None
    return value if isinstance(value, dict) else None


def parse_json_lenient(text: str) -> dict[str, Any]:
    """Parse the first JSON object in ``text``.

    Tolerates raw control characters inside strings (``strict=False``), code fences, and junk
    before or after the object. Raises ``ValueError`` with a short reason otherwise.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected text, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("empty output")
    if "```" not in text:  # the common answer, one bare object: orjson reads it as json would, ~5x cheaper
        value = _strict_object(text.strip())
        if value is not None:
            return value
    candidates: list[str] = [m.group(1) for m in _FENCE.finditer(text)]
    candidates.append(text)
    last_reason = "no JSON object found"
    for cand in candidates:
        stripped = cand.strip()
        try:
            value = json.loads(stripped, strict=False)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = stripped.find("{")
        while start != -1:
            obj = _balanced_object(stripped, start)
            if obj is None:
                last_reason = f"unclosed JSON object: {_short(stripped[start:])}"
                break
            try:
                value = json.loads(obj, strict=False)
            except json.JSONDecodeError as exc:
                last_reason = f"invalid JSON ({exc.msg} at char {exc.pos}): {_short(obj)}"
            else:
                if isinstance(value, dict):
                    return value
            start = stripped.find("{", start + 1)
    if last_reason == "no JSON object found":
        last_reason = f"no JSON object found in: {_short(text)}"
    raise ValueError(last_reason)
