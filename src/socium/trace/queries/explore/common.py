"""What every explorer query shares: the connection type, the page size, optional tables and
columns, a bounded text filter and JSON read leniently.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from socium.trace.queries.runs import table_names

Con = duckdb.DuckDBPyConnection


PAGE = 50
"""Rows per page the explorer asks for unless told otherwise."""


def column_order(con: Con, table: str) -> list[str]:
    """A table's columns in order (none when the table is absent); names with a quote are left out."""
    if table not in table_names(con):
        return []
    return [str(r[0]) for r in con.execute(f"DESCRIBE {table}").fetchall() if '"' not in str(r[0])]  # noqa: S608


def columns(con: Con, table: str) -> set[str]:
    return {str(r[0]) for r in con.execute(f"DESCRIBE {table}").fetchall()} if table in table_names(con) else set()  # noqa: S608 (our table names)


def has_table(con: Con, table: str) -> bool:
    return table in table_names(con)


def text_filter(text: str | None) -> str | None:
    """A substring to look for (case-insensitive), bounded so a pasted novel cannot become the query."""
    return text.strip()[:200].lower() if text and text.strip() else None


def json_any(text: Any) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def json_obj(text: Any) -> dict[str, Any]:
    got = json_any(text)
    return got if isinstance(got, dict) else {}
