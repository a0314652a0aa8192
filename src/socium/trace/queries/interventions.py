"""Intervention measures: seeded claims with their ground truth, how far each reached, moderation events.

A claim is an original post the experiment seeded with a known veracity (true or false). Its reach
at step s is the number of distinct agents shown anything in its cascade (comments included) for
the first time at s; summed over steps it is the number of agents who ever saw it.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from socium.core import actions as A

Con = duckdb.DuckDBPyConnection


def seeded_claims(con: Con) -> list[tuple[int, int, str]]:
    """(post, step posted, 'true' or 'false') of every seeded original post with a known veracity."""
    rows = con.execute(
        "SELECT p.post_id, p.step, v.veracity FROM posts p JOIN post_veracity v USING (post_id) "
        "WHERE p.kind = 'original' AND v.veracity IN ('true', 'false') "
        "AND p.post_id IN (SELECT post_id FROM actions "
        "WHERE origin = 'seed' AND type = ? AND outcome = 'ok') "
        "ORDER BY p.post_id",
        [A.CreatePost.type_name],
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


_JUDGED_SQL = """
WITH judged AS (SELECT DISTINCT post_id FROM moderation_events WHERE event IN ('label', 'note')),
roots AS (SELECT post_id AS root_id, post_id IN (SELECT post_id FROM judged) AS j FROM posts WHERE kind = 'original'),
shown AS (SELECT DISTINCT e.step, e.agent_id, e.post_id, p.root_id FROM exposures e JOIN posts p USING (post_id))
SELECT r.j, count(*),
       (SELECT count(*) FROM shown s JOIN roots x USING (root_id) WHERE x.j = r.j),
       (SELECT count(DISTINCT (s.agent_id, s.root_id)) FROM shown s JOIN roots x USING (root_id) WHERE x.j = r.j),
       (SELECT count(*) FROM posts p JOIN roots x USING (root_id) WHERE x.j = r.j AND p.kind IN ('repost', 'quote'))
FROM roots r GROUP BY r.j
"""


def judged_cascade_totals(con: Con) -> dict[bool, tuple[int, int, int, int]]:
    """(originals, exposures, reach, reshares) of the cascades whose original was judged (True: labelled or
    noted) and of the rest (False).

    Why: a down-ranking factor acts on a judged post and everything sharing it, so its effect is read on
    whole cascades: exposures are distinct (step, agent, post) rows of any post of the cascade, reach the
    distinct (agent, cascade) pairs, reshares its reposts and quotes. Cascades are grouped by whether their
    *original* was judged; a judged repost of an unjudged original counts with the unjudged. A group with no
    originals is absent.
    """
    rows = con.execute(_JUDGED_SQL).fetchall()
    return {bool(j): (int(n), int(e), int(r), int(s)) for j, n, e, r, s in rows}
