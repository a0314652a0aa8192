"""The multipliers X applies to the weighted score, in its order: cold start, author diversity, out-of-network.

All three follow ``home-mixer/scorers/ranking_scorer.rs`` (the default path, no pre-offset multipliers)
and ``home-mixer/scorers/author_cold_start.rs`` (the hold-out arm: no Thompson sampling, no
mixture-of-experts corpora). Each works on all users' candidates at once; ``row`` must be sorted.
"""

from __future__ import annotations

import numpy as np

from socium.recsys.foryou.params import ForYouParams


def _rank_in_row(row: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, rank): ``order`` sorts by (row, score desc, index); ``rank[i]`` is i's place in its row."""
    by_score = np.argsort(-score, kind="stable")  # ties: earlier index first
    order = by_score[np.argsort(row[by_score], kind="stable")]
    starts = np.searchsorted(row[order], row[order], side="left")
    rank = np.empty(len(row), np.int64)
    rank[order] = np.arange(len(row)) - starts
    return order, rank


def cold_start(
    row: np.ndarray,
    score: np.ndarray,
    eligible: np.ndarray,
    p: ForYouParams,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Lift one small author's post per user to the score at slot ``cold_start_slot_min`` (0-based).

    ``eligible``: not a repost, author with at most ``cold_start_follower_cap`` followers, post with fewer
    than ``cold_start_impression_threshold`` impressions. Among those ranked above
    ``cold_start_max_position_ratio`` x (candidates with a non-zero score), the best-scored gets
    ``max(score, target)`` where target is the score at a slot drawn from [slot_min, slot_max) (one slot
    with the published 15, 16: no draw). A user with fewer than ``slot_max`` candidates gets no lift.
    Returns (scores, lifted mask).
    """
    out = score.copy()
    lifted = np.zeros(len(score), bool)
    if not len(score):
        return out, lifted
    order, rank = _rank_in_row(row, score)
    n_rows = int(row.max()) + 1
    n = np.bincount(row, minlength=n_rows)
    nonzero = np.bincount(row, weights=(score != 0).astype(np.float64), minlength=n_rows).astype(np.int64)
    hi = np.minimum(p.cold_start_slot_max, n)
    lo = np.minimum(p.cold_start_slot_min, hi)
    has = lo < hi
    slot = lo.copy()
    wide = has & (hi - lo > 1)
    if wide.any():
        if rng is None:
            raise ValueError("cold_start: a slot range wider than one needs an rng")
        slot[wide] = lo[wide] + rng.integers(0, (hi - lo)[wide])
    start = np.concatenate([[0], np.cumsum(n)[:-1]])
    target = np.where(has, score[order[np.minimum(start + slot, len(score) - 1)]], np.nan)
    max_slot = (p.cold_start_max_position_ratio * nonzero).astype(np.int64)
    ok = eligible & has[row] & (rank < max_slot[row]) & (score != 0)
    if not ok.any():
        return out, lifted
    cand = np.flatnonzero(ok)
    # best-scored eligible per row: the one with the smallest rank
    best = cand[np.lexsort((rank[cand], row[cand]))]
    first = np.r_[True, row[best][1:] != row[best][:-1]]
    pick = best[first]
    new = np.maximum(out[pick], target[row[pick]])
    lifted[pick] = new > out[pick]
    out[pick] = new
    return out, lifted


def author_diversity(row: np.ndarray, author: np.ndarray, score: np.ndarray, p: ForYouParams) -> np.ndarray:
    """Multiplier ``(1 - floor) * decay ** j + floor`` where ``j`` counts the same author's better-scored
    candidates for this user (first post 1, second 0.625, third 0.4375, ... down to 0.25 by default)."""
    if not len(score):
        return np.ones(0)
    by_score = np.argsort(-score, kind="stable")
    n_auth = int(author.max()) + 1
    order = by_score[np.argsort((row * n_auth + author)[by_score], kind="stable")]
    r, a = row[order], author[order]
    new_group = np.r_[True, (r[1:] != r[:-1]) | (a[1:] != a[:-1])]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(len(order)), 0))
    j = np.empty(len(row), np.int64)
    j[order] = np.arange(len(order)) - group_start
    floor = p.author_diversity_floor
    return (1.0 - floor) * np.power(p.author_diversity_decay, j) + floor


def oon_factor(in_network: np.ndarray, is_repost: np.ndarray, p: ForYouParams) -> np.ndarray:
    """``oon_weight_factor`` for out-of-network candidates (and in-network reposts while
    ``oon_rescore_in_network_reposts``, X's rule for in-network replies and retweets), else 1."""
    applies = ~in_network | (in_network & is_repost & p.oon_rescore_in_network_reposts)
    return np.where(applies, p.oon_weight_factor, 1.0)


def rank_in_row(row: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Each candidate's 0-based place among its user's candidates by score (ties: earlier first)."""
    return _rank_in_row(row, score)[1]
