"""A view's rows as a file: CSV (the writer ``socium query --out`` uses) or Parquet.

Why through the page's own query functions: the file then holds exactly the rows the view pages
through (same filters, same order), not a second SQL that could drift from it. Nested values (a
call's messages, a post's labels) become JSON text in a cell. Agent text stays data: a spreadsheet
may read a cell starting with ``=`` as a formula, so open CSV files as text, or use Parquet.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from socium.trace.query_output import format_rows

MAX_ROWS = 1_000_000
"""Rows one download holds at most (a 10^5-agent run's timeline is 1.5 * 10^5)."""


def _cell(v: Any) -> Any:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (list, tuple, dict)) else v


def table(items: Sequence[Any], cls: type) -> pa.Table:
    """Dataclass rows (:class:`~socium.trace.queries.explore.PostView`, ``CallView``...) as an Arrow table;
    no rows still give the columns."""
    names = [f.name for f in dataclasses.fields(cls)]
    rows = [{k: _cell(getattr(i, k)) for k in names} for i in items]
    if not rows:
        return pa.table({k: pa.array([], pa.string()) for k in names})
    return pa.Table.from_pylist(rows)


def file_bytes(items: Sequence[Any], cls: type, fmt: str) -> bytes:
    """The rows as a ``csv`` or ``parquet`` file's bytes."""
    t = table(items, cls)
    if fmt == "parquet":
        buf = io.BytesIO()
        pq.write_table(t, buf)
        return buf.getvalue()
    return format_rows(t.column_names, [tuple(r.values()) for r in t.to_pylist()], "csv").encode("utf-8")


def export_buttons(name: str, fetch: Callable[[], Sequence[Any]], cls: type) -> None:
    """CSV and Parquet downloads of a view's rows, computed only when clicked."""
    import solara

    with solara.Row(style="gap: 0.5em; align-items: center"):
        for fmt in ("csv", "parquet"):
            solara.FileDownload(
                lambda fmt=fmt: file_bytes(fetch(), cls, fmt), filename=f"{name}.{fmt}", label=f"export {fmt}"
            )
