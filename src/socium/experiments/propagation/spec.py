"""The propagation study's spec, at the bottom of its rooms: ``PropagationSpec`` with its ``cv:`` and
``counterfactual:`` blocks.

Why its own module, below everything that runs it: the cross-validation, the transfer scoring, the simulator
configs and the study all read the spec, so each types it with this class (they took it as ``Any`` while the
spec sat in the study module at the top). It imports only the data room (the trees' default horizon) and the
shared experiment spec, never a runner.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from socium.config.base import StrictNumbers
from socium.core.intervals import MAX_BOOT, N_BOOT
from socium.experiments.propagation.data.realcascades import DEFAULT_HORIZON_MIN
from socium.experiments.spec import PATH_FIELD, ExperimentSpec

#: The most replicas per cascade (``cv.runs``). Why: the replicas are disjoint copies of the cascade's population
#: in one run, built as rows in memory before the run starts, so ``cv.runs: 1e9`` grew to out-of-memory after the
#: experiment folder was written. 1,000 copies of a 1,000-user tree are 10^6 agents (~0.8 GB at 814 B/agent);
#: the mean curve of 40 replicas already moves NRMSE by under 0.01 (docs/results.md).
MAX_REPLICAS = 1000
#: The most resamples of the per-fold fit (``cv.fit_bootstrap``): each refits every delay family, seconds apiece.
MAX_FIT_BOOT = 10_000

CVModel = Literal["ic_pooled", "calibrated", "llm", "forecast_sim"]


class CVSpec(StrictNumbers):
    model_config = ConfigDict(extra="forbid")

    folds: int = Field(5, ge=2, le=1000, description="Number of folds (cascades split at random, seeded).")
    seed: int = Field(0, ge=0, description="Seed of the fold split and of the runs.")
    models: list[CVModel] = Field(["ic_pooled", "calibrated"], description="Models to score.")
    runs: int = Field(
        1,
        ge=1,
        le=MAX_REPLICAS,
        description="Independent replicas per cascade and model (disjoint copies in one run); the prediction is their "
        "mean curve.",
    )
    ic_p: float = Field(0.8039, ge=0, le=1, description="ic_pooled's p_repost (pooled from the embedded-model runs).")
    calibrated_p: float = Field(1.0, ge=0, le=1, description="calibrated/llm-null p_repost per exposure.")
    step_minutes: float = Field(1.0, gt=0, description="Step length of the calibrated and llm models.")
    families: list[str] = Field(
        default_factory=lambda: ["lognormal", "weibull", "lomax", "lognormal_mixture"],
        description="Delay families tried on each train split (lowest AIC kept).",
    )
    root_effects: bool = Field(
        True,
        description="Fit source-author audience speeds on the train folds (propfit.root_effects); false: pooled law "
        "for every author.",
    )
    fit_bootstrap: int = Field(
        0,
        ge=0,
        le=MAX_FIT_BOOT,
        description="Bootstrap resamples for the per-fold fit's CIs (0: point fit only).",
    )
    split: Literal["random", "chronological"] = Field(
        "random",
        description="random: seeded folds; chronological: cascades ordered by posting time and cut into `folds` "
        "blocks, block k scored by a fit on blocks 0..k-1 (train on earlier cascades, score later ones).",
    )
    bias_calibration: bool = Field(
        False,
        description="Also score forecast_bc: the forecast with its growth after observe_minutes scaled per curve by "
        "the median log-growth ratio real / forecast on the fold's training cascades (forecast/bias.py).",
    )

    @model_serializer(mode="wrap")
    def _omit_default_split(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave ``split`` out while it is 'random' and ``bias_calibration`` while false, so every spec written
        before those keys dumps as it did."""
        data = handler(self)
        if data.get("split") == "random":
            del data["split"]
        if data.get("bias_calibration") is False:
            del data["bias_calibration"]
        return data


LABEL_EFFECT = 0.247
"""Relative drop in sharing of a labelled false post (Martel & Rand 2024, 21 experiments)."""
PREBUNK_EFFECT = 0.19
"""Relative drop in sharing by an inoculated user (Lu et al. 2023, d = 0.24, probit at a 0.5 base rate)."""


class _Cfg(StrictNumbers):
    model_config = ConfigDict(extra="forbid")


class StrategySpec(_Cfg):
    """One arm: what the platform does from the action minute on (keys as in ``moderation:``)."""

    remove: bool = Field(False, description="Remove the post and its reposts: no reshare after the action.")
    downrank: float = Field(
        1.0, ge=0, le=1, description="Rank factor: the share of would-be reshares a down-ranked post keeps (1: none)."
    )
    label: bool = Field(False, description="Show a fact-check label: each later reshare drops by label_effect.")
    prebunk: float = Field(
        0.0, ge=0, le=1, description="Share of users still to react who are inoculated (each drops by prebunk_effect)."
    )


