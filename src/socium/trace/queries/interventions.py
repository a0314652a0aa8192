"""Intervention measures: seeded claims with their ground truth, how far each reached, moderation events.

A claim is an original post the experiment seeded with a known veracity (true or false). Its reach
at step s is the number of distinct agents shown anything in its cascade (comments included) for
the first time at s; summed over steps it is the number of agents who ever saw it.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

Con = duckdb.DuckDBPyConnection


def seeded_claims(con: Con) -> list[tuple[int, int, str]]:
    """(post, step posted, 'true' or 'false') of every seeded original post with a known veracity."""
    rows = con.execute(
        "SELECT p.post_id, p.step, v.veracity FROM posts p JOIN post_veracity v USING (post_id) "
        "WHERE p.kind = 'original' AND v.veracity IN ('true', 'false') "
        "AND p.post_id IN (SELECT post_id FROM actions "
        "WHERE origin = 'seed' AND type = 'create_post' AND outcome = 'ok') "
        "ORDER BY p.post_id"
    ).fetchall()
    return [(int(p), int(s), str(v)) for p, s, v in rows]


_REACH_SQL = """
SELECT p.root_id, e.step, count(DISTINCT e.agent_id) FROM exposures e JOIN posts p USING (post_id)
JOIN (SELECT p2.root_id, x.agent_id, min(x.step) AS first FROM exposures x JOIN posts p2 USING (post_id) GROUP BY ALL) f
  ON f.root_id = p.root_id AND f.agent_id = e.agent_id AND f.first = e.step
WHERE p.root_id IN (SELECT unnest(?::BIGINT[])) GROUP BY ALL ORDER BY 1, 2
"""


def new_reach(con: Con, roots: Sequence[int]) -> list[tuple[int, int, int]]:
    """(root, step, agents first shown that cascade at that step) for the cascades ``roots``."""
    rows = con.execute(_REACH_SQL, [[int(r) for r in roots]]).fetchall()
    return [(int(r), int(s), int(n)) for r, s, n in rows]


def false_reach(con: Con) -> int:
    """Distinct (agent, false cascade) pairs ever shown: how much of the population misinformation reached."""
    row = con.execute(
        "SELECT count(DISTINCT (e.agent_id, p.root_id)) FROM exposures e JOIN posts p USING (post_id) "
        "JOIN post_veracity v ON v.post_id = p.root_id WHERE v.veracity = 'false'"
    ).fetchone()
    return int(row[0]) if row else 0


def moderation_counts(con: Con) -> dict[str, int]:
    """Moderation events by kind (labels, removals, down-rankings, ...) over the run."""
    rows = con.execute("SELECT event, count(*) FROM moderation_events GROUP BY 1").fetchall()
    return {str(e): int(n) for e, n in rows}
