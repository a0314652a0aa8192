"""Text from data on the terminal: shown as it is, never as markup or terminal control.

Why: posts, names and run names are data. Printed through rich as strings they are parsed as markup
(``[/x]`` raised ``MarkupError`` and crashed ``query``, ``card`` and ``run``; ``[red]`` hid text), and
raw escape sequences in them could move the cursor, retitle the terminal or hide what was printed.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.text import Text

# C0 controls except tab and newline, DEL, C1 controls, and bidi overrides/isolates that reorder text.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def neutralise(value: Any) -> str:
    """``value`` as text with control characters shown as ``\\xNN`` escapes (visible, inert)."""
    s = value if isinstance(value, str) else str(value)
    s = s.encode("utf-8", "replace").decode("utf-8")  # lone surrogates cannot be written to a terminal
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), s)


def plain(value: Any, style: str = "") -> Text:
    """A rich ``Text`` that prints ``value`` literally (no markup, no control sequences)."""
    return Text(neutralise(value), style=style)


class SafeConsole(Console):
    """A console for data: strings (table cells and titles included) are literal and neutralised.

    Markup is off by default; styled output is built as ``Text`` explicitly.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        kwargs.setdefault("highlight", False)
        super().__init__(**kwargs)
        if kwargs.get("width") is None:
            # rich pins $COLUMNS as it is when the console is made (at import, for the CLI's module-level
            # consoles); without a width given, measure at each print, so the terminal's size (or $COLUMNS)
            # at the time of output decides, as for a console made just then
            self._width = None

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(neutralise(text), **kwargs)
