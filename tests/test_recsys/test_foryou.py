"""The foryou recommender's stages, each on a hand-built world (issue 39): sources, filters, value model,
cold start, author diversity, OON factor, re-ranking; then the whole feed and its explanations."""

import numpy as np
import pytest

from socium.config.world import RecsysConfig
from socium.core import actions as A
from socium.core.exposure import EXPLANATION_NAMES
from socium.errors import ConfigError
from socium.platform.graph import FollowIndex
from socium.platform.state import PlatformState
from socium.recsys.foryou import ForYouRecommender, factors, filters, rerank
from socium.recsys.foryou.params import ForYouParams
from socium.recsys.foryou.sources import Candidates
from socium.recsys.foryou.value_model import DEFAULT_COEF, FEATURES, HEADS, ValueModel, fit, weighted_score
from socium.recsys.registry import make_recommender

P = ForYouParams()


def make_state(n, edges=()):
    src = np.array([e[0] for e in edges], dtype=np.int32)
    dst = np.array([e[1] for e in edges], dtype=np.int32)
    return PlatformState(n, FollowIndex.from_edges(src, dst, n))


def post(st, author, text):
    out = st.apply(author, A.CreatePost(content=text))
    assert out.ok
    return out.post_id


def cands(users, rows, posts, in_net):
    return Candidates(
        np.asarray(users, np.int64), np.asarray(rows, np.int64), np.asarray(posts, np.int64), np.asarray(in_net, bool)
    )


# ---- filters ---------------------------------------------------------------------------------------
def test_filters_drop_duplicates_old_own_seen_and_repost_twins():
    st = make_state(6, [(0, 1)])
    st.begin_step(0, 0.0)
    old = post(st, 1, "old news")
    st.begin_step(60, 60 * 3600.0)  # 60 h later: `old` is past MAX_POST_AGE (48 h)
    a = post(st, 1, "fresh")
    own = post(st, 0, "mine")
    rp = st.apply(2, A.Repost(post_id=a)).post_id
    c = cands([0], [0] * 6, [a, a, old, own, rp, a], [True, False, True, True, True, False])
    assert filters.drop_duplicates(c).tolist() == [True, False, True, True, True, False]
    assert filters.too_old(st, c, P.max_post_age_s).tolist() == [True, True, False, True, True, True]
    assert filters.own_posts(st, c).tolist() == [True, True, True, False, True, True]
    # first wins per root: the repost of `a` comes after `a` itself, so it goes
    assert filters.repost_dedup(st, cands([0], [0, 0], [a, rp], [True, True])).tolist() == [True, False]
    assert filters.repost_dedup(st, cands([0], [0, 0], [rp, a], [True, True])).tolist() == [True, False]
    seen = np.sort(filters.pair_keys(np.array([0]), np.array([a])))
    assert filters.already_seen(c, seen).tolist() == [False, False, True, True, True, False]


class Feedback:
    def __init__(self, blocked=None, marked=None):
        self._b, self._m = blocked or {}, marked or {}

    def blocked(self, user):
        return self._b.get(user, ())

    def not_interested(self, user):
        return self._m.get(user, ())


def test_social_graph_drops_blocked_muted_authors_their_reposts_and_marked_posts():
    st = make_state(6)
    st.begin_step(0, 0.0)
    p1, p2, p3, p4 = (post(st, a, f"post by {a}") for a in (1, 2, 3, 4))
    rp = st.apply(5, A.Repost(post_id=p1)).post_id  # 5 reposts the blocked author's post
    assert st.apply(0, A.Mute(user_id=2)).ok
    c = cands([0, 3], [0, 0, 0, 0, 0, 1, 1], [p1, p2, p3, p4, rp, p1, p2], [False] * 7)
    keep = filters.social_graph(st, c, Feedback(blocked={0: {1}}, marked={0: {p4}}))
    assert keep.tolist() == [False, False, True, False, False, True, True]  # user 3 blocked/muted nobody
    # a state without the block API reads as nobody blocked anyone; mutes still count
    assert isinstance(filters.negative_feedback_of(st), filters.NegativeFeedback)
    assert filters.social_graph(st, c, filters.negative_feedback_of(object())).tolist() == [
        True,
        False,
        True,
        True,
        True,
        True,
        True,
    ]


