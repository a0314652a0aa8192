"""Who gets which activity row: couple an agent's activity to its follower count (Gaussian copula).

Why: synthetic activity (``population.activity``) is drawn independently of the follow graph, so whether
the few accounts with large audiences are active is luck of the seed, and so are the large cascades they
broadcast (docs/validation.md, 4a). On real platforms activity and audience go together: Beevolve's study of
36 million Twitter profiles (2012, via MarketingCharts) found the mean number of tweets rising from 66 for
accounts with 0-50 followers to about 15,300 for those with 100,001-1,000,000. Those are bin means, not a
rank correlation, so the strength here is a parameter, ``population.activity_follower_corr``, not a fitted
value.

Only the assignment changes: the agents' 24-hour activity rows are permuted, untouched, so the activity
distribution (every row, every total) is exactly the same; an agent's total activity and its follower count
then have the Gaussian-copula correlation ``rho`` (normal scores of follower rank times ``rho`` plus
``sqrt(1 - rho^2)`` times an independent normal per agent; rows sorted by total are handed out in that
order). ``rho = 0`` returns the rows as they are (no random permutation), so configs without the key
keep their traces.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

from socium.errors import ConfigError


def couple_activity(activity: np.ndarray, followers: np.ndarray, rho: float, rng: np.random.Generator) -> np.ndarray:
    """Return ``activity`` with its rows permuted so that row totals follow ``followers`` with copula
    correlation ``rho`` in [-1, 1].

    Follower ties share their average rank (so agents with equal audiences are ordered only by the noise);
    at ``|rho| = 1`` the noise still breaks those ties. ``activity`` (n x 24) is not modified.
    """
    act = np.asarray(activity)
    fol = np.asarray(followers)
    if not -1.0 <= float(rho) <= 1.0:
        raise ConfigError(f"population.activity_follower_corr: must lie in [-1, 1], got {rho!r}")
    if act.ndim != 2 or fol.shape != (act.shape[0],):
        raise ConfigError(
            f"population.activity_follower_corr: activity {act.shape} and followers {fol.shape} "
            "must describe the same agents"
        )
    n = act.shape[0]
    if rho == 0.0 or n < 2:
        return act
    scores = ndtri((rankdata(fol, method="average") - 0.5) / n)  # normal scores of follower rank
    noise = rng.standard_normal(n)
    latent = rho * scores + np.sqrt(max(0.0, 1.0 - rho * rho)) * noise
    who = np.lexsort((noise, latent))  # agents by latent, lowest first (noise breaks exact ties)
    rows = np.argsort(act.sum(axis=1), kind="stable")  # rows by total activity, lowest first
    out = np.empty_like(act)
    out[who] = act[rows]
    return out
