"""The experiment config: one validated pydantic tree, loaded from YAML with a safe loader.

Validation happens before a run directory is touched, so a typo never leaves a half-written run.
Errors name the key path, the bad value and what is allowed.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from socium.agents.memory import MemoryConfig
from socium.errors import ConfigError
from socium.llm.config import LLMConfig
from socium.moderation.config import ModerationConfig, RolesConfig, Veracity

# Limits on what a config file may expand to: YAML aliases can make a few hundred bytes build
# billions of objects ("billion laughs"), so the node graph is measured before anything is built.
MAX_CONFIG_BYTES = 8 * 1024 * 1024
MAX_CONFIG_NODES = 1_000_000
# Seeds and ids land in DuckDB BIGINT columns and numpy uint64 keys: both take any value below 2**63.
MAX_SEED = 2**63 - 1
# Top-level keys that do not change the world, so not the config hash (see ExperimentConfig.config_hash).
HASH_EXCLUDED = ("executor", "steps")


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)


class PlatformConfig(_Cfg):
    preset: Literal["x", "reddit"] = Field(
        "x", description="Social-media rules: 'x' (follows, reposts, quotes) or 'reddit' (votes, comments)."
    )
    max_post_chars: int = Field(
        2000, ge=1, description="Agent text longer than this is truncated and the truncation recorded."
    )
    trend_window_steps: int = Field(24, ge=1, description="How many recent steps the `trend` action looks back.")
    search_limit: int = Field(10, ge=1, description="Results returned by search_posts / search_user.")
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
    path: str | None = Field(None, description="File for oasis_csv / reddit_json sources.")
    n_agents: int = Field(100, ge=1, description="Number of agents for the synthetic source.")
    stance: Literal["none", "uniform", "bimodal"] = Field(
        "none", description="Initial numeric stance distribution (synthetic)."
    )
    activity: Literal["diurnal", "uniform"] = Field(
        "diurnal", description="Shape of the 24 hourly activation probabilities (synthetic)."
    )
    mean_activity: float = Field(0.1, gt=0, le=1, description="Mean hourly activation probability (synthetic).")
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
        "empty",
        "edgelist",
        "profiles",
    ] = Field(
        "barabasi_albert", description="Follow-graph generator, an edge-list file, or the profiles' following lists."
    )
    path: str | None = Field(None, description="Edge-list file (SNAP format, .gz allowed) for kind 'edgelist'.")
    directed: bool = Field(False, description="Edge-list lines are directed follows (otherwise reciprocal).")
    params: dict[str, Any] = Field(
        default_factory=dict, description="Generator parameters, e.g. {m: 3} for barabasi_albert."
    )


class RecsysConfig(_Cfg):
    kind: str = Field(
        "chronological",
        description="Built-in recommender (chronological, random, reddit_hot, x, global) or a dotted path "
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


class PolicyConfig(_Cfg):
    kind: Literal["random", "independent_cascade", "threshold", "bounded_confidence", "llm", "group_llm"] = Field(
        "random",
        description="How agents decide: a rule-based null model, an LLM per agent (llm), or one LLM call per "
        "persona cluster's active members (group_llm, GA-S3).",
    )
    group_cluster_size: int = Field(
        16, ge=1, description="group_llm: mean agents per persona cluster (K = ceil(n / this))."
    )
    group_max_members: int = Field(8, ge=1, le=64, description="group_llm: most active members one call decides for.")
    group_embedder: str = Field(
        "minilm", description="group_llm: persona embedder for clustering (minilm, hashing, or a model)."
    )
    group_stance_weight: float = Field(
        1.0, ge=0, description="group_llm: weight of stance beside the unit-norm persona embedding."
    )
    p_post: float = Field(
        0.2, ge=0, le=1, description="Probability an active rule-based agent writes an original post."
    )
    p_repost: float = Field(
        0.1, ge=0, le=1, description="Independent cascade: chance to repost each exposed post once."
    )
    p_like: float = Field(0.2, ge=0, le=1, description="Random actor: chance to like an exposed post.")
    p_dislike: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Random actor: chance to dislike an exposed post it did not like (random-voting null for herding).",
    )
    herding: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Random actor, herding positive control: on a post with a positive visible score (likes - "
        "dislikes) the like chance is multiplied by 1 + herding and the dislike chance by 1 - herding, on a "
        "negative score the reverse; 0 = blind to scores (the null).",
    )
    threshold: float = Field(0.3, ge=0, le=1, description="Linear threshold: mean adoption fraction needed to repost.")
    threshold_spread: float = Field(0.1, ge=0, description="Linear threshold: per-agent thresholds ~ U(t - s, t + s).")
    epsilon: float = Field(
        0.3, gt=0, description="Bounded confidence: only authors within this stance distance influence."
    )
    mu: float = Field(0.3, gt=0, le=0.5, description="Bounded confidence: convergence rate.")
    post_on_change: float = Field(
        0.05, ge=0, description="Bounded confidence: post when stance moved at least this much."
    )


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
    action: dict[str, Any] = Field(description="The action as JSON, e.g. {type: like_post, post_id: 3}.")

    @model_validator(mode="after")
    def _valid_action(self) -> SeedAction:
        from socium.platform.actions import parse_action

        try:
            parse_action(self.action)
        except ValidationError as exc:
            raise ValueError(f"seed action {self.action!r} is not a valid action: {exc.errors()[0]['msg']}") from None
        return self


DEFAULT_LLM_ACTIONS: dict[str, tuple[str, ...]] = {
    "x": ("create_post", "repost", "quote_post", "like_post", "dislike_post", "create_comment", "follow", "do_nothing"),
    "reddit": ("create_post", "like_post", "dislike_post", "create_comment", "follow", "do_nothing"),
}


class LLMAgentConfig(_Cfg):
    """How LLM agents are prompted; what each perspective is shown is fixed by ``perspective``."""

    actions: list[str] = Field(
        default_factory=lambda: list(DEFAULT_LLM_ACTIONS["x"]),
        description="Actions offered to LLM agents: any of the platform preset's actions (all 24 on 'x'). "
        "Default: " + ", ".join(DEFAULT_LLM_ACTIONS["x"]) + " on 'x'; on 'reddit' the same without repost and "
        "quote_post.",
    )
    memory_size: int = Field(
        5,
        ge=0,
        le=50,
        description="Own recent actions shown back to an agent (window), or entries retrieved per prompt (stream).",
    )
    memory: MemoryConfig = Field(
        default_factory=MemoryConfig,
        description="Memory kind: window (recent own actions) or stream (Generative Agents retrieval + reflection).",
    )
    max_item_chars: int = Field(280, ge=20, le=4000, description="Each quoted post is cut to this many characters.")
    max_content_chars: int = Field(
        280, ge=20, le=4000, description="Cap on text an agent may write (schema maxLength)."
    )
    group_size: int = Field(8, ge=1, le=64, description="omniscient: agents written by one narrator call.")
    ground_truth: str | None = Field(None, description="An environment-only fact (e.g. whether a rumour is true).")
    ground_truth_visible_to: list[Literal["local", "mindreader", "omniscient"]] = Field(
        default_factory=list, description="Perspectives whose prompts include ground_truth (none by default)."
    )
    reask: bool = Field(True, description="Re-ask once with the validation error before recording invalid output.")
    replay_from: str | None = Field(None, description="A run directory whose recorded llm_calls answer every request.")
    group_messages: int = Field(5, ge=0, le=50, description="Recent messages shown of each group the agent belongs to.")
    groups_listed: int = Field(
        5, ge=0, le=50, description="Other groups (newest first) shown as joinable when join_group is offered."
    )
    max_actions_per_activation: int = Field(
        1, ge=1, le=10, description="Actions an LLM agent may take per activation (>1: it answers {actions: [...]})."
    )
    record_reason: bool = Field(
        False, description="Ask for a short 'reason' with each answer and store it in actions.rationale (costs tokens)."
    )
    max_reason_chars: int = Field(300, ge=20, le=2000, description="Cap on the stored and requested reason text.")
    quote_depth: int = Field(
        2,
        ge=0,
        le=10,
        description="How many links of a repost / quote chain a feed item shows (the shared post, "
        "what that one quotes, ...).",
    )
    comments_per_post: int = Field(
        0, ge=0, le=20, description="Latest comments shown under each post (needed for like_comment / dislike_comment)."
    )
    persona_fields: list[Literal["bio", "persona", "age", "gender", "mbti", "country", "profession", "interests"]] = (
        Field(
            default_factory=lambda: ["bio", "interests"],
            description="Profile fields shown to an LLM agent about itself, in this order (those its population "
            "source provides; OASIS: persona, age, gender, mbti, country, profession, interests).",
        )
    )


class SurveyConfig(_Cfg):
    every: int = Field(ge=1, description="Ask after every this many steps (after steps k-1, 2k-1, ...).")
    question: str = Field(description="The question put to agents.")
    sample_fraction: float = Field(1.0, gt=0, le=1, description="Seeded fraction of agents asked each time.")
    scale: tuple[float, float] = Field((-1.0, 1.0), description="Numeric answer range (min, max).")


class InterviewConfig(_Cfg):
    """A question put to LLM agents during the run, with their memory at that step (table ``interviews``)."""

    step: int = Field(ge=0, description="Asked after this step's actions, in its transaction.")
    agents: list[int] = Field(min_length=1, description="Agent ids asked.")
    question: str = Field(min_length=1, description="The question.")


class ExecutorConfig(_Cfg):
    kind: Literal["inprocess", "ray"] = Field("inprocess", description="Where policies run.")
    address: str | None = Field(None, description="Ray cluster address; null starts Ray locally.")
    actors: int = Field(2, ge=1, description="Ray actors holding agent shards.")
    concurrency_per_actor: int = Field(16, ge=1, description="LLM calls in flight per actor.")
    step_chunk: int = Field(
        1024,
        ge=0,
        description="LLM agents observed and decided together within a step (0: the whole step at once). "
        "Bounds the memory a step holds in flight (observations, prompts, answers) by the chunk instead of by the "
        "active agents; decisions are still applied after the last chunk, so the trace is the same for any value. "
        "Raised to twice what can be in flight (llm.max_concurrency in-process, actors x concurrency_per_actor "
        "with Ray).",
    )
    num_gpus: float = Field(0.0, ge=0, description="GPUs per actor (for in-process vLLM engines).")
    cpus_per_actor: float | None = Field(
        None,
        ge=0,
        description="Ray CPUs each actor reserves; null: min(1, cluster CPUs / actors) so any actor count fits.",
    )
    placement: Literal["spread", "pack"] = Field(
        "spread", description="Ray actor placement: 'spread' over nodes (SPREAD strategy) or 'pack' (Ray's default)."
    )
    resources: dict[str, float] = Field(
        default_factory=dict,
        description="Custom Ray resources each actor requires, e.g. {vllm_node: 1} to pin actors to GPU nodes.",
    )
    base_urls: list[str] = Field(
        default_factory=list,
        description="OpenAI-compatible servers shared out among actors (actor i gets every actors-th URL, or URL i "
        "mod n).",
    )
    max_actor_restarts: int = Field(
        3,
        ge=0,
        description="Times one shard's actor may be re-created within a step after it dies before the run fails.",
    )
    ray_init: dict[str, Any] = Field(
        default_factory=dict, description="Extra ray.init keyword arguments (e.g. object_store_memory, runtime_env)."
    )

    @field_validator("ray_init")
    @classmethod
    def _known_ray_init_keys(cls, v: dict[str, Any]) -> dict[str, Any]:
        """Why here: a misspelt ray.init argument would otherwise fail only when Ray starts, after the
        run directory exists (or never, with the in-process executor)."""
        if not v:
            return v
        import inspect

        import ray  # only when ray_init is set: importing Ray costs about a second

        params = inspect.signature(ray.init).parameters
        allowed = sorted(n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_KEYWORD)
        bad = sorted(k for k in v if k not in allowed and not k.startswith("_"))
        if bad:
            raise ValueError(f"unknown ray.init argument(s) {', '.join(bad)}; allowed: {', '.join(allowed)}")
        return v


class TimingConfig(_Cfg):
    """When agents act. 'activation' (default): each agent is active in a step with its hourly
    probability. 'exposure': a post wakes each follower after a fitted response delay
    (socium.simulator.timing); hourly activation still applies on top when ``background`` is true."""

    kind: Literal["activation", "exposure"] = Field(
        "activation",
        description="'activation': per-step hourly activation draws; 'exposure': posts wake followers after a fitted "
        "response delay.",
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Inline timing parameters as written by `socium fit propagation` ({delay: {family, ...}, "
        "b_author, b_root, user_sigma}); override params_file.",
    )
    params_file: str | None = Field(None, description="JSON file written by `socium fit propagation`.")
    background: bool = Field(True, description="exposure: also wake agents by their hourly activation probabilities.")
    max_delay_min: float | None = Field(
        None, gt=0, description="exposure: ignore reactions later than this many minutes (bounds the schedule)."
    )

    @model_validator(mode="after")
    def _params_needed(self) -> TimingConfig:
        if self.kind == "exposure" and not (self.params or self.params_file):
            raise ValueError(
                "timing.kind 'exposure' needs timing.params or timing.params_file (see `socium fit propagation`)"
            )
        return self


class ExperimentConfig(_Cfg):
    name: str = Field("experiment", description="Human label for the run.")
    seed: int = Field(
        0, ge=0, le=MAX_SEED, description="Root seed (below 2**63); every random stream is derived from it."
    )
    steps: int = Field(
        10,
        ge=1,
        le=2**31 - 1,
        description="Number of steps to simulate (a stopping rule, left out of the config hash: "
        "`socium run --resume --steps N` extends a run).",
    )
    step_minutes: float = Field(60.0, gt=0, description="Simulated minutes per step.")
    start_hour: int = Field(8, ge=0, le=23, description="Hour of day at step 0 (drives hourly activation).")
    start_datetime: datetime | None = Field(
        None,
        description="Real date and time of step 0 (OASIS start_time): agents see it, steps.sim_datetime records it; "
        "sets the start hour.",
    )
    time_magnification: float = Field(
        1.0,
        gt=0,
        description="Simulated time per step = step_minutes x this (OASIS Clock k): one step stands for that much "
        "platform time.",
    )
    perspective: Literal["local", "mindreader", "omniscient"] = Field("local", description="What each agent may see.")
    platform: PlatformConfig = Field(default_factory=PlatformConfig, description="Platform rules (X- or Reddit-like).")
    population: PopulationConfig = Field(default_factory=PopulationConfig, description="Who the agents are.")
    graph: GraphConfig = Field(default_factory=GraphConfig, description="The initial follow graph.")
    recsys: RecsysConfig = Field(default_factory=RecsysConfig, description="How feeds are built.")
    policy: PolicyConfig = Field(default_factory=PolicyConfig, description="How agents decide (rule-based or LLM).")
    seed_posts: list[SeedPost] = Field(default_factory=list, description="Posts injected at given steps.")
    seed_actions: list[SeedAction] = Field(
        default_factory=list,
        description="Actions injected at given steps, after that step's seed posts (interventions such as herding "
        "treatments).",
    )
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig, description="Where policies run (not hashed).")
    llm: LLMConfig | None = Field(
        None,
        description="LLM backend settings (needed when policy.kind is 'llm'); with `llms` and no `llm`, the first of "
        "`llms`.",
    )
    llms: dict[str, LLMConfig] = Field(
        default_factory=dict,
        description="Several named LLM backends for one run (OASIS-style mixed models); population.llms routes agents "
        "to them.",
    )
    llm_agents: LLMAgentConfig = Field(default_factory=LLMAgentConfig, description="How LLM agents are prompted.")
    surveys: list[SurveyConfig] = Field(
        default_factory=list, description="Recurring questions; answers go to `surveys`."
    )
    interviews: list[InterviewConfig] = Field(
        default_factory=list, description="Questions asked at given steps (LLM agents); answers go to `interviews`."
    )
    timing: TimingConfig = Field(
        default_factory=TimingConfig,
        description="When agents act: hourly activation or exposure-driven response delays.",
    )
    roles: RolesConfig = Field(
        default_factory=RolesConfig,
        description="Agent roles: misinformation spreaders, fact-checkers, bots (docs/moderation.md).",
    )
    moderation: ModerationConfig = Field(
        default_factory=ModerationConfig,
        description="Platform interventions: fact-checks, community notes, labels, down-ranking, removal, suspension, "
        "prebunking (docs/moderation.md).",
    )

    @model_validator(mode="after")
    def _llm_needed(self) -> ExperimentConfig:
        if (
            self.start_datetime is not None
            and "start_hour" in self.model_fields_set
            and self.start_hour != self.start_datetime.hour
        ):
            raise ValueError(f"start_hour {self.start_hour} contradicts start_datetime {self.start_datetime} (set one)")
        if self.start_datetime is not None:
            self.start_hour = self.start_datetime.hour
        if "default" in self.llms:
            raise ValueError("llms: the name 'default' is reserved for the `llm` section")
        if self.llm is None and self.llms:
            self.llm = next(iter(self.llms.values()))
        for i, name in enumerate(self.population.llms):
            if name != "default" and name not in self.llms:
                raise ValueError(
                    f"population.llms[{i}]: {name!r} is not a key of llms ({', '.join(self.llms) or 'none'})"
                )
        if self.policy.kind in ("llm", "group_llm") and self.llm is None:
            raise ValueError("llm: required when policy.kind is 'llm' (e.g. llm: {backend: embedded})")
        if self.interviews and self.policy.kind not in ("llm", "group_llm"):
            raise ValueError("interviews: need policy.kind 'llm' (rule-based agents cannot be interviewed)")
        return self

    @model_validator(mode="after")
    def _offered_actions(self) -> ExperimentConfig:
        """Offered actions exist and are the preset's; the default follows the preset (no reposts on Reddit)."""
        from socium.platform.actions import ACTION_TYPES, PRESET_ACTIONS

        preset = self.platform.preset
        ac = self.llm_agents
        if "actions" not in ac.model_fields_set:
            ac.actions = list(DEFAULT_LLM_ACTIONS[preset])
        for i, a in enumerate(ac.actions):
            if a not in ACTION_TYPES:
                raise ValueError(f"llm_agents.actions[{i}]: {a!r} is not an action; allowed: {', '.join(ACTION_TYPES)}")
            if a not in PRESET_ACTIONS[preset]:
                raise ValueError(
                    f"llm_agents.actions[{i}]: {a!r} is not available on platform.preset {preset!r}; "
                    f"allowed: {', '.join(PRESET_ACTIONS[preset])}"
                )
        if not ac.actions:
            raise ValueError("llm_agents.actions: offer at least one action (e.g. do_nothing)")
        if {"like_comment", "dislike_comment"} & set(ac.actions) and not ac.comments_per_post:
            raise ValueError(
                "llm_agents.comments_per_post: must be at least 1 when like_comment or dislike_comment "
                "is offered (agents can act only on comments they are shown)"
            )
        if len(set(ac.actions)) != len(ac.actions):
            raise ValueError("llm_agents.actions: lists an action twice")
        return self

    def canonical_json(self) -> str:
        """Key-sorted JSON of the fully defaulted config, so equal configs hash equal."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    def config_hash(self) -> str:
        """Hash of what determines the world; where it runs (``executor``) is left out, so a run can be
        resumed on a different number of Ray actors and still count as the same run, and so is ``steps``
        (a stopping rule: the first N steps of a longer run are the run to N), so a run can be extended."""
        data = self.model_dump(mode="json", exclude=set(HASH_EXCLUDED))
        return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _format_error(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        val = e.get("input")
        if e["type"] == "literal_error":
            allowed = e.get("ctx", {}).get("expected", "").replace(" or ", ", ")
            lines.append(f"{loc}: {val!r} is not one of {allowed}")
        elif e["type"] == "extra_forbidden":
            lines.append(f"{loc}: unknown key (check spelling; see `socium config-schema`)")
        elif e["type"] == "value_error" and not e["loc"]:
            lines.append(e["msg"].removeprefix("Value error, "))
        elif e["type"] == "value_error":
            lines.append(f"{loc}: {e['msg'].removeprefix('Value error, ')}")
        elif e["type"] == "missing":
            lines.append(f"{loc}: required key is missing")
        else:
            shown = repr(val) if not isinstance(val, dict) else "{...}"
            lines.append(f"{loc}: {shown} is invalid: {e['msg']}")
    return f"invalid config ({source}):\n  " + "\n  ".join(lines)


def _apply_override(data: dict[str, Any], item: str) -> None:
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key.path=value")
    key, raw = item.split("=", 1)
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise ConfigError(f"--set {item!r}: empty key path")
    value = parse_yaml(raw, f"--set {key}")
    node = data
    for p in parts[:-1]:
        nxt = node.get(p)
        if nxt is None:
            nxt = node[p] = {}
        if not isinstance(nxt, dict):
            raise ConfigError(f"--set {key}: '{p}' is not a section")
        node = nxt
    node[parts[-1]] = value


M = TypeVar("M", bound=BaseModel)


def _bad_value(value: Any, path: str) -> tuple[str, str] | None:
    """The first value a JSON config cannot hold, with its key path (non-finite floats, dates, bytes...)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return (
                    f"{path}.{k!r}" if path else repr(k)
                ), f"key {k!r} is a {type(k).__name__}, keys must be strings"
            found = _bad_value(v, f"{path}.{k}" if path else k)
            if found:
                return found
        return None
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _bad_value(v, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return path, f"{value!r} is not a finite number"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path, "text holds a lone surrogate (an invalid \\ud800-\\udfff escape)"
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return None
    return path, f"a {type(value).__name__} value ({str(value)[:40]!r}) where plain text, numbers or lists are expected"


def _json_copy(data: Any, source: str) -> Any:
    bad = _bad_value(data, "")
    if bad is not None:
        raise ConfigError(f"invalid config ({source}):\n  {bad[0] or '<root>'}: {bad[1]}")
    return json.loads(json.dumps(data, allow_nan=False))


def validate_dict(
    model: type[M], data: dict[str, Any], overrides: Sequence[str] | None = None, source: str = "<dict>"
) -> M:
    """Apply ``key.path=value`` overrides, then validate into ``model``; errors name the key path.

    Shared by every YAML format socium reads (experiment configs, episode configs, experiment specs)
    so they all report bad input the same way.
    """
    data = _json_copy(data, source)  # deep copy; also rejects non-JSON values early, naming the key
    for item in overrides or []:
        _apply_override(data, item)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_error(err, source)) from None