# ---- value model -----------------------------------------------------------------------------------
def test_weighted_score_sums_weights_adds_mutual_reply_boost_and_offsets_negatives():
    probs = np.zeros((3, len(HEADS)))
    probs[0, HEADS.index("favorite")] = 0.2
    probs[0, HEADS.index("reply")] = 0.1
    probs[1] = probs[0]
    probs[2, HEADS.index("report")] = 0.01  # 0.01 x -234 = -2.34
    s = weighted_score(probs, np.array([False, True, False]), P)
    assert s[0] == pytest.approx(0.2 * 0.5 + 0.1 * 5.0 + 0.001)
    assert s[1] == pytest.approx(0.2 * 0.5 + 0.1 * (5.0 + 15.0) + 0.001)  # reply + 15, as reply_weight_for
    neg_sum = 43.2 + 31.2 + 58.8 + 234.0
    total = 0.5 + 5.0 + 1.0 + 5.0 + 4.0 + neg_sum
    assert s[2] == pytest.approx((-2.34 + neg_sum) / total * 0.001)
    assert 0 < s[2] < 0.001 < s[0]


def test_value_model_fit_recovers_a_known_model_and_keeps_unseen_heads_at_default():
    rng = np.random.default_rng(3)
    n = 20000
    x = np.column_stack([np.ones(n), rng.integers(0, 2, n), np.zeros(n), rng.uniform(-1, 1, (n, 6))])
    true = DEFAULT_COEF.copy()
    true[0] = [-2.0, 1.5, 0.0, 2.0, 0.5, -0.5, 0.0, 1.0, 0.0]
    pr = 1 / (1 + np.exp(-(x @ true[0])))
    y = np.zeros((n, len(HEADS)))
    y[:, 0] = rng.random(n) < pr
    m = fit(x, y, l2=1.0)
    assert np.abs(m.coef[0] - true[0])[[0, 1, 3, 4, 5, 7]].max() < 0.15
    assert m.coef[HEADS.index("report")][0] < DEFAULT_COEF[HEADS.index("report")][0]  # no reports: rarer still
    loaded = ValueModel.load(m.to_json())
    assert np.array_equal(loaded.coef, m.coef)
    with pytest.raises(ConfigError, match="features"):
        ValueModel.load({"features": ["bias"], "heads": {}})
    assert len(FEATURES) == DEFAULT_COEF.shape[1]


# ---- factors ---------------------------------------------------------------------------------------
def test_author_diversity_decays_by_rank_within_author_to_the_floor():
    row = np.zeros(5, np.int64)
    author = np.array([7, 7, 8, 7, 7])
    score = np.array([4.0, 5.0, 3.0, 2.0, 1.0])
    m = factors.author_diversity(row, author, score, P)
    # author 7 by score: 5.0 (j=0), 4.0 (1), 2.0 (2), 1.0 (3); author 8 alone
    assert m.tolist() == pytest.approx([0.625, 1.0, 1.0, 0.4375, 0.34375])
    other_user = factors.author_diversity(np.array([0, 1]), np.array([7, 7]), np.array([1.0, 1.0]), P)
    assert other_user.tolist() == [1.0, 1.0]


def test_oon_factor_applies_to_out_of_network_and_in_network_reposts():
    f = factors.oon_factor(np.array([True, False, True]), np.array([False, False, True]), P)
    assert f.tolist() == [1.0, 0.75, 0.75]
    off = ForYouParams(oon_rescore_in_network_reposts=False)
    assert factors.oon_factor(np.array([True]), np.array([True]), off).tolist() == [1.0]


def test_cold_start_lifts_the_best_small_author_post_to_slot_15():
    n = 20
    row = np.zeros(n, np.int64)
    score = np.arange(n, 0, -1).astype(float)  # 20, 19, ..., 1: slot 15 holds 5.0
    eligible = np.zeros(n, bool)
    eligible[[12, 16]] = True  # 12 (score 8) ranks 12 < 0.85 x 20 = 17; 16 (score 4) also eligible but lower
    out, lifted = factors.cold_start(row, score, eligible, P)
    assert out[12] == 8.0 and not lifted.any()  # already above the target: max(8, 5) keeps it
    eligible[12] = False
    out, lifted = factors.cold_start(row, score, eligible, P)
    assert out[16] == 5.0 and lifted.tolist() == [i == 16 for i in range(n)]
    eligible[16], eligible[18] = False, True  # rank 18 >= 17: past the position cap
    assert not factors.cold_start(row, score, eligible, P)[1].any()
    short = factors.cold_start(np.zeros(15, np.int64), score[:15], np.ones(15, bool), P)  # < 16 candidates
    assert not short[1].any()


