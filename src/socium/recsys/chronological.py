"""In-network reverse-chronological feed: the newest posts of the accounts a user follows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from socium.recsys.base import Feed, RecsysContext
from socium.recsys.candidates import TIMELINE_KINDS, followee_pairs, in_network, window_posts

if TYPE_CHECKING:
    from socium.platform.state import PlatformState


class ChronologicalRecommender:
    """Newest followee posts (originals, reposts, quotes) within the window, muted authors removed.

    Stateless: everything it needs is in the platform state, so resume needs nothing replayed.
    """

    def __init__(self, window_steps: int = 48, context: RecsysContext | None = None) -> None:
        self.window_steps = window_steps

    def observe(self, state: PlatformState, new_posts: range, step: int) -> None:
        return None

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        users = np.asarray(users, dtype=np.int64)
        cand = window_posts(state, step, self.window_steps, TIMELINE_KINDS)
        owner, fol = followee_pairs(state, users)
        picked = in_network(state, owner, fol, cand, cand.astype(np.float64), k, len(users))  # newer id = newer post
        return [Feed(tuple(int(x) for x in p), ("in_network",) * len(p)) for p in picked]
