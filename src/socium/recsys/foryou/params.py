"""Every number of X's published For You ranking that socium uses, with the file and parameter it comes from.

Source: the repository xai-org/x-algorithm (Apache-2.0), read on 2026-12-06: ``home-mixer/params/param.rs``
("mirrored from config feature-switch defaults; last sync 2026-08-12T04:09:22Z", commit 03bedfed) and
``home-mixer/params/config.rs`` (commit 625f9e30). socium's code is its own; only the numbers carry over,
each as the default of one :class:`ForYouParams` field, and :data:`PUBLISHED` says where each was read
(``tests/test_recsys/test_foryou_golden.py`` checks every default against it). Numbers socium sets
itself (pool sizes, the value model's coefficients) are in :data:`SOCIUM_DEFAULTS`, never mixed in.

Weights of actions socium has no equivalent for (click, photo expand, video views, dwell, share,
share via DM / copy link, profile click, not dwelled) are left out: no agent can take those
actions, so their predicted probability would be zero and the weight would only shift the offset.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from socium.errors import ConfigError

PARAM_RS = "home-mixer/params/param.rs"
CONFIG_RS = "home-mixer/params/config.rs"

#: field -> (file, published parameter name, published value). The golden test reads this table.
PUBLISHED: dict[str, tuple[str, str, float]] = {
    "in_network_max_results": (PARAM_RS, "ThunderMaxResults", 1200),
    "oon_max_results": (PARAM_RS, "PhoenixMaxResults", 1000),
    "max_post_age_s": (CONFIG_RS, "MAX_POST_AGE", 48 * 60 * 60),
    "weight_favorite": (PARAM_RS, "FavoriteWeight", 0.5),
    "weight_reply": (PARAM_RS, "ReplyWeight", 5.0),
    "weight_retweet": (PARAM_RS, "RetweetWeight", 1.0),
    "weight_quote": (PARAM_RS, "QuoteWeight", 5.0),
    "weight_follow_author": (PARAM_RS, "FollowAuthorWeight", 4.0),
    "weight_not_interested": (PARAM_RS, "NotInterestedWeight", -43.2),
    "weight_block_author": (PARAM_RS, "BlockAuthorWeight", -31.2),
    "weight_mute_author": (PARAM_RS, "MuteAuthorWeight", -58.8),
    "weight_report": (PARAM_RS, "ReportWeight", -234.0),
    "mutual_follow_reply_boost": (PARAM_RS, "BidirectionalFollowReplyWeightBoost", 15.0),
    "negative_scores_offset": (CONFIG_RS, "NEGATIVE_SCORES_OFFSET", 0.001),
    "oon_weight_factor": (PARAM_RS, "OonWeightFactor", 0.75),
    "oon_rescore_in_network_reposts": (PARAM_RS, "EnableOonRescoreForInNetworkRepliesRetweets", True),
    "author_diversity_decay": (PARAM_RS, "AuthorDiversityDecay", 0.5),
    "author_diversity_floor": (PARAM_RS, "AuthorDiversityFloor", 0.25),
    "dpp_theta": (PARAM_RS, "VMRankerDppTheta", 0.65),
    "dpp_max_selected_rank": (PARAM_RS, "VMRankerDppMaxSelectedRank", 150),
    "top_k_candidates": (CONFIG_RS, "TOP_K_CANDIDATES_TO_SELECT", 50),
    "cold_start_impression_threshold": (PARAM_RS, "ColdStartImpressionThreshold", 1000),
    "cold_start_slot_min": (PARAM_RS, "ColdStartSlotMin", 15),
    "cold_start_slot_max": (PARAM_RS, "ColdStartSlotMax", 16),
    "cold_start_follower_cap": (PARAM_RS, "ColdStartFollowerCap", 1000),
    "cold_start_max_position_ratio": (PARAM_RS, "LowImpressionsMaxPositionRatio", 0.85),
    "slate_author_window_size": (PARAM_RS, "SlateDiversityAuthorWindowSize", 20),
    "slate_max_posts_per_author": (PARAM_RS, "SlateDiversityMaxPostsPerAuthor", 2),
    "slate_max_lookahead": (PARAM_RS, "SlateDiversityMaxLookahead", 10),
}

#: Defaults socium chose (no published counterpart), with why; documented in docs/recsys.md.
SOCIUM_DEFAULTS: dict[str, str] = {
    "pool_per_slot": "candidates per feed slot and source (X serves 35 of up to 2,200 candidates; a socium "
    "feed of k=5 from 2 x 4 x 5 = 40 keeps the step within 2x the x recommender's time, "
    "benchmarks/bench_foryou.py); the published caps still bound it",
    "rerank": "'dpp' because the published VM ranker runs value model 'dpp' (VMRankerValueModelId) with "
    "EnableVMRanker true; 'slate' is the published slate-diversity rule (EnableSlateDiversity, off by default)",
    "exclude_seen": "X's PreviouslySeen/PreviouslyServed filters: a post once in a user's feed is not served "
    "to that user again (the published served list is per session, 10 minutes and 100 ids; socium has "
    "one request per activation)",
    "not_interested_similarity": "cosine at which a candidate counts as 'like' a post the user marked not interested",
    "not_interested_factor": "score multiplier for such candidates (the marked post itself is filtered)",
}


@dataclass(frozen=True, slots=True)
class ForYouParams:
    """The published numbers (see :data:`PUBLISHED`) plus socium's own knobs (:data:`SOCIUM_DEFAULTS`)."""

    in_network_max_results: int = 1200
    oon_max_results: int = 1000
    max_post_age_s: float = 48 * 60 * 60
    weight_favorite: float = 0.5
    weight_reply: float = 5.0
    weight_retweet: float = 1.0
    weight_quote: float = 5.0
    weight_follow_author: float = 4.0
    weight_not_interested: float = -43.2
    weight_block_author: float = -31.2
    weight_mute_author: float = -58.8
    weight_report: float = -234.0
    mutual_follow_reply_boost: float = 15.0
    negative_scores_offset: float = 0.001
    oon_weight_factor: float = 0.75
    oon_rescore_in_network_reposts: bool = True
    author_diversity_decay: float = 0.5
    author_diversity_floor: float = 0.25
    dpp_theta: float = 0.65
    dpp_max_selected_rank: int = 150
    top_k_candidates: int = 50
    cold_start_impression_threshold: int = 1000
    cold_start_slot_min: int = 15
    cold_start_slot_max: int = 16
    cold_start_follower_cap: int = 1000
    cold_start_max_position_ratio: float = 0.85
    slate_author_window_size: int = 20
    slate_max_posts_per_author: int = 2
    slate_max_lookahead: int = 10
    # socium's own (SOCIUM_DEFAULTS)
    pool_per_slot: int = 4
    rerank: str = "dpp"
    exclude_seen: bool = True
    not_interested_similarity: float = 0.6
    not_interested_factor: float = 0.25

    def dpp_window(self, k: int) -> int:
        """How deep DPP may reach for a feed of ``k``: X's ``max_selected_rank`` (150) for a slate of
        ``TOP_K_CANDIDATES_TO_SELECT`` (50), i.e. 3 ranks per slot, scaled to ``k`` (15 for k = 5)."""
        per_slot = self.dpp_max_selected_rank / self.top_k_candidates
        return int(min(self.dpp_max_selected_rank, max(k, round(per_slot * k))))

    def check(self) -> ForYouParams:
        """Refuse values that would make a stage meaningless, naming the ``recsys.params`` key."""
        bad: list[str] = []
        if self.top_k_candidates < 1:
            bad.append("top_k_candidates must be >= 1")
        for name in ("in_network_max_results", "oon_max_results", "pool_per_slot", "dpp_max_selected_rank"):
            if getattr(self, name) < 0:
                bad.append(f"{name} must be >= 0")
        for name in ("weight_favorite", "weight_reply", "weight_retweet", "weight_quote", "weight_follow_author"):
            if getattr(self, name) < 0:
                bad.append(f"{name} must be >= 0 (a positive action)")
        for name in ("weight_not_interested", "weight_block_author", "weight_mute_author", "weight_report"):
            if getattr(self, name) > 0:
                bad.append(f"{name} must be <= 0 (negative feedback; X asserts the same)")
        for name in ("oon_weight_factor", "author_diversity_decay", "author_diversity_floor", "not_interested_factor"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                bad.append(f"{name} must lie in [0, 1]")
        if not 0.0 <= self.dpp_theta < 1.0:
            bad.append("dpp_theta must lie in [0, 1)")
        if self.rerank not in ("dpp", "slate", "none"):
            bad.append(f"rerank {self.rerank!r} is not one of 'dpp', 'slate', 'none'")
        if not 0 <= self.cold_start_slot_min <= self.cold_start_slot_max:
            bad.append("need 0 <= cold_start_slot_min <= cold_start_slot_max")
        if self.max_post_age_s <= 0:
            bad.append("max_post_age_s must be > 0")
        if bad:
            raise ConfigError("recsys.params (foryou): " + "; ".join(bad))
        return self

    @classmethod
    def from_params(cls, overrides: dict[str, Any]) -> ForYouParams:
        """Defaults with ``recsys.params`` overrides; an unknown key is a config error listing the known ones."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ConfigError(
                f"recsys.params: unknown key(s) {', '.join(unknown)} for recommender 'foryou'; "
                f"allowed: embedder, value_model, {', '.join(sorted(known))}"
            )
        return replace(cls(), **overrides).check()
