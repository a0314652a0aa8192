"""Agent text is hostile data: make it storable and bounded before it touches state or the trace."""

from __future__ import annotations

import re
from typing import NamedTuple

# A line that starts with '#' could pose as one of a prompt's '## Section' headings.
_HEADING = re.compile(r"(?m)^([ \t]*)#")
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
_OTHER_BREAKS = re.compile(r"\r\n?|[\v\f\x1c-\x1e\x85\u2028\u2029]")
# What, in ASCII text, clean_text removes or _OTHER_BREAKS rewrites (NUL, breaks other than \n).
_ASCII_BREAKS = re.compile(r"[\x00\r\v\f\x1c-\x1e]")


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
    if not text.isascii():  # ASCII (most text) always encodes: skip making the bytes
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
    if type(raw) is str and raw.isascii() and _ASCII_BREAKS.search(raw) is None:
        # Most text: nothing to clean (no NUL, no surrogate) and no break to normalise, so only the
        # markers and headings can need work; same result as below for a fraction of the CPU (a
        # prompt quotes ~20 texts, and prompts are built for every activation).
        body = raw[:max_chars]
        if "<" in body or ">" in body:
            body = body.replace("<", "‹").replace(">", "›")
        if "#" in body:
            body = _HEADING.sub("\\1＃", body)
        return body + (" …[truncated]" if len(raw) > max_chars else "")
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
    if s.isascii() and s.isprintable():  # no break of any kind (the common case: skip the regex)
        return s
    return _LINE_BREAKS.sub(" ⏎ ", s)


def quote_inline(raw: object, max_chars: int) -> str:
    """Untrusted text for one line of a prompt: :func:`quote_untrusted`, then kept on that line."""
    quoted = quote_untrusted(raw, max_chars)
    if type(raw) is str and raw.isascii() and raw.isprintable():
        return quoted  # quoting printable ASCII adds no line break (only ‹ › ＃ …)
    return one_line(quoted)
