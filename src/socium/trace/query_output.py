"""Query results as files or text: CSV, JSON (records) and Parquet, written from Python.

Why not DuckDB's ``COPY ... TO``: ``socium query`` runs user SQL with DuckDB's external access
switched off, so the result is fetched as an Arrow table and written here instead. Agent text in
the rows is data: it only ever goes through the CSV/JSON/Parquet writers, never into SQL.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from socium.core.console_text import neutralise
from socium.errors import ConfigError, RunDirError
from socium.trace.rundir import refuse_run_file
from socium.trace.safe_write import replace_file

FileFormat = Literal["csv", "json", "parquet"]


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return str(v)


def write_table(table: pa.Table, path: str | Path, fmt: FileFormat) -> int:
    """Write ``table`` to ``path`` as ``fmt``; returns the row count. JSON is one array of records."""
    path = Path(path)
    if fmt not in ("csv", "json", "parquet"):
        raise ConfigError(f"--format {fmt!r} is not one of csv, json, parquet")
    if path.is_dir():
        raise ConfigError(f"--out {path}: is a directory, expected a file path")
    refuse_run_file(path)  # `query RUN ... --out RUN/trace.duckdb` overwrote the trace it was querying
    try:  # an unwritable --out was an OSError traceback
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {path}: cannot write: {exc.strerror or exc}") from None
    if fmt == "parquet":
        import pyarrow.parquet as pq

        buf = pa.BufferOutputStream()
        pq.write_table(table, buf)
        data: str | bytes = buf.getvalue().to_pybytes()
    elif fmt == "csv":
        data = format_rows(table.column_names, [tuple(r.values()) for r in table.to_pylist()], "csv")
    else:
        data = json.dumps([_jsonable(r) for r in table.to_pylist()], ensure_ascii=False, indent=1) + "\n"
    try:
        # a new file renamed over the name: --out naming a hard link to a trace (or a symlink) replaces the
        # name only, the trace keeps its bytes (writing through it truncated the trace)
        replace_file(path, data)
    except RunDirError as exc:
        raise ConfigError(f"--out {exc}") from None
    return table.num_rows


def _csv_cell(v: Any) -> Any:
    """A CSV field: control and bidi characters in text shown as ``\\xNN`` / ``\\uNNNN`` escapes.

    Why: agent text is hostile, and a CSV is read by people (``cat``, ``less``, a spreadsheet) as much as by
    programs; a raw ESC moved the cursor, a U+202E reversed what a cell appeared to say. Tab and newline stay
    (the writer quotes them); JSON keeps every character exactly (its readers are programs)."""
    if v is None:
        return ""
    if isinstance(v, (list, dict)):
        v = json.dumps(_jsonable(v))
    return neutralise(v) if isinstance(v, str) else v


def format_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str) -> str:
    """Rows as CSV (header first; NULL as an empty field; control characters escaped) or as a JSON array of
    records."""
    if fmt == "json":
        return json.dumps([_jsonable(dict(zip(columns, r))) for r in rows], ensure_ascii=False, indent=1) + "\n"
    if fmt != "csv":
        raise ConfigError(f"format {fmt!r} is not one of csv, json")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([_csv_cell(c) for c in columns])
    for r in rows:
        w.writerow([_csv_cell(v) for v in r])
    return buf.getvalue()
