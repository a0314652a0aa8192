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

from socium.recsys.candidates import TIMELINE_KINDS, followee_pairs, in_network_flat, window_posts

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
        if not len(b):
            return a
        n_rows = len(a.users)
        na, nb = np.bincount(a.row, minlength=n_rows), np.bincount(b.row, minlength=n_rows)
        start = np.cumsum(na + nb) - (na + nb)  # each row's first slot: a's entries, then b's
        pos_a = start[a.row] + np.arange(len(a)) - (np.cumsum(na) - na)[a.row]
        pos_b = start[b.row] + na[b.row] + np.arange(len(b)) - (np.cumsum(nb) - nb)[b.row]
        row = np.empty(len(a) + len(b), np.int64)
        post = np.empty(len(row), np.int64)
        net = np.empty(len(row), bool)
        for pos, x in ((pos_a, a), (pos_b, b)):  # a merge by counts: what a stable sort by row gives
            row[pos], post[pos], net[pos] = x.row, x.post, x.in_network
        return Candidates(a.users, row, post, net)


def in_network_source(
    state: PlatformState,
    users: np.ndarray,
    step: int,
    window_steps: int,
    quota: int,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> Candidates:
    """Each user's ``quota`` newest followee posts (muted followees already dropped by ``followee_pairs``;
    ``pairs``: its result for ``users`` when the caller already has it)."""
    owner, fol = followee_pairs(state, users) if pairs is None else pairs
    tl = window_posts(state, step, window_steps, TIMELINE_KINDS)
    post, counts = in_network_flat(state, owner, fol, tl, tl.astype(np.float64), quota, len(users))
    row = np.repeat(np.arange(len(users), dtype=np.int64), counts)
    return Candidates(users, row, post.astype(np.int64), np.ones(len(post), bool))


def out_of_network_source(
    retrieval: XRecommender,
    state: PlatformState,
    users: np.ndarray,
    step: int,
    quota: int,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> Candidates:
    """Each user's ``quota`` nearest non-followee posts by embedding similarity (see module doc);
    ``pairs``: ``followee_pairs(state, users)`` when the caller already has them."""
    if quota <= 0:
        return Candidates.from_lists(users, [np.zeros(0, np.int64) for _ in range(len(users))], False)
    lists = retrieval.out_of_network(state, users, step, quota, pairs)
    return Candidates.from_lists(users, [x[:quota] for x in lists], False)
