"""Cascade measures: who reshared what from whom and when, sizes, depths, breadths, per-minute curves.

A cascade is an original post with every repost and quote hanging under it (the trace's
``cascade_nodes`` view; comments are replies, not reshares, and are counted apart where a measure
says so). Reshares are timed at the middle of their step (:data:`RESHARE_AT`): agents react during a
step, not at its start.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np

from socium.core import actions as A
from socium.errors import ConfigError, TraceError
from socium.trace.queries.curves import cascade_curves_from_events

Con = duckdb.DuckDBPyConnection

RESHARE_AT = 0.5
"""A reshare made during step s is timed at (s + RESHARE_AT) steps: agents react *during* a step."""


def cascade_events(con: Con, root_post: int = 0, recorded_time: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Parent index (-1 = the source) and time in minutes since the source of every *user* in a cascade.

    ``recorded_time``: time each reshare at its ``posts.time_s`` (what ``socium query`` shows; a single
    run's report) instead of mid-step (:data:`RESHARE_AT`, the propagation model's timing against real trees).

    A user who reshared twice counts once (at the earliest reshare), as in Twitter15 where each user
    is one node; later reshares' children hang under that user's first node. A post that is not the
    root of a cascade is a :class:`~socium.errors.ConfigError` (the root is the caller's choice).
    """
    dt_row = con.execute("SELECT json_extract(config, '$.step_minutes') FROM runs").fetchall()
    rows = con.execute(
        "SELECT c.post_id, p.parent_id, c.author, c.step, p.time_s FROM cascade_nodes c JOIN posts p USING (post_id) "
        "WHERE c.root_id = ? ORDER BY c.step, c.post_id",
        [root_post],
    ).fetchall()
    if not rows:
        raise ConfigError(f"post {root_post} is not the root of a cascade in this run")
    dt = float(dt_row[0][0])
    node_of: dict[int, int] = {}
    first_of: dict[int, int] = {}
    parent: list[int] = []
    times: list[float] = []
    root_step, root_s = rows[0][3], rows[0][4]
    for pid, par, author, step, time_s in rows:
        if author in first_of:
            node_of[pid] = first_of[author]
            continue
        k = len(parent)
        first_of[author] = node_of[pid] = k
        parent.append(-1 if pid == root_post else node_of[par])
        if pid == root_post:
            times.append(0.0)
        elif recorded_time:
            times.append((float(time_s) - float(root_s)) / 60.0)
        else:
            times.append((step - root_step + RESHARE_AT) * dt)
    return np.array(parent, dtype=np.int64), np.array(times)


def propagation_curves(
    con: Con, root_post: int = 0, minutes: int = 150, recorded_time: bool = False
) -> dict[str, np.ndarray]:
    """Per-minute scale, depth and max breadth of one simulated cascade (users, as :func:`cascade_events`)."""
    parent, times = cascade_events(con, root_post, recorded_time)
    return cascade_curves_from_events(parent, times, minutes)


def largest_cascades(con: Con, limit: int = 3) -> list[tuple[int, int]]:
    """(root post, nodes) of the ``limit`` largest cascades that spread at all (more than the root)."""
    rows = con.execute(
        "SELECT root_id, count(*) FROM cascade_nodes GROUP BY root_id HAVING count(*) > 1 "
        "ORDER BY count(*) DESC, root_id LIMIT ?",
        [limit],
    ).fetchall()
    return [(int(r), int(n)) for r, n in rows]


def final_shape(con: Con, root_post: int = 0) -> dict[str, int] | None:
    """Size (nodes, root included), depth and max breadth of a cascade at the last committed step."""
    row = con.execute(
        "SELECT size, depth, max_breadth FROM cascade_metrics WHERE root_id = ? ORDER BY step DESC LIMIT 1",
        [root_post],
    ).fetchone()
    return None if row is None else {"size": int(row[0]), "depth": int(row[1]), "max_breadth": int(row[2])}


def sizes_and_depths(con: Con) -> np.ndarray:
    """One row (nodes incl. root, depth) per cascade, shape (n, 2), in no particular order."""
    rows = con.execute(
        "SELECT root_id, count(*) AS size, max(depth) AS depth FROM cascade_nodes GROUP BY root_id"
    ).fetchall()
    return np.array([(r[1], r[2]) for r in rows], float).reshape(-1, 2)


def depths(con: Con, roots: Sequence[int]) -> dict[int, int]:
    """Deepest reshare level of each cascade in ``roots`` (roots nobody reshared: depth 0)."""
    rows = con.execute(
        "SELECT root_id, max(depth) FROM cascade_nodes WHERE root_id IN (SELECT unnest(?::BIGINT[])) GROUP BY 1",
        [[int(r) for r in roots]],
    ).fetchall()
    return {int(r): int(d) for r, d in rows}


