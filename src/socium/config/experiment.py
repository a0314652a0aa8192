"""The root of the experiment config (``ExperimentConfig``): every section, cross-section checks, the hash."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import Annotated

from pydantic import Field, model_validator

from socium.config.agents import (
    InterviewConfig,
    LLMAgentConfig,
    PolicyConfig,
    SurveyConfig,
    TimingConfig,
)
from socium.config.base import NotHashed, PerspectiveName, _Cfg, not_hashed
from socium.config.executor import ExecutorConfig
from socium.config.llm import LLMConfig
from socium.config.moderation import ModerationConfig, RolesConfig
from socium.config.world import (
    GraphConfig,
    PlatformConfig,
    PopulationConfig,
    RecsysConfig,
    SeedAction,
    SeedPost,
)
from socium.core.actions import ACTION_TYPES, DEFAULT_LLM_ACTIONS, PRESET_ACTIONS, DoNothing, meta_of

# Seeds and ids land in DuckDB BIGINT columns and numpy uint64 keys: both take any value below 2**63.
MAX_SEED = 2**63 - 1


#: The longest simulated span a run may cover (10,000 years): past it dates and hours overflow.
MAX_SIM_MINUTES = 10_000 * 366 * 24 * 60


class ExperimentConfig(_Cfg):
    name: str = Field("experiment", description="Human label for the run.")
    seed: int = Field(
        0, ge=0, le=MAX_SEED, description="Root seed (below 2**63); every random stream is derived from it."
    )
    steps: Annotated[int, NotHashed()] = Field(
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
    perspective: PerspectiveName = Field(
        "local",
        description="What each agent may see: local, mindreader, omniscient, omniscient_agents or a perspective "
        "registered in socium.core.perspective (the table says what each one sees).",
    )
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
    executor: Annotated[ExecutorConfig, NotHashed()] = Field(
        default_factory=ExecutorConfig, description="Where policies run (not hashed)."
    )
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
    def _time_fits(self) -> ExperimentConfig:
        """The last step's simulated time and date must exist. Why here: they overflowed only when the run
        reached them (OverflowError tracebacks after the run folder and step 0 were written)."""
        minutes = self.steps * self.step_minutes * self.time_magnification
        if not minutes <= MAX_SIM_MINUTES:
            raise ValueError(
                f"steps x step_minutes x time_magnification = {minutes:.4g} simulated minutes, more than "
                f"{MAX_SIM_MINUTES:.4g} (10,000 years)"
            )
        if self.start_datetime is not None:
            try:
                self.start_datetime + timedelta(minutes=minutes)
            except OverflowError:
                raise ValueError(
                    f"start_datetime {self.start_datetime} + {minutes:.4g} simulated minutes "
                    f"(steps x step_minutes x time_magnification) is past the year 9999"
                ) from None
        return self

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
            raise ValueError(f"llm_agents.actions: offer at least one action (e.g. {DoNothing.type_name})")
        on_comments = [a for a in ac.actions if a in ACTION_TYPES and meta_of(a).needs == "comments"]
        if on_comments and not ac.comments_per_post:  # the action table's precondition
            raise ValueError(
                f"llm_agents.comments_per_post: must be at least 1 when {' or '.join(on_comments)} "
                f"{'is' if len(on_comments) == 1 else 'are'} offered (agents can act only on comments they are shown)"
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
        data = self.model_dump(mode="json", exclude=set(not_hashed(type(self))))
        return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


#: Top-level keys that do not change the world (marked :class:`~socium.config.base.NotHashed`), so not the
#: config hash (see ExperimentConfig.config_hash).
HASH_EXCLUDED = not_hashed(ExperimentConfig)
