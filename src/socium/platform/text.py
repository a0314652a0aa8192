"""Agent text is hostile data: make it storable and bounded before it touches state or the trace."""

from __future__ import annotations

from typing import NamedTuple


class CleanText(NamedTuple):
    text: str
    truncated: bool
    sanitized: bool


def clean_text(raw: object, max_chars: int) -> CleanText:
    """Return text with NULs and lone surrogates removed and at most ``max_chars`` characters.

    DuckDB and Arrow require valid UTF-8; a lone surrogate would make a whole batch fail to write,
    losing the step, so it is replaced (and the fact recorded) rather than rejected.
    """
    text = raw if isinstance(raw, str) else str(raw)
    sanitized = False
    if "\x00" in text:
        text = text.replace("\x00", "")
        sanitized = True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
        sanitized = True
    truncated = len(text) > max_chars
    if truncated:
        text = text[:max_chars]
    return CleanText(text, truncated, sanitized)


def quote_untrusted(raw: object, max_chars: int) -> str:
    """Agent text made safe to embed between prompt delimiters: cleaned, bounded, markers defused.

    Angle brackets become look-alikes so quoted text can never close or forge a ``<<<...>>>`` block.
    """
    ct = clean_text(raw, max_chars)
    body = ct.text.replace("<", "‹").replace(">", "›")
    return body + (" …[truncated]" if ct.truncated else "")
