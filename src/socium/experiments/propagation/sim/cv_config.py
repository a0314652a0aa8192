"""What a cross-validated propagation run is made of: the replica copies of a tree population, and the
simulator config of one model on one cascade (its ``cv:`` settings are in the spec room).

Why apart from :mod:`~socium.experiments.propagation.cv.cv`: the simulator-side checks of the forecast
(:mod:`~socium.experiments.propagation.sim.simcheck`, :mod:`~socium.experiments.propagation.sim.simforecast`) must
build exactly the config the cross-validation runs, and the cross-validation runs the simulator forecast as
one of its models; with these pieces here neither imports the other.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from socium.errors import ConfigError
from socium.experiments.propagation.sim.population import run_defaults
from socium.experiments.propagation.spec import CVSpec, PropagationSpec
from socium.experiments.spec import build_config


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
    spec: PropagationSpec,
    cv: CVSpec,
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
    the replayed prefix (:mod:`~socium.experiments.propagation.sim.simforecast`). ``cv``: the spec's ``cv:``, or
    transfer scoring's settings (:func:`~socium.experiments.propagation.cv.transfer.transfer_settings`), which
    a spec without ``cv:`` has too."""
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
