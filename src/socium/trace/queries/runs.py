"""Run-level measures: the run's row and config, committed steps, totals, and activity per step.

Convention of every module in :mod:`socium.trace.queries`: the first argument is an open DuckDB
connection to one run's trace (:func:`open_run` gives one), values reach SQL only as bound
parameters, and results are plain Python or numpy values, so a caller never sees the schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from socium.core import actions as A
from socium.errors import TraceError
from socium.trace.store import TABLES, open_trace, recorded_config, require_store

Con = duckdb.DuckDBPyConnection

# Tables whose rows :func:`count_rows` may count: a table name is an identifier, not a value, so it
# cannot be bound; only these names (ours) are ever formatted into the statement.
COUNTABLE = frozenset(TABLES) | {"llm_calls", "moderation_events", "post_veracity", "agent_roles", "memories"}


@contextmanager
def open_run(run_dir: str | Path) -> Iterator[Con]:
    """A read-only connection to the trace of ``run_dir`` (or the ``trace.duckdb`` itself), closed on exit.

    Missing, corrupt or busy traces are a :class:`~socium.errors.TraceError` naming the file.
    """
    con = open_trace(require_store(Path(run_dir)))
    try:
        yield con
    finally:
        con.close()


def table_names(con: Con) -> set[str]:
    """Tables and views present: optional tables (``llm_calls``, ``llm_engines``...) exist only in some runs."""
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def run_row(con: Con) -> dict[str, Any] | None:
    """The ``runs`` row as a dict (None before set-up committed)."""
    cur = con.execute("SELECT * FROM runs LIMIT 1")
    row = cur.fetchone()
    return None if row is None else dict(zip([d[0] for d in cur.description], row))


def run_config(con: Con) -> dict[str, Any]:
    """The run's config as recorded (JSON decoded); a trace without a run row is a TraceError."""
    row = con.execute("SELECT config FROM runs LIMIT 1").fetchone()
    if row is None or row[0] is None:
        raise TraceError("the trace has no run row (set-up never committed)")
    path = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return recorded_config(row[0], path[0] if path and path[0] else "the trace")  # a JSON list is a TraceError


def config_hash(con: Con) -> str | None:
    """The recorded config hash: a resumed or re-run experiment compares it with its own."""
    row = con.execute("SELECT config_hash FROM runs LIMIT 1").fetchone()
    return None if row is None else row[0]


def last_step(con: Con) -> int | None:
    """The last committed step (-1: only the set-up rows); None when nothing was committed."""
    row = con.execute("SELECT max(step) FROM steps").fetchone()
    return None if row is None or row[0] is None else int(row[0])


@dataclass(frozen=True)
class StepTotals:
    """Committed simulation steps (set-up excluded), actions and real seconds over all of them.

    ``actions`` and ``wall_s`` are None for a trace with no ``steps`` row, as SQL's ``sum`` gives.
    """

    steps: int
    actions: int | None
    wall_s: float | None


def step_is_committed(con: Con, step: int) -> bool:
    """Whether ``step``'s progress marker is in the trace (its rows and calls were committed with it)."""
    row = con.execute("SELECT count(*) FROM steps WHERE step = ?", [step]).fetchone()
    return bool(row and row[0])


def step_totals(con: Con) -> StepTotals:
    """Totals over the ``steps`` table (the Simulation Card's size and cost line)."""
    n, acts, wall = con.execute(
        "SELECT count(*) FILTER (WHERE step >= 0), sum(n_actions), sum(wall_s) FROM steps"
    ).fetchall()[0]
    return StepTotals(int(n), None if acts is None else int(acts), None if wall is None else float(wall))


def wall_seconds(con: Con) -> float:
    """Real seconds the run took, set-up, model loading and resumes included (0 for no steps)."""
    return float(con.execute("SELECT coalesce(sum(wall_s), 0) FROM steps").fetchall()[0][0])


def agent_steps(con: Con, *, committed_only: bool = False) -> int:
    """Agent activations (sum of ``n_active``): the denominator of per-activation rates.

    ``committed_only`` leaves out the set-up row (step -1), which activates nobody in a normal run.
    """
    sql = "SELECT coalesce(sum(n_active), 0) FROM steps" + (" WHERE step >= 0" if committed_only else "")
    return int(con.execute(sql).fetchall()[0][0])


