"""The cost work on foryou (issue 39) keeps every result: each faster path equals its plain definition.

The feeds themselves are pinned in ``test_foryou_pinned.py``; these check the pieces one by one on
random inputs, including the ones the pinned world is too small to reach (the IVF path's scaling,
DPP and similarity chunking, the in-network ranking over many followees).
"""

import numpy as np
import pytest

from socium.platform.graph import FollowIndex
from socium.platform.posts import ORIGINAL, REPOST
from socium.platform.state import PlatformState
from socium.recsys import ann
from socium.recsys.candidates import TIMELINE_KINDS, followee_pairs, in_network, in_network_flat, window_posts
from socium.recsys.foryou import ForYouRecommender, rerank
from socium.recsys.foryou.sources import in_network_source, out_of_network_source


def _world(n_users: int = 120, n_posts: int = 1500, seed: int = 5) -> tuple[PlatformState, list[str]]:
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(n_users), 9)
    st = PlatformState(n_users, FollowIndex.from_edges(src, rng.integers(0, n_users, len(src)), n_users))
    words = "match goal vote city recipe rain film chess code piano".split()
    steps = np.sort(rng.integers(0, 48, n_posts))
    for i in range(n_posts):
        s, a = int(steps[i]), int(rng.integers(0, n_users))
        if i > 5 and rng.random() < 0.1:
            parent = int(rng.integers(0, i))
            st.posts.add(a, s, s * 3600.0, REPOST, parent, int(st.posts.col("root")[parent]), "")
        else:
            st.posts.add(a, s, s * 3600.0, ORIGINAL, -1, -1, " ".join(rng.choice(words, 5).tolist()))
    st.begin_step(47, 47 * 3600.0)
    for u in range(0, n_users, 9):
        st.mutes.setdefault(u, set()).add(int((u * 7 + 3) % n_users))
    return st, [" ".join(rng.choice(words, 2).tolist()) for _ in range(n_users)]


@pytest.mark.parametrize("quota", [1, 3, 20])
def test_in_network_equals_the_plain_per_user_ranking(quota):
    st, _ = _world()
    users = np.arange(0, st.n_users, 2)
    owner, fol = followee_pairs(st, users)
    cand = window_posts(st, 47, 24, TIMELINE_KINDS)
    score = np.random.default_rng(quota).integers(0, 4, len(cand)).astype(np.float64)  # many ties
    got = in_network(st, owner, fol, cand, score, quota, len(users))
    authors = st.posts.col("author")[cand]
    for r in range(len(users)):
        mine = np.flatnonzero(np.isin(authors, fol[owner == r]))
        want = cand[mine[np.lexsort((-cand[mine], -score[mine]))]][:quota]  # best score, newer first
        assert got[r].tolist() == want.tolist()
    flat, counts = in_network_flat(st, owner, fol, cand, score, quota, len(users))
    assert counts.tolist() == [len(g) for g in got]
    assert flat.tolist() == np.concatenate(got).tolist()


def test_scaled_skips_the_product_only_where_it_is_the_identity():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((50, 8)).astype(np.float32)
    rows = rng.integers(0, 50, 30)
    ones = np.ones(30, np.float32)
    assert np.array_equal(ann._scaled(data, rows, ones).view(np.int32), (data[rows] * ones[:, None]).view(np.int32))
    decay = rng.random(30).astype(np.float32)
    assert np.array_equal(ann._scaled(data, rows, decay), data[rows] * decay[:, None])
    wide = np.ones(30)  # float64 scales promote, as the product did
    assert ann._scaled(data, rows, wide).dtype == (data[rows] * wide[:, None]).dtype == np.float64


def test_dpp_picks_do_not_depend_on_its_chunk_size(monkeypatch):
    rng = np.random.default_rng(1)
    n_rows, n = 40, 700
    row = np.sort(rng.integers(0, n_rows, n))
    score = rng.random(n) + 0.1
    vecs = rng.standard_normal((300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    post = rng.integers(0, 300, n)
    base = rerank.dpp(row, n_rows, score, vecs, post, 5, 0.65, 15)
    monkeypatch.setattr(rerank, "_CHUNK_ELEMS", 15 * 16 * 3)  # three users per chunk
    small = rerank.dpp(row, n_rows, score, vecs, post, 5, 0.65, 15)
    assert len(base) == len(small) == n_rows
    assert all(a.tolist() == b.tolist() for a, b in zip(base, small))


def test_sources_given_the_followee_pairs_equal_the_sources_that_walk_them():
    st, profiles = _world()
    rec = ForYouRecommender(48, embedder="hashing", profile_texts=profiles)
    rec.observe(st, range(0, len(st.posts)), 47)
    users = np.arange(3, st.n_users, 3)
    pairs = followee_pairs(st, users)
    for make in (
        lambda pr: in_network_source(st, users, 47, 48, 20, pr),
        lambda pr: out_of_network_source(rec.retrieval, st, users, 47, 20, pr),
    ):
        a, b = make(None), make(pairs)
        assert len(a) > 0
        assert np.array_equal(a.row, b.row) and np.array_equal(a.post, b.post)
        assert np.array_equal(a.in_network, b.in_network)


@pytest.mark.parametrize("grouped", [True, False])
def test_first_of_each_equals_unique_return_index(grouped):
    from socium.recsys.foryou.filters import first_of_each, pair_keys

    rng = np.random.default_rng(2)
    row = rng.integers(0, 30, 800)
    row = np.sort(row) if grouped else row
    key = rng.integers(0, 25, 800)  # many repeats within a row
    _, first = np.unique(pair_keys(row, key), return_index=True)
    want = np.zeros(800, bool)
    want[first] = True
    got = first_of_each(row, key)
    assert 0 < got.sum() < 800
    assert np.array_equal(got, want)
    assert first_of_each(row[:0], key[:0]).shape == (0,)


def test_is_edge_equals_a_set_lookup():
    from socium.recsys.foryou.features import is_edge

    rng = np.random.default_rng(4)
    n = 60
    src, dst = rng.integers(0, n, 500), rng.integers(0, n, 500)
    keys = np.unique(src * n + dst)
    qs, qd = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    edges = set(zip(src.tolist(), dst.tolist()))
    want = [(a, b) in edges for a, b in zip(qs.tolist(), qd.tolist())]
    got = is_edge(keys, n, qs, qd)
    assert 0 < got.sum() < len(got)
    assert got.tolist() == want
    assert is_edge(keys[:0], n, qs, qd).sum() == 0
