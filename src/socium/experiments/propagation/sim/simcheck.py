"""The forecast's numpy sampler checked against socium's simulator: the pieces both sides need.

Why: the forecast (:mod:`~socium.experiments.propagation.forecast.forecast`), its unconditioned null and the
counterfactual arms draw replicas in numpy, in continuous minutes; the cross-validation's ``calibrated``
model is the simulator on 1-minute steps. A claim that they are one model is checked by running the
simulator with the CV's own config (:func:`simulate_calibrated`), putting the numpy times on the
simulator's step grid (:func:`on_step_grid`) and comparing mean curves minute by minute
(:func:`max_z`). Used by ``tests/test_experiments/test_forecast_vs_simulator.py`` and
``benchmarks/forecast_vs_simulator.py`` (the numbers in docs/validation.md, section 3d).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from socium.experiments.propagation.data.realcascades import CascadeTree, earliest_users
from socium.experiments.propagation.sim.cv_config import cv_run_config, replicate_rows
from socium.experiments.propagation.sim.population import cascade_population
from socium.experiments.propagation.spec import CVSpec, PropagationSpec
from socium.experiments.spec import run_config, write_population_csv
from socium.simulator.timing import MIN_DELAY_MIN, TimingParams
from socium.trace.queries.cascades import RESHARE_AT, cascade_events
from socium.trace.queries.curves import CURVE_NAMES, cascade_curves_from_events, node_depths
from socium.trace.queries.runs import open_run

TREE_POPULATION = SimpleNamespace(follows="tree", extra_follows=0, activation=0.3)
"""The CV's population of one cascade (``follows: tree``, no noise edges): each member follows its real parent."""

Events = list[tuple[NDArray[np.int64], NDArray[np.float64]]]


def simulate_calibrated(
    tree: CascadeTree,
    tp: TimingParams,
    runs: int,
    out: Path,
    *,
    seed: int = 3,
    dt: float = 1.0,
    minutes: int = 150,
    moderation: dict[str, Any] | None = None,
) -> Events:
    """(parent, minutes) of every replica's cascade in one simulator run of the CV's ``calibrated`` model.

    The config is the CV's own (``cv_config.cv_run_config``, as ``score_cascade`` builds it: the tree
    population in ``runs`` disjoint copies, exposure timing with ``tp``, IC with p_repost 1, the recsys
    window, the seed posts), so this is the model the cross-validation scores, with ``dt``-minute steps.
    ``moderation``: a ``moderation:`` section; the sources are then marked false so a fact-check can
    judge them. Times are the trace's (a reshare in step s at ``(s + RESHARE_AT) * dt``).
    """
    users = earliest_users(tree, None)
    rows, _ = cascade_population(tree, users, TREE_POPULATION, None, 0)
    pop = write_population_csv(out / "pop.csv", replicate_rows(rows, runs))
    cv = CVSpec(runs=runs, step_minutes=dt)
    spec = PropagationSpec(name="forecast-vs-sim", minutes=minutes, cv=cv)
    cfg = cv_run_config("calibrated", spec, cv, "x", pop, "source", tp.to_dict(), seed, len(rows))
    if moderation is not None:
        data = cfg.model_dump(mode="json")
        data["moderation"] = moderation
        data["seed_posts"] = [{**p, "veracity": "false"} for p in data["seed_posts"]]
        cfg = type(cfg).model_validate(data)
    info = run_config(cfg, out / "run", force=True)
    with open_run(info.run_dir) as con:  # seed posts are applied first at step 0: copy r's source is post r
        return [cascade_events(con, r) for r in range(runs)]


def events_curves(events: Events, minutes: int = 150) -> dict[str, NDArray[np.float64]]:
    """Curves (replicas x minutes) of simulated cascades, counted as the CV counts them."""
    per = [cascade_curves_from_events(p, t, minutes) for p, t in events]
    return {k: np.stack([c[k] for c in per]).astype(float) for k in CURVE_NAMES}


def on_step_grid(
    parent: NDArray[np.int64],
    times: NDArray[np.float64],
    dt: float,
    observed: NDArray[np.bool_] | None = None,
) -> NDArray[np.float64]:
    """Continuous node times (replicas x n) put on the simulator's step grid.

    Each delay becomes ``max(1, ceil(max(delay, MIN_DELAY_MIN) / dt))`` steps after the parent's step
    (:class:`~socium.simulator.timing.ExposureTiming`'s wake-up) and a reshare in step s is timed at
    ``(s + RESHARE_AT) * dt`` (the trace's convention). The rounding accumulates along a chain, so a
    depth-d node is on average about ``d * dt / 2`` later than its continuous time. ``observed``: nodes
    replayed as seed actions (a conditioned forecast on ``simforecast.grid_prefix``), which sit in step
    ``floor(t / dt)`` whatever their parent's step.
    """
    depth = node_depths(parent)
    step = np.zeros_like(times)
    for d in range(1, int(depth.max(initial=0)) + 1):
        idx = np.flatnonzero(depth == d)
        delay = times[:, idx] - times[:, parent[idx]]
        step[:, idx] = step[:, parent[idx]] + np.maximum(1, np.ceil(np.maximum(delay, MIN_DELAY_MIN) / dt - 1e-9))
        if observed is not None and observed[idx].any():
            seen = idx[observed[idx]]
            step[:, seen] = np.floor(times[:, seen] / dt + 1e-9)
    out = (step + RESHARE_AT) * dt
    out[:, parent < 0] = 0.0
    return out


def max_z(a: dict[str, NDArray[np.float64]], b: dict[str, NDArray[np.float64]]) -> dict[str, float]:
    """Per curve, the largest |difference of mean curves| / its standard error over minutes.

    The error pools the two samples' variances (the hypothesis is one distribution): a rare event, e.g.
    a depth reached in 2% of replicas, may not occur among 60 simulated replicas at all, and Welch's
    error would then rest on the other sample's variance alone. Where both samples are constant at a
    minute the error is 0: equal means give z 0 there, different ones infinity.
    """
    out = {}
    for k in CURVE_NAMES:
        na, nb = len(a[k]), len(b[k])
        diff = a[k].mean(0) - b[k].mean(0)
        pooled = ((na - 1) * a[k].var(0, ddof=1) + (nb - 1) * b[k].var(0, ddof=1)) / (na + nb - 2)
        se = np.sqrt(pooled * (1.0 / na + 1.0 / nb))
        z = np.where(se > 0, np.abs(diff) / np.where(se > 0, se, 1.0), np.where(np.abs(diff) > 1e-12, np.inf, 0.0))
        out[k] = float(z.max())
    return out
