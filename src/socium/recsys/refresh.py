"""OASIS's refresh: a fixed number of followees' posts plus a fixed number of recommended ones.

Why a wrapper: OASIS fixes per refresh how many posts come from accounts one follows
(``following_post_count``) and how many from the recommender (``refresh_rec_post_count``), and with
probability ``rec_prob`` the recommended ones are personalised, otherwise random. Any recommender
(``recsys.kind``, built-in or a user's class) can be the personalised one here; the followees' part
is the reverse-chronological in-network feed (OASIS ranks it by likes; socium's timeline is by
recency). The recommended part never repeats a post already in the followees' part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from socium.recsys.base import Feed, Recommender
from socium.recsys.chronological import ChronologicalRecommender
from socium.recsys.simple import RandomRecommender

if TYPE_CHECKING:
    from socium.platform.state import PlatformState


class RefreshMix:
    """``following_k`` in-network posts, then ``recommended_k`` from ``base`` (or random, per agent)."""

    def __init__(
        self, base: Recommender, window_steps: int, following_k: int, recommended_k: int, rec_probability: float = 1.0
    ) -> None:
        self.base = base
        self.timeline = ChronologicalRecommender(window_steps)
        self.random = RandomRecommender(window_steps)
        self.following_k, self.recommended_k, self.rec_probability = following_k, recommended_k, rec_probability

    def observe(self, state: PlatformState, new_posts: range, step: int) -> None:
        self.base.observe(state, new_posts, step)

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        """``k`` is ignored: the two counts fix the feed's length (at most their sum)."""
        users = np.asarray(users, dtype=np.int64)
        fk, rk = self.following_k, self.recommended_k
        own = self.timeline.feeds(state, users, fk, step, rng) if fk else [Feed((), ())] * len(users)
        recs: list[Feed] = [Feed((), ())] * len(users)
        if rk:
            coin = rng.spawn(1)[0]  # a child stream: the base recommender still gets the draws it always got
            personal = (
                coin.random(len(users)) < self.rec_probability
                if self.rec_probability < 1
                else np.ones(len(users), bool)
            )
            for mask, rec in ((personal, self.base), (~personal, self.random)):
                idx = np.flatnonzero(mask)
                if len(idx):
                    for i, f in zip(idx.tolist(), rec.feeds(state, users[idx], rk + fk, step, rng)):
                        recs[i] = f
        out = []
        for f, r in zip(own, recs):
            seen = set(f.post_ids)
            extra = [(p, s) for p, s in zip(r.post_ids, r.sources) if p not in seen][:rk]
            out.append(Feed(f.post_ids + tuple(p for p, _ in extra), f.sources + tuple(s for _, s in extra)))
        return out
