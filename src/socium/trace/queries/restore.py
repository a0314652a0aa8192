"""Named restore queries: what ``--resume`` reads back from a run's trace, row for row, to rebuild its world.

Unlike the other modules here these are not measures: they return the recorded rows in the order the
live run produced them, for the simulator (``simulator.run_setup``) and moderation to replay. They
follow the package's convention (an open connection first, values only as bound parameters), so the
trace's SQL stays in :mod:`socium.trace` (guarded by ``tests/test_trace/test_trace_queries.py``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb

from socium.errors import TraceError
from socium.trace.store import _schema_sql, open_trace

Con = duckdb.DuckDBPyConnection


def sign_ups_by_step(con: Con) -> dict[int, list[int]]:
    """Agents that joined mid-run, by the step they joined at (agent ids ascending)."""
    joins: dict[int, list[int]] = {}
    for step, agent in con.execute("SELECT step, agent_id FROM sign_ups ORDER BY step, agent_id").fetchall():
        joins.setdefault(int(step), []).append(int(agent))
    return joins


def step_actions(con: Con, step: int) -> list[tuple[int, str, str, str, int | None, str]]:
    """One step's ``actions`` rows in applied order: ``(agent_id, type, args, outcome, post_id, origin)``."""
    return con.execute(
        "SELECT agent_id, type, args, outcome, post_id, origin FROM actions WHERE step = ? ORDER BY seq", [step]
    ).fetchall()


def moderation_events_by_step(con: Con) -> dict[int, list[tuple[Any, ...]]]:
    """The committed ``moderation_events`` by step, in order: ``(event, post_id, agent_id, source, detail)``."""
    out: dict[int, list[tuple[Any, ...]]] = {}
    for step, *row in con.execute(
        "SELECT step, event, post_id, agent_id, source, detail FROM moderation_events ORDER BY step, seq"
    ).fetchall():
        out.setdefault(int(step), []).append(tuple(row))
    return out


def post_veracity(con: Con) -> list[tuple[int, str]]:
    """Every post's recorded ground truth: ``(post_id, veracity)``."""
    return [(int(p), str(v)) for p, v in con.execute("SELECT post_id, veracity FROM post_veracity").fetchall()]


def latest_stances(con: Con) -> list[tuple[int, float]]:
    """Each agent's last recorded stance: ``(agent_id, stance)``."""
    return con.execute("SELECT agent_id, arg_max(stance, step) FROM stances GROUP BY agent_id").fetchall()


def memory_entries(con: Con) -> list[tuple[int, int, str, str, float]]:
    """The stream memory's entries in the order they were made: ``(step, agent_id, kind, text, importance)``."""
    return con.execute("SELECT step, agent_id, kind, text, importance FROM memories ORDER BY step, seq").fetchall()


def llm_active_steps(con: Con) -> dict[int, int]:
    """For each agent, on how many steps it acted through the LLM (the stream memory's reflection clock)."""
    return {
        int(a): int(n)
        for a, n in con.execute(
            "SELECT agent_id, count(DISTINCT step) FROM actions WHERE origin = 'llm' GROUP BY 1"
        ).fetchall()
    }


def recent_own_actions(con: Con, per_agent: int) -> list[tuple[int, int, str, str, str]]:
    """Each agent's last ``per_agent`` own (not seeded) actions, oldest first: ``(step, agent_id, type, args,
    outcome)`` (the window memory's contents)."""
    return con.execute(
        "SELECT step, agent_id, type, args, outcome FROM (SELECT *, row_number() OVER "
        "(PARTITION BY agent_id ORDER BY step DESC, seq DESC) AS r FROM actions WHERE origin != 'seed') "
        "WHERE r <= ? ORDER BY step, seq",
        [per_agent],
    ).fetchall()


def next_call_id(con: Con) -> int:
    """The ``call_id`` the next recorded LLM call gets."""
    (got,) = con.execute("SELECT coalesce(max(call_id), -1) + 1 FROM llm_calls").fetchone() or (0,)
    return int(got)


def set_run_config(con: Con, config_json: str) -> None:
    """Record a run's new config (an extended run's new ``steps``) in its run row, in one transaction."""
    con.begin()
    try:
        con.execute("UPDATE runs SET config = ?", [config_json])
        con.commit()
    except Exception:
        con.rollback()
        raise


# ---- is there a set-up to resume? -------------------------------------------------------------------
NOT_REPLACED = "; --resume never replaces a file it cannot read: move it away, or pass --force (without --resume)"


def has_setup(db: Path) -> bool:
    """Whether a trace holds the committed set-up (the ``steps`` row of step -1); a file that is not a
    readable socium trace raises :class:`TraceError` (so it is never deleted as "no set-up")."""
    if not db.exists():
        return False
    try:
        return last_committed_step(db, strict=True) is not None
    except TraceError as exc:
        if NOT_REPLACED in str(exc) or "in use by another process" in str(exc):
            raise
        raise TraceError(f"{exc}{NOT_REPLACED}") from None


def last_committed_step(db: Path, strict: bool = False) -> int | None:
    """The last committed step; with ``strict`` a corrupt trace raises :class:`TraceError` instead of None."""
    try:
        con = open_trace(db)
    except TraceError:
        if strict:
            raise
        return None
    try:
        row = con.execute("SELECT max(step) FROM steps").fetchone()
        return None if row is None or row[0] is None else int(row[0])
    except duckdb.CatalogException:
        # No ``steps`` table. A run killed while its schema was being created leaves some of socium's tables,
        # all empty (nothing to lose); anything else is a user's own DuckDB file or a damaged trace, which
        # --resume must never replace.
        if strict and not _unfinished_schema(con):
            raise TraceError(f"{db}: not a socium trace (no steps table){NOT_REPLACED}") from None
        return None
    except duckdb.Error as exc:
        if strict:
            raise TraceError(f"{db}: not a readable socium trace: {str(exc).splitlines()[0]}{NOT_REPLACED}") from None
        return None
    finally:
        con.close()


def _unfinished_schema(con: Con) -> bool:
    """Whether every table is one socium's schema creates, and empty (a start killed mid-schema)."""
    ours = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", _schema_sql())) | {"llm_calls"}
    names = [str(r[0]) for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    if not set(names) <= ours:
        return False
    return all(con.execute(f'SELECT count(*) FROM "{n}"').fetchone() == (0,) for n in names)  # our names only
