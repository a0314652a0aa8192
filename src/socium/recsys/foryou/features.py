"""What the value model reads about each (user, candidate), and the per-user history it needs.

:class:`History` is learnt only in ``observe`` (what agents did, once they did it) and ``served``
(the exposures the simulator recorded), so a resumed run that replays both rebuilds it exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from socium.platform.posts import COMMENT, QUOTE, REPOST
from socium.recsys.candidates import engagement
from socium.recsys.foryou.filters import pair_keys
from socium.recsys.foryou.sources import Candidates
from socium.recsys.foryou.value_model import FEATURES

if TYPE_CHECKING:
    from socium.platform.state import PlatformState

_CHUNK = 1 << 9  # candidate rows per gather (512 x 384 float32 = 768 KiB: stays in a core's L2 cache)


class History:
    """Engagement counts (user -> author, user, author) and what each user has been served."""

    def __init__(self) -> None:
        self.pair_keys = np.zeros(0, np.int64)  # sorted user<<40|author keys of past engagements
        self.pair_counts = np.zeros(0, np.int64)
        self.activity = np.zeros(0, np.int64)  # per user: engagements made
        self.seen = np.zeros(0, np.int64)  # sorted user<<40|post keys of served posts still in the window
        self.impressions = np.zeros(0, np.int64)  # per post: times served to anyone

    def observe(self, state: PlatformState, new_posts: range) -> None:
        """Count the step's likes and the reposts, quotes and comments written in it."""
        p = state.posts
        likes = np.asarray(getattr(state.events, "likes", []), np.int64).reshape(-1, 2)
        ids = np.arange(new_posts.start, new_posts.stop, dtype=np.int64)
        kind = p.col("kind")[ids]
        shares = ids[np.isin(kind, (REPOST, QUOTE, COMMENT))]
        users = np.concatenate([likes[:, 0], p.col("author")[shares]])
        targets = np.concatenate([likes[:, 1], p.col("parent")[shares]])
        if not len(users):
            return
        authors = p.col("author")[np.maximum(targets, 0)]
        keep = (targets >= 0) & (authors != users)
        users, authors = users[keep], authors[keep]
        if not len(users):
            return
        key, cnt = np.unique(pair_keys(users, authors), return_counts=True)
        allk = np.concatenate([self.pair_keys, key])
        allc = np.concatenate([self.pair_counts, cnt])
        self.pair_keys, inv = np.unique(allk, return_inverse=True)
        self.pair_counts = np.bincount(inv, weights=allc).astype(np.int64)
        top = int(users.max()) + 1
        if top > len(self.activity):
            self.activity = np.concatenate([self.activity, np.zeros(top - len(self.activity), np.int64)])
        np.add.at(self.activity, users, 1)

    def served(self, users: np.ndarray, posts: np.ndarray, n_posts: int, first_window_post: int) -> None:
        """Record a step's exposures; forget served posts that have left the window."""
        users = np.asarray(users, np.int64)
        posts = np.asarray(posts, np.int64)
        if n_posts > len(self.impressions):
            self.impressions = np.concatenate([self.impressions, np.zeros(n_posts - len(self.impressions), np.int64)])
        np.add.at(self.impressions, posts, 1)
        old = self.seen[(self.seen & ((np.int64(1) << np.int64(40)) - 1)) >= first_window_post]
        self.seen = np.union1d(old, pair_keys(users, posts))

    def affinity(self, users: np.ndarray, authors: np.ndarray) -> np.ndarray:
        if not len(self.pair_keys):
            return np.zeros(len(users), np.int64)
        key = pair_keys(users, authors)
        i = np.minimum(np.searchsorted(self.pair_keys, key), len(self.pair_keys) - 1)
        return np.where(self.pair_keys[i] == key, self.pair_counts[i], 0)

    def user_activity(self, users: np.ndarray) -> np.ndarray:
        a = self.activity
        return np.where(users < len(a), a[np.minimum(users, max(len(a) - 1, 0))], 0) if len(a) else np.zeros(len(users))

    def post_impressions(self, posts: np.ndarray) -> np.ndarray:
        imp = self.impressions
        if not len(imp):
            return np.zeros(len(posts), np.int64)
        return np.where(posts < len(imp), imp[np.minimum(posts, len(imp) - 1)], 0)


def follow_keys(state: PlatformState) -> np.ndarray:
    """Sorted src * n + dst keys of every follow edge now (for mutual-follow lookups)."""
    src, dst = state.follows.edges()
    return src.astype(np.int64) * max(state.n_users, 1) + dst.astype(np.int64)


