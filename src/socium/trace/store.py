"""The DuckDB trace store: one file per run, one transaction per step, values only as Arrow batches.

The ``steps`` row of a step is committed in the same transaction as all of that step's rows, so
"the last committed step" read from the database is exact and a crash can never leave half a step.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from socium.core.actions import vote_signs
from socium.core.exposure import EXPLANATION_COLUMNS
from socium.errors import ConfigError, TraceError

TABLES = (
    "runs",
    "agents",
    "follow_events",
    "posts",
    "actions",
    "exposures",
    "stances",
    "groups",
    "group_messages",
    "surveys",
    "interviews",
    "sign_ups",
    "steps",
)
_EXPOSURE_BASE = ("step", "agent_id", "post_id", "rank", "source")  # schema.sql's exposures columns
# Columns that hold wall-clock facts; excluded when comparing two runs for determinism.
VOLATILE = {
    "runs": {"run_id", "created_at", "socium_version", "python_version", "duckdb_version", "event_loop"},
    "steps": {"wall_s", "committed_at"},
    "llm_calls": {"latency_s", "created_at"},
    # threads follow the machine's load, and each Ray actor starts its own engine: not part of the result
    "llm_engines": {"step", "llm", "engine"},
}


def votes_view_sql() -> str:
    """The ``votes`` view: every accepted vote and undo as a +1 / -1 delta on its target, its type list and
    signs generated from the action table (:func:`socium.core.actions.vote_signs`)."""
    rows = vote_signs()
    case = "\n".join(f"            WHEN '{t}' THEN {v}" for t, v in rows)
    types = ", ".join(f"'{t}'" for t, _ in rows)
    return (
        "CREATE OR REPLACE VIEW votes AS\n"
        "SELECT step, agent_id, CAST(coalesce(json_extract(args, '$.post_id'), json_extract(args, '$.comment_id')) "
        "AS BIGINT) AS target,\n"
        f"       CASE type\n{case}\n       END AS delta,\n"
        "       type, seq, origin\n"
        "FROM actions\n"
        f"WHERE outcome = 'ok' AND type IN ({types});\n"
    )


def _schema_sql() -> str:
    """schema.sql plus the views generated from the action table (``votes``)."""
    return resources.files("socium.trace").joinpath("schema.sql").read_text(encoding="utf-8") + votes_view_sql()


# DuckDB settings for a connection that runs SQL a user typed: the trace and nothing else. Without
# them ``read_csv('/etc/passwd')``, ``COPY ... TO`` and ``INSTALL`` reach the whole machine.
SANDBOX = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}


# The run's writer appends a step and rarely reads. Left at DuckDB's default (80% of RAM) its buffer
# pool and allocator kept the pages of every checkpoint: +170 MB over 10 steps at 10^5 LLM agents,
# most of the resident growth per step (benchmarks/bench_scale.py, issue 17). Larger transactions
# and queries spill to ``trace.duckdb.tmp``. SOCIUM_TRACE_MEMORY_LIMIT overrides it (e.g. "1GB").
WRITER_MEMORY_LIMIT = "128MB"


def writer_settings() -> dict[str, str]:
    """DuckDB settings of the connection that writes a run's trace (a bad override is a ConfigError)."""
    limit = os.environ.get("SOCIUM_TRACE_MEMORY_LIMIT")
    if not limit:
        return {"memory_limit": WRITER_MEMORY_LIMIT}
    try:
        duckdb.connect(":memory:", config={"memory_limit": limit}).close()
    except duckdb.Error as exc:
        raise ConfigError(f"SOCIUM_TRACE_MEMORY_LIMIT={limit!r}: not a DuckDB memory size: {exc}") from None
    return {"memory_limit": limit}


def open_trace(
    path: str | Path, *, read_only: bool = True, sandbox: bool = False, settings: Mapping[str, str] | None = None
) -> duckdb.DuckDBPyConnection:
    """Connect to a trace; a corrupt, foreign or busy file is a :class:`TraceError` naming it, not a traceback."""
    db = Path(path)
    config: dict[str, str | bool | int | float | list[str]] = {**(SANDBOX if sandbox else {}), **(settings or {})}
    try:
        return duckdb.connect(str(db), read_only=read_only, config=config)
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if _CANNOT_READ.search(first) or (_DENIED.search(first) and db.exists() and not os.access(db, os.R_OK)):
            # a read error (an unreadable file, EIO) said "is the disk full" on resume: name what failed
            raise TraceError(f"{db}: cannot be read (a file-system error or its permissions): {first}") from None
        if _CANNOT_WRITE.search(first):
            raise TraceError(f"{db}: cannot be written{_write_cause(first)}: {first}") from None
        if re.search(r"\block\b", first, re.IGNORECASE):  # the word: "block" in a corrupt file's error is not busy
            raise TraceError(f"{db}: in use by another process (a run still writing it?): {first}") from None
        raise TraceError(f"{db}: not a readable socium trace (corrupt or not a DuckDB file): {first}") from None


