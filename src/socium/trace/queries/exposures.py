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


def has_explanations(con: Con) -> bool:
    """True when the run's ``exposures`` carries the recommender's explanation columns (``foryou`` runs)."""
    cols = {r[0] for r in con.execute("DESCRIBE exposures").fetchall()}
    return "features" in cols


def explained_with_actions(con: Con, action_types: list[str]) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """Value-model training rows of a ``foryou`` run: (features matrix, [(row, action type)]).

    One row per explained exposure (in step, agent, rank order); an action counts for a row when the
    same agent took it (outcome ok) in the same step on the shown post or its root (``post_id``), or
    on its author (``user_id``: follow, mute, block). Empty when the run has no explanations.
    """
    if not has_explanations(con):
        return np.zeros((0, 0)), []
    shown = (
        "WITH _shown AS (SELECT row_number() OVER (ORDER BY e.step, e.agent_id, e.rank, e.post_id) - 1 AS rid, "
        "e.step, e.agent_id, e.post_id, e.features, p.author, p.root_id FROM exposures e "
        "JOIN posts p USING (post_id) WHERE e.features IS NOT NULL) "
    )
    feats = con.execute(shown + "SELECT features FROM _shown ORDER BY rid").fetchall()
    labels = con.execute(
        shown + "SELECT DISTINCT s.rid, a.type FROM _shown s JOIN actions a ON a.step = s.step "
        "AND a.agent_id = s.agent_id AND a.outcome = 'ok' AND list_contains(?, a.type) AND ("
        "TRY_CAST(json_extract(a.args, '$.post_id') AS BIGINT) IN (s.post_id, s.root_id) "
        "OR TRY_CAST(json_extract(a.args, '$.user_id') AS BIGINT) = s.author) ORDER BY ALL",
        [action_types],
    ).fetchall()
    x = np.asarray([f[0] for f in feats], dtype=np.float64) if feats else np.zeros((0, 0))
    return x, [(int(r), str(t)) for r, t in labels]
