"""Agent text is hostile data: make it storable and bounded before it touches state or the trace."""

from __future__ import annotations

import re
from typing import NamedTuple

# A line that starts with '#' could pose as one of a prompt's '## Section' headings.
_HEADING = re.compile(r"(?m)^([ \t]*)#")
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
_OTHER_BREAKS = re.compile(r"\r\n?|[\v\f\x1c-\x1e\x85\u2028\u2029]")


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
    body = _OTHER_BREAKS.sub("\n", ct.text.replace("<", "‹").replace(">", "›"))
    body = _HEADING.sub("\\1＃", body)
    return body + (" …[truncated]" if ct.truncated else "")


def one_line(raw: object) -> str:
    """``raw`` with every line break (``\n``, ``\r``, U+2028, ...) replaced by `` ⏎ ``.

    Why: a field rendered on one prompt line (a name, a bio, a remembered action) must not be able to
    start a new line, where it could pose as a section heading or a list item of its own.
    """
    s = raw if isinstance(raw, str) else str(raw)
    return _LINE_BREAKS.sub(" ⏎ ", s)


def quote_inline(raw: object, max_chars: int) -> str:
    """Untrusted text for one line of a prompt: :func:`quote_untrusted`, then kept on that line."""
    return one_line(quote_untrusted(raw, max_chars))
