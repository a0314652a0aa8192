"""foryou's feeds pinned to a digest (issue 39's speed-up must not change a single exposure).

A seeded world of 300 agents with follows, likes, reposts, blocks, mutes and posts marked not
interested; three steps of feeds (each step's exposures served back, so the already-seen filter and
impressions count), for each re-ranker. The digest covers every feed's post ids, order, sources and
explanation rows (scores to the last bit, via ``repr`` of the floats). A change in any of them is a
change in what agents see, so it must be a deliberate one: update the digest and say why.
"""

import hashlib

import numpy as np
import pytest

from socium.core import actions as A
from socium.platform.graph import FollowIndex
from socium.platform.posts import ORIGINAL, REPOST
from socium.platform.state import PlatformState
from socium.recsys.foryou import ForYouRecommender

WORDS = "match goal league vote city recipe garlic sauce rain storm film album chess code rust piano".split()


def seeded_world(n_users: int = 300, n_posts: int = 3000, seed: int = 7) -> tuple[PlatformState, list[str]]:
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(n_users), 8)
    dst = rng.integers(0, n_users, len(src))
    st = PlatformState(n_users, FollowIndex.from_edges(src, dst, n_users))
    topic = rng.integers(0, len(WORDS), n_users)
    steps = np.sort(rng.integers(0, 48, n_posts))
    authors = rng.integers(0, n_users, n_posts)
    p = st.posts
    for i in range(n_posts):
        s = int(steps[i])
        if i > 10 and rng.random() < 0.15:  # a repost of an earlier post
            parent = int(rng.integers(0, i))
            p.add(int(authors[i]), s, s * 3600.0, REPOST, parent, int(p.col("root")[parent]), "")
            continue
        t = WORDS[topic[authors[i]]] if rng.random() < 0.8 else WORDS[rng.integers(0, len(WORDS))]
        text = " ".join([t, *rng.choice(WORDS, 4).tolist(), t])
        p.add(int(authors[i]), s, s * 3600.0, ORIGINAL, -1, -1, text)
    p._cols["likes"][:n_posts] = rng.poisson(1.0, n_posts)
    st.begin_step(47, 47 * 3600.0)
    for u in range(0, n_users, 7):  # negative feedback through the platform's own actions
        assert st.apply(u, A.Block(user_id=int((u * 13 + 1) % n_users))).ok
        assert st.apply(u, A.NotInterested(post_id=int(rng.integers(0, n_posts)))).ok
    for u in range(3, n_users, 11):
        st.mutes.setdefault(u, set()).add(int((u * 5 + 2) % n_users))
    profiles = [" ".join([WORDS[t], WORDS[(t + 1) % len(WORDS)]]) for t in topic]
    return st, profiles


def feeds_digest(rerank: str, n_users: int = 300, n_posts: int = 3000, steps: int = 3, k: int = 5) -> str:
    st, profiles = seeded_world(n_users, n_posts)
    rec = ForYouRecommender(48, embedder="hashing", profile_texts=profiles, rerank=rerank)
    rec.observe(st, range(0, len(st.posts)), 47)
    h = hashlib.sha256()
    rng = np.random.default_rng(0)
    users = np.arange(n_users)
    for s in range(steps):
        ask = users[(users + s) % 3 != 0]  # not everyone is active every step
        feeds = rec.feeds(st, ask, k, 47, rng)
        for u, f in zip(ask.tolist(), feeds):
            h.update(repr((u, f.post_ids, f.sources, f.explain)).encode())
        shown_u = np.repeat(ask, [len(f.post_ids) for f in feeds])
        shown_p = np.asarray([p for f in feeds for p in f.post_ids], np.int64)
        rec.served(st, 47, shown_u, shown_p)
    return h.hexdigest()[:16]


# Digests of the feeds as first released (main at cec99ca); the speed-up keeps them.
PINNED = {
    "dpp": "61d52928d005b728",
    "slate": "92c621cd290f602b",
    "none": "048a19dd19c1bda0",
}


@pytest.mark.parametrize("rerank", sorted(PINNED))
def test_foryou_feeds_match_the_pinned_digest(rerank):
    assert feeds_digest(rerank) == PINNED[rerank]


# ---- the fast paths equal their plain definitions (random blocks, many ties) -----------------------
def _random_blocks(seed: int, n_rows: int = 60, n: int = 900):
    rng = np.random.default_rng(seed)
    row = np.sort(rng.integers(0, n_rows, n))
    score = rng.integers(0, 4, n) * 0.5 if seed % 2 else rng.random(n)  # odd seeds: many ties
    return rng, row, score


@pytest.mark.parametrize("seed", range(6))
def test_block_sorts_equal_global_stable_sorts(seed):
    from socium.recsys.foryou import factors

    rng, row, score = _random_blocks(seed)
    by_score = np.argsort(-score, kind="stable")
    plain = by_score[np.argsort(row[by_score], kind="stable")]
    assert np.array_equal(factors.by_row_then_score(row, score), plain)
    author = rng.integers(0, 5 if seed % 2 else 10**6, len(row))
    by_key = by_score[np.argsort((row * (int(author.max()) + 1) + author)[by_score], kind="stable")]
    j = np.empty(len(row), np.int64)
    r, a = row[by_key], author[by_key]
    new = np.r_[True, (r[1:] != r[:-1]) | (a[1:] != a[:-1])]
    j[by_key] = np.arange(len(row)) - np.maximum.accumulate(np.where(new, np.arange(len(row)), 0))
    p = factors.ForYouParams()
    want = (1 - p.author_diversity_floor) * p.author_diversity_decay**j + p.author_diversity_floor
    assert np.array_equal(factors.author_diversity(row, author, score, p), want)
    shuffled = rng.permutation(row)  # not grouped: the global sorts are used, same definition
    by_score = np.argsort(-score, kind="stable")
    assert np.array_equal(
        factors.by_row_then_score(shuffled, score), by_score[np.argsort(shuffled[by_score], kind="stable")]
    )


def test_concat_and_similarity_equal_their_plain_definitions(monkeypatch):
    from socium.recsys.foryou import features
    from socium.recsys.foryou.sources import Candidates

    rng = np.random.default_rng(3)
    users = np.arange(50)
    a_row, b_row = np.sort(rng.integers(0, 50, 400)), np.sort(rng.integers(0, 50, 300))
    a = Candidates(users, a_row, rng.integers(0, 999, 400), np.ones(400, bool))
    b = Candidates(users, b_row, rng.integers(0, 999, 300), np.zeros(300, bool))
    got = Candidates.concat(a, b)
    order = np.argsort(np.concatenate([a.row, b.row]), kind="stable")
    assert np.array_equal(got.row, np.concatenate([a.row, b.row])[order])
    assert np.array_equal(got.post, np.concatenate([a.post, b.post])[order])
    assert np.array_equal(got.in_network, np.concatenate([a.in_network, b.in_network])[order])
    vecs = rng.standard_normal((999, 64)).astype(np.float32)
    interest = rng.standard_normal((50, 64)).astype(np.float32)
    plain = np.einsum("nd,nd->n", vecs[got.post], interest[got.row], optimize=False)
    assert np.array_equal(features.similarity(interest, got.row, vecs, got.post), plain)  # bit for bit
    monkeypatch.setattr(features, "_CHUNK", 37)  # gathered in many chunks of whole users: the same
    assert np.array_equal(features.similarity(interest, got.row, vecs, got.post), plain)
