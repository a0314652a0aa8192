"""``socium sensitivity SPEC``: which parameters drive which outcome (SALib Morris or Sobol design).

Why: a simulated effect that flips when an arbitrary parameter moves a little is not a finding.
The design varies named config parameters (any ``key.path`` of the run config, e.g.
``policy.p_repost``, ``recsys.k``, ``timing.params.b_root``) over ranges; every design point is an
ordinary run (sweep machinery: Ray tasks, or in-process), every outcome is SQL over its trace, and
SALib ranks the parameters per outcome: Morris ``mu*`` (mean absolute elementary effect, with a
bootstrap CI) and ``sigma`` (interactions / non-linearity), or Sobol first-order and total indices.

A spec::

    name: sens-cascades
    method: morris            # or sobol
    n: 10                     # Morris trajectories, or Sobol base samples (N (k + 2) runs)
    levels: 4
    seed: 0
    replicates: 1             # seeds per design point, outcomes averaged
    parameters:
      policy.p_repost: {low: 0.01, high: 0.3}
      recsys.k: {low: 2, high: 20, integer: true}
    outcomes: [mean_cascade_size, max_cascade_depth, stance_sd]
    executor: ray             # or inprocess (Ray missing: in-process with a note)
    parallel: 2
    base: {...}               # an ordinary run config
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import duckdb
import numpy as np
from pydantic import ConfigDict, Field

from socium.config.base import StrictNumbers
from socium.config.loading import apply_override, config_from_dict, read_yaml_mapping, validate_dict
from socium.core.intervals import MAX_BOOT
from socium.errors import ConfigError, SociumError
from socium.experiments.designs.sweep import RunSpec, SweepSpec, run_one, run_sweep
from socium.experiments.opinions.polarisation import bimodality_coefficient
from socium.trace.queries import cascades, population, posts
from socium.trace.queries import runs as run_q
from socium.trace.rundir import check_out_path, default_out
from socium.trace.safe_write import own_folder, replace_file


class ParamRange(StrictNumbers):
    model_config = ConfigDict(extra="forbid")
    low: float = Field(description="Lower bound.")
    high: float = Field(description="Upper bound.")
    integer: bool = Field(False, description="Round sampled values to integers.")
    log: bool = Field(False, description="Sample uniformly in log space (both bounds > 0).")


class SensitivitySpec(StrictNumbers):
    model_config = ConfigDict(extra="forbid")
    name: str = Field("sensitivity", description="Label and default output folder name.")
    out: str | None = Field(None, description="Output directory (default runs/<name>).")
    method: Literal["morris", "sobol"] = Field("morris", description="SALib design and analysis.")
    # bounds: every design point is a whole run (Morris n*(k+1), Sobol n*(2k+2), times replicates)
    n: int = Field(8, ge=2, le=10_000, description="Morris trajectories or Sobol base samples.")
    levels: int = Field(4, ge=2, le=1000, description="Morris grid levels.")
    seed: int = Field(0, ge=0, description="Seed of the design (runs use base.seed + replicate).")
    replicates: int = Field(1, ge=1, le=1000, description="Seeds per design point; outcomes are averaged over them.")
    parameters: dict[str, ParamRange] = Field(description="Config key path -> range.")
    outcomes: list[str] = Field(description="Outcome names (see OUTCOMES).")
    executor: Literal["ray", "inprocess"] = Field(
        "ray", description="Run design points as Ray tasks or in this process."
    )
    parallel: int = Field(2, ge=1, description="Ray tasks in flight.")
    bootstrap: int = Field(1000, ge=0, le=MAX_BOOT, description="Resamples for SALib's confidence intervals.")
    base: dict[str, Any] = Field(default_factory=dict, description="The run config every design point starts from.")


# ---- outcomes: one named trace query each over a finished trace ----------------------------------
def _cascades(con: duckdb.DuckDBPyConnection) -> np.ndarray:
    return cascades.sizes_and_depths(con)


def _final_stances(con: duckdb.DuckDBPyConnection) -> np.ndarray:
    return population.final_stances(con)


def _nan_if_empty(f: Callable[[np.ndarray], float]) -> Callable[[np.ndarray], float]:
    return lambda a: float(f(a)) if len(a) else float("nan")


OUTCOMES: dict[str, tuple[str, Callable[[duckdb.DuckDBPyConnection], float]]] = {
    "mean_cascade_size": (
        "mean nodes per cascade (root included)",
        lambda c: _nan_if_empty(np.mean)(_cascades(c)[:, 0]),
    ),
    "max_cascade_size": ("largest cascade", lambda c: _nan_if_empty(np.max)(_cascades(c)[:, 0])),
    "mean_cascade_depth": (
        "mean depth of cascades with a reshare",
        lambda c: _nan_if_empty(np.mean)(_cascades(c)[_cascades(c)[:, 0] > 1, 1]),
    ),
    "max_cascade_depth": ("deepest cascade", lambda c: _nan_if_empty(np.max)(_cascades(c)[:, 1])),
    "reshares_per_agent": (
        "reposts + quotes per agent",
        cascades.reshares_per_agent,
    ),
    "stance_sd": ("sd of final stances (polarisation)", lambda c: _nan_if_empty(np.std)(_final_stances(c))),
    "stance_extremity": ("mean |final stance|", lambda c: _nan_if_empty(lambda a: np.abs(a).mean())(_final_stances(c))),
    "stance_bimodality": (
        "bimodality coefficient of final stances",
        lambda c: _nan_if_empty(bimodality_coefficient)(_final_stances(c)),
    ),
    "likes_per_post": (
        "likes per post",
        posts.likes_per_post,
    ),
}


def outcome_values(run_dir: str | Path, names: list[str]) -> dict[str, float]:
    with run_q.open_run(run_dir) as con:
        return {n: OUTCOMES[n][1](con) for n in names}


# ---- the design ----------------------------------------------------------------------------------
def load_sensitivity(path: str | Path, overrides: list[str] | None = None) -> SensitivitySpec:
    data = read_yaml_mapping(path)
    for item in overrides or []:
        apply_override(data, item)
    spec = validate_dict(SensitivitySpec, data, None, str(path))
    check_spec(spec, str(path))
    return spec


def check_spec(spec: SensitivitySpec, where: str) -> None:
    """Every outcome known, every range sane, and the base config valid at both ends of every range."""
    bad = [o for o in spec.outcomes if o not in OUTCOMES]
    if bad:
        raise ConfigError(f"{where}: outcomes {bad} unknown; allowed: {', '.join(OUTCOMES)}")
    if not spec.parameters:
        raise ConfigError(f"{where}: parameters: give at least one key path with a range")
    for k, r in spec.parameters.items():
        if not r.low < r.high:
            raise ConfigError(f"{where}: parameters.{k}: low ({r.low}) must be below high ({r.high})")
        if r.log and r.low <= 0:
            raise ConfigError(f"{where}: parameters.{k}: log ranges need low > 0")
    for end in ("low", "high"):
        ov = [f"{k}={json.dumps(_cast(getattr(r, end), r))}" for k, r in spec.parameters.items()]
        config_from_dict(spec.base, ov, source=f"{where} (every parameter at its {end} end)")


def _cast(v: float, r: ParamRange) -> float | int:
    return int(round(v)) if r.integer else float(v)


def design(spec: SensitivitySpec) -> tuple[dict[str, Any], np.ndarray, list[dict[str, float | int]]]:
    """SALib problem, the unit-scale sample matrix and the per-run parameter values."""
    from SALib.sample import morris as morris_sample
    from SALib.sample import sobol as sobol_sample

    names = list(spec.parameters)
    problem = {"num_vars": len(names), "names": names, "bounds": [[0.0, 1.0]] * len(names)}
    if spec.method == "morris":
        X = morris_sample.sample(problem, spec.n, num_levels=spec.levels, seed=spec.seed)
    else:
        X = sobol_sample.sample(problem, spec.n, calc_second_order=False, seed=spec.seed)
    points = []
    for row in X:
        pt: dict[str, float | int] = {}
        for name, u in zip(names, row):
            r = spec.parameters[name]
            v = (
                math.exp(math.log(r.low) + u * (math.log(r.high) - math.log(r.low)))
                if r.log
                else r.low + u * (r.high - r.low)
            )
            pt[name] = _cast(v, r)
        points.append(pt)
    return problem, X, points


def run_sensitivity(
    spec: SensitivitySpec, out: Path | None = None, log: Callable[[str], None] = lambda s: None
) -> dict[str, Any]:
    """Run every design point (x replicates), compute outcomes, analyse with SALib; write sensitivity.json."""

    out = Path(out or spec.out or default_out(spec.name))
    check_out_path(out)  # a file there: one error, not one failure per design point
    problem, X, points = design(spec)
    base_seed = int(spec.base.get("seed", 0))
    # Run k is design point k // replicates, replicate k % replicates; names follow the sweep's layout.
    runs = [
        RunSpec(
            f"run-{i * spec.replicates + r:05d}", pt, base_seed + r, str(out / f"run-{i * spec.replicates + r:05d}")
        )
        for i, pt in enumerate(points)
        for r in range(spec.replicates)
    ]
    log(f"{spec.method}: {len(points)} design points x {spec.replicates} replicate(s) = {len(runs)} runs")
    t0 = time.perf_counter()
    executor = spec.executor
    if executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            executor = "inprocess"
            log("Ray is not installed: running in-process")
    status: dict[str, dict[str, Any]] = {}
    if executor == "ray":
        sweep = SweepSpec(spec.base, {}, [base_seed], out, spec.parallel, None, runs)
        run_sweep(sweep, on_done=lambda r, res: status.__setitem__(r.run, res))
    else:
        for r in runs:
            status[r.run] = run_one(spec.base, r.override_strings(), r.run_dir)
            log(f"  {r.run}: {'ok' if status[r.run]['ok'] else status[r.run]['error']}")
    failed = {k: v["error"] for k, v in status.items() if not v.get("ok")}
    if failed:
        raise SociumError(f"sensitivity: {len(failed)} run(s) failed, e.g. {next(iter(failed.items()))}")
    Y = np.zeros((len(points), len(spec.outcomes)))
    for i in range(len(points)):
        reps = [outcome_values(runs[i * spec.replicates + r].run_dir, spec.outcomes) for r in range(spec.replicates)]
        Y[i] = [np.nanmean([rep[o] for rep in reps]) for o in spec.outcomes]
    results: dict[str, Any] = {
        "method": spec.method,
        "spec": spec.model_dump(mode="json"),
        "n_runs": len(runs),
        "wall_s": round(time.perf_counter() - t0, 2),
        "executor": executor,
        "points": points,
        "outcomes": {},
    }
    for j, name in enumerate(spec.outcomes):
        y = Y[:, j]
        entry: dict[str, Any] = {
            "description": OUTCOMES[name][0],
            "mean": float(np.nanmean(y)),
            "min": float(np.nanmin(y)),
            "max": float(np.nanmax(y)),
        }
        if not np.isfinite(y).all() or np.ptp(y) == 0:
            entry["note"] = "outcome undefined at some points or constant: no ranking"
            entry["ranking"] = []
        else:
            entry.update(_analyse(spec, problem, X, y))
        results["outcomes"][name] = entry
    own_folder(out, named=True)
    replace_file(out / "sensitivity.json", json.dumps(results, indent=1, default=float))
    return results


def _analyse(spec: SensitivitySpec, problem: dict[str, Any], X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    names = problem["names"]
    if spec.method == "morris":
        from SALib.analyze import morris

        si = morris.analyze(problem, X, y, num_levels=spec.levels, num_resamples=max(spec.bootstrap, 2), seed=spec.seed)
        rows = [
            {
                "parameter": n,
                "mu_star": float(si["mu_star"][i]),
                "mu_star_ci95": float(si["mu_star_conf"][i]),
                "sigma": float(si["sigma"][i]),
                "mu": float(si["mu"][i]),
            }
            for i, n in enumerate(names)
        ]
        key = "mu_star"
    else:
        from SALib.analyze import sobol

        si = sobol.analyze(problem, y, calc_second_order=False, num_resamples=max(spec.bootstrap, 2), seed=spec.seed)
        rows = [
            {
                "parameter": n,
                "S1": float(si["S1"][i]),
                "S1_ci95": float(si["S1_conf"][i]),
                "ST": float(si["ST"][i]),
                "ST_ci95": float(si["ST_conf"][i]),
            }
            for i, n in enumerate(names)
        ]
        key = "ST"
    rows.sort(key=lambda r: -r[key])
    return {"indices": rows, "ranking": [r["parameter"] for r in rows], "index": key}