# ---- re-ranking ------------------------------------------------------------------------------------
def test_dpp_with_no_candidates_at_all_gives_each_user_an_empty_feed():
    """Every post filtered for a whole chunk of users (the foryou study's propagation world): no IndexError."""
    empty = np.zeros(0, np.int64)
    feeds = rerank.dpp(empty, 3, np.zeros(0), np.zeros((0, 8), np.float32), empty, 5, 0.65, 15)
    assert [f.tolist() for f in feeds] == [[], [], []]


def test_dpp_prefers_a_dissimilar_post_over_a_near_duplicate_and_theta_near_one_is_score_order():
    v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], np.float32)  # 0 and 1 identical, 2 different
    row = np.zeros(3, np.int64)
    score = np.array([1.0, 0.95, 0.6])
    ids = np.arange(3)
    assert rerank.dpp(row, 1, score, v, ids, 2, 0.65, 150)[0].tolist() == [0, 2]
    assert rerank.dpp(row, 1, score, v, ids, 3, 0.65, 150)[0].tolist() == [0, 2, 1]  # out of volume: score order
    assert rerank.dpp(row, 1, score, v, ids, 2, 0.999, 150)[0].tolist() == [0, 1]
    assert rerank.dpp(row, 1, score, v, ids, 2, 0.65, 1)[0].tolist() == [0]  # reach 1: only the best


def test_slate_rule_caps_authors_within_the_window_and_lookahead():
    row = np.zeros(4, np.int64)
    score = np.array([4.0, 3.0, 2.0, 1.0])
    author = np.array([1, 1, 1, 2])
    got = rerank.slate(row, 1, score, author, 4, 20, 2, 10)[0].tolist()
    assert got == [0, 1, 3, 2]  # the third post of author 1 yields to author 2 (X's own test)
    assert rerank.slate(row, 1, score, author, 4, 20, 2, 0)[0].tolist() == [0, 1, 2, 3]  # no lookahead


# ---- the whole feed --------------------------------------------------------------------------------
def world():
    edges = [(0, 1), (1, 0), (0, 2), (3, 4)]
    st = make_state(30, edges)
    st.begin_step(0, 0.0)
    for a in range(1, 20):
        for j in range(3):
            post(st, a, f"post {j} on topic{a % 4} gardening tomatoes {a}")
    return st


def test_feed_is_explained_and_never_repeats_a_served_post():
    st = world()
    rec = ForYouRecommender(window_steps=48, embedder="hashing")
    rec.observe(st, range(0, len(st.posts)), 0)
    st.begin_step(1, 3600.0)
    users = np.array([0, 3, 5])
    f = rec.feeds(st, users, 5, 1, np.random.default_rng(0))
    assert [len(x.post_ids) for x in f] == [5, 5, 5]
    authors = st.posts.col("author")
    for u, feed in zip(users.tolist(), f):
        assert len(feed.explain) == 5 and all(len(e) == len(EXPLANATION_NAMES) for e in feed.explain)
        assert all(authors[p] != u for p in feed.post_ids)
        for src, e in zip(feed.sources, feed.explain):
            ex = dict(zip(EXPLANATION_NAMES, e))
            assert ex["oon_factor"] == (1.0 if src == "in_network" else 0.75)
            assert ex["score"] == pytest.approx(ex["value_score"] * ex["oon_factor"] * ex["diversity_factor"])
        assert [dict(zip(EXPLANATION_NAMES, e))["rank_after"] for e in feed.explain] == [0, 1, 2, 3, 4]
    # user 0 follows 1 (mutual) and 2: in-network posts carry follows = mutual = 1 for author 1
    ex0 = {p: dict(zip(EXPLANATION_NAMES, e)) for p, e in zip(f[0].post_ids, f[0].explain)}
    for p, ex in ex0.items():
        assert ex["features"][1] == float(authors[p] in (1, 2)) and ex["features"][2] == float(authors[p] == 1)
    shown = [(u, p) for u, feed in zip(users.tolist(), f) for p in feed.post_ids]
    rec.served(st, 1, np.array([u for u, _ in shown]), np.array([p for _, p in shown]))
    again = rec.feeds(st, users, 5, 1, np.random.default_rng(0))
    for first, second in zip(f, again):
        assert not set(first.post_ids) & set(second.post_ids)
    assert rec.history.post_impressions(np.array(f[0].post_ids)).min() >= 1


