"""Measures of the population: initial and current stances, stance changes, survey answers, memories.

An agent's stance starts at its ``agents`` row and changes only by ``stances`` rows (one per change);
its current stance is the latest change, or the initial one when it never changed.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np

Con = duckdb.DuckDBPyConnection


def initial_stances(con: Con) -> np.ndarray:
    """Every agent's stance at set-up, by agent id (NaN for an agent without one)."""
    rows = con.execute("SELECT stance FROM agents ORDER BY agent_id").fetchall()
    return np.array([np.nan if r[0] is None else r[0] for r in rows], dtype=float)


def stance_changes(con: Con) -> list[tuple[int, int, float]]:
    """(step, agent, new stance) for every recorded change, in step order."""
    return con.execute("SELECT step, agent_id, stance FROM stances ORDER BY step").fetchall()


def latest_changes(con: Con) -> tuple[np.ndarray, np.ndarray]:
    """(agent ids, stance after each one's last change) of the agents whose stance changed."""
    got = con.execute("SELECT agent_id, arg_max(stance, step) AS s FROM stances GROUP BY agent_id").fetchnumpy()
    return np.asarray(got["agent_id"], dtype=np.int64), np.asarray(got["s"], dtype=float)


def final_stances(con: Con) -> np.ndarray:
    """Current stance of every agent that has one (changed or initial), agents without one left out."""
    rows = con.execute(
        "SELECT a.stance, s.last FROM agents a LEFT JOIN (SELECT agent_id, arg_max(stance, step) AS last "
        "FROM stances GROUP BY agent_id) s USING (agent_id)"
    ).fetchall()
    v = np.array([r[1] if r[1] is not None else (np.nan if r[0] is None else r[0]) for r in rows], float)
    return v[~np.isnan(v)]


def current_stance(con: Con, agent_id: int) -> float | None:
    """The agent's stance after its last recorded change (None if it never changed)."""
    row = con.execute("SELECT arg_max(stance, step) FROM stances WHERE agent_id = ?", [agent_id]).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def stance_shift(con: Con) -> tuple[float, float, int]:
    """(mean |change|, mean signed change, agents) from initial to current stance, over agents that changed.

    The means are NaN when no agent's stance changed (agents = 0)."""
    row = con.execute(
        "SELECT avg(abs(s.stance - a.stance)), avg(s.stance - a.stance), count(*) FROM agents a "
        "JOIN (SELECT agent_id, arg_max(stance, step) AS stance FROM stances GROUP BY 1) s USING (agent_id) "
        "WHERE a.stance IS NOT NULL"
    ).fetchone()
    if row is None or not row[2]:
        return math.nan, math.nan, 0
    return float(row[0]), float(row[1]), int(row[2])


def last_survey(con: Con) -> tuple[float | None, float | None, int]:
    """(sample variance, mean |value|, answers) of the numeric answers of the last survey round."""
    var, ext, n = con.execute(
        "SELECT var_samp(value), avg(abs(value)), count(value) FROM surveys "
        "WHERE step = (SELECT max(step) FROM surveys)"
    ).fetchall()[0]
    return (None if var is None else float(var)), (None if ext is None else float(ext)), int(n)


def surveyed_answers(con: Con) -> int:
    """Survey answers that carry a numeric value (over all rounds)."""
    return int(con.execute("SELECT count(*) FROM surveys WHERE value IS NOT NULL").fetchall()[0][0])


def memories(con: Con, agent_id: int) -> list[tuple[int, int, str, str, float]]:
    """(step, agent, kind, text, importance) of an agent's memory stream, oldest first (to restore it)."""
    return con.execute(
        "SELECT step, agent_id, kind, text, importance FROM memories WHERE agent_id = ? ORDER BY step, seq",
        [agent_id],
    ).fetchall()


def memory_counts(con: Con) -> list[tuple[int, str, int]]:
    """(agent, kind, memories) of every agent's memory stream (observation, action, reflection, ...)."""
    rows = con.execute("SELECT agent_id, kind, count(*) FROM memories GROUP BY agent_id, kind ORDER BY agent_id, kind")
    return [(int(a), str(k), int(n)) for a, k, n in rows.fetchall()]


def memory_examples(con: Con, kind: str, limit: int, max_chars: int) -> list[tuple[int, int, str, float | None]]:
    """(step, agent, text cut to ``max_chars``, importance) of the ``limit`` most important memories of a kind
    (ties: earliest first). Memory text is agent output: bounded here, escaped by whoever shows it."""
    return con.execute(
        "SELECT step, agent_id, left(text, ?), importance FROM memories WHERE kind = ? "
        "ORDER BY importance DESC NULLS LAST, step, agent_id, seq LIMIT ?",
        [max_chars, kind, limit],
    ).fetchall()
