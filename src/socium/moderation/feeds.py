"""Moderation in every feed: removed and suspended content dropped, down-ranked posts moved down.

Why a wrapper and not a change in each recommender: a down-ranking factor must be honoured by every
recommender, including a user's plugin that knows nothing about moderation. The wrapper asks the
recommender for more posts than the feed holds, drops hidden ones (removed, sharing a removed post,
or by a suspended author), rescales each post's rank score ``1 / (1 + rank)`` by its factor (the
smaller of its own and its root's) and keeps the best ``k``. With factor 0.5 a post at the top is
worth what rank 2 was; a post down-ranked below the cut leaves the feed, and a factor of 0 leaves every
feed, however few posts compete with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from socium.recsys.base import Feed, Recommender
from socium.recsys.refresh import RefreshMix

if TYPE_CHECKING:
    from socium.platform.state import PlatformState


class ModeratedRecommender:
    """Wraps any :class:`Recommender`; with no marks on the platform it passes feeds through unchanged."""

    def __init__(self, base: Recommender, overfetch: int = 2) -> None:
        self.base = base
        self.overfetch = max(1, int(overfetch))

    def observe(self, state: PlatformState, new_posts: range, step: int) -> None:
        self.base.observe(state, new_posts, step)

    def factor(self, state: PlatformState, post: int) -> float:
        f = state.mod.factor
        if not f:
            return 1.0
        return min(f.get(post, 1.0), f.get(state.posts.get("root", post), 1.0))

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        if not state.mod.any_rank_marks():
            return self.base.feeds(state, users, k, step, rng)
        if isinstance(self.base, RefreshMix):  # OASIS refresh mix: its two counts fix the length, not k
            k = self.base.following_k + self.base.recommended_k
        got = self.base.feeds(state, users, k * self.overfetch + len(state.mod.removed) + 4, step, rng)
        out = []
        for f in got:
            why = f.explain if f.explain is not None else (None,) * len(f.post_ids)
            kept = [(p, s, w) for p, s, w in zip(f.post_ids, f.sources, why) if not state.hidden(p)]
            score = [self.factor(state, p) / (1.0 + r) for r, (p, _, _) in enumerate(kept)]
            # factor 0 means "never shown" (moderation.downrank's contract), even in a feed with room to spare
            order = [i for i in sorted(range(len(kept)), key=lambda i: (-score[i], i)) if score[i] > 0][:k]
            explain = tuple(kept[i][2] or () for i in order) if f.explain is not None else None  # the recommender's why
            out.append(Feed(tuple(kept[i][0] for i in order), tuple(kept[i][1] for i in order), explain))
        return out
