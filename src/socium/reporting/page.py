"""A report page: its tables and blocks, how numbers and counts are written, and the HTML it renders to.

All text that reaches the HTML is escaped: topics, tweet texts and agent output are data.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class ReportTable:
    title: str
    columns: list[str]
    rows: list[list[str]]
    summary: bool = False  # also printed in the terminal
    align_numbers: bool = True  # right-align numeric cells (off for field/value tables such as cards)
    folded: bool = False  # drawn closed (``<details>``): long reference tables (cards) must not bury the results


@dataclass
class Report:
    """What was written and the tables behind it."""

    out_dir: Path
    html: Path
    images: list[Path] = field(default_factory=list)
    series: dict[str, Any] = field(default_factory=dict)
    tables: list[ReportTable] = field(default_factory=list)
    blocks: list[tuple[str, Any]] = field(default_factory=list)
    banners: list[str] = field(default_factory=list)  # smoke-run warnings, shown at the top of the page

    def heading(self, text: str) -> None:
        self.blocks.append(("h2", text))

    def note(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, t: ReportTable) -> None:
        self.tables.append(t)
        self.blocks.append(("table", t))

    def image(self, path: Path, caption: str) -> None:
        self.images.append(path)
        self.blocks.append(("img", (path.name, caption)))


def fmt(x: Any, digits: int = 3) -> str:
    """Numbers for humans: None/NaN as a dash, floats rounded, CIs as [lo, hi]."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    if isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(v, (int, float)) for v in x):
        return f"[{x[0]:.{digits}f}, {x[1]:.{digits}f}]"
    return str(x)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 seed', '3 seeds': a count with its noun in the right number (``plural``: when not noun + 's')."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def ci_cell(ci: tuple[float, float, float] | None, digits: int = 3) -> str:
    return "-" if ci is None else f"{ci[0]:.{digits}f} [{ci[1]:.{digits}f}, {ci[2]:.{digits}f}]"


CSS = (
    "body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:1em 0;font-size:13px;max-width:100%}"
    "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:break-word}"
    "td.n{text-align:right;white-space:nowrap}img{max-width:100%}figure{margin:1em 0}"
    ".kv td{overflow-wrap:anywhere}.kv td:first-child{white-space:nowrap;overflow-wrap:normal}"
    "details{margin:.5em 0}summary{cursor:pointer;font-weight:bold}"
    ".banner{background:#b00020;color:#fff;font-weight:bold;padding:.8em 1em;margin:1em 0;border-radius:4px}"
)


def _cell(v: Any) -> str:
    """Escaped text that may wrap after '_' and '/' (metric names, ids, paths), never inside a word.
    (Not for a card's field names: Chromium breaks at <wbr> even under white-space: nowrap.)"""
    return html.escape(str(v)).replace("_", "_<wbr>").replace("/", "/<wbr>")


def _is_number(v: str) -> bool:
    try:
        float(v.replace(",", ""))
    except ValueError:
        return False
    return True


def render_html(rep: Report, title: str) -> str:
    e = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    parts += [f"<div class='banner' role='alert'>{e(b)}</div>" for b in rep.banners]
    for kind, b in rep.blocks:
        if kind in ("h2", "p"):
            parts.append(f"<{kind}>{e(b)}</{kind}>")
        elif kind == "img":
            parts.append(f"<figure><img src='{e(b[0])}' alt='{e(b[1])}'><figcaption>{e(b[1])}</figcaption></figure>")
        else:
            head = "".join(f"<th>{_cell(c)}</th>" for c in b.columns)
            body = "".join(
                "<tr>"
                + "".join(
                    f"<td class='n'>{e(str(v))}</td>"
                    if b.align_numbers and _is_number(str(v))
                    else f"<td>{e(str(v)) if i == 0 and not b.align_numbers else _cell(v)}</td>"
                    for i, v in enumerate(row)
                )
                + "</tr>"
                for row in b.rows
            )
            cls = "" if b.align_numbers else " class='kv'"
            table = f"<table{cls}><tr>{head}</tr>{body}</table>"
            if b.folded:
                parts.append(f"<details><summary>{e(b.title)}</summary>{table}</details>")
            else:
                parts.append(f"<h3>{e(b.title)}</h3>{table}")
    parts += [f"<div class='banner' role='alert'>{e(b)}</div>" for b in rep.banners]
    return "\n".join(parts + ["</body></html>"])
