"""Candidate generation shared by the recommenders, vectorised over the columnar post table.

Why here: every feed starts from the same few questions (which posts are recent, how engaging is
each, whom does each user follow and mute), and answering them with numpy over all users at once is
what keeps a step with 10^4 active users well under a second.

Kinds: feeds that rank posts platform-wide show originals and quotes (a repost has no text of its
own; its root competes instead); in-network timelines also show followees' reposts, since that is
how cascades travel. Comments never appear in a feed, only under their post.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from socium.platform.posts import ORIGINAL, QUOTE, REPOST
from socium.recsys.base import SOURCES, Feed  # noqa: F401  (SOURCES re-exported for recommender authors)

if TYPE_CHECKING:
    from socium.platform.state import PlatformState

RANKED_KINDS = (ORIGINAL, QUOTE)
TIMELINE_KINDS = (ORIGINAL, REPOST, QUOTE)


def window_posts(state: PlatformState, step: int, window_steps: int, kinds: tuple[int, ...]) -> np.ndarray:
    """Ids (ascending, int64) of posts of the given kinds created in the last ``window_steps`` steps."""
    p = state.posts
    start, n = p.first_in_step(step - window_steps + 1), len(p)
    kind = p.col("kind")[start:n]
    ids = np.arange(start, n, dtype=np.int64)
    return ids[np.isin(kind, kinds)]


def engagement(state: PlatformState, ids: np.ndarray, via_root: bool = False) -> np.ndarray:
    """likes + reposts + comments - dislikes, the same sum the platform's ``trend`` ranks by.

    With ``via_root``, a repost counts its root's engagement (a repost row itself gathers almost none).
    """
    p = state.posts
    if via_root:
        ids = p.col("root")[ids]
    return (p.col("likes")[ids] + p.col("reposts")[ids] + p.col("comments")[ids] - p.col("dislikes")[ids]).astype(
        np.float64
    )


def decay(state: PlatformState, ids: np.ndarray, step: int, half_life_steps: float) -> np.ndarray:
    """0.5 ** (age in steps / half-life); a post of the current step has weight 1."""
    age = np.maximum(step - state.posts.col("step")[ids], 0).astype(np.float64)
    return np.exp2(-age / half_life_steps) if half_life_steps > 0 else np.ones(len(ids))


def rank_desc(ids: np.ndarray, score: np.ndarray) -> np.ndarray:
    """``ids`` ordered by score, highest first; ties go to the newer (larger) id."""
    return ids[np.lexsort((-ids, -score))]


def shared_feeds(state: PlatformState, ranked: np.ndarray, users: np.ndarray, k: int, source: str) -> list[Feed]:
    """One ranking for everyone; users who mute someone get it with those authors skipped."""
    top = tuple(int(x) for x in ranked[:k])
    shared = Feed(top, (source,) * len(top))
    authors = state.posts.col("author")
    out: list[Feed] = []
    for u in users.tolist():
        muted = state.mutes.get(u)
        if not muted:
            out.append(shared)
            continue
        m = np.fromiter(muted, dtype=np.int64, count=len(muted))
        head = ranked[: 4 * k + len(m)]
        keep = head[~np.isin(authors[head], m)]
        if len(keep) < k and len(head) < len(ranked):
            keep = ranked[~np.isin(authors[ranked], m)]
        sel = tuple(int(x) for x in keep[:k])
        out.append(Feed(sel, (source,) * len(sel)))
    return out


def followee_pairs(state: PlatformState, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner position in ``users``, followee) for every follow of every user, muted followees removed."""
    parts: list[np.ndarray] = []
    for u in users.tolist():
        f = state.follows.followees(u)
        muted = state.mutes.get(u)
        if muted:
            f = f[~np.isin(f, np.fromiter(muted, dtype=np.int64, count=len(muted)))]
        parts.append(f)
    lens = np.fromiter((len(f) for f in parts), dtype=np.int64, count=len(parts))
    fol = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
    return np.repeat(np.arange(len(users), dtype=np.int64), lens), fol


def in_network(
    state: PlatformState,
    owner: np.ndarray,
    fol: np.ndarray,
    cand: np.ndarray,
    score: np.ndarray,
    quota: int,
    n_users: int,
) -> list[np.ndarray]:
    """Each user's ``quota`` best candidate posts (score desc, newer first on ties) by its followees.

    ``(owner, fol)`` come from :func:`followee_pairs`. Candidates are ranked once globally and
    grouped by author; each followee contributes at most ``quota`` posts, so the work is
    proportional to follows x quota, not follows x posts; one integer sort then picks per user.
    """
    flat, counts = in_network_flat(state, owner, fol, cand, score, quota, n_users)
    return np.split(flat, np.cumsum(counts)[:-1]) if n_users else []


def in_network_flat(
    state: PlatformState,
    owner: np.ndarray,
    fol: np.ndarray,
    cand: np.ndarray,
    score: np.ndarray,
    quota: int,
    n_users: int,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`in_network` as one flat array (users' lists back to back) and each user's count, for
    callers that work on flat arrays (``foryou``): 10^4 small arrays cost more than the ranking."""
    if not len(cand) or not len(fol):
        return np.zeros(0, np.int64), np.zeros(n_users, np.int64)
    m = len(cand)
    best_first = np.lexsort((-cand, -score))
    rank = np.empty(m, np.int64)
    rank[best_first] = np.arange(m)
    by_rank = cand[best_first]
    authors = state.posts.col("author")[cand]
    order = np.argsort(authors * m + rank)  # by author, best first within
    r_s = rank[order]
    # each followee's block of posts, from per-author counts: a table lookup per follow where two
    # binary searches of random followees over the sorted authors cost ~10x more (cache misses)
    per_author = np.bincount(authors, minlength=max(state.n_users, int(fol.max()) + 1))
    lo = (np.cumsum(per_author) - per_author)[fol]
    c = np.minimum(per_author[fol], quota)
    pos = np.repeat(lo - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))
    key = np.sort(np.repeat(owner, c) * m + r_s[pos])
    own, rk = np.divmod(key, m)
    keep = (np.arange(len(own)) - np.searchsorted(own, np.arange(n_users))[own]) < quota
    return by_rank[rk[keep]], np.bincount(own[keep], minlength=n_users)


def hot_score(score: np.ndarray, time_s: np.ndarray, t0: float = 0.0) -> np.ndarray:
    """Reddit's hot rank: sign(s) * log10(max(|s|, 1)) + (t - t0) / 45000, t in simulated seconds."""
    s = np.asarray(score, dtype=np.float64)
    return np.sign(s) * np.log10(np.maximum(np.abs(s), 1.0)) + (np.asarray(time_s, dtype=np.float64) - t0) / 45000.0