def shares_and_comments(con: Con, roots: Sequence[int]) -> dict[int, tuple[int, int]]:
    """(reposts + quotes, comments) anywhere under each root in ``roots`` that has posts."""
    rows = con.execute(
        "SELECT root_id, count(*) FILTER (WHERE kind IN ('repost', 'quote')), count(*) FILTER (WHERE kind = 'comment') "
        "FROM posts WHERE root_id IN (SELECT unnest(?::BIGINT[])) GROUP BY root_id",
        [[int(r) for r in roots]],
    ).fetchall()
    return {int(r): (int(s), int(c)) for r, s, c in rows}


def likes(con: Con, roots: Sequence[int]) -> dict[int, int]:
    """Post likes anywhere in each cascade of ``roots`` (only roots with a like appear)."""
    rows = con.execute(
        "SELECT p.root_id, count(*) FROM votes v JOIN posts p ON p.post_id = v.target "
        "WHERE v.delta > 0 AND v.type = ? AND p.root_id IN (SELECT unnest(?::BIGINT[])) GROUP BY 1",
        [A.LikePost.type_name, [int(r) for r in roots]],
    ).fetchall()
    return {int(r): int(n) for r, n in rows}


def reshares_per_agent(con: Con) -> float:
    """Reposts and quotes per agent of the population (NULL-free; 0 agents is a TraceError)."""
    n, agents = con.execute(
        "SELECT (SELECT count(*) FROM posts WHERE kind IN ('repost', 'quote')), (SELECT count(*) FROM agents)"
    ).fetchall()[0]
    if not agents:
        raise TraceError("reshares_per_agent: the trace has no agents")
    return float(n / agents)


_RETELLING_SQL = """
WITH RECURSIVE chain(post_id, root_id, depth) AS (
    SELECT post_id, post_id, 0 FROM posts WHERE kind = 'original'
    UNION ALL
    SELECT p.post_id, c.root_id, c.depth + 1 FROM posts p JOIN chain c ON p.parent_id = c.post_id
    WHERE p.kind IN ('quote', 'comment', 'repost')
)
SELECT c.post_id, c.root_id, c.depth, p.kind, p.content, coalesce(v.veracity, 'unknown') AS veracity
FROM chain c JOIN posts p USING (post_id) LEFT JOIN {veracity} v ON v.post_id = c.root_id
ORDER BY c.root_id, c.depth, c.post_id
"""


def retelling_chains(con: Con) -> list[tuple[int, int, int, str, str, str]]:
    """(post, source, depth, kind, text, source veracity) for every post in a chain from an original.

    Unlike ``cascade_nodes`` the chain also follows comments: a retelling may be a reply. Runs without
    an intervention layer have no ``post_veracity`` table; their sources are all ``unknown``.
    """
    has_veracity = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'post_veracity'"
    ).fetchall()[0][0]
    veracity = "post_veracity" if has_veracity else "(SELECT NULL::BIGINT AS post_id, NULL::VARCHAR AS veracity)"
    rows = con.execute(_RETELLING_SQL.format(veracity=veracity)).fetchall()
    return [tuple(r) for r in rows]


_IC_SQL = """
WITH ex AS (
    SELECT DISTINCT e.agent_id, e.step, p.root_id
    FROM exposures e JOIN posts p ON p.post_id = e.post_id
    WHERE p.kind IN ('original', 'repost', 'quote') {root_filter}
), adopt AS (
    SELECT author AS agent_id, root_id, min(step) AS s FROM posts
    WHERE kind IN ('original', 'repost', 'quote') GROUP BY ALL
), roots AS (SELECT post_id AS root_id, author AS starter FROM posts WHERE kind = 'original')
SELECT
    (SELECT count(*) FROM ex LEFT JOIN adopt a USING (agent_id, root_id)
     WHERE a.s IS NULL OR a.s >= ex.step) AS trials,
    (SELECT count(*) FROM (SELECT DISTINCT p.author, p.root_id FROM posts p JOIN roots r USING (root_id)
     WHERE p.kind IN ('repost', 'quote') AND p.author != r.starter {root_filter})) AS adoptions
"""


def reshare_trials(con: Con, roots: Sequence[int] | None = None) -> tuple[int, int]:
    """(trials, adoptions) of the independent-cascade model, over all cascades or only ``roots``.

    A trial is one (agent, step, cascade) whose posts the agent was shown before it had adopted that
    cascade; an adoption is an agent's first reshare (repost or quote) into a cascade it did not
    start: the unit on which ``IndependentCascadePolicy`` draws, so ``adoptions / trials`` is the
    maximum-likelihood reshare probability.
    """
    filt, params = "", []
    if roots is not None:
        ids = [int(r) for r in roots]
        filt = "AND p.root_id IN (SELECT unnest(?::BIGINT[]))"
        params = [ids, ids]
    trials, adoptions = con.execute(_IC_SQL.format(root_filter=filt), params).fetchall()[0]
    return int(trials), int(adoptions)
