"""In-network reverse-chronological feed: the newest posts of the accounts a user follows."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

import numpy as np

from socium.recsys.base import Feed

if TYPE_CHECKING:
    from socium.platform.state import PlatformState


class ChronologicalRecommender:
    """Newest followee posts within the window, muted authors removed, newest first."""

    def __init__(self, window_steps: int = 48, sim: object = None, **_: object) -> None:
        self.window_steps = window_steps

    def observe(self, state: "PlatformState", new_posts: range, step: int) -> None:
        return None

    def feeds(self, state: "PlatformState", users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        first = state.posts.first_in_step(step - self.window_steps + 1)
        out = []
        for u in users.tolist():
            muted = state.mutes.get(u)
            cands: list[int] = []
            for a in state.follows.followees(u).tolist():
                if muted and a in muted:
                    continue
                recent = state.by_author.get(a)
                if recent:
                    cands.extend(p for p in recent[-k:] if p >= first)
            top = heapq.nlargest(k, cands)  # post ids grow with time, so larger is newer
            out.append(Feed(tuple(top), ("in_network",) * len(top)))
        return out
