"""What a cross-validated propagation run is made of: its spec (``cv:``), the replica copies of a tree
population, and the simulator config of one model on one cascade.

Why apart from :mod:`~socium.experiments.propagation.cv.cv`: the simulator-side checks of the forecast
(:mod:`~socium.experiments.propagation.sim.simcheck`, :mod:`~socium.experiments.propagation.sim.simforecast`) must
build exactly the config the cross-validation runs, and the cross-validation runs the simulator forecast as
one of its models; with these pieces here neither imports the other.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from socium.config.base import StrictNumbers
from socium.errors import ConfigError
from socium.experiments.propagation.sim.population import run_defaults
from socium.experiments.spec import build_config

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

    @model_serializer(mode="wrap")
    def _omit_default_split(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave ``split`` out while it is 'random', so every spec written before the key dumps as it did."""
        data = handler(self)
        if data.get("split") == "random":
            del data["split"]
        return data


def replicate_rows(rows: list[Any], copies: int) -> list[Any]:
    """``copies`` disjoint copies of a population (follows stay within a copy; ids get a ``#r`` suffix)."""
    from dataclasses import replace

    n = len(rows)
    return [
        replace(
            row,
            user_id=f"{row.user_id}#{r}" if copies > 1 else row.user_id,
            following=[j + r * n for j in row.following],
        )
        for r in range(copies)
        for row in rows
    ]


def cv_run_config(
    model: str,
    spec: Any,
    cid: str,
    pop_csv: Path,
    text: str,
    timing: dict[str, Any] | None,
    seed: int,
    n_agents: int = 1,
) -> Any:
    """The run config of ``model`` on one cascade (``cv.runs`` replica copies in one population file): the IC
    baseline on the spec's clock, or the fold's fitted timing on ``cv.step_minutes`` steps with the calibrated
    IC null or the spec's LLM policy. The simulator forecast (``forecast_sim``) is the calibrated config plus
    the replayed prefix (:mod:`~socium.experiments.propagation.sim.simforecast`)."""
    cv: CVSpec = spec.cv
    base = dict(spec.base)
    base["seed"] = seed
    if model == "ic_pooled":
        dt = float({**run_defaults(spec.name), **base}.get("step_minutes", 10.0))
        base.update(policy={"kind": "independent_cascade", "p_repost": cv.ic_p, "p_post": 0.0}, llm=None)
        base.pop("timing", None)
    else:
        dt = cv.step_minutes
        base["step_minutes"] = dt
        base["timing"] = {"kind": "exposure", "params": timing, "background": False}
        rec = dict(base.get("recsys") or {"kind": "chronological", "k": 5})
        rec["window_steps"] = max(int(rec.get("window_steps", 48)), math.ceil(spec.minutes / dt) + 1)
        base["recsys"] = rec
        if model == "calibrated":
            base.update(policy={"kind": "independent_cascade", "p_repost": cv.calibrated_p, "p_post": 0.0}, llm=None)
        elif (base.get("policy") or {}).get("kind", "llm") != "llm":
            raise ConfigError("cv.models: 'llm' needs base.policy.kind 'llm' (or no base.policy)")
    base["steps"] = math.ceil(spec.minutes / dt)
    owned = {
        "population": {"source": "oasis_csv", "path": str(pop_csv.resolve())},
        "graph": {"kind": "profiles"},
        "seed_posts": [{"author": r * n_agents, "content": text} for r in range(cv.runs)],
    }
    return build_config(
        {**run_defaults(spec.name), "name": f"{spec.name}-{model}-{cid}"}, base, owned, f"propagation cv {model} {cid}"
    )
