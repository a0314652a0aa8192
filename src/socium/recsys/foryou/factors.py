"""The multipliers X applies to the weighted score, in its order: cold start, author diversity, out-of-network.

All three follow ``home-mixer/scorers/ranking_scorer.rs`` (the default path, no pre-offset multipliers)
and ``home-mixer/scorers/author_cold_start.rs`` (the hold-out arm: no Thompson sampling, no
mixture-of-experts corpora). Each works on all users' candidates at once; ``row`` must be sorted.
"""

from __future__ import annotations

import numpy as np

from socium.recsys.foryou.params import ForYouParams


def row_key(row: np.ndarray) -> np.ndarray:
    """``row`` in the narrowest integer type that holds it: numpy sorts 16-bit integers stably by radix
    sort (linear time) where wider ones take a merge sort; the order is the same."""
    return row.astype(np.int16) if len(row) and int(row.max()) < (1 << 15) else row


def within_rows(row: np.ndarray, key: np.ndarray) -> np.ndarray | None:
    """Indices that stably sort ``key`` inside each row's block, rows kept in place; None where ``row``
    is not grouped (sorted) or ``key`` has NaNs. Each row's keys go into one line of a padded matrix
    sorted along its lines: ~40 candidates a user sort far faster than one sort of them all, in the
    same order (padding sorts last: +inf, and after any equal key since it comes later)."""
    n = len(row)
    if n == 0:
        return np.zeros(0, np.int64)
    if bool(np.any(row[1:] < row[:-1])) or (key.dtype.kind == "f" and bool(np.isnan(key).any())):
        return None
    counts = np.bincount(row)
    starts = np.cumsum(counts) - counts
    width = int(counts.max())
    col = np.arange(n) - starts[row]
    if key.dtype.kind in "iu" and int(key.min()) >= 0 and (int(key.max()) + 2) * width < 2**62:
        # integers: key * width + column is unique within a line and orders as (key, column), so any
        # sort gives the stable order; pads (the largest value) sort last
        mat = np.full((len(counts), width), (int(key.max()) + 1) * width, np.int64)
        mat[row, col] = key.astype(np.int64) * width + col
        o = np.argsort(mat, axis=1)
    else:
        pad = np.inf if key.dtype.kind == "f" else np.iinfo(key.dtype).max
        mat = np.full((len(counts), width), pad, key.dtype)
        mat[row, col] = key
        o = _argsort_lines(mat, counts)
    return (o + starts[:, None])[np.arange(width)[None, :] < counts[:, None]]


def _argsort_lines(mat: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``np.argsort(mat, axis=1, kind="stable")`` where line ``i`` holds ``counts[i]`` keys, then pads.
    numpy's default sort (SIMD quicksort, ~3x faster on lines of ~40) is not stable, so the lines where
    it could differ (two equal keys, or a key equal to the pad) are sorted again stably."""
    o = np.argsort(mat, axis=1)
    width = mat.shape[1]
    if width < 2:
        return o
    real = np.arange(width)[None, :] < counts[:, None]
    s = np.take_along_axis(mat, o, axis=1)
    redo = ((s[:, 1:] == s[:, :-1]) & real[:, 1:]).any(axis=1) | ((o >= counts[:, None]) & real).any(axis=1)
    if redo.any():
        o[redo] = np.argsort(mat[redo], axis=1, kind="stable")
    return o


def by_row_then_score(row: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Indices sorted by (row, score descending, index)."""
    order = within_rows(row, -score)
    if order is not None:
        return order
    by_score = np.argsort(-score, kind="stable")  # ties: earlier index first
    return by_score[np.argsort(row_key(row[by_score]), kind="stable")]


def _rank_in_row(row: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, rank): ``order`` sorts by (row, score desc, index); ``rank[i]`` is i's place in its row."""
    order = by_row_then_score(row, score)
    counts = np.bincount(row, minlength=int(row.max(initial=-1)) + 1)
    starts = np.cumsum(counts) - counts
    rank = np.empty(len(row), np.int64)
    rank[order] = np.arange(len(row)) - starts[row[order]]
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
    # best-scored eligible per row: the one with the smallest rank, i.e. the first in (row, rank) order
    best = order[ok[order]]
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
    by_score = by_row_then_score(row, score)
    within = within_rows(row[by_score], author[by_score])  # row[by_score] is row where row is grouped
    if within is not None:
        order = by_score[within]  # (row, author, -score, index)
    else:
        order = by_score[np.argsort(author[by_score], kind="stable")]
        order = order[np.argsort(row_key(row[order]), kind="stable")]
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


def rank_in_row(row: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, rank): ``rank[i]`` is each candidate's 0-based place among its user's candidates by score
    (ties: earlier first); ``order`` the indices in (row, score desc) order, for the re-rankers to reuse."""
    return _rank_in_row(row, score)
