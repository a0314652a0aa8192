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


Rows = list[dict[str, Any]]
"""Rows of an export: one dict per row, its keys the columns."""


def _cell(v: Any) -> Any:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (list, tuple, dict)) else v


def fields_of(cls: type) -> list[str]:
    """A view dataclass's columns, in declaration order."""
    return [f.name for f in dataclasses.fields(cls)]


def records(items: Sequence[Any], cls: type, **fixed: Any) -> Rows:
    """Dataclass rows as dicts, after the ``fixed`` columns that say where they were shown (the step of an
    agent's activation, the run of a side-by-side column), which the dataclass does not hold."""
    names = fields_of(cls)
    return [{**fixed, **{k: getattr(i, k) for k in names}} for i in items]


def tuples(items: Sequence[Sequence[Any]], columns: Sequence[str], **fixed: Any) -> Rows:
    """Tuple rows (what a query returns) as dicts under ``columns``, after the ``fixed`` columns."""
    return [{**fixed, **dict(zip(columns, r, strict=True))} for r in items]


def rows_table(rows: Rows, columns: Sequence[str]) -> pa.Table:
    """Rows as an Arrow table with exactly ``columns`` (nested values as JSON text); no rows still give them."""
    cols = list(columns)
    if not rows:
        return pa.table({k: pa.array([], pa.string()) for k in cols})
    return pa.Table.from_pylist([{k: _cell(r.get(k)) for k in cols} for r in rows])


def table(items: Sequence[Any], cls: type) -> pa.Table:
    """Dataclass rows (:class:`~socium.trace.queries.explore.PostView`, ``CallView``...) as an Arrow table;
    no rows still give the columns."""
    return rows_table(records(items, cls), fields_of(cls))


def table_bytes(t: pa.Table, fmt: str) -> bytes:
    """A table as a ``csv`` or ``parquet`` file's bytes."""
    if fmt == "parquet":
        buf = io.BytesIO()
        pq.write_table(t, buf)
        return buf.getvalue()
    return format_rows(t.column_names, [tuple(r.values()) for r in t.to_pylist()], "csv").encode("utf-8")


def file_bytes(items: Sequence[Any], cls: type, fmt: str) -> bytes:
    """The rows as a ``csv`` or ``parquet`` file's bytes."""
    return table_bytes(table(items, cls), fmt)


def export_buttons(name: str, fetch: Callable[[], Sequence[Any]], cls: type) -> None:
    """CSV and Parquet downloads of a view's rows, computed only when clicked."""
    export_rows(name, lambda: records(fetch(), cls), fields_of(cls))


def export_rows(name: str, fetch: Callable[[], Rows], columns: Sequence[str], label: str = "export") -> None:
    """CSV and Parquet downloads of rows, fetched only when clicked (a page shows these buttons on every
    render; the file costs its queries only when someone asks for it)."""
    import solara

    with solara.Row(style="gap: 0.5em; align-items: center"):
        for fmt in ("csv", "parquet"):
            solara.FileDownload(
                lambda fmt=fmt: table_bytes(rows_table(fetch(), columns), fmt),
                filename=f"{name}.{fmt}",
                label=f"{label} {fmt}",
            )
