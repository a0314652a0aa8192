"""Follow graphs: generators, SNAP edge lists, follow lists and the compact FollowIndex."""

from __future__ import annotations

import gzip
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from conftest import SHARED_DATA as DATA
from socium.errors import ConfigError, InputFileError
from socium.platform.graph import (
    FollowIndex,
    generate_edges,
    generate_graph,
    graph_from_following,
    graph_to_edges,
    read_edgelist,
)
from socium.platform.twitter_graph import twitter_like_attractiveness

FACEBOOK = DATA / "snap-ego-facebook" / "facebook_combined.txt.gz"

KINDS = [
    ("barabasi_albert", {"m": 3}),
    ("watts_strogatz", {"k": 4, "p": 0.2}),
    ("stochastic_block", {"n_blocks": 3, "p_in": 0.2, "p_out": 0.01}),
    ("core_periphery", {}),
    ("random_out", {"out_degree": 5}),
    ("twitter_like", {"m": 4}),
]
DIRECTED = ("random_out", "twitter_like")


def edge_set(g: nx.DiGraph) -> set[tuple[int, int]]:
    return set(g.edges())


@pytest.mark.parametrize("kind, params", KINDS)
def test_generators_seeded(kind: str, params: dict) -> None:
    a = generate_graph(kind, 300, 11, **params)
    b = generate_graph(kind, 300, 11, **params)
    c = generate_graph(kind, 300, 12, **params)
    assert sorted(a.nodes()) == list(range(300))
    assert a.number_of_edges() > 0
    assert edge_set(a) == edge_set(b)
    assert edge_set(a) != edge_set(c)
    assert nx.number_of_selfloops(a) == 0


@pytest.mark.parametrize("kind, params", [k for k in KINDS if k[0] not in DIRECTED])
def test_undirected_kinds_are_reciprocal(kind: str, params: dict) -> None:
    g = generate_graph(kind, 200, 1, **params)
    assert all(g.has_edge(v, u) for u, v in g.edges())


def test_barabasi_albert_edge_count() -> None:
    n, m = 1000, 4
    g = generate_graph("barabasi_albert", n, 3, m=m)
    assert g.number_of_edges() == 2 * m * (n - m)
    degrees = np.array([d for _, d in g.out_degree()])
    assert degrees.min() >= m and degrees.max() > 10 * m  # hubs: a heavy tail


def test_watts_strogatz_edge_count() -> None:
    g = generate_graph("watts_strogatz", 500, 3, k=6, p=0.0)
    assert g.number_of_edges() == 2 * 500 * 3
    assert g.has_edge(0, 1) and g.has_edge(0, 3) and not g.has_edge(0, 4)  # ring lattice when p=0


def test_stochastic_block_denser_inside() -> None:
    g = generate_graph("stochastic_block", 600, 5, sizes=[200, 200, 200], p_in=0.1, p_out=0.005)
    block = nx.get_node_attributes(g, "block")
    assert [block[i] for i in (0, 199, 200, 599)] == [0, 0, 1, 2]
    inside = sum(block[u] == block[v] for u, v in g.edges())
    outside = g.number_of_edges() - inside
    pairs_in, pairs_out = 3 * 200 * 199, 600 * 599 - 3 * 200 * 199
    assert inside / pairs_in > 10 * (outside / pairs_out)
    assert abs(inside / pairs_in - 0.1) < 0.01


def test_core_periphery_structure() -> None:
    g = generate_graph(
        "core_periphery", 1000, 2, core_fraction=0.1, p_core=0.5, p_core_periphery=0.05, p_periphery=0.002
    )
    block = nx.get_node_attributes(g, "block")
    assert sum(b == 0 for b in block.values()) == 100
    core_deg = np.mean([g.in_degree(v) for v in range(100)])
    per_deg = np.mean([g.in_degree(v) for v in range(100, 1000)])
    assert core_deg > 5 * per_deg


def test_random_out_degrees_distinct_no_self() -> None:
    src, dst = generate_edges("random_out", 2000, 9, out_degree=7)
    assert len(src) == 2000 * 7
    assert np.all(src != dst)
    assert len(set(zip(src.tolist(), dst.tolist()))) == len(src)
    assert np.all(np.bincount(src, minlength=2000) == 7)
    g = generate_graph("random_out", 2000, 9, out_degree=7)
    assert edge_set(g) == set(zip(src.tolist(), dst.tolist()))


