"""The forecast's own sampler (``forecast.replica_times``) against socium's simulator (issue 28).

Why: the forecast, its unconditioned null and the counterfactual arms are drawn in numpy, in continuous
minutes; the cross-validation's ``calibrated`` model is the simulator (tree population, exposure timing,
IC with p_repost 1, 1-minute steps, ``cv.runs`` disjoint replica copies in one run). A claim that the
numpy model *is* the simulator's model must be a test that could fail:

* the null (``condition=False``) and the simulator give the same distribution of scale, depth and
  breadth curves on the same tree and timing parameters, once the numpy delays are put on the
  simulator's step grid (a follower wakes ``max(1, ceil(delay / dt))`` steps after its parent's
  reshare, which is timed at ``(step + RESHARE_AT) * dt``): mean curves within Monte-Carlo error at
  every minute. The same comparison *without* the grid, or with a law 20% slower, fails it;
* removing the cascade at minute ``a`` in the simulator (a fact-check label at step ``a - 1`` with
  ``moderation.remove``) gives, replica by replica, exactly the curve ``counterfactual.apply_arm`` with
  keep 0 gives on the control run's own reshare times;
* down-ranking in the tree population (one followee each, so nothing competes with the post) changes
  nothing, as the counterfactual's docstring says.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import needs_data
from socium.core.rng import component_rng
from socium.experiments.propagation.counterfactual import apply_arm
from socium.experiments.propagation.data.realcascades import CascadeTree, earliest_users, parse_tree
from socium.experiments.propagation.forecast import forecast as F
from socium.experiments.propagation.sim.simcheck import events_curves, max_z, on_step_grid, simulate_calibrated
from socium.simulator.timing import DelayDistribution, TimingParams
from socium.trace.queries.curves import cascade_curves_from_events

MINUTES = 150
Z_MAX = 4.5
"""Largest |z| allowed between two mean curves at any minute: 3 curves x 150 minutes of nearly normal
differences put the largest |z| of equal models near 3.3; a real difference of model shows far above."""

MIXTURE = TimingParams(
    DelayDistribution("lognormal_mixture", {"weights": [0.5, 0.5], "mus": [-0.5, 1.5], "sigmas": [1.5, 2.0]}),
    b_author=0.15,
    b_root=0.3,
    user_sigma=1.0,
    root_effects={"u0": -0.3},
)
WEIBULL = TimingParams(DelayDistribution("weibull", {"shape": 0.6, "scale": 8.0}), b_author=0.1, b_root=0.2)
LOMAX = TimingParams(DelayDistribution("lomax", {"alpha": 1.2, "scale": 4.0}), b_author=0.2)
FOLD0 = TimingParams(  # fold 0 of the 134-cascade CV (seed 0, 107 train cascades), rounded to 4 places
    DelayDistribution(
        "lognormal_mixture", {"weights": [0.5256, 0.4744], "mus": [-0.8538, 0.4552], "sigmas": [1.7971, 2.2429]}
    ),
    b_author=0.1469,
    b_root=0.4669,
    user_sigma=1.2344,
    root_effects={"3108351": 0.1499, "28785486": 0.1657},
)


# ---- helpers --------------------------------------------------------------------------------------
def synthetic_tree(folder: Path, n: int, seed: int, p_deep: float) -> CascadeTree:
    """A random tree: each user reshares the source with chance ``1 - p_deep``, else an earlier user."""
    rng = np.random.default_rng(seed)
    lines = ["['ROOT', 'ROOT', '0.0']->['u0', '1', '0.0']"]
    times = [0.0]
    for i in range(1, n):
        p = int(rng.integers(0, i)) if rng.random() < p_deep else 0
        times.append(times[p] + float(np.exp(rng.normal(2.0, 1.0))))
        lines.append(f"['u{p}', '1', '{times[p]:.2f}']->['u{i}', '1', '{times[i]:.2f}']")
    f = folder / f"tree{seed}.txt"
    f.write_text("\n".join(lines) + "\n")
    return parse_tree(f, strict=False)


def null_curves(tree: CascadeTree, tp: TimingParams, runs: int, seed: int, grid: float | None) -> dict[str, np.ndarray]:
    """The forecast's unconditioned null on ``tree``, on the simulator's grid of ``grid`` minutes (None: continuous)."""
    c = F.cascade_arrays(tree, earliest_users(tree, None))
    t = F.replica_times(c, tp, 0.0, 0, runs, component_rng(seed, 91), condition=False)
    return F.curves_from_times(c.parent, t if grid is None else on_step_grid(c.parent, t, grid), MINUTES)


def slower(tp: TimingParams, factor: float) -> TimingParams:
    """``tp`` with every delay ``factor`` times longer (a shifted log law, for the test's power)."""
    shift = math.log(factor)
    p = dict(tp.delay.params)
    if tp.delay.family == "lognormal_mixture":
        p["mus"] = [m + shift for m in p["mus"]]
    else:
        p["scale"] = p["scale"] * factor
    return TimingParams(
        DelayDistribution(tp.delay.family, p), tp.b_author, tp.b_root, tp.user_sigma, {}, tp.root_effects
    )


# ---- the null ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tp", "n", "p_deep"),
    [(MIXTURE, 40, 0.5), (WEIBULL, 30, 0.8), (LOMAX, 35, 0.2)],
    ids=["mixture-user-sigma-root-effect", "weibull-deep", "lomax-broad"],
)
def test_null_sampler_draws_the_simulators_curves(tmp_path, tp, n, p_deep):
    tree = synthetic_tree(tmp_path, n, seed=n, p_deep=p_deep)
    sim = events_curves(simulate_calibrated(tree, tp, 150, tmp_path))
    z = max_z(sim, null_curves(tree, tp, 4000, 0, grid=1.0))
    assert max(z.values()) < Z_MAX, z
    # the test can fail: the forecast's continuous minutes are not the 1-minute grid ...
    assert max(max_z(sim, null_curves(tree, tp, 4000, 0, grid=None)).values()) > 2 * Z_MAX
    # ... and a law whose delays are 20% longer is seen
    assert max(max_z(sim, null_curves(tree, slower(tp, 1.2), 4000, 0, grid=1.0)).values()) > Z_MAX


