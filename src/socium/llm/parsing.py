"""Lenient JSON extraction from model output.

Even with constrained decoding the text is not always strict JSON: llama.cpp's grammar lets raw
newlines into strings, chat models wrap answers in code fences, and unconstrained servers add
prose before or after the object. Rejecting those would waste otherwise usable actions.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)


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


def parse_json_lenient(text: str) -> dict[str, Any]:
    """Parse the first JSON object in ``text``.

    Tolerates raw control characters inside strings (``strict=False``), code fences, and junk
    before or after the object. Raises ``ValueError`` with a short reason otherwise.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected text, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("empty output")
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
