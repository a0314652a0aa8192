"""The published pre-scoring filters, each a mask over :class:`Candidates` (true = keep).

X's order (``home-mixer/candidate_pipeline/phoenix_candidate_pipeline.rs``): drop duplicates, age
(``MAX_POST_AGE``), self posts, repost de-duplication, previously seen / served, muted keywords,
author social graph (blocked and muted authors). socium runs the ones it has a counterpart for, in
that order; keyword mutes, NSFW, subscriptions, video and election filters have none.

Negative feedback comes through :class:`NegativeFeedback`, a two-method view of the platform state
(``PlatformState.blocked(user)``, ``.not_interested(user)``, filled by the ``block`` and
``not_interested`` actions); a state without those methods (a plugin's or an older one) reads as
"nobody blocked anyone".
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol, runtime_checkable

import numpy as np

from socium.platform.posts import REPOST
from socium.platform.state import PlatformState
from socium.recsys.foryou.factors import within_rows
from socium.recsys.foryou.sources import Candidates

_SHIFT = np.int64(40)  # key = user << 40 | post: 2^23 users x 2^40 posts fit an int64


@runtime_checkable
class NegativeFeedback(Protocol):
    """What a user asked not to see: authors it blocked, posts it marked 'not interested'."""

    def blocked(self, user: int) -> Collection[int]: ...

    def not_interested(self, user: int) -> Collection[int]: ...


class _NoFeedback:
    def blocked(self, user: int) -> Collection[int]:
        return ()

    def not_interested(self, user: int) -> Collection[int]:
        return ()


def negative_feedback_of(state: Any) -> NegativeFeedback:
    """The state itself once it answers both questions, else a view where nobody blocked anything."""
    return state if isinstance(state, NegativeFeedback) else _NoFeedback()


def pair_keys(users: np.ndarray, posts: np.ndarray) -> np.ndarray:
    return (np.asarray(users, np.int64) << _SHIFT) | np.asarray(posts, np.int64)


def first_of_each(row: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Mask of each (row, key) pair's first occurrence, i.e. ``np.unique(pairs, return_index=True)``'s
    indices. Where ``row`` is grouped (as candidates are), each row's few keys are sorted in their own
    line of a matrix (:func:`~socium.recsys.foryou.factors.within_rows`), far faster than one global sort."""
    keep = np.zeros(len(row), bool)
    order = within_rows(row, key) if len(row) else None
    if order is None:
        _, first = np.unique(pair_keys(row, key), return_index=True)
        keep[first] = True
        return keep
    r, k = row[order], key[order]
    keep[order[np.r_[True, (r[1:] != r[:-1]) | (k[1:] != k[:-1])]]] = True  # stable: the lowest index first
    return keep


def drop_duplicates(c: Candidates) -> np.ndarray:
    """A post reached through both sources (or twice) stays once, at its first (in-network) place."""
    return first_of_each(c.row, c.post)


def too_old(state: PlatformState, c: Candidates, max_age_s: float) -> np.ndarray:
    """Keep posts younger than ``max_age_s`` simulated seconds (X: ``MAX_POST_AGE``, 48 h)."""
    return (state.time - state.posts.col("time")[c.post]) <= max_age_s


def own_posts(state: PlatformState, c: Candidates) -> np.ndarray:
    """Keep posts not written (or reposted) by the user, nor reposts of the user's own post."""
    p = state.posts
    u = c.users[c.row]
    return (p.col("author")[c.post] != u) & (p.col("author")[p.col("root")[c.post]] != u)


def repost_dedup(state: PlatformState, c: Candidates) -> np.ndarray:
    """X's first-wins rule: per user, the first candidate of each root post stays (a repost or the original)."""
    return first_of_each(c.row, state.posts.col("root")[c.post])


def already_seen(c: Candidates, seen_keys: np.ndarray) -> np.ndarray:
    """Keep posts (and roots) not served to this user before; ``seen_keys``: sorted user<<40|post keys."""
    if not len(seen_keys):
        return np.ones(len(c), bool)
    key = pair_keys(c.users[c.row], c.post)
    i = np.minimum(np.searchsorted(seen_keys, key), len(seen_keys) - 1)
    return seen_keys[i] != key


def blocked_by(state: Any) -> dict[int, set[int]]:
    """user -> the users who blocked it, from the platform's ``blocks`` map (empty without one)."""
    rev: dict[int, set[int]] = {}
    for blocker, blocked in (getattr(state, "blocks", None) or {}).items():
        for v in blocked:
            rev.setdefault(int(v), set()).add(int(blocker))
    return rev


def may_have_feedback(
    state: Any, feedback: NegativeFeedback, users: np.ndarray, rev: dict[int, set[int]]
) -> np.ndarray:
    """Mask of ``users`` who may have blocked, muted, been blocked or marked posts not interested, so the
    per-user loops below visit only them (at 10^4 users most have none; asking each cost ~5% of a step).
    The platform's own state answers from its dicts' keys; any other (a plugin's) is asked user by user."""
    mutes = getattr(state, "mutes", None) or {}
    if isinstance(feedback, _NoFeedback):
        keys: list[int] = [*mutes, *rev]
    elif (
        feedback is state
        and isinstance(state, PlatformState)
        and type(state).blocked is PlatformState.blocked
        and type(state).not_interested is PlatformState.not_interested
    ):
        keys = [*state.blocks, *mutes, *state.dismissed, *rev]
    else:
        return np.ones(len(users), bool)
    return np.isin(users, np.fromiter(keys, np.int64, count=len(keys)))


def social_graph(state: PlatformState, c: Candidates, feedback: NegativeFeedback) -> np.ndarray:
    """Drop posts by authors the user blocked or muted or who blocked the user (X's author_blocks_viewer),
    and reposts of their posts; drop posts marked not interested."""
    keep = np.ones(len(c), bool)
    p = state.posts
    author = p.col("author")[c.post]
    root_author = p.col("author")[p.col("root")[c.post]]
    bounds = np.searchsorted(c.row, np.arange(len(c.users) + 1))
    rev = blocked_by(state)
    ask = np.flatnonzero(may_have_feedback(state, feedback, c.users, rev))
    for r, u in zip(ask.tolist(), c.users[ask].tolist()):
        bad = set(feedback.blocked(u)) | set(state.mutes.get(u, ())) | rev.get(u, set())
        marked = feedback.not_interested(u)
        if not bad and not marked:
            continue
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        if bad:
            b = np.fromiter(bad, np.int64, count=len(bad))
            keep[lo:hi] &= ~np.isin(author[lo:hi], b) & ~np.isin(root_author[lo:hi], b)
        if marked:
            m = np.fromiter(marked, np.int64, count=len(marked))
            keep[lo:hi] &= ~np.isin(c.post[lo:hi], m) & ~np.isin(p.col("root")[c.post[lo:hi]], m)
    return keep


def is_repost(state: PlatformState, c: Candidates) -> np.ndarray:
    return state.posts.col("kind")[c.post] == REPOST