#: DuckDB's words for a file it cannot write: the disk or the folder is the problem, not the trace.
_CANNOT_WRITE = re.compile(
    r"no space left|file too large|read-only file system|permission denied|could not write|disk quota", re.IGNORECASE
)
_FULL = re.compile(r"no space left|file too large|disk quota", re.IGNORECASE)
_DENIED = re.compile(r"read-only file system|permission denied", re.IGNORECASE)
#: ... and for one it cannot read (EIO, a short read): not a full disk, whatever else the message says.
_CANNOT_READ = re.compile(r"input/output error|could not read from file", re.IGNORECASE)


def _write_cause(first: str) -> str:
    """The likely cause of a failed write, from DuckDB's message: only ENOSPC/EFBIG/EDQUOT are a full disk."""
    if _FULL.search(first):
        return " (is the disk full?)"
    if _DENIED.search(first):
        return " (the folder or the file is read-only)"
    return " (is the disk full, or the folder read-only?)"


def write_error(db: Path, what: str, exc: BaseException, setup: bool = False) -> TraceError:
    """A failed write as one line naming the file and the likely cause, and what survives (not a traceback).
    ``setup``: the run's set-up failed, so its resume needs the CONFIG again (the trace holds none yet)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if _CANNOT_READ.search(first):
        cause = " (a read error: a file-system or disk fault, not a full disk)"
    else:
        cause = _write_cause(first) if _CANNOT_WRITE.search(first) else ""
    return TraceError(
        f"{db}: could not write {what}{cause}: {first}; what was committed before is kept: make room, then "
        f"continue with: socium run {'CONFIG ' if setup else ''}--resume --out {shlex.quote(str(db.parent))}"
    )


_JSON_NAMES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def recorded_config(text: Any, db: str | Path) -> dict[str, Any]:
    """A trace's ``runs.config`` as the mapping it must be. Why: a hand-edited or planted one (a JSON list)
    gave ``card`` and ``report`` an AttributeError traceback; anything else is a :class:`TraceError` naming
    the file."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        raise TraceError(f"{db}: runs.config is not JSON") from None
    if not isinstance(data, dict):
        found = _JSON_NAMES.get(type(data), "null")
        raise TraceError(f"{db}: runs.config is {found}, not a config mapping (the trace was edited or damaged)")
    return data


