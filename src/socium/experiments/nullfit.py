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
  its ``p_repost`` (tests/test_experiments/test_nullfit.py).
* random voting: per (agent, step, post) exposure of a post the agent had not voted on, the shares
  of up- and down-votes, converted to :class:`~socium.agents.rules.RandomPolicy`'s sequential draws
  (like with ``p_like``, else dislike with ``p_dislike``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from socium.trace.queries.cascades import reshare_trials
from socium.trace.queries.posts import vote_trials
from socium.trace.queries.runs import open_run


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
    with open_run(run_dir) as con:
        trials, adoptions = reshare_trials(con, roots)
    return ICFit(adoptions / trials if trials else 0.0, adoptions, trials)


@dataclass(frozen=True)
class VoteFit:
    """Random-voting rates per exposure, in the form RandomPolicy draws them."""

    p_like: float
    p_dislike: float
    ups: int
    downs: int
    trials: int


def fit_random_voting(run_dir: str | Path, targets: Sequence[int]) -> VoteFit:
    """Up- and down-vote rates per fresh exposure of ``targets`` (crowd votes only, not seed votes)."""
    with open_run(run_dir) as con:
        trials, ups, downs = vote_trials(con, targets)
    if not trials:
        return VoteFit(0.0, 0.0, ups, downs, 0)
    p_like = min(ups / trials, 1.0)
    p_dislike = min(downs / trials / (1 - p_like), 1.0) if p_like < 1 else 0.0
    return VoteFit(p_like, p_dislike, ups, downs, trials)