def test_null_sampler_matches_a_quarter_minute_grid(tmp_path):
    """The grid is the simulator's ``step_minutes``, not a fixed 1 minute: at 0.25 the lag shrinks and
    the null put on that grid still matches."""
    tree = synthetic_tree(tmp_path, 30, seed=7, p_deep=0.5)
    sim = events_curves(simulate_calibrated(tree, MIXTURE, 100, tmp_path, dt=0.25))
    assert max(max_z(sim, null_curves(tree, MIXTURE, 4000, 1, grid=0.25)).values()) < Z_MAX
    cont, one = null_curves(tree, MIXTURE, 4000, 1, None), null_curves(tree, MIXTURE, 4000, 1, 1.0)
    lag = {g: float(np.abs(c["scale"].mean(0) - cont["scale"].mean(0)).max()) for g, c in ((0.25, sim), (1.0, one))}
    assert lag[0.25] < 0.5 * lag[1.0], lag


REAL = ["520338188213444608", "551123464640536576", "568905632998412288"]
"""Three held-out cascades of fold 0 (229, 303 and 365 users; depth 2, 3 and 4)."""


@needs_data("twitter15/twitter15_trees.tar.gz")
@pytest.mark.parametrize("cid", REAL)
def test_null_sampler_draws_the_simulators_curves_on_real_cascades(tmp_path, cid):
    from socium.experiments.propagation.data.realcascades import load_twitter15

    tree = load_twitter15(ids=[cid])[cid]
    sim = events_curves(simulate_calibrated(tree, FOLD0, 60, tmp_path))
    z = max_z(sim, null_curves(tree, FOLD0, 2000, 2, grid=1.0))
    assert max(z.values()) < Z_MAX, z


# ---- the counterfactual's arms in the simulator --------------------------------------------------------
def _label_at(minute: int, **consequence: Any) -> dict[str, Any]:
    """A fact-check that labels every (false) source at the end of step ``minute - 1``, i.e. at minute
    ``minute`` on 1-minute steps; its consequences take effect from the next step."""
    params = {"delay": minute - 1, "recall": 1.0, "min_engagement": 0}
    return {"kind": "fact_check", "params": params, **consequence}


def test_removal_in_the_simulator_is_apply_arm_with_keep_zero(tmp_path):
    tree = synthetic_tree(tmp_path, 40, seed=11, p_deep=0.5)
    a, runs = 6, 40
    ctrl = simulate_calibrated(tree, MIXTURE, runs, tmp_path / "ctrl", moderation={"kind": "none"})
    gone = simulate_calibrated(tree, MIXTURE, runs, tmp_path / "remove", moderation=_label_at(a, remove=True))
    lost = 0
    for (p0, t0), (p1, t1) in zip(ctrl, gone):
        want = apply_arm(p0, t0[None, :], float(a), np.zeros((1, len(p0))), np.zeros((1, len(p0))))[0]
        arm = cascade_curves_from_events(p0, want, MINUTES)["scale"]
        got = cascade_curves_from_events(p1, t1, MINUTES)["scale"]
        assert np.array_equal(got, arm)
        assert got[-1] == int((t0 <= a).sum())  # reach at the end = reach at the action minute
        lost += int(len(p0) - got[-1])
    assert lost > 0  # the arm removed something: the equality above is not between two untouched runs


def test_downranking_changes_nothing_with_one_followee(tmp_path):
    """Each member follows only the user it reshared from: the down-ranked post is the only post in its
    feed, so a rank factor (0.5, or 0.05) leaves every replica's cascade unchanged, label shown or not; factor
    0 hides the post, which here is removal."""
    tree = synthetic_tree(tmp_path, 40, seed=11, p_deep=0.5)
    ctrl = simulate_calibrated(tree, MIXTURE, 30, tmp_path / "ctrl", moderation={"kind": "none"})
    for f in (0.5, 0.05):
        arm = simulate_calibrated(tree, MIXTURE, 30, tmp_path / f"down{f}", moderation=_label_at(6, downrank=f))
        for (p0, t0), (p1, t1) in zip(ctrl, arm):
            assert np.array_equal(p0, p1) and np.array_equal(t0, t1)
    # factor 0 is "never shown" (moderation.downrank): in a one-followee feed it acts as removal does
    gone = simulate_calibrated(tree, MIXTURE, 30, tmp_path / "remove", moderation=_label_at(6, remove=True))
    zero = simulate_calibrated(tree, MIXTURE, 30, tmp_path / "down0", moderation=_label_at(6, downrank=0.0))
    for (p0, t0), (p1, t1) in zip(gone, zero):
        assert np.array_equal(p0, p1) and np.array_equal(t0, t1)
    assert sum(len(p) for p, _ in zero) < sum(len(p) for p, _ in ctrl)
