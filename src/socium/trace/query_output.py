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

from socium.errors import ConfigError
from socium.trace.rundir import refuse_run_file

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
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, path)
        elif fmt == "csv":
            path.write_text(
                format_rows(table.column_names, [tuple(r.values()) for r in table.to_pylist()], "csv"), encoding="utf-8"
            )
        else:
            path.write_text(
                json.dumps([_jsonable(r) for r in table.to_pylist()], ensure_ascii=False, indent=1) + "\n",
                encoding="utf-8",
            )
    except OSError as exc:
        raise ConfigError(f"--out {path}: cannot write: {exc.strerror or exc}") from None
    return table.num_rows


def format_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str) -> str:
    """Rows as CSV (header first; NULL as an empty field) or as a JSON array of records."""
    if fmt == "json":
        return json.dumps([_jsonable(dict(zip(columns, r))) for r in rows], ensure_ascii=False, indent=1) + "\n"
    if fmt != "csv":
        raise ConfigError(f"format {fmt!r} is not one of csv, json")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow(["" if v is None else (json.dumps(_jsonable(v)) if isinstance(v, (list, dict)) else v) for v in r])
    return buf.getvalue()