def default_strategies() -> dict[str, StrategySpec]:
    return {
        "remove": StrategySpec(remove=True),
        "downrank": StrategySpec(downrank=0.5),
        "label": StrategySpec(label=True),
        "prebunk": StrategySpec(prebunk=0.5),
    }


class CounterfactualSpec(_Cfg):
    """``counterfactual:`` in a propagation spec (needs ``observe_minutes`` and ``cv:``)."""

    strategies: dict[str, StrategySpec] = Field(
        default_factory=default_strategies,
        description="Arm name -> {remove, downrank, label, prebunk}; keys combine (e.g. {label: true, downrank: 0.5}).",
    )
    act_minutes: list[int] = Field(
        default_factory=list,
        description="Minutes at which the platform acts (each >= observe_minutes); empty: at observe_minutes.",
    )
    label_effect: float = Field(
        LABEL_EFFECT, ge=0, le=1, description="Relative drop in a labelled post's reshares (Martel & Rand 2024: 0.247)."
    )
    prebunk_effect: float = Field(
        PREBUNK_EFFECT, ge=0, le=1, description="Relative drop in an inoculated user's reshares (Lu et al. 2023)."
    )
    bootstrap: int = Field(
        N_BOOT, ge=0, le=MAX_BOOT, description="Resamples of the two-level bootstrap (0: no intervals)."
    )

    @model_validator(mode="after")
    def _arms(self) -> CounterfactualSpec:
        if not self.strategies:
            raise ValueError("counterfactual.strategies: name at least one arm")
        for name in self.strategies:
            if not name or "@" in name or name == "none":
                raise ValueError(
                    f"counterfactual.strategies: arm name {name!r} must be non-empty, without '@', not 'none'"
                )
        return self

    def minutes_for(self, observe_minutes: int) -> list[int]:
        return sorted(set(self.act_minutes)) or [observe_minutes]


def fit_file(spec: PropagationSpec) -> str | None:
    """The saved fit a spec names: ``timing_file``, else ``base.timing.params_file`` (None: none)."""
    if getattr(spec, "timing_file", None):
        return str(spec.timing_file)
    timing = (spec.base or {}).get("timing")
    return str(timing["params_file"]) if isinstance(timing, dict) and timing.get("params_file") else None


