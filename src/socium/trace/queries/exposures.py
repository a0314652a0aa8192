"""Exposure measures: what each agent was shown, when, and from which feed source.

An exposure row is one post in one agent's feed at one step (``source``: in-network, out-of-network,
search, trend...). The same post shown twice in a step is two rows; measures that mean "was shown"
count distinct (agent, step, post).
"""

from __future__ import annotations

import duckdb
import numpy as np

Con = duckdb.DuckDBPyConnection


def by_source(con: Con) -> list[tuple[int, str, int]]:
    """(step, feed source, posts shown) per step and source ('unknown' where none was recorded)."""
    rows = con.execute(
        "SELECT step, coalesce(source, 'unknown'), count(*) FROM exposures GROUP BY ALL ORDER BY 1, 2"
    ).fetchall()
    return [(int(s), str(src), int(n)) for s, src, n in rows]


def shown(con: Con) -> list[tuple[int, int, int, str | None]]:
    """Distinct (step, agent, post, source) exposures in that order: what each agent's feed held."""
    return con.execute(
        "SELECT DISTINCT step, agent_id, post_id, source FROM exposures ORDER BY step, agent_id, post_id"
    ).fetchall()


def served_at(con: Con, step: int) -> tuple[np.ndarray, np.ndarray]:
    """(agent ids, post ids) of every exposure row of one step, as recorded: what a resumed run hands
    back to a recommender that remembers what it served (``recsys.base.served_hook``)."""
    rows = con.execute("SELECT agent_id, post_id FROM exposures WHERE step = ? ORDER BY ALL", [step]).fetchall()
    arr = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]
