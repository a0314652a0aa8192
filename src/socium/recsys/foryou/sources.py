"""The two candidate sources, as one flat table of (user row, post) pairs.

In-network (X's Thunder source, ``ThunderMaxResults``): the newest window posts (originals, reposts,
quotes) by accounts the user follows. Out-of-network (X's Phoenix retrieval, ``PhoenixMaxResults``):
the window's originals and quotes nearest the user's interest vector, by embedding similarity,
through the X recommender's retrieval (post vectors embedded once, an IVF index past 20,000 posts,
see ``recsys/x.py`` and ``recsys/ann.py``), never the user's own, followees' or muted authors' posts.

Why flat arrays: every later stage (filters, features, value model, factors) is one vectorised
operation over all users' candidates at once; a per-user Python loop would cost more than ranking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from socium.recsys.candidates import TIMELINE_KINDS, followee_pairs, in_network, window_posts

if TYPE_CHECKING:
    from socium.platform.state import PlatformState
    from socium.recsys.x import XRecommender


@dataclass
class Candidates:
    """Parallel arrays, one entry per (user, candidate post), grouped by ``row`` (position in ``users``)."""

    users: np.ndarray  # int64, the users asked for, in the caller's order
    row: np.ndarray  # int64 index into users
    post: np.ndarray  # int64 post id
    in_network: np.ndarray  # bool: came from the in-network source

    def __len__(self) -> int:
        return len(self.post)

    def take(self, keep: np.ndarray | slice) -> Candidates:
        """The candidates where ``keep`` is true (a mask or indices), order kept."""
        return Candidates(self.users, self.row[keep], self.post[keep], self.in_network[keep])

    @staticmethod
    def from_lists(users: np.ndarray, lists: list[np.ndarray], in_net: bool) -> Candidates:
        lens = np.fromiter((len(x) for x in lists), np.int64, count=len(lists))
        post = np.concatenate(lists).astype(np.int64) if len(lists) else np.zeros(0, np.int64)
        return Candidates(
            users, np.repeat(np.arange(len(lists), dtype=np.int64), lens), post, np.full(len(post), in_net)
        )

    @staticmethod
    def concat(a: Candidates, b: Candidates) -> Candidates:
        """Both sources' candidates, regrouped by user row (in-network first within a user)."""
        row = np.concatenate([a.row, b.row])
        order = np.argsort(row, kind="stable")
        return Candidates(
            a.users,
            row[order],
            np.concatenate([a.post, b.post])[order],
            np.concatenate([a.in_network, b.in_network])[order],
        )


def in_network_source(state: PlatformState, users: np.ndarray, step: int, window_steps: int, quota: int) -> Candidates:
    """Each user's ``quota`` newest followee posts (muted followees already dropped by ``followee_pairs``)."""
    owner, fol = followee_pairs(state, users)
    tl = window_posts(state, step, window_steps, TIMELINE_KINDS)
    lists = in_network(state, owner, fol, tl, tl.astype(np.float64), quota, len(users))
    return Candidates.from_lists(users, lists, True)


def out_of_network_source(
    retrieval: XRecommender, state: PlatformState, users: np.ndarray, step: int, quota: int
) -> Candidates:
    """Each user's ``quota`` nearest non-followee posts by embedding similarity (see module doc)."""
    if quota <= 0:
        return Candidates.from_lists(users, [np.zeros(0, np.int64) for _ in range(len(users))], False)
    lists = retrieval.out_of_network(state, users, step, quota)
    return Candidates.from_lists(users, [x[:quota] for x in lists], False)