def test_random_out_dense_and_extreme() -> None:
    src, dst = generate_edges("random_out", 50, 1, out_degree=40)
    assert np.all(np.bincount(src, minlength=50) == 40) and np.all(src != dst)
    assert len(set(zip(src.tolist(), dst.tolist()))) == 50 * 40
    full = generate_graph("random_out", 20, 1, out_degree=19)
    assert full.number_of_edges() == 20 * 19


def test_empty_graph() -> None:
    g = generate_graph("empty", 10, 0)
    assert g.number_of_nodes() == 10 and g.number_of_edges() == 0


@pytest.mark.parametrize(
    "kind, n, params, words",
    [
        ("small_world", 10, {}, ["small_world", "barabasi_albert", "random_out"]),
        ("barabasi_albert", 10, {"m": 0}, ["m", "barabasi_albert"]),
        ("barabasi_albert", 10, {"mm": 2}, ["mm", "allowed: m"]),
        ("watts_strogatz", 10, {"p": 1.5}, ["p", "probability"]),
        ("stochastic_block", 10, {"sizes": [3, 3]}, ["sizes", "10"]),
        ("core_periphery", 10, {"core_fraction": 1.0}, ["core_fraction"]),
        ("random_out", 10, {"out_degree": 10}, ["out_degree"]),
        ("empty", -1, {}, ["graph.n"]),
        ("twitter_like", 100, {"m": 0}, ["graph.params.m", "twitter_like"]),
        ("twitter_like", 100, {"m": 2.5}, ["graph.params.m", "integer"]),
        ("twitter_like", 100, {"m": 10**6}, ["graph.params.m", "[1, 100000]"]),
        ("twitter_like", 100, {"reciprocity": 1.2}, ["graph.params.reciprocity", "probability"]),
        ("twitter_like", 100, {"reciprocity": True}, ["graph.params.reciprocity"]),
        ("twitter_like", 100, {"triad": -0.1}, ["graph.params.triad", "probability"]),
        ("twitter_like", 100, {"alpha": "steep"}, ["graph.params.alpha", "number"]),
        ("twitter_like", 100, {"alpha": float("inf")}, ["graph.params.alpha"]),
        ("twitter_like", 100, {"alpha": 1.9}, ["graph.params.alpha", "(2.", "raise graph.params.triad"]),
        ("twitter_like", 100, {"triad": 0.9, "alpha": 2.276}, ["graph.params.alpha", "triad=0.9", "lower graph"]),
        ("twitter_like", 100, {"recip": 0.2}, ["graph.params.recip", "allowed: m, reciprocity, triad, alpha"]),
    ],
)
def test_bad_kind_and_params(kind: str, n: int, params: dict, words: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        generate_graph(kind, n, 0, **params)
    for w in words:
        assert w in str(err.value)


# --- twitter_like ---------------------------------------------------------------------------


def _facts(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[float, float, float]:
    """Edge reciprocity, fitted follower-tail exponent and sampled mean local clustering, measured by
    the same code as ``socium validate``."""
    from socium.experiments.validation import stylized as S
    from socium.experiments.validation.validate import _fit_tail

    indeg = np.bincount(dst, minlength=n)
    alpha = _fit_tail(indeg[indeg > 0])[0]
    cc = S.clustering_sample(src.astype(np.int64), dst.astype(np.int64), n, 2000)[0]
    return S.reciprocity(src, dst, n), alpha, cc


def test_twitter_like_shape() -> None:
    n, m = 5000, 6
    src, dst = generate_edges("twitter_like", n, 3, m=m, reciprocity=0.3)
    assert np.all(src != dst)
    key = src.astype(np.int64) * n + dst
    assert np.all(key[1:] > key[:-1])  # sorted (src, dst) with no repeats, as FollowIndex wants
    indeg = np.bincount(dst, minlength=n)
    # every account makes m follows of its own (the first m + 1 follow all earlier ones), plus returns
    outdeg = np.bincount(src, minlength=n)
    assert np.sort(outdeg)[m + 1] >= m and outdeg.sum() > n * m
    assert indeg.max() > 50 * indeg.mean()  # hubs
    assert len(set(src.tolist()) | set(dst.tolist())) == n  # every account takes part
    g = generate_graph("twitter_like", n, 3, m=m, reciprocity=0.3)
    assert edge_set(g) == set(zip(src.tolist(), dst.tolist()))


@pytest.mark.parametrize("r", [0.0, 0.221, 0.5])
def test_twitter_like_reciprocity(r: float) -> None:
    n = 20_000
    src, dst = generate_edges("twitter_like", n, 7, reciprocity=r)
    key = set(zip(src.tolist(), dst.tolist()))
    mutual_pairs = sum((v, u) in key for u, v in key) / 2
    pairs = len(key) - mutual_pairs
    assert abs(mutual_pairs / pairs - r) < 0.01  # Kwak et al.'s measure: mutual share of connected pairs
    assert abs(_facts(src, dst, n)[0] - 2 * r / (1 + r)) < 0.01  # the edge share socium validate reports


@pytest.mark.parametrize("params", [{}, {"triad": 0.0}, {"triad": 0.0, "alpha": 2.6}, {"m": 5, "alpha": 2.4}])
def test_twitter_like_follower_tail(params: dict) -> None:
    n = 30_000
    src, dst = generate_edges("twitter_like", n, 11, **params)
    alpha = params.get("alpha", 2.276)
    fitted = _facts(src, dst, n)[1]
    # the constant is set by a mean-field rate equation; finite graphs fit somewhat lower tails
    assert alpha - 0.25 < fitted < alpha + 0.15


def test_twitter_like_clustering_rises_with_triad() -> None:
    n = 20_000
    cc = [_facts(*generate_edges("twitter_like", n, 5, triad=t, alpha=2.3), n)[2] for t in (0.0, 0.25, 0.5, 0.75)]
    assert cc[0] + 0.05 < cc[1] < cc[2], cc
    # at fixed alpha a high triad share comes with a large constant a (more uniform preferential picks,
    # smaller hub cores), so clustering stops rising; it stays far above the no-closure graph
    assert cc[3] > cc[0] + 0.05, cc
    steep = _facts(*generate_edges("twitter_like", n, 5, triad=0.0, alpha=2.6), n)[2]
    assert steep < 0.05 < cc[2]  # without closure or big hubs the graph barely clusters


def test_twitter_like_seeded_and_tiny() -> None:
    a = generate_edges("twitter_like", 3000, 1)
    b = generate_edges("twitter_like", 3000, 1)
    c = generate_edges("twitter_like", 3000, 2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[1], c[1])
    for n in (0, 1):
        assert generate_graph("twitter_like", n, 0).number_of_edges() == 0
    for m in (5, 50):  # n <= m + 1: the core only, everyone follows all earlier accounts and is followed back
        assert generate_graph("twitter_like", 6, 0, m=m, reciprocity=1.0, triad=0.0, alpha=3.5).number_of_edges() == 30


def test_twitter_like_attractiveness_matches_price_model() -> None:
    # without triads or follow-backs this is Price's model: alpha = 2 + a / m
    assert twitter_like_attractiveness(4, 0.0, 0.0, 2.5) == pytest.approx(2.0)
    assert twitter_like_attractiveness(10, 0.221, 0.0, 2.276) == pytest.approx(10 * (0.276 - 0.221))


def test_twitter_like_from_config_errors_name_key() -> None:
    from socium.config.loading import config_from_dict
    from socium.simulator.world import build_follows

    cfg = config_from_dict({"population": {"n_agents": 300}, "graph": {"kind": "twitter_like", "params": {"m": 3}}})
    idx = build_follows(cfg, 300, None)
    assert idx.n_edges > 3 * 290
    bad = config_from_dict({"population": {"n_agents": 300}, "graph": {"kind": "twitter_like", "params": {"triad": 2}}})
    with pytest.raises(ConfigError, match=r"graph\.params\.triad"):
        build_follows(bad, 300, None)


# --- edge lists -------------------------------------------------------------------------------


def test_snap_facebook_counts() -> None:
    if not FACEBOOK.exists():
        pytest.skip(f"reference data not present: {FACEBOOK}")
    g = read_edgelist(FACEBOOK)
    assert g.number_of_nodes() == 4039
    assert g.number_of_edges() == 176_468
    assert g.has_edge(0, 1) and g.has_edge(1, 0)
    assert "original_ids" not in g.graph  # ids already dense
    directed = read_edgelist(FACEBOOK, directed=True)
    assert directed.number_of_edges() == 88_234


def test_edgelist_bad_line(tmp_path: Path) -> None:
    p = tmp_path / "edges.txt"
    p.write_text("# comment\n0 1\n\n1 2\n2 x\n", encoding="utf-8")
    with pytest.raises(InputFileError) as err:
        read_edgelist(p)
    msg = str(err.value)
    assert "edges.txt:5" in msg and "'2 x'" in msg
    assert err.value.line == 5


def test_edgelist_gzip_relabel_and_range(tmp_path: Path) -> None:
    p = tmp_path / "sparse.txt.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("# SNAP style\n10 30\t5\n30 20\n20 20\n")
    g = read_edgelist(p, directed=True)
    assert g.graph["original_ids"] == [10, 20, 30]
    assert edge_set(g) == {(0, 2), (2, 1)}  # self-loop 20 20 dropped, extra column ignored
    with pytest.raises(InputFileError) as err:
        read_edgelist(p, n=25)
    assert err.value.line == 2 and "30" in str(err.value)
    fixed = read_edgelist(p, n=40)
    assert fixed.number_of_nodes() == 40 and fixed.has_edge(10, 30) and fixed.has_edge(30, 10)


def test_edgelist_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="absent.txt"):
        read_edgelist(tmp_path / "absent.txt")


def test_graph_from_following_and_edges() -> None:
    g = graph_from_following([[1, 2], [0], [2], []])
    assert g.number_of_nodes() == 4
    assert edge_set(g) == {(0, 1), (0, 2), (1, 0)}  # self-follow 2->2 dropped
    src, dst = graph_to_edges(g)
    assert src.dtype == np.int32 and dst.dtype == np.int32
    assert list(zip(src.tolist(), dst.tolist())) == [(0, 1), (0, 2), (1, 0)]
    with pytest.raises(ValueError, match="agent 1"):
        graph_from_following([[], [7]])


# --- FollowIndex ------------------------------------------------------------------------------


def assert_matches(fi: FollowIndex, ref: nx.DiGraph, n: int) -> None:
    for u in range(n):
        expected = sorted(ref.successors(u))
        got = fi.followees(u)
        assert got.dtype == np.int32 and got.tolist() == expected
        assert fi.following_count(u) == len(expected)
        assert fi.follower_count(u) == ref.in_degree(u)
    assert fi.n_edges == ref.number_of_edges()
    src, dst = fi.edges()
    assert list(zip(src.tolist(), dst.tolist())) == sorted(ref.edges())


def test_follow_index_random_operations() -> None:
    n = 60
    ref = generate_graph("random_out", n, 4, out_degree=6)
    fi = FollowIndex.from_graph(ref, n)
    ref = ref.copy()
    assert_matches(fi, ref, n)
    rng = np.random.default_rng(123)
    for step in range(3000):
        u, v = (int(x) for x in rng.choice(n, size=2, replace=False))
        if rng.random() < 0.5:
            fi.add(u, v)
            ref.add_edge(u, v)
        else:
            fi.remove(u, v)
            if ref.has_edge(u, v):
                ref.remove_edge(u, v)
        assert fi.is_following(u, v) == ref.has_edge(u, v)
        a, b = (int(x) for x in rng.integers(0, n, size=2))
        assert fi.is_following(a, b) == ref.has_edge(a, b)
        if step % 50 == 0:  # pending additions and removals included, before and after compaction
            shown = [int(x) for x in rng.integers(0, n, size=int(rng.integers(0, 12)))]
            assert fi.following_among(a, shown) == sorted({v for v in shown if ref.has_edge(a, v)})
        if step % 500 == 0:
            assert_matches(fi, ref, n)
        if step == 1500:
            fi.compact()
    assert_matches(fi, ref, n)
    fi.compact()
    assert_matches(fi, ref, n)
    assert edge_set(fi.to_graph()) == edge_set(ref)


def test_follow_index_from_edges_dedupes_and_validates() -> None:
    src = np.array([3, 0, 0, 2, 0, 1])
    dst = np.array([0, 2, 1, 2, 2, 0])
    fi = FollowIndex.from_edges(src, dst, 4)
    assert fi.indptr.dtype == np.int32 and fi.indices.dtype == np.int32
    assert fi.indptr.tolist() == [0, 2, 3, 3, 4]
    assert fi.indices.tolist() == [1, 2, 0, 0]  # sorted per row, duplicate and self-loop gone
    assert fi.follower_counts.tolist() == [2, 1, 1, 0]
    view = fi.followees(0)
    with pytest.raises(ValueError):
        view[0] = 3  # read-only: callers cannot corrupt the index
    with pytest.raises(ValueError, match="self"):
        fi.add(1, 1)
    with pytest.raises(IndexError):
        fi.is_following(0, 4)
    with pytest.raises(ValueError, match="0..3"):
        FollowIndex.from_edges(np.array([0]), np.array([4]), 4)
    fi.add(0, 1)  # already following: no double count
    assert fi.follower_count(1) == 1 and fi.n_edges == 4
    fi.remove(2, 3)  # not following: no-op
    assert fi.n_edges == 4
