"""The non-personalised feeds: uniform random, Reddit hot, and global (most engaging platform-wide).

Why they exist: each is a null model or a reference condition. ``random`` removes the recommender's
influence, ``global`` is what an omniscient observer would call "what everyone is talking about"
(the same ranking the ``trend`` action reads), and ``reddit_hot`` is the Reddit front page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from socium.recsys.base import Feed, RecsysContext
from socium.recsys.candidates import RANKED_KINDS, engagement, hot_score, rank_desc, shared_feeds, window_posts

if TYPE_CHECKING:
    from socium.platform.state import PlatformState


class _Stateless:
    def __init__(self, window_steps: int = 48, context: RecsysContext | None = None) -> None:
        if window_steps < 1:
            raise ValueError(f"window_steps must be >= 1, got {window_steps}")
        self.window_steps = window_steps

    def observe(self, state: PlatformState, new_posts: range, step: int) -> None:
        return None


class RandomRecommender(_Stateless):
    """``k`` distinct posts drawn uniformly from the window, never the user's own or a muted author's.

    Draws come only from the per-step ``rng`` the simulator passes, in the order of ``users``.
    """

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        cand = window_posts(state, step, self.window_steps, RANKED_KINDS)
        n = len(cand)
        if n == 0:
            return [Feed((), ()) for _ in range(len(users))]
        authors = state.posts.col("author")[cand]
        draws = rng.integers(0, n, size=(len(users), min(n, k + 8)))
        out = []
        for i, u in enumerate(np.asarray(users).tolist()):
            muted = state.mutes.get(u) or ()
            seen: set[int] = set()
            sel: list[int] = []
            for j in draws[i].tolist():  # first distinct draws = a uniform sample without replacement
                if j in seen:
                    continue
                seen.add(j)
                a = int(authors[j])
                if a != u and a not in muted:
                    sel.append(j)
                    if len(sel) == k:
                        break
            if len(sel) < k:  # unlucky duplicates or many excluded authors: draw from what is left
                ok = np.flatnonzero(authors != u)
                if muted:
                    ok = ok[~np.isin(authors[ok], np.fromiter(muted, np.int64, count=len(muted)))]
                rest = np.setdiff1d(ok, np.fromiter(seen, np.int64, count=len(seen)))
                if len(rest):
                    sel.extend(rng.choice(rest, size=min(k - len(sel), len(rest)), replace=False).tolist())
            out.append(Feed(tuple(int(cand[j]) for j in sel), ("random",) * len(sel)))
        return out


class GlobalRecommender(_Stateless):
    """The most engaging posts of the window (likes + reposts + comments - dislikes), newest first on
    ties, identical for every user except that muted authors are skipped."""

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        cand = window_posts(state, step, self.window_steps, RANKED_KINDS)
        return shared_feeds(state, rank_desc(cand, engagement(state, cand)), np.asarray(users), k, "global")


class RedditHotRecommender(_Stateless):
    """Reddit's hot ranking over the window, the same front page for everyone, mutes respected.

    ``s`` is up-votes minus down-votes (likes - dislikes) and ``t`` the post's simulated time in
    seconds; ``t0`` (default 0, the start of the run) only shifts every score equally.
    """

    def __init__(self, window_steps: int = 48, context: RecsysContext | None = None, t0: float = 0.0) -> None:
        super().__init__(window_steps, context)
        self.t0 = float(t0)

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        cand = window_posts(state, step, self.window_steps, RANKED_KINDS)
        p = state.posts
        s = p.col("likes")[cand] - p.col("dislikes")[cand]
        hot = hot_score(s, p.col("time")[cand], self.t0)
        return shared_feeds(state, rank_desc(cand, hot), np.asarray(users), k, "global")
