"""Golden test (issue 39): every published number foryou uses is its configured default, with its source.

The table below is typed from xai-org/x-algorithm as read on 2026-12-06 (param.rs "last sync
2026-08-12T04:09:22Z", commit 03bedfed; config.rs commit 625f9e30), independently of params.py, so a
changed default or a mislabelled source fails here.
"""

from dataclasses import fields

import pytest

from socium.recsys.foryou.params import PUBLISHED, SOCIUM_DEFAULTS, ForYouParams
from socium.recsys.foryou.recommender import ForYouRecommender

PARAM_RS = "home-mixer/params/param.rs"
CONFIG_RS = "home-mixer/params/config.rs"

GOLDEN = [
    ("in_network_max_results", PARAM_RS, "ThunderMaxResults", 1200),
    ("oon_max_results", PARAM_RS, "PhoenixMaxResults", 1000),
    ("max_post_age_s", CONFIG_RS, "MAX_POST_AGE", 172800),
    ("weight_favorite", PARAM_RS, "FavoriteWeight", 0.5),
    ("weight_reply", PARAM_RS, "ReplyWeight", 5.0),
    ("weight_retweet", PARAM_RS, "RetweetWeight", 1.0),
    ("weight_quote", PARAM_RS, "QuoteWeight", 5.0),
    ("weight_follow_author", PARAM_RS, "FollowAuthorWeight", 4.0),
    ("weight_not_interested", PARAM_RS, "NotInterestedWeight", -43.2),
    ("weight_block_author", PARAM_RS, "BlockAuthorWeight", -31.2),
    ("weight_mute_author", PARAM_RS, "MuteAuthorWeight", -58.8),
    ("weight_report", PARAM_RS, "ReportWeight", -234.0),
    ("mutual_follow_reply_boost", PARAM_RS, "BidirectionalFollowReplyWeightBoost", 15.0),
    ("negative_scores_offset", CONFIG_RS, "NEGATIVE_SCORES_OFFSET", 0.001),
    ("oon_weight_factor", PARAM_RS, "OonWeightFactor", 0.75),
    ("oon_rescore_in_network_reposts", PARAM_RS, "EnableOonRescoreForInNetworkRepliesRetweets", True),
    ("author_diversity_decay", PARAM_RS, "AuthorDiversityDecay", 0.5),
    ("author_diversity_floor", PARAM_RS, "AuthorDiversityFloor", 0.25),
    ("dpp_theta", PARAM_RS, "VMRankerDppTheta", 0.65),
    ("dpp_max_selected_rank", PARAM_RS, "VMRankerDppMaxSelectedRank", 150),
    ("top_k_candidates", CONFIG_RS, "TOP_K_CANDIDATES_TO_SELECT", 50),
    ("cold_start_impression_threshold", PARAM_RS, "ColdStartImpressionThreshold", 1000),
    ("cold_start_slot_min", PARAM_RS, "ColdStartSlotMin", 15),
    ("cold_start_slot_max", PARAM_RS, "ColdStartSlotMax", 16),
    ("cold_start_follower_cap", PARAM_RS, "ColdStartFollowerCap", 1000),
    ("cold_start_max_position_ratio", PARAM_RS, "LowImpressionsMaxPositionRatio", 0.85),
    ("slate_author_window_size", PARAM_RS, "SlateDiversityAuthorWindowSize", 20),
    ("slate_max_posts_per_author", PARAM_RS, "SlateDiversityMaxPostsPerAuthor", 2),
    ("slate_max_lookahead", PARAM_RS, "SlateDiversityMaxLookahead", 10),
]


@pytest.mark.parametrize("field,path,name,value", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_default_is_the_published_value(field, path, name, value):
    assert getattr(ForYouParams(), field) == value, f"{path} {name}"
    assert PUBLISHED[field] == (path, name, value)


def test_the_recommender_is_built_with_the_published_defaults_and_every_field_is_accounted_for():
    rec = ForYouRecommender(embedder="hashing")
    assert rec.p == ForYouParams()
    names = {f.name for f in fields(ForYouParams)}
    assert names == set(PUBLISHED) | set(SOCIUM_DEFAULTS)  # published or socium's own, never unlabelled
    assert not set(PUBLISHED) & set(SOCIUM_DEFAULTS)
    assert {g[0] for g in GOLDEN} == set(PUBLISHED)


def test_docs_cite_every_published_parameter():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "recsys.md").read_text(encoding="utf-8")
    for field, _path, name, _ in GOLDEN:
        assert name in doc and field in doc, (field, name)