def read_run_row(db: str | Path) -> dict[str, Any] | None:
    """The ``runs`` row of a trace as a dict (None before set-up committed); errors are :class:`TraceError`."""
    con = open_trace(db)
    try:
        cur = con.execute("SELECT * FROM runs LIMIT 1")
        row = cur.fetchone()
        return None if row is None else dict(zip([d[0] for d in cur.description], row))
    except duckdb.Error as exc:
        raise TraceError(f"{db}: not a readable socium trace: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()


def _insert_arrow(con: duckdb.DuckDBPyConnection, table: str, _batch: pa.Table) -> None:
    """``INSERT INTO table`` the columns of the Arrow table ``_batch`` (names are ours, values are Arrow).

    Why a replacement scan (DuckDB reads ``_batch`` from this frame) rather than ``register`` /
    ``unregister``: registering adds and drops a view in the catalog per table per step, which at a
    step's few rows costs as much as the insert. In the propagation CV's 150 one-minute steps it cut
    the time in ``append_step`` from 1.6-1.7 s to 0.9-1.3 s per run (benchmarks/bench_propagation_cv.py).
    The rows written are the same Arrow values either way (tests/test_trace/test_trace_insert.py).
    """
    cols = ", ".join(f'"{c}"' for c in _batch.column_names)
    con.execute(f'INSERT INTO "{table}" ({cols}) SELECT {cols} FROM _batch')


class TraceStore:
    """Single writer of a run's ``trace.duckdb``."""

    def __init__(self, path: str | Path, read_only: bool = False) -> None:
        self.path = Path(path)
        self.con = open_trace(self.path, read_only=read_only, settings=None if read_only else writer_settings())
        if not read_only:
            try:
                self.con.execute(_schema_sql())
                for col in ("input_digests", "event_loop"):  # older traces
                    self.con.execute(f"ALTER TABLE runs ADD COLUMN IF NOT EXISTS {col} VARCHAR")
            except duckdb.Error as exc:
                self.con.close()
                if _CANNOT_WRITE.search(str(exc)):
                    raise write_error(self.path, "the trace's tables", exc, setup=True) from None
                raise TraceError(f"{self.path}: not a usable socium trace: {str(exc).splitlines()[0]}") from None
        self._extra_tables: dict[str, str] = {}
        self._explained = False  # exposures has its explanation columns (added on first use)
        #: Called (in order) before the connection closes: readers holding cursors of it (the live
        #: explorer) let go first, since DuckDB refuses to close a connection whose cursor is mid-query.
        self.before_close: list[Callable[[], None]] = []

    def close(self) -> None:
        hooks, self.before_close = self.before_close, []
        for hook in hooks:
            hook()
        self.con.close()

    def ensure_table(self, name: str, ddl: str) -> None:
        """Let other modules (LLM cache, surveys) add their own append-only tables."""
        self.con.execute(ddl)
        self._extra_tables[name] = ddl

    def last_step(self) -> int | None:
        """The last committed step (-1 means only the set-up rows); None for an empty store."""
        row = self.con.execute("SELECT max(step) FROM steps").fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def run_row(self) -> dict[str, Any] | None:
        cur = self.con.execute("SELECT * FROM runs LIMIT 1")
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cur.description], row))

    def append_step(
        self, step: int, batches: Mapping[str, pa.Table | dict[str, list]], step_row: dict[str, Any]
    ) -> None:
        """Write all of a step's rows and its ``steps`` marker in one transaction."""
        con = self.con
        con.begin()
        try:
            self._insert(batches)
            _insert_arrow(con, "steps", pa.table({k: [v] for k, v in {"step": step, **step_row}.items()}))
            con.commit()
        except BaseException as exc:  # a signal too: the open transaction must not outlive the step
            _rollback(con)
            if isinstance(exc, duckdb.Error):
                what = f"step {step}" if step >= 0 else "the run's set-up"
                raise write_error(self.path, what, exc, setup=step < 0) from None
            raise

    def _insert(self, batches: Mapping[str, pa.Table | dict[str, list]]) -> None:
        for table, batch in batches.items():
            tbl = batch if isinstance(batch, pa.Table) else pa.table(batch)
            if tbl.num_rows:
                if table == "exposures" and tbl.num_columns > len(_EXPOSURE_BASE):
                    self._add_explanation_columns(tbl.column_names)
                _insert_arrow(self.con, table, tbl)

    def _add_explanation_columns(self, names: list[str]) -> None:
        """Add the ``exposures`` explanation columns a batch carries (core.exposure.EXPLANATION_COLUMNS),
        the first time a recommender explains its feeds: runs that never do keep the original schema,
        so their table digests are unchanged. Names and types come from that fixed table only."""
        if self._explained:
            return
        types = dict(EXPLANATION_COLUMNS)
        for name in names:
            if name in _EXPOSURE_BASE:
                continue
            if name not in types:
                raise TraceError(f"exposures: unknown column {name!r} (allowed: {', '.join(types)})")
            self.con.execute(f'ALTER TABLE exposures ADD COLUMN IF NOT EXISTS "{name}" {types[name]}')
        self._explained = True

    def append_rows(self, batches: Mapping[str, pa.Table | dict[str, list]]) -> None:
        """Rows that belong to no new step (an interview between steps), in one transaction."""
        con = self.con
        con.begin()
        try:
            self._insert(batches)
            con.commit()
        except BaseException as exc:  # a signal too: the open transaction must not outlive the call
            _rollback(con)
            if isinstance(exc, duckdb.Error):
                raise write_error(self.path, "rows", exc) from None
            raise

    def query(self, sql: str, params: list[Any] | None = None) -> duckdb.DuckDBPyConnection:
        return self.con.execute(sql, params or [])


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back the open transaction, unless DuckDB already ended it.

    Why: when a commit fails (a full disk), DuckDB aborts the transaction itself, and ``rollback`` then
    raises "no transaction is active", a second exception that hid the real cause behind a traceback.
    """
    try:
        con.rollback()
    except duckdb.Error:
        pass  # nothing left to roll back; the caller re-raises the error that got here


def table_digest(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """sha256 over a table's rows in sorted order, ignoring wall-clock columns."""
    cols = [r[0] for r in con.execute(f'DESCRIBE "{table}"').fetchall() if r[0] not in VOLATILE.get(table, set())]
    if not cols:
        return ""
    col_list = ", ".join(f'"{c}"' for c in cols)
    rows = con.execute(f'SELECT {col_list} FROM "{table}" ORDER BY ALL').fetchall()
    h = hashlib.sha256()
    for r in rows:
        h.update(repr(r).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def trace_digest(path: str | Path) -> dict[str, str]:
    """Per-table digests of a finished run, for comparing two runs row for row."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type='BASE TABLE'"
            ).fetchall()
        ]
        return {t: table_digest(con, t) for t in sorted(names)}
    finally:
        con.close()


def check_no_duplicates(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Count exact duplicate rows per table (0 everywhere in a healthy trace)."""
    out = {}
    for t in TABLES:
        n = con.execute(
            f'SELECT count(*) - (SELECT count(*) FROM (SELECT DISTINCT * FROM "{t}")) FROM "{t}"'
        ).fetchone()
        out[t] = int(n[0]) if n else 0
    return out


def require_store(path: Path) -> Path:
    db = path / "trace.duckdb" if path.is_dir() else path
    if not db.exists():
        raise TraceError(f"no trace found at {db}")
    if not db.is_file():
        raise TraceError(f"{db}: not a trace file")
    return db