class PropagationSpec(ExperimentSpec):
    experiment: Literal["propagation"] = "propagation"
    name: str = "propagation"
    cascades: list[str] = Field(
        default_factory=list, description="Twitter15 source tweet ids; empty: a seeded sample of OASIS's list."
    )
    sample: int = Field(
        5,
        ge=1,
        description="How many OASIS Twitter15 cascades to sample when neither `cascades` nor `tree_files` is given "
        "(setting it with either is an error).",
    )
    sample_seed: int = Field(0, ge=0, description="Seed of that sample.")
    sample_max_users: int | None = Field(None, ge=2, description="Sample only cascades with at most this many users.")
    tree_files: list[str] = Field(
        json_schema_extra=PATH_FIELD,
        default_factory=list,
        description="Your own trees in the Ma et al. format (id = file stem).",
    )
    source_texts: dict[str, str] = Field(
        default_factory=dict, description="Source tweet text per cascade id (else OASIS's list)."
    )
    dataset: Literal["twitter15", "ced"] = Field(
        "twitter15",
        description="Where `cascades` ids and the sample come from: Twitter15 (OASIS's list) or CED's Weibo repost "
        "cascades posted before 2013-07-01 (socium.experiments.propagation.data.ced; sampled from all of them).",
    )
    min_observed: int | None = Field(
        None,
        ge=1,
        description="dataset: ced only: keep cascades with at least this many reshares within observe_minutes (a "
        "selection on the observed prefix only, as SEISMIC's evaluation does: the window NRMSE of a cascade that has "
        "not started is normalised by almost nothing).",
    )
    tarball: str | None = Field(
        None,
        json_schema_extra=PATH_FIELD,
        description="The data set's archive (Twitter15 trees tarball; CED: its tarball or CED_Dataset folder); "
        "default: the data folder.",
    )
    topics_csv: str | None = Field(
        None, json_schema_extra=PATH_FIELD, description="OASIS all_topics.csv (default: shared data)."
    )
    oasis_users_dir: str | None = Field(
        None, json_schema_extra=PATH_FIELD, description="OASIS per-topic user CSVs (default: shared data)."
    )
    horizon_min: float | None = Field(DEFAULT_HORIZON_MIN, description="Drop real nodes later than this (minutes).")
    max_users: int | None = Field(None, ge=2, description="Cap the population at the earliest N users of each tree.")
    activation: float = Field(0.3, gt=0, le=1, description="Probability that an agent is active in a step.")
    follows: Literal["tree", "real", "both"] = Field(
        "both", description="Follow edges: child->parent of the tree, OASIS's real ones, or both."
    )
    extra_follows: int = Field(0, ge=0, description="Random extra followees per agent (noise edges).")
    minutes: int = Field(150, ge=1, description="Comparison window in minutes.")
    cv: CVSpec | None = Field(
        None,
        description="Cross-validated scoring: {folds, seed, models, runs, ...}; fit timing on train folds, score "
        "held-out cascades (experiments/propcv.py).",
    )
    timing_file: str | None = Field(
        None,
        json_schema_extra=PATH_FIELD,
        description="A saved fit (`socium fit propagation`'s JSON; base.timing.params_file works too): score it on "
        "these trees with replicas (cv.runs, default 40) and no refit; cv: may give models, runs, seed only.",
    )
    observe_minutes: int | None = Field(
        None,
        ge=1,
        description="Forecast from an observed prefix (needs cv:): the first m minutes of each held-out cascade are "
        "observed, its speed is inferred from them, the rest is simulated; scored on minutes m..minutes only.",
    )
    counterfactual: CounterfactualSpec | None = Field(
        None,
        description="Interventions on the conditioned forecast (needs observe_minutes): {strategies: {name: {remove, "
        "downrank, label, prebunk}}, act_minutes, label_effect, prebunk_effect}; change in reach with two-level "
        "bootstrap intervals (cascades, replicas).",
    )

    @model_serializer(mode="wrap")
    def _omit_default_dataset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave ``dataset`` out while it is Twitter15, so every spec written before it existed dumps as before."""
        data = handler(self)
        if data.get("dataset") == "twitter15":
            del data["dataset"]
        if data.get("min_observed", 0) is None:
            del data["min_observed"]
        return data

    @model_validator(mode="after")
    def _sample_only_without_explicit_trees(self) -> PropagationSpec:
        given = [k for k in ("sample", "sample_seed", "sample_max_users") if k in self.model_fields_set]
        if given and (self.cascades or self.tree_files):
            which = "cascades" if self.cascades else "tree_files"
            raise ValueError(f"{', '.join(given)}: sampling applies only when no trees are named; remove it or {which}")
        return self

    @model_validator(mode="after")
    def _min_observed_on_ced(self) -> PropagationSpec:
        if self.min_observed is not None and (self.dataset != "ced" or self.observe_minutes is None):
            raise ValueError(
                "min_observed: selects CED cascades by their observed prefix; needs dataset: ced and observe_minutes"
            )
        return self

    @model_validator(mode="after")
    def _forecast_in_cv(self) -> PropagationSpec:
        if self.observe_minutes is not None:
            if fit_file(self):  # cv: without the fit would refit on the very cascades to be forecast
                raise ValueError(
                    f"observe_minutes: a saved fit ({fit_file(self)}) forecasts with `socium forecast --fit FILE "
                    "--cascades ...` (never refitted); a spec's observe_minutes is the cross-validation's, which "
                    "fits its own folds"
                )
            if self.cv is None:
                raise ValueError(
                    "observe_minutes: the forecast is scored in cross-validation here (add cv:); to apply a saved "
                    "fit use `socium forecast`"
                )
            if self.observe_minutes >= self.minutes:
                raise ValueError(f"observe_minutes: {self.observe_minutes} leaves nothing of minutes={self.minutes}")
        if self.cv is not None and "forecast_sim" in self.cv.models:
            if self.observe_minutes is None:
                raise ValueError("cv.models: forecast_sim is the prefix-conditioned forecast; set observe_minutes")
            if self.follows != "tree" or self.max_users is not None:
                raise ValueError(
                    "cv.models: forecast_sim runs on the whole tree population; needs follows: tree, no max_users"
                )
        if self.counterfactual is not None:
            if self.observe_minutes is None:
                raise ValueError("counterfactual: interventions act on the conditioned forecast; set observe_minutes")
            for a in self.counterfactual.act_minutes:
                if not self.observe_minutes <= a < self.minutes:
                    raise ValueError(
                        f"counterfactual.act_minutes: {a} must lie in [observe_minutes={self.observe_minutes}, "
                        f"minutes={self.minutes})"
                    )
        return self

    @field_validator("cascades", mode="before")
    @classmethod
    def _ids_as_text(cls, v: Any) -> Any:
        """Tweet ids written unquoted in YAML arrive as ints; they are names, not numbers."""
        return [str(x) for x in v] if isinstance(v, list) else v
