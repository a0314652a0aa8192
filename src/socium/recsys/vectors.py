"""Where embeddings live: one contiguous float32 matrix for posts, one lazily grown one for users.

Why: OASIS re-embeds every post at every step; here each post is embedded exactly once, in a batch,
when it first appears, and its row never moves, so ranking a batch of users is a matrix product
over a slice of one array. User interest rows are allocated only for users who were active, posted
or liked (10^6 users x 384 floats would be 1.5 GB if allocated up front).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from socium.platform.posts import REPOST
from socium.recsys.embeddings import Embedder


class GrowingMatrix:
    """Append-only rows in a contiguous float32 buffer that doubles when full."""

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self._buf = np.zeros((capacity, dim), dtype=np.float32)
        self.n = 0

    def append(self, rows: np.ndarray) -> int:
        """Append ``rows`` and return the index of the first one."""
        m = len(rows)
        if self.n + m > len(self._buf):
            cap = max(2 * len(self._buf), self.n + m)
            new = np.zeros((cap, self.dim), dtype=np.float32)
            new[: self.n] = self._buf[: self.n]
            self._buf = new
        self._buf[self.n : self.n + m] = rows
        first, self.n = self.n, self.n + m
        return first

    @property
    def data(self) -> np.ndarray:
        """The stored rows (a view; writes go to the buffer)."""
        return self._buf[: self.n]

    @property
    def nbytes(self) -> int:
        return int(self._buf.nbytes)


class PostVectors:
    """Row ``i`` is the embedding of post ``i``; reposts share their root's vector (no text of their own)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.m = GrowingMatrix(embedder.dim)

    def __len__(self) -> int:
        return self.m.n

    def catch_up(self, kinds: np.ndarray, roots: np.ndarray, texts: Sequence[str]) -> range:
        """Embed posts ``len(self) .. len(kinds)-1`` in one batch; returns the range embedded."""
        start, end = self.m.n, len(kinds)
        if end <= start:
            return range(start, start)
        ids = np.arange(start, end)
        kind = kinds[start:end]
        text_ids = ids[kind != REPOST]
        vecs = np.zeros((end - start, self.m.dim), dtype=np.float32)
        if len(text_ids):
            vecs[text_ids - start] = self.embedder.encode([texts[i] for i in text_ids.tolist()])
        self.m.append(vecs)
        rep = ids[kind == REPOST]
        if len(rep):  # roots are older than their reposts, so already embedded (maybe in this batch)
            self.m.data[rep] = self.m.data[roots[rep]]
        return range(start, end)


class InterestTable:
    """One interest vector per user who needed one: a profile embedding, then an exponential moving
    average of the embeddings of what the user posts and likes (normalised only when used, so a
    batch of updates is one vectorised step and replay gives the same numbers)."""

    def __init__(self, embedder: Embedder, profile_text: Callable[[int], str], lr: float = 0.2) -> None:
        if not 0.0 < lr <= 1.0:
            raise ValueError(f"interest_lr must be in (0, 1], got {lr}")
        self.embedder = embedder
        self.profile_text = profile_text
        self.lr = float(lr)
        self.m = GrowingMatrix(embedder.dim, capacity=256)
        self._row = np.full(0, -1, dtype=np.int64)

    def rows(self, users: np.ndarray) -> np.ndarray:
        """Row index of each user, creating missing rows from one batched profile embedding."""
        users = np.asarray(users, dtype=np.int64)
        if len(users) and users.max() >= len(self._row):
            grown = np.full(int(users.max()) + 1, -1, dtype=np.int64)
            grown[: len(self._row)] = self._row
            self._row = grown
        rows = self._row[users]
        missing = users[rows < 0]
        if len(missing):
            new = np.unique(missing)  # sorted: row order does not depend on the order users arrive in
            first = self.m.append(self.embedder.encode([self.profile_text(int(u)) for u in new.tolist()]))
            self._row[new] = np.arange(first, first + len(new))
            rows = self._row[users]
        return rows

    def vectors(self, users: np.ndarray) -> np.ndarray:
        """Unit-norm interest vectors (zero rows stay zero), one per user, as a new array."""
        rows = self.rows(users)  # first: it may grow the buffer
        v = self.m.data[rows]
        n = np.linalg.norm(v, axis=1, keepdims=True)
        return np.divide(v, n, out=np.zeros_like(v), where=n > 0)

    def raw(self, user: int) -> np.ndarray:
        """A copy of one user's unnormalised interest row (created from the profile if needed)."""
        row = self.rows(np.asarray([user]))[0]
        return self.m.data[row].copy()

    def update(self, users: np.ndarray, vecs: np.ndarray) -> None:
        """Apply events in order: v <- (1 - lr) v + lr e for each (user, vector) pair."""
        if not len(users):
            return
        rows = self.rows(users)
        order = np.argsort(rows, kind="stable")
        r = rows[order]
        starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
        counts = np.diff(np.r_[starts, len(r)])
        after = np.repeat(starts + counts, counts) - np.arange(len(r)) - 1  # later events of the same user
        w = (self.lr * (1.0 - self.lr) ** after).astype(np.float32)
        sums = np.add.reduceat(vecs[order] * w[:, None], starts, axis=0)
        data = self.m.data
        uniq = r[starts]
        data[uniq] = data[uniq] * ((1.0 - self.lr) ** counts).astype(np.float32)[:, None] + sums

    @property
    def n_users(self) -> int:
        return self.m.n
