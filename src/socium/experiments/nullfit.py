"""Fit rule-based null models to a run's trace, so each reported effect stands beside a simple model.

Why fitting matters: a null model with an arbitrary rate answers nothing. Matching the LLM run's
*volume* (how often an exposure becomes a reshare, how often a viewer votes up or down) leaves only
the *mechanism* different, so a gap between the LLM run and its null is about what the agents did
with what they saw, not about how active they were.

Estimators (both are maximum-likelihood for the null they feed):

* independent cascade: ``p = adoptions / trials``, a trial being one (agent, step, cascade) whose
  posts the agent was shown before it had adopted that cascade, an adoption being an agent's first
  reshare (repost or quote) into a cascade it did not start. This is exactly the unit on which
  :class:`~socium.agents.rules.IndependentCascadePolicy` draws, so an IC run's own trace gives back
  its ``p_repost`` (tests/test_nullfit.py).
* random voting: per (agent, step, post) exposure of a post the agent had not voted on, the shares
  of up- and down-votes, converted to :class:`~socium.agents.rules.RandomPolicy`'s sequential draws
  (like with ``p_like``, else dislike with ``p_dislike``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from socium.experiments.spec import connect

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
     WHERE p.kind IN ('repost', 'quote') AND p.author != r.starter {root_filter_p})) AS adoptions
"""


@dataclass(frozen=True)
class ICFit:
    """A fitted reshare probability with the counts behind it and a binomial standard error."""

    p: float
    adoptions: int
    trials: int

    @property
    def se(self) -> float:
        return math.sqrt(self.p * (1 - self.p) / self.trials) if self.trials else float("nan")


def fit_independent_cascade(run_dir: str | Path, roots: Sequence[int] | None = None) -> ICFit:
    """Per-exposure reshare probability of a run (optionally only for the cascades in ``roots``)."""
    filt, filt_p, params = "", "", []
    if roots is not None:
        ids = [int(r) for r in roots]
        filt = "AND p.root_id IN (SELECT unnest(?::BIGINT[]))"
        filt_p = "AND p.root_id IN (SELECT unnest(?::BIGINT[]))"
        params = [ids, ids]
    con = connect(Path(run_dir))
    try:
        trials, adoptions = con.execute(_IC_SQL.format(root_filter=filt, root_filter_p=filt_p), params).fetchall()[0]
    finally:
        con.close()
    trials, adoptions = int(trials), int(adoptions)
    return ICFit(adoptions / trials if trials else 0.0, adoptions, trials)


@dataclass(frozen=True)
class VoteFit:
    """Random-voting rates per exposure, in the form RandomPolicy draws them."""

    p_like: float
    p_dislike: float
    ups: int
    downs: int
    trials: int


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


def fit_random_voting(run_dir: str | Path, targets: Sequence[int]) -> VoteFit:
    """Up- and down-vote rates per fresh exposure of ``targets`` (crowd votes only, not seed votes)."""
    ids = [int(t) for t in targets]
    con = connect(Path(run_dir))
    try:
        trials, ups, downs = con.execute(_VOTE_SQL, [ids, ids, ids]).fetchall()[0]
    finally:
        con.close()
    trials, ups, downs = int(trials), int(ups), int(downs)
    if not trials:
        return VoteFit(0.0, 0.0, ups, downs, 0)
    p_like = min(ups / trials, 1.0)
    p_dislike = min(downs / trials / (1 - p_like), 1.0) if p_like < 1 else 0.0
    return VoteFit(p_like, p_dislike, ups, downs, trials)