def active_per_step(con: Con) -> list[tuple[int, int | None]]:
    """(step, active agents) for every committed step from 0 on."""
    rows = con.execute("SELECT step, n_active FROM steps WHERE step >= 0 ORDER BY step").fetchall()
    return [(int(s), None if n is None else int(n)) for s, n in rows]


def count_rows(con: Con, table: str) -> int:
    """Rows in one of the trace's own tables (:data:`COUNTABLE`); any other name is a TraceError."""
    if table not in COUNTABLE:
        raise TraceError(f"count_rows: {table!r} is not a socium trace table ({', '.join(sorted(COUNTABLE))})")
    return int(con.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0][0])


def outcome_counts(con: Con) -> dict[str, int]:
    """Actions by outcome (``ok``, ``invalid_llm_output``, rule violations...), seed actions included."""
    return {str(o): int(n) for o, n in con.execute("SELECT outcome, count(*) FROM actions GROUP BY 1").fetchall()}


def policy_outcomes(con: Con) -> tuple[int, int]:
    """(actions not applied, all actions) of the policy, seed actions apart: the invalid rate's parts."""
    bad, total = con.execute(
        "SELECT count(*) FILTER (WHERE outcome != 'ok'), count(*) FROM actions WHERE origin != 'seed'"
    ).fetchall()[0]
    return int(bad), int(total)


def actions_by_type(con: Con) -> list[tuple[str, int, int]]:
    """(action type, step, applied actions) of the policy (seed actions apart), by type then step."""
    rows = con.execute(
        "SELECT type, step, count(*) FROM actions WHERE origin != 'seed' AND outcome = 'ok' GROUP BY ALL ORDER BY 1, 2"
    ).fetchall()
    return [(str(t), int(s), int(n)) for t, s, n in rows]


def outcomes_per_step(con: Con) -> list[tuple[int, int, int, int]]:
    """(step, policy actions, not applied, invalid LLM output) per step, seed actions apart."""
    rows = con.execute(
        "SELECT step, count(*), count(*) FILTER (WHERE outcome != 'ok'), "
        "count(*) FILTER (WHERE outcome = 'invalid_llm_output') FROM actions WHERE origin != 'seed' "
        "GROUP BY step ORDER BY step"
    ).fetchall()
    return [(int(s), int(n), int(b), int(i)) for s, n, b, i in rows]


def own_posts(con: Con) -> int:
    """Posts the crowd wrote on its own (not seeded, not by bots, fact-checkers or a person)."""
    row = con.execute(
        "SELECT count(*) FROM actions WHERE origin NOT IN ('seed', 'bot', 'fact_checker', "
        "'manual') AND type = ? AND outcome = 'ok'",
        [A.CreatePost.type_name],
    ).fetchone()
    return int(row[0]) if row else 0


def recent_actions(con: Con, agent_id: int, limit: int) -> list[tuple[int, str, str, str]]:
    """The agent's last ``limit`` own actions (step, type, args JSON, outcome), oldest first."""
    rows = con.execute(
        "SELECT step, type, args, outcome FROM actions WHERE agent_id = ? AND origin != 'seed' "
        "ORDER BY step DESC, seq DESC LIMIT ?",
        [agent_id, limit],
    ).fetchall()
    return [(int(s), str(t), str(a), str(o)) for s, t, a, o in reversed(rows)]


def run_summary(con: Con) -> dict[str, Any]:
    """Committed steps, posts, actions and real seconds of a run: a sweep's one line per run."""
    steps, posts, actions, wall = con.execute(
        "SELECT (SELECT count(*) FROM steps WHERE step >= 0), (SELECT count(*) FROM posts), "
        "(SELECT count(*) FROM actions), (SELECT coalesce(sum(wall_s), 0) FROM steps)"
    ).fetchall()[0]
    return {"steps": steps, "posts": posts, "actions": actions, "wall_s": wall}


def attach_read_only(con: Con, db: str | Path, alias: str) -> None:
    """ATTACH another run's trace read-only under ``alias`` (an identifier we chose: letters, digits, _)."""
    if not alias.replace("_", "").isalnum() or not alias[:1].isalpha():
        raise TraceError(f"attach: {alias!r} is not a plain identifier")
    con.execute(f"ATTACH ? AS {alias} (READ_ONLY)", [str(db)])