def test_blocked_author_and_not_interested_post_are_honoured_through_the_platform_actions():
    st = world()
    rec = ForYouRecommender(window_steps=48, embedder="hashing")
    rec.observe(st, range(0, len(st.posts)), 0)
    st.begin_step(1, 3600.0)
    base = rec.feeds(st, np.array([0]), 5, 1, np.random.default_rng(0))[0]
    top_author = int(st.posts.col("author")[base.post_ids[0]])
    mine = post(st, 0, "post 9 on topic1 gardening tomatoes 0")
    rec.observe(st, range(mine, mine + 1), 1)
    assert mine in rec.candidates(st, np.array([top_author]), 20, 1).post  # before the block: a candidate
    assert st.apply(0, A.Block(user_id=top_author)).ok
    assert st.apply(0, A.NotInterested(post_id=base.post_ids[1])).ok
    assert isinstance(filters.negative_feedback_of(st), filters.NegativeFeedback)
    got = rec.feeds(st, np.array([0]), 5, 1, np.random.default_rng(0))[0]
    assert mine not in rec.candidates(st, np.array([top_author]), 20, 1).post  # X's author_blocks_viewer
    assert top_author not in st.posts.col("author")[list(got.post_ids)]
    assert base.post_ids[1] not in got.post_ids
    # posts like the dismissed one (cosine >= 0.6) are down-weighted by not_interested_factor
    vecs = rec.retrieval.posts.m.data
    c = rec.candidates(st, np.array([0]), 5, 1)
    f = rec._not_interested_factor(st, c, vecs)
    close = vecs[c.post] @ vecs[base.post_ids[1]] >= 0.6
    assert close.any() and not close.all()
    assert np.array_equal(f, np.where(close, 0.25, 1.0))


def test_registry_builds_foryou_and_refuses_unknown_or_bad_params():
    rec = make_recommender(RecsysConfig(kind="foryou", params={"embedder": "hashing", "oon_weight_factor": 0.5}))
    assert isinstance(rec, ForYouRecommender) and rec.p.oon_weight_factor == 0.5
    with pytest.raises(ConfigError, match="unknown key.*oon_factor"):
        make_recommender(RecsysConfig(kind="foryou", params={"embedder": "hashing", "oon_factor": 0.5}))
    with pytest.raises(ConfigError, match="weight_report must be <= 0"):
        make_recommender(RecsysConfig(kind="foryou", params={"embedder": "hashing", "weight_report": 1.0}))


def test_dpp_window_scales_xs_reach_to_the_feed():
    assert P.dpp_window(5) == 15 and P.dpp_window(50) == 150 and P.dpp_window(100) == 150
    assert ForYouParams(dpp_max_selected_rank=2).dpp_window(5) == 2


def test_feeds_ranked_in_chunks_equal_one_batch(monkeypatch):
    import socium.recsys.foryou.recommender as mod

    st = world()
    rec = ForYouRecommender(window_steps=48, embedder="hashing")
    rec.observe(st, range(0, len(st.posts)), 0)
    st.begin_step(1, 3600.0)
    users = np.array([0, 3, 5, 7, 9])
    whole = rec.feeds(st, users, 5, 1, np.random.default_rng(0))
    monkeypatch.setattr(mod, "CHUNK_USERS", 2)
    assert rec.feeds(st, users, 5, 1, np.random.default_rng(0)) == whole


def test_moderation_reranking_keeps_each_posts_explanation():
    from socium.moderation.feeds import ModeratedRecommender

    st = world()
    rec = ForYouRecommender(window_steps=48, embedder="hashing")
    rec.observe(st, range(0, len(st.posts)), 0)
    st.begin_step(1, 3600.0)
    plain = rec.feeds(st, np.array([0]), 14, 1, np.random.default_rng(0))[0]  # what the wrapper asks: 5 x 2 + 4
    why = dict(zip(plain.post_ids, plain.explain))
    st.mod.factor[plain.post_ids[0]] = 0.1  # the top post is down-ranked by moderation
    got = ModeratedRecommender(rec).feeds(st, np.array([0]), 5, 1, np.random.default_rng(0))[0]
    assert got.post_ids[0] != plain.post_ids[0] and len(got.post_ids) == 5
    # each shown post keeps the recommender's explanation (rank_after is its rank there; exposures.rank the shown one)
    assert [why[p] for p in got.post_ids] == list(got.explain)