class _ConfigLoader(yaml.SafeLoader):
    """The safe loader minus implicit timestamps: ``name: 2024-01-01`` stays the text it looks like
    (a ``date`` object cannot be stored as JSON, compared with a string or hashed canonically)."""


_ConfigLoader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in rs if tag != "tag:yaml.org,2002:timestamp"]
    for ch, rs in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _expanded_size(node: yaml.Node, where: str) -> int:
    """Nodes the document would build once aliases are expanded; refuses recursive aliases.

    Memoised per node, so measuring a billion-laughs document costs as little as reading it.
    """
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(n: yaml.Node) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in open_:
            mark = n.start_mark
            raise ConfigError(f"{where}:{mark.line + 1}: recursive YAML alias (a value that contains itself)")
        open_.add(key)
        total = 1
        if isinstance(n, yaml.SequenceNode):
            total += sum(size(c) for c in n.value)
        elif isinstance(n, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in n.value)
        open_.discard(key)
        sizes[key] = total
        return total

    return size(node)


def parse_yaml(text: str, where: str) -> Any:
    """Parse config YAML safely: no tags that build objects, no dates, alias expansion bounded.

    Why compose first: PyYAML builds aliased values by reference, so a bomb is cheap to load, but
    every later step (deep copy, JSON, pydantic) expands it; measuring the node graph before
    constructing anything refuses it while it is still a few kilobytes.
    """
    loader = _ConfigLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        n = _expanded_size(node, where)
        if n > MAX_CONFIG_NODES:
            raise ConfigError(
                f"{where}: YAML expands to {n:,} values (limit {MAX_CONFIG_NODES:,}); "
                "aliases (*name) repeated inside aliases multiply, see 'billion laughs'"
            )
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        raise ConfigError(f"{at}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:
        raise ConfigError(f"{where}: YAML nested too deeply") from None
    finally:
        loader.dispose()


def read_config_text(path: str | Path) -> str:
    """A config file's text: a regular file, bounded in size, UTF-8; errors name the file."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"config file not found: {p}")
    if not p.is_file():
        raise ConfigError(f"{p}: not a regular file (a directory or device cannot be a config)")
    size = p.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{p}: {size:,} bytes; a config may hold at most {MAX_CONFIG_BYTES:,}")
    raw = p.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{p}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the file as UTF-8"
        ) from None


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    """A YAML file's top-level mapping, read with the safe loader; errors name file and line."""
    p = Path(path)
    data = parse_yaml(read_config_text(p), str(p)) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: top level must be a mapping of config keys")
    return data


def config_from_dict(
    data: dict[str, Any], overrides: list[str] | None = None, source: str = "<dict>"
) -> ExperimentConfig:
    return validate_dict(ExperimentConfig, data, overrides, source)


def load_config(path: str | Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Load and validate a YAML config; ``overrides`` are ``key.path=value`` strings (values are YAML)."""
    return config_from_dict(read_yaml_mapping(path), overrides, source=str(path))
