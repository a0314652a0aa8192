"""The X-like feed: followees' recent posts mixed with out-of-network posts chosen by embedding similarity.

In-network: the window's originals, reposts and quotes by accounts the user follows, ranked by
``(1 + log1p(engagement)) * 0.5 ** (age / half_life)`` (a repost counts its root's engagement).

Out-of-network: originals and quotes by accounts the user neither follows nor mutes (nor the user),
ranked by ``cos(u, p) * 0.5 ** (age / half_life) + popularity_weight * log1p(engagement)`` where
``u`` is the user's interest vector. Decay multiplies similarity rather than adding to it, so a
fresh but irrelevant post does not outrank a relevant one from a few hours ago; a user with no
interest signal yet gets the newest (or, with a popularity weight, the most engaging) posts. The
score is an inner product of ``u`` with a per-step rescaling of the stored post vectors plus a
per-post bias, so a batch of users is ranked by one chunked matrix product (or an IVF search, see
``ann.py``); nothing is ever re-embedded.

The feed interleaves the two sources (in-network first) in the configured mix, e.g. 3 + 2 as in
OASIS; when one source runs short the other fills the feed. Interest vectors start from the
profile (bio and interests) and move toward each post the user writes, reposts or likes.

No random numbers are used. State is rebuilt purely from ``observe`` calls, so a resumed run (which
replays them) ends up with the same vectors and index. One caveat with sentence-transformers models:
a replay may embed a step's seed posts in a different batch than the original run did, which can
change the last float bit of their vectors (the hashing embedder is exact).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from socium.errors import ConfigError
from socium.recsys.ann import assign, exact_top, ivf_top, train_centroids
from socium.recsys.base import Feed, RecsysContext
from socium.recsys.candidates import (
    RANKED_KINDS,
    TIMELINE_KINDS,
    decay,
    engagement,
    followee_pairs,
    in_network,
    window_posts,
)
from socium.recsys.embeddings import Embedder, make_embedder
from socium.recsys.vectors import InterestTable, PostVectors

if TYPE_CHECKING:
    from socium.platform.state import PlatformState

_SLACK = 16  # extra out-of-network candidates fetched so that excluded authors rarely leave a feed short


class XRecommender:
    """In-network + out-of-network mix with incrementally learned interest vectors (see module doc)."""

    def __init__(
        self,
        window_steps: int = 48,
        context: RecsysContext | None = None,
        *,
        embedder: str | Embedder = "minilm",
        in_network: int = 3,
        out_of_network: int = 2,
        recency_half_life_steps: float = 12.0,
        popularity_weight: float = 0.0,
        interest_lr: float = 0.2,
        ann: str = "auto",
        ivf_nprobe: int = 8,
        ivf_min_posts: int = 20_000,
        exact_budget: int = 20_000_000,
        hashing_dim: int = 384,
        embed_batch_size: int = 256,
        embed_device: str | None = None,
        profile_texts: Sequence[str] | None = None,
    ) -> None:
        if in_network < 0 or out_of_network < 0 or in_network + out_of_network == 0:
            raise ConfigError(
                f"recsys.params: in_network={in_network}, out_of_network={out_of_network}: need >= 0 and a positive sum"
            )
        if ann not in ("auto", "exact", "ivf"):
            raise ConfigError(f"recsys.params.ann: {ann!r} is not one of 'auto', 'exact', 'ivf'")
        if recency_half_life_steps < 0 or popularity_weight < 0 or ivf_nprobe < 1 or window_steps < 1:
            raise ConfigError(
                "recsys.params: recency_half_life_steps, popularity_weight must be >= 0; ivf_nprobe, window_steps >= 1"
            )
        self.window_steps = window_steps
        self.mix = (int(in_network), int(out_of_network))
        self.half_life = float(recency_half_life_steps)
        self.popularity_weight = float(popularity_weight)
        self.ann, self.nprobe = ann, int(ivf_nprobe)
        self.ivf_min_posts, self.exact_budget = int(ivf_min_posts), int(exact_budget)
        self.embedder = make_embedder(embedder, dim=hashing_dim, device=embed_device, batch_size=embed_batch_size)
        texts = profile_texts if profile_texts is not None else context.profile_texts() if context else None
        self.posts = PostVectors(self.embedder)
        profile = lambda u: texts[u] if texts is not None and u < len(texts) else ""
        self.interests = InterestTable(self.embedder, profile, interest_lr)
        self.centroids: np.ndarray | None = None
        self.clusters = np.zeros(0, dtype=np.int32)  # cluster of each embedded post (when an index exists)
        self._trained_at = self._ranked_at_training = self._n_ranked_seen = self._seen_upto = 0
        self.last_used_ivf = False

    # ---- learning from events -----------------------------------------------------------------
    def _catch_up(self, state: PlatformState) -> None:
        """Embed every post not embedded yet (a step's seed posts appear before ``observe`` sees them)."""
        p = state.posts
        done = self.posts.catch_up(p.col("kind"), p.col("root"), p.text)
        if self.centroids is not None and len(done):
            self.clusters = np.concatenate(
                [self.clusters, assign(self.posts.m.data[done.start : done.stop], self.centroids)]
            )

    def observe(self, state: PlatformState, new_posts: range, step: int) -> None:
        self._catch_up(state)
        ids = np.arange(new_posts.start, new_posts.stop, dtype=np.int64)
        likes = getattr(state.events, "likes", [])
        lk = np.asarray(likes, dtype=np.int64).reshape(-1, 2)
        users = np.concatenate([state.posts.col("author")[ids], lk[:, 0]])
        posts = np.concatenate([ids, lk[:, 1]])
        self.interests.update(users, self.posts.m.data[posts])
        self._maybe_train(state, step)

    def _maybe_train(self, state: PlatformState, step: int) -> None:
        """(Re)build the IVF index over the window when it has doubled or turned over since the last build.

        Only window posts can be candidates, so only they are clustered and assigned (older posts
        keep cluster -1); the decision depends only on counts seen in ``observe``, so a replayed
        run rebuilds the same index at the same steps.
        """
        if self.ann == "exact":
            return
        kinds = state.posts.col("kind")
        self._n_ranked_seen += int(np.isin(kinds[self._seen_upto : len(self.posts)], RANKED_KINDS).sum())
        self._seen_upto = len(self.posts)
        if self.centroids is not None and self._n_ranked_seen - self._ranked_at_training < self._trained_at:
            return
        first = state.posts.first_in_step(step - self.window_steps + 1)
        ranked = first + np.flatnonzero(np.isin(kinds[first : len(self.posts)], RANKED_KINDS))
        if len(ranked) < self.ivf_min_posts:
            return
        n_clusters = int(min(4096, max(16, math.isqrt(len(ranked)))))
        data = self.posts.m.data
        self.centroids = train_centroids(data[ranked], n_clusters)
        self.clusters = np.full(len(self.posts), -1, dtype=np.int32)
        self.clusters[first:] = assign(data[first:], self.centroids)
        self._trained_at, self._ranked_at_training = len(ranked), self._n_ranked_seen

    # ---- ranking ------------------------------------------------------------------------------
    def split(self, k: int) -> tuple[int, int]:
        """In- and out-of-network slots for a feed of ``k``, in the configured proportion."""
        a, b = self.mix
        n_in = int(round(k * a / (a + b)))
        return n_in, k - n_in

    def _out_of_network(
        self, state: PlatformState, users: np.ndarray, owner: np.ndarray, fol: np.ndarray, step: int, t: int
    ) -> list[np.ndarray]:
        cand = window_posts(state, step, self.window_steps, RANKED_KINDS)
        n_u = len(users)
        if not len(cand):
            return [np.zeros(0, np.int64) for _ in range(n_u)]
        dec = decay(state, cand, step, self.half_life)
        pop = np.log1p(np.maximum(engagement(state, cand), 0.0))
        a = dec.astype(np.float32)
        b = (self.popularity_weight * pop).astype(np.float32)
        u = self.interests.vectors(users)
        data = self.posts.m.data
        big = n_u * len(cand) > self.exact_budget
        self.last_used_ivf = self.centroids is not None and (self.ann == "ivf" or (self.ann == "auto" and big))
        if self.last_used_ivf and self.centroids is not None:
            pos = ivf_top(u, data, cand, a, b, self.clusters[cand], self.centroids, t, self.nprobe)
        else:
            pos = exact_top(u, data, cand, a, b, t)
        out = self._allowed(state, users, owner, fol, cand, pos)
        # Too many of a user's best posts were excluded (or sat in unprobed clusters): rank those
        # users exactly, first as a batch with a deeper cut, then one by one over their allowed posts.
        short = np.asarray([r for r in range(n_u) if len(out[r]) < t - _SLACK], dtype=np.int64)
        if len(short) and (len(cand) > t or self.last_used_ivf):
            sel = np.isin(owner, short)
            deeper = self._allowed(
                state,
                users[short],
                np.searchsorted(short, owner[sel]),
                fol[sel],
                cand,
                exact_top(u[short], data, cand, a, b, 4 * t),
            )
            authors = state.posts.col("author")
            for j, r in enumerate(short.tolist()):
                out[r] = deeper[j]
                if len(out[r]) < t - _SLACK and len(cand) > 4 * t:
                    lo, hi = np.searchsorted(owner, [r, r + 1])
                    excl = np.concatenate(
                        [fol[lo:hi], [users[r]], np.fromiter(state.mutes.get(int(users[r]), ()), np.int64)]
                    )
                    ok = np.flatnonzero(~np.isin(authors[cand], excl))
                    best = exact_top(u[r : r + 1], data, cand[ok], a[ok], b[ok], t - _SLACK)[0]
                    out[r] = cand[ok[best[best >= 0]]]
        return out

    @staticmethod
    def _allowed(
        state: PlatformState, users: np.ndarray, owner: np.ndarray, fol: np.ndarray, cand: np.ndarray, pos: np.ndarray
    ) -> list[np.ndarray]:
        """Ranked candidate ids per user minus the user's own, its followees' and muted authors' posts."""
        n_u = len(users)
        authors = state.posts.col("author")
        pid = np.where(pos >= 0, cand[np.maximum(pos, 0)], -1)
        auth = np.where(pos >= 0, authors[np.maximum(pid, 0)], -1)
        bad = (pos < 0) | (auth == users[:, None])
        n = max(state.n_users, 1)
        fkey = np.sort(owner * n + fol)
        if len(fkey):
            key = np.arange(n_u)[:, None] * n + auth
            i = np.minimum(np.searchsorted(fkey, key), len(fkey) - 1)
            bad |= fkey[i] == key
        for r, u_id in enumerate(users.tolist()):
            muted = state.mutes.get(u_id)
            if muted:
                bad[r] |= np.isin(auth[r], np.fromiter(muted, np.int64, count=len(muted)))
        return [pid[r][~bad[r]] for r in range(n_u)]

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        users = np.asarray(users, dtype=np.int64)
        self._catch_up(state)
        owner, fol = followee_pairs(state, users)
        tl = window_posts(state, step, self.window_steps, TIMELINE_KINDS)
        in_score = (1.0 + np.log1p(np.maximum(engagement(state, tl, via_root=True), 0.0))) * decay(
            state, tl, step, self.half_life
        )
        ins = in_network(state, owner, fol, tl, in_score, k, len(users))
        outs = self._out_of_network(state, users, owner, fol, step, k + _SLACK)
        n_in, n_out = self.split(k)
        roots = state.posts.col("root")
        in_all = np.concatenate(ins) if ins else np.zeros(0, np.int64)
        lens = np.fromiter((len(x) for x in ins), np.int64, count=len(ins))
        has_repost = set(np.repeat(np.arange(len(ins)), lens)[roots[in_all] != in_all].tolist())
        feeds = []
        for r, (i_list, o_list) in enumerate(zip(ins, outs)):
            if r in has_repost:  # a followee's repost already shows its root: don't show it twice
                shown = set(roots[i_list].tolist())
                o_list = np.asarray([p for p in o_list.tolist() if p not in shown], dtype=np.int64)
            take_out = min(len(o_list), k - min(len(i_list), n_in))
            take_in = min(len(i_list), k - take_out)
            take_out = min(len(o_list), k - take_in)
            post_ids: list[int] = []
            sources: list[str] = []
            for j in range(max(take_in, take_out)):
                if j < take_in:
                    post_ids.append(int(i_list[j]))
                    sources.append("in_network")
                if j < take_out:
                    post_ids.append(int(o_list[j]))
                    sources.append("out_of_network")
            feeds.append(Feed(tuple(post_ids), tuple(sources)))
        return feeds

    def out_of_network(
        self,
        state: PlatformState,
        users: np.ndarray,
        step: int,
        t: int,
        pairs: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        """Each user's best ``t`` out-of-network post ids (about ``t - 16`` when many authors are
        excluded), by this recommender's out-of-network score: the retrieval the ``foryou`` feed reuses.
        ``pairs``: ``followee_pairs(state, users)`` when the caller already has them."""
        users = np.asarray(users, dtype=np.int64)
        self._catch_up(state)
        owner, fol = followee_pairs(state, users) if pairs is None else pairs
        return self._out_of_network(state, users, owner, fol, step, t + _SLACK)

    # ---- introspection (tests, benchmarks, notebooks) -----------------------------------------
    def interest(self, user: int) -> np.ndarray:
        """The unit-norm interest vector of one user (creates it from the profile if needed)."""
        return self.interests.vectors(np.asarray([user]))[0]

    def post_vector(self, post_id: int) -> np.ndarray:
        return self.posts.m.data[post_id].copy()
