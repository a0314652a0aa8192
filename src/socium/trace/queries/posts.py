"""Post and vote measures: what was written, by kind, and how the crowd voted on it.

Votes come from the trace's ``votes`` view (applied like/dislike actions with their sign). Votes an
experiment seeded (``origin = 'seed'``) are set-up, not behaviour, and measures of the crowd leave
them out where they say so.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from socium.core import actions as A

Con = duckdb.DuckDBPyConnection


def post_kinds(con: Con) -> dict[str, int]:
    """Posts by kind (original, repost, quote, comment)."""
    return {str(k): int(n) for k, n in con.execute("SELECT kind, count(*) FROM posts GROUP BY kind").fetchall()}


def post_texts(con: Con) -> dict[int, str]:
    """Every post's stored text by post id (agent-written: hostile data, to be quoted, never run)."""
    return {int(p): c for p, c in con.execute("SELECT post_id, content FROM posts").fetchall()}


def crowd_votes(con: Con) -> tuple[int, float | None]:
    """(votes cast by the crowd, share of them that were up-votes; None without votes), seeds apart."""
    n, up = con.execute(
        "SELECT count(*), avg(CASE WHEN delta > 0 THEN 1.0 ELSE 0.0 END) FROM votes WHERE origin != 'seed'"
    ).fetchall()[0]
    return int(n), None if up is None else float(up)


def seeded_votes(con: Con) -> int:
    """Post likes and dislikes the experiment seeded (a herding design's treatment)."""
    row = con.execute(
        "SELECT count(*) FROM actions WHERE origin = 'seed' AND list_contains(?, type)", [list(A.POST_VOTES)]
    ).fetchone()
    return int(row[0]) if row else 0


def likes_per_post(con: Con) -> float:
    """Up-votes (seeded ones included) per post written; 0 posts count as 1 so the ratio is defined."""
    row = con.execute(
        "SELECT (SELECT count(*) FROM votes WHERE delta > 0) / greatest((SELECT count(*) FROM posts), 1)"
    ).fetchone()
    return float(row[0]) if row else 0.0


_VOTE_SQL = """
WITH ex AS (
    SELECT DISTINCT e.agent_id, e.step, e.post_id FROM exposures e
    WHERE e.post_id IN (SELECT unnest(?::BIGINT[]))
), firstvote AS (
    SELECT agent_id, target AS post_id, min(step) AS s FROM votes WHERE origin != 'seed' GROUP BY ALL
)
SELECT
    (SELECT count(*) FROM ex LEFT JOIN firstvote f USING (agent_id, post_id) WHERE f.s IS NULL OR f.s >= ex.step),
    (SELECT count(*) FILTER (WHERE delta > 0) FROM votes
     WHERE origin != 'seed' AND target IN (SELECT unnest(?::BIGINT[]))),
    (SELECT count(*) FILTER (WHERE delta < 0) FROM votes
     WHERE origin != 'seed' AND target IN (SELECT unnest(?::BIGINT[])))
"""


def vote_trials(con: Con, targets: Sequence[int]) -> tuple[int, int, int]:
    """(fresh exposures, crowd up-votes, crowd down-votes) of the posts ``targets``.

    A fresh exposure is one (agent, step, post) showing a post the agent had not yet voted on: the
    unit on which ``RandomPolicy`` draws its votes, so the counts give its maximum-likelihood rates.
    """
    ids = [int(t) for t in targets]
    trials, ups, downs = con.execute(_VOTE_SQL, [ids, ids, ids]).fetchall()[0]
    return int(trials), int(ups), int(downs)