def is_edge(keys: np.ndarray, n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Whether each (src, dst) is among the sorted edge ``keys``. The queries are looked up in sorted
    order: binary searches for keys in random order (the mutual-follow check asks author -> user)
    miss the cache at nearly every level, and sorting them first costs less (0.04 -> 0.01 s for
    70k queries over 10^4 users' follows)."""
    if not len(keys) or not len(src):
        return np.zeros(len(src), bool)
    key = src.astype(np.int64) * max(n, 1) + dst.astype(np.int64)
    order = np.argsort(key)
    ks = key[order]
    out = np.empty(len(key), bool)
    out[order] = keys[np.minimum(np.searchsorted(keys, ks), len(keys) - 1)] == ks
    return out


def author_engagement(state: PlatformState) -> np.ndarray:
    """Per user: engagement (likes + reposts + comments - dislikes) its posts have received so far."""
    p = state.posts
    n = len(p)
    ids = np.arange(n)
    return np.bincount(p.col("author")[:n], weights=engagement(state, ids), minlength=state.n_users)


def similarity(interest: np.ndarray, row: np.ndarray, post_vecs: np.ndarray, post: np.ndarray) -> np.ndarray:
    """Cosine of each candidate's post vector with its user's interest vector.

    Candidates are grouped by user (``row`` sorted). Users with the same number of candidates go
    together as one (users, candidates, dims) block against their own interest vectors, so an
    interest vector is read once per user, not gathered once per candidate (that gather cost as much
    as the posts' one), and there is one ``einsum`` per block, not per user. Post rows are gathered in
    bounded chunks. The block ``einsum`` runs the same float32 kernel as one over gathered pairs
    (``'nd,nd->n'``): the same bits, which the tests check.
    """
    out = np.empty(len(row), np.float64)
    if not len(row):
        return out
    counts = np.bincount(row)
    starts = np.cumsum(counts) - counts
    dim = post_vecs.shape[1]
    buf = np.empty((max(_CHUNK, int(counts.max())), dim), post_vecs.dtype)  # reused by every gather
    for cnt in np.unique(counts[counts > 0]).tolist():
        us = np.flatnonzero(counts == cnt)
        step = max(1, _CHUNK // cnt)
        for lo in range(0, len(us), step):
            u = us[lo : lo + step]
            idx = starts[u][:, None] + np.arange(cnt)  # (users, cnt) candidate positions
            # np.take into the one buffer (mode 'clip': ids are valid; 'raise' buffers the copy), not
            # post_vecs[...]: no fresh array to fault in per gather
            vecs = np.take(post_vecs, post[idx.ravel()], axis=0, out=buf[: idx.size], mode="clip")
            out[idx] = np.einsum("uwd,ud->uw", vecs.reshape(len(u), cnt, dim), interest[u], optimize=False)
    return out


@dataclass(frozen=True)
class StepFacts:
    """What the value model reads of each window post and author, computed once per step.

    Why: every chunk of users gathers one column per feature from here instead of re-reading five post
    columns per candidate row (a post is a candidate of many users). The operations are elementwise and
    the same as on the candidate rows, so the features are the same to the bit.
    """

    follows: np.ndarray  # sorted follow-edge keys (follow_keys)
    first: int  # post id of row 0 of the per-post columns
    author: np.ndarray  # per post
    repost: np.ndarray  # per post: a repost (bool)
    post_engagement: np.ndarray  # per post: log1p(max(engagement of its root, 0))
    author_engagement: np.ndarray  # per post: log1p(max(engagement its author's posts received, 0))
    age_hours: np.ndarray  # per post: simulated hours since it appeared

    @staticmethod
    def of(state: PlatformState, first: int) -> StepFacts:
        """The facts of posts ``first ..`` (the step's candidates are all among them) as of now."""
        p = state.posts
        n = len(p)
        first = max(0, min(int(first), n))
        ids = np.arange(first, n)
        author = p.col("author")[first:n]
        per_author = np.log1p(np.maximum(author_engagement(state), 0.0))
        return StepFacts(
            follows=follow_keys(state),
            first=first,
            author=author,
            repost=p.col("kind")[first:n] == REPOST,
            post_engagement=np.log1p(np.maximum(engagement(state, ids, via_root=True), 0.0)),
            author_engagement=per_author[author],
            age_hours=np.maximum(state.time - p.col("time")[first:n], 0.0) / 3600.0,
        )


def feature_matrix(
    state: PlatformState, c: Candidates, history: History, facts: StepFacts, sim: np.ndarray
) -> np.ndarray:
    """(n, len(FEATURES)) rows in FEATURES order for candidates ``c`` (see value_model.FEATURES)."""
    at = c.post - facts.first
    author = facts.author[at]
    users = c.users[c.row]
    n = len(c)
    x = np.empty((n, len(FEATURES)), np.float64)
    x[:, 0] = 1.0
    fol = c.in_network.copy()  # in-network candidates are followees' posts; look up only the others
    out = ~fol
    fol[out] = is_edge(facts.follows, state.n_users, users[out], author[out])
    x[:, 1] = fol
    mutual = np.zeros(n, bool)
    mutual[fol] = is_edge(facts.follows, state.n_users, author[fol], users[fol])
    x[:, 2] = mutual
    x[:, 3] = sim
    x[:, 4] = facts.post_engagement[at]
    x[:, 5] = facts.author_engagement[at]
    x[:, 6] = facts.age_hours[at]
    x[:, 7] = np.log1p(history.affinity(users, author))
    x[:, 8] = np.log1p(history.user_activity(users))
    return x
