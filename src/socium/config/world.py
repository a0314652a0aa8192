"""Config sections of the simulated world: platform rules, population, follow graph, recommender, seed posts
and seed actions."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from socium.config.base import InputFile, OmitWhenDefault, _Cfg
from socium.config.moderation import Veracity
from socium.core.actions import LikePost, SearchPosts, SearchUser, parse_action


class PlatformConfig(_Cfg):
    preset: Literal["x", "reddit"] = Field(
        "x", description="Social-media rules: 'x' (follows, reposts, quotes) or 'reddit' (votes, comments)."
    )
    max_post_chars: int = Field(
        2000, ge=1, description="Agent text longer than this is truncated and the truncation recorded."
    )
    trend_window_steps: int = Field(24, ge=1, description="How many recent steps the `trend` action looks back.")
    search_limit: int = Field(
        10, ge=1, description=f"Results returned by {SearchPosts.type_name} / {SearchUser.type_name}."
    )
    allow_self_rating: bool = Field(
        True, description="Agents may like or dislike their own posts and comments (OASIS allow_self_rating)."
    )
    show_score: bool = Field(
        False,
        description="Feeds show one score (likes - dislikes) instead of separate counts, as Reddit does (OASIS "
        "show_score).",
    )


class JoinAt(_Cfg):
    """Agents that sign up at the start of a step (OASIS ``sign_up``): before it they cannot act, be
    followed or be found, and the follow edges of the initial graph that touch them appear then."""

    step: int | None = Field(
        ge=1,
        description="Step at whose start the agents sign up; null: only when Python asks "
        "(Simulation.step(sign_up=...)).",
    )
    agents: list[int] = Field(min_length=1, description="Agent ids signing up.")


class PopulationConfig(_Cfg):
    source: Literal["synthetic", "oasis_csv", "reddit_json"] = Field(
        "synthetic", description="Where profiles come from."
    )
    path: Annotated[str | None, InputFile(lambda s: s.source != "synthetic")] = Field(
        None, description="File for oasis_csv / reddit_json sources."
    )
    n_agents: int = Field(100, ge=1, description="Number of agents for the synthetic source.")
    stance: Literal["none", "uniform", "bimodal"] = Field(
        "none", description="Initial numeric stance distribution (synthetic)."
    )
    activity: Literal["diurnal", "heavy_tailed", "uniform"] = Field(
        "diurnal",
        description="Shape of the 24 hourly activation probabilities (synthetic); heavy_tailed: diurnal with a "
        "wide per-agent factor (top 10% of agents ~half the activations).",
    )
    mean_activity: float = Field(0.1, gt=0, le=1, description="Mean hourly activation probability (synthetic).")
    activity_follower_corr: Annotated[float, OmitWhenDefault()] = Field(
        0.0,
        ge=-1,
        le=1,
        description="Gaussian-copula correlation between an agent's total activity and its follower count in the "
        "initial graph: after the graph is built the agents' 24-hour activity rows are permuted (not changed) so "
        "that active accounts are the big ones (> 0) or the small ones (< 0). 0 (default) keeps the rows as drawn, "
        "independent of the graph.",
    )

    goals: list[str] | dict[Literal["for", "against", "undecided"], list[str]] = Field(
        default_factory=list,
        description="Private goals. A list is assigned cyclically (agent i gets goals[i % len]); a mapping "
        "{for, against, undecided} assigns by the sign of each agent's stance (>= 0.2 for, <= -0.2 against), "
        "so no agent gets a goal that contradicts its stance.",
    )
    issue: str | None = Field(
        None,
        max_length=200,
        description="What stances are about (e.g. 'the new bike lanes on Main Street'); "
        "named in LLM prompts beside the stance. With stances and no goals, goals are derived from it.",
    )
    llms: list[str] = Field(
        default_factory=list,
        description="Named LLM backends (keys of `llms`, or 'default' for `llm`) assigned cyclically: agent i gets "
        "llms[i % len]. "
        "Without it an oasis_csv 'llm' column routes each row; unrouted agents use `llm`.",
    )
    join_schedule: list[JoinAt] = Field(
        default_factory=list,
        description="Agents that sign up mid-run: [{step, agents: [ids]}]; everyone else is there from the start.",
    )

    @model_validator(mode="after")
    def _join_once(self) -> PopulationConfig:
        seen: set[int] = set()
        for i, j in enumerate(self.join_schedule):
            if dup := seen.intersection(j.agents):
                raise ValueError(
                    f"population.join_schedule[{i}]: agent(s) {sorted(dup)} already sign up earlier in the list"
                )
            seen.update(j.agents)
        return self

    @model_validator(mode="after")
    def _path_needed(self) -> PopulationConfig:
        if self.source != "synthetic" and not self.path:
            raise ValueError(f"population.path is required when population.source is '{self.source}'")
        return self


class GraphConfig(_Cfg):
    kind: Literal[
        "barabasi_albert",
        "watts_strogatz",
        "stochastic_block",
        "core_periphery",
        "random_out",
        "twitter_like",
        "empty",
        "edgelist",
        "profiles",
    ] = Field(
        "barabasi_albert",
        description="Follow-graph generator, an edge-list file, or the profiles' following lists. Generators other "
        "than random_out and twitter_like are undirected models whose follows are all mutual; twitter_like is "
        "directed: preferential attachment on followers, triadic closure and partial follow-back.",
    )
    path: Annotated[str | None, InputFile(lambda s: s.kind == "edgelist")] = Field(
        None, description="Edge-list file (SNAP format, .gz allowed) for kind 'edgelist'."
    )
    directed: bool = Field(False, description="Edge-list lines are directed follows (otherwise reciprocal).")
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Generator parameters, e.g. {m: 3} for barabasi_albert. twitter_like: m [10] follows per "
        "newcomer; reciprocity [0.221] share of follows returned (Kwak et al. 2010: 22.1% of connected pairs "
        "mutual); triad [0.5] chance a later follow closes a triangle (Holme & Kim 2002; a modelling choice); "
        "alpha [2.276] follower-tail exponent aimed at (Kwak et al. 2010). See socium.platform.graph.generate_graph.",
    )


class RecsysConfig(_Cfg):
    kind: str = Field(
        "chronological",
        description="Built-in recommender (chronological, random, reddit_hot, x, global, foryou) or a dotted path "
        "'pkg.module:Class' (see docs/recsys.md).",
    )
    k: int = Field(5, ge=1, le=200, description="Posts per feed.")
    window_steps: int = Field(48, ge=1, description="Only posts from this many recent steps are candidates.")
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Recommender-specific options, e.g. for 'x': embedder, in_network, out_of_network "
        "(docs/recsys.md).",
    )
    following_k: int | None = Field(
        None,
        ge=0,
        le=200,
        description="Per refresh: newest posts from followees (OASIS following_post_count); set with recommended_k, "
        "replaces k.",
    )
    recommended_k: int | None = Field(
        None,
        ge=0,
        le=200,
        description="Per refresh: posts from the recommender `kind` (OASIS refresh_rec_post_count), after the "
        "followees' posts.",
    )
    rec_probability: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Chance per agent and refresh that the recommended posts are personalised by `kind` rather than "
        "random (OASIS rec_prob).",
    )

    @model_validator(mode="after")
    def _refresh_counts(self) -> RecsysConfig:
        if (self.following_k is None) != (self.recommended_k is None):
            raise ValueError("recsys.following_k and recsys.recommended_k: set both (or neither)")
        if self.following_k is not None and self.following_k + (self.recommended_k or 0) == 0:
            raise ValueError("recsys.following_k + recsys.recommended_k must be positive")
        if self.rec_probability < 1 and self.following_k is None:
            raise ValueError(
                "recsys.rec_probability: needs following_k and recommended_k (it mixes the recommended part)"
            )
        return self


class SeedPost(_Cfg):
    author: int = Field(ge=0, description="Agent id that writes the post.")
    content: str = Field(description="Post text.")
    step: int = Field(0, ge=0, description="Step at whose start the post appears.")
    veracity: Veracity | None = Field(
        None,
        description="Ground truth of the post (true, false, unverified, non-rumor), seen only by perspectives in "
        "moderation.veracity_visible_to.",
    )


class SeedAction(_Cfg):
    """An action injected for an agent at a step (after that step's seed posts, before anyone acts).

    Why: experiments need exogenous interventions recorded in the trace like any action (origin
    'seed'), e.g. the herding treatment's initial up- or down-vote by an experimenter account.
    """

    agent: int = Field(ge=0, description="Agent id that performs the action.")
    step: int = Field(0, ge=0, description="Step at whose start the action is applied.")
    action: dict[str, Any] = Field(description=f"The action as JSON, e.g. {{type: {LikePost.type_name}, post_id: 3}}.")

    @model_validator(mode="after")
    def _valid_action(self) -> SeedAction:
        try:
            parse_action(self.action)
        except ValidationError as exc:
            raise ValueError(f"seed action {self.action!r} is not a valid action: {exc.errors()[0]['msg']}") from None
        return self
