"""Config sections of how and when agents act: rule-based policy, LLM-agent prompting, surveys, interviews
and timing (activation or exposure-driven)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from socium.config.base import InputFile, OmitWhenDefault, PerspectiveName, StrictNumbers, _Cfg
from socium.core.actions import DEFAULT_LLM_ACTIONS, PRESET_ACTIONS, types_where


class MemoryConfig(StrictNumbers):
    """``llm_agents.memory``: which memory LLM agents have and how the stream scores and reflects."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["window", "stream"] = Field(
        "window",
        description="window: the last llm_agents.memory_size own actions; "
        "stream: scored retrieval (Generative Agents).",
    )
    importance: Literal["heuristic", "llm"] = Field(
        "heuristic",
        description="stream: importance 1..10 from a fixed table (heuristic) or rated by the model in one call per "
        "agent-step (llm).",
    )
    recency_decay: float = Field(
        0.99,
        gt=0,
        le=1,
        description="stream: recency weight per simulated hour since the entry (GA: 0.995 per game hour).",
    )
    weights: tuple[float, float, float] = Field(
        (1.0, 1.0, 1.0),
        description="stream: weights of (recency, importance, relevance), each min-max scaled to [0, 1].",
    )
    observe_feed: bool = Field(True, description="stream: store each feed item an agent was shown as an observation.")
    reflect_every: int | None = Field(
        None,
        ge=1,
        description="stream: reflect every this many steps in which the agent was active (null: never by count).",
    )
    reflect_threshold: float | None = Field(
        30.0,
        gt=0,
        description="stream: reflect once the importance of entries since the last reflection exceeds this (GA: 150; "
        "null: never by importance).",
    )
    reflection_insights: int = Field(2, ge=1, le=5, description="stream: insights a reflection writes back.")
    reflection_sources: int = Field(15, ge=1, le=100, description="stream: most recent entries a reflection reads.")
    max_tokens: int = Field(
        300,
        ge=20,
        le=4000,
        description="stream: token budget of the memory section of a prompt (about 4 characters per token).",
    )
    embedder: str = Field(
        "minilm",
        description="stream: relevance embedder: minilm (offline MiniLM), hashing, or a sentence-transformers model.",
    )


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


class LLMAgentConfig(_Cfg):
    """How LLM agents are prompted; what each perspective is shown is fixed by ``perspective``."""

    actions: list[str] = Field(
        default_factory=lambda: list(DEFAULT_LLM_ACTIONS["x"]),
        description="Actions offered to LLM agents: any of the platform preset's actions "
        f"(all {len(PRESET_ACTIONS['x'])} on 'x'). Default: "
        + ", ".join(DEFAULT_LLM_ACTIONS["x"])
        + " on 'x'; on 'reddit': "
        + ", ".join(DEFAULT_LLM_ACTIONS["reddit"])
        + ".",
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
    group_size: int = Field(
        8,
        ge=1,
        le=64,
        description="Perspectives that see everyone (omniscient, omniscient_agents): agents in one group, written by "
        "one narrator call or shown to each other.",
    )
    ground_truth: str | None = Field(None, description="An environment-only fact (e.g. whether a rumour is true).")
    ground_truth_visible_to: list[PerspectiveName] = Field(
        default_factory=list, description="Perspectives whose prompts include ground_truth (none by default)."
    )
    reask: bool = Field(True, description="Re-ask once with the validation error before recording invalid output.")
    replay_from: Annotated[str | None, InputFile(run_dir=True)] = Field(
        None, description="A run directory whose recorded llm_calls answer every request."
    )
    group_messages: int = Field(5, ge=0, le=50, description="Recent messages shown of each group the agent belongs to.")
    groups_listed: int = Field(
        5,
        ge=0,
        le=50,
        description="Other groups (newest first) shown as joinable when "
        + " or ".join(types_where(needs="listed_groups"))
        + " is offered.",
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
        0,
        ge=0,
        le=20,
        description="Latest comments shown under each post (needed for "
        + " / ".join(types_where(needs="comments"))
        + ").",
    )
    persona_fields: list[Literal["bio", "persona", "age", "gender", "mbti", "country", "profession", "interests"]] = (
        Field(
            default=["bio", "interests"],
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
    params_file: Annotated[str | None, InputFile(lambda s: s.kind == "exposure" and not s.params)] = Field(
        None, description="JSON file written by `socium fit propagation` (inline params win over it)."
    )
    background: bool = Field(True, description="exposure: also wake agents by their hourly activation probabilities.")
    max_delay_min: float | None = Field(
        None, gt=0, description="exposure: ignore reactions later than this many minutes (bounds the schedule)."
    )
    condition_minute: Annotated[float | None, OmitWhenDefault()] = Field(
        None,
        gt=0,
        description="exposure: treat minutes before this as an observed prefix (replayed by seed_actions): a post "
        "made before it wakes each follower only after it, the delay drawn from the follower's law truncated to "
        "'after this minute' (forecasting a cascade from its first minutes).",
    )

    @model_validator(mode="after")
    def _params_needed(self) -> TimingConfig:
        if self.kind == "exposure" and not (self.params or self.params_file):
            raise ValueError(
                "timing.kind 'exposure' needs timing.params or timing.params_file (see `socium fit propagation`)"
            )
        if self.kind == "activation" and self.condition_minute is not None:  # it did nothing, and was hashed
            raise ValueError(
                "timing.condition_minute applies to timing.kind 'exposure' only (activation draws have no delays to "
                "condition); remove it or set timing.kind: exposure"
            )
        return self
