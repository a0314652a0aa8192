"""The ``socium episodes`` config: which scenarios, modes and models, and how far each episode may run.

One validated object so a run directory can record exactly what produced it (the runner refuses
to continue a run whose stored config differs). Keys mirror the dyadic-episodes issue; unknown
keys are errors because a misspelt ``include_environmnet`` silently leaving ground truth hidden
(or shown) would invalidate a comparison between modes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from socium.config.base import StrictNumbers
from socium.config.llm import LLMConfig
from socium.config.loading import read_yaml_mapping, validate_dict
from socium.episodes.prompts import MAX_SCRIPT_TURNS
from socium.trace.rundir import default_out

#: The most instances / scenarios / repeats of one kind in an episodes config: each is an episode of model calls
#: (tens of seconds with a real model), so 10^5 is already days; past it a typo (``repeats: 1e9``) was accepted
#: and ran until killed.
MAX_EPISODE_ITEMS = 100_000

EpisodeMode = Literal["agents", "mindreaders", "script"]
ALL_MODES: tuple[EpisodeMode, ...] = ("agents", "mindreaders", "script")


class ExecutorConfig(StrictNumbers):
    """Where episodes run: in this process (default; tests) or spread over Ray actors."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["inprocess", "ray"] = Field("inprocess", description="inprocess or ray.")
    concurrency: int = Field(
        1, ge=1, description="Episodes in flight at once per process (asyncio); helps HTTP backends."
    )
    parallel: int = Field(
        2, ge=1, description="ray: number of actors, each with its own backend (model loaded once each)."
    )
    address: str | None = Field(None, description="ray: cluster address for ray.init; null starts Ray locally.")


class TasksConfig(StrictNumbers):
    """Procedural tasks with rule-based goal scores (see :mod:`.tasks`)."""

    model_config = ConfigDict(extra="forbid")

    # bounds (here, on repeats and sotopia.n): every instance is a generated task and an episode of model calls
    mutual_friend: int = Field(0, ge=0, le=MAX_EPISODE_ITEMS, description="Cooperative mutual-friend instances.")
    bargaining: int = Field(0, ge=0, le=MAX_EPISODE_ITEMS, description="Competitive bargaining instances.")
    n_friends: int = Field(5, ge=1, le=20, description="Friends per list in mutual-friend tasks.")


class SotopiaConfig(StrictNumbers):
    """SOTOPIA scenarios, judged by the LLM judge only (they have no rule-based score)."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(None, description="Folder with SOTOPIA's JSONL exports; null: no SOTOPIA episodes.")
    env_ids: list[str] | None = Field(None, description="Scenarios to run; null: drawn from all (or hard ones).")
    n: int = Field(
        0,
        ge=0,
        le=MAX_EPISODE_ITEMS,
        description="Number of scenarios (with env_ids: at most len(env_ids); 0 there means all).",
    )
    hard_only: bool = Field(False, description="Draw only from hard_env_ids.txt when env_ids is null.")

    @model_validator(mode="after")
    def _needs_path(self) -> SotopiaConfig:
        if (self.n > 0 or self.env_ids) and not self.path:
            raise ValueError("sotopia.path is required when sotopia.n or sotopia.env_ids is set")
        if self.env_ids is not None and self.n > len(self.env_ids):
            raise ValueError(f"sotopia.n ({self.n}) exceeds the {len(self.env_ids)} listed env_ids")
        return self

    @property
    def count(self) -> int:
        if self.env_ids is not None:
            return self.n or len(self.env_ids)
        return self.n


class EpisodesConfig(StrictNumbers):
    """Scenarios x modes x repeats of dyadic episodes, their models and their limits."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        "episodes", min_length=1, max_length=100, description="Run name (default out: runs/<name>-seed<seed>)."
    )
    seed: int = Field(0, ge=0, description="Root seed: task generation, character draws and request seeds.")
    out: str | None = Field(None, description="Run directory; holds episodes.duckdb, summary and plots.")
    llm: LLMConfig = Field(
        default_factory=LLMConfig, description="The model playing the characters (and writing scripts)."
    )
    judge_llm: LLMConfig | None = Field(None, description="SOTOPIA-Eval judge model; null: no judge.")
    modes: list[EpisodeMode] = Field(default_factory=lambda: list(ALL_MODES), min_length=1)
    tasks: TasksConfig = Field(default_factory=TasksConfig)
    sotopia: SotopiaConfig = Field(default_factory=SotopiaConfig)
    repeats: int = Field(
        1, ge=1, le=MAX_EPISODE_ITEMS, description="Episodes per (scenario, mode), each with its own request seeds."
    )
    max_turns: int = Field(20, ge=1, le=MAX_SCRIPT_TURNS, description="Turn cap per episode (script length cap too).")
    max_none_streak: int = Field(2, ge=1, description="Consecutive 'none' (or invalid) turns that end an episode.")
    include_environment: bool = Field(
        False, description="Show environment-only ground truth (e.g. the mutual friend) to agents and script writers."
    )
    max_turn_chars: int = Field(1000, ge=1, description="Each quoted turn is cut to this many characters in prompts.")
    argument_chars: int = Field(
        600,
        ge=16,
        le=1000,
        description=(
            "maxLength of each turn's argument in the schema sent for constrained "
            "decoding, the same in every mode so utterance lengths stay comparable."
        ),
    )
    script_max_tokens: int = Field(1536, ge=1, description="Completion-token cap of a script-mode call.")
    answer_max_tokens: int = Field(48, ge=1, description="Completion-token cap of the end-of-episode answer questions.")
    judge_max_tokens: int = Field(2048, ge=1, description="Completion-token cap of a judge call.")
    judge_reasoning_chars: int = Field(
        400, ge=1, le=4000, description="maxLength of each reasoning string in the schema sent to the judge."
    )
    prompt_cache_mb: int = Field(
        512,
        ge=0,
        description="embedded backend with llm.reproducible: false only: RAM for llama.cpp's prompt-prefix KV cache "
        "(0 disables; the reproducible default evaluates every prompt from scratch).",
    )
    reask: bool = Field(True, description="Re-ask once with the validation error before recording a call as invalid.")
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)

    @field_validator("modes")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"modes must not repeat: {v}")
        return v

    @model_validator(mode="after")
    def _something_to_run(self) -> EpisodesConfig:
        if self.tasks.mutual_friend + self.tasks.bargaining + self.sotopia.count == 0:
            raise ValueError("nothing to run: set tasks.mutual_friend, tasks.bargaining or sotopia.n / env_ids")
        return self

    def out_dir(self) -> Path:
        return Path(self.out) if self.out else default_out(self.name, f"-seed{self.seed}")

    def canonical_json(self) -> str:
        """Everything that determines results; ``out``, the executor and the prompt cache only decide where
        and how fast."""
        data = self.model_dump(mode="json", exclude={"out", "executor", "prompt_cache_mb"})
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    def config_hash(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()


def episodes_config_from_dict(
    data: dict[str, Any], overrides: list[str] | None = None, source: str = "<dict>"
) -> EpisodesConfig:
    """Validate a mapping after ``key.path=value`` overrides; errors name the key path."""
    return validate_dict(EpisodesConfig, data, overrides, source)


def load_episodes_config(path: str | Path, overrides: list[str] | None = None) -> EpisodesConfig:
    """Load a YAML episodes config; ``overrides`` as for ``socium run --set``."""
    return episodes_config_from_dict(read_yaml_mapping(path), overrides, source=str(path))
