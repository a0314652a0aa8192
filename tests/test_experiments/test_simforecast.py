"""The prefix-conditioned forecast in the simulator against ``forecast.replica_times(condition=True)``.

Tier 2 of the forecast-vs-simulator check (issue 28): the pieces the simulator needed (a per-copy source
effect, exact truncated delay draws, ``timing.condition_minute``) and the whole replay: the simulator's
mean curves equal the numpy forecast's on the simulator's grid within Monte-Carlo error, and differ from
the forecast in continuous minutes on the real (not gridded) prefix.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from test_forecast_vs_simulator import FOLD0, MINUTES, MIXTURE, REAL, WEIBULL, Z_MAX, synthetic_tree
from test_propagation_forecast import _trees

from conftest import needs_data
from socium.core.rng import component_rng
from socium.experiments.propagation.data.realcascades import earliest_users
from socium.experiments.propagation.forecast import forecast as F
from socium.experiments.propagation.sim.simcheck import events_curves, max_z, on_step_grid
from socium.experiments.propagation.sim.simforecast import draw_shifts, grid_prefix, seed_reposts, simulate_forecast
from socium.experiments.propagation.spec import PropagationSpec
from socium.experiments.propagation.study import run_propagation
from socium.simulator.timing import DelayDistribution, TimingParams

LAWS = {
    "lognormal": DelayDistribution("lognormal", {"mu": 0.5, "sigma": 1.7}),
    "weibull": DelayDistribution("weibull", {"shape": 0.6, "scale": 8.0}),
    "lomax": DelayDistribution("lomax", {"alpha": 1.2, "scale": 4.0}),
    "mixture": DelayDistribution(
        "lognormal_mixture", {"weights": [0.5256, 0.4744], "mus": [-0.8538, 0.4552], "sigmas": [1.7971, 2.2429]}
    ),
}


# ---- truncated draws ------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", list(LAWS))
@pytest.mark.parametrize("cut", [0.3, 5.0, 60.0])
def test_truncated_draws_follow_the_conditional_law(family, cut):
    law = LAWS[family]
    rng = np.random.default_rng(7)
    u, v = rng.random(20000), rng.random(20000)
    x = np.exp(law.log_quantile_above(u, v, np.full(20000, math.log(cut))))
    assert (x > cut * (1 - 1e-9)).all()
    f_cut = float(law.cdf(np.array([cut]))[0])
    conditional = lambda y: (law.cdf(y) - f_cut) / (1.0 - f_cut)  # noqa: E731
    assert stats.kstest(x, conditional).pvalue > 1e-3
    # the test can fail: the untruncated law (or a cut at half the minute) is rejected
    plain = np.exp(law.log_quantile(u, v))
    assert stats.kstest(plain[plain > cut / 2], conditional).pvalue < 1e-6


@pytest.mark.parametrize("family", list(LAWS))
def test_no_cut_is_the_law_and_far_cuts_stay_finite(family):
    law = LAWS[family]
    rng = np.random.default_rng(3)
    u, v = rng.random(20000), rng.random(20000)
    x = np.exp(law.log_quantile_above(u, v, np.full(20000, -np.inf)))
    assert stats.kstest(x, law.cdf).pvalue > 1e-3
    far = law.log_quantile_above(u[:100], v[:100], np.full(100, math.log(1e5)))  # F(cut) within 1e-6 of 1 or less
    assert np.isfinite(far).all() and (far > math.log(1e5) - 1e-9).all()


# ---- the source effect per copy ----------------------------------------------------------------------------
def test_root_shift_key_with_the_copy_suffix_wins():
    tp = TimingParams(LAWS["lognormal"], root_effects={"u0": 0.5, "u0#1": -1.0})
    got = tp.root_shift(["u0#0", "u0#1", "u0#2", "u0", "u1#1", None], 6)
    assert got.tolist() == [0.5, -1.0, 0.5, 0.5, 0.0, 0.0]


# ---- the replay ------------------------------------------------------------------------------------------
def _forecast_on_grid(c: F.CascadeArrays, tp: TimingParams, sd: float, m: int, runs: int, seed: int, dt: float = 1.0):
    t = F.replica_times(c, tp, sd, m, runs, component_rng(seed, 93), condition=True)
    return F.curves_from_times(c.parent, on_step_grid(c.parent, t, dt, F.observed_mask(c, m)), MINUTES)


def test_seed_reposts_target_their_parents_post_in_their_copy(tmp_path):
    tree = synthetic_tree(tmp_path, 30, seed=5, p_deep=0.6)
    c = grid_prefix(F.cascade_arrays(tree, earliest_users(tree, None)), 10, 1.0)
    acts = seed_reposts(c, 10, 1.0, 3)
    steps = [a["step"] for a in acts]
    assert steps == sorted(steps) and max(steps) < 10
    assert len(acts) == 3 * int((F.observed_mask(c, 10) & (c.parent >= 0)).sum())
    post_of = {}  # (copy, node) -> post id, as the platform numbers them: 3 sources, then the reposts
    for k, a in enumerate(acts):
        r, i = divmod(a["agent"], len(c.parent))
        par = int(c.parent[i])
        assert a["action"]["post_id"] == (r if par == 0 else post_of[(r, par)])
        post_of[(r, i)] = 3 + k


@pytest.mark.parametrize(
    ("tp", "sd", "n", "p_deep"),
    [(MIXTURE, 0.8, 40, 0.5), (WEIBULL, 0.0, 35, 0.7)],
    ids=["mixture-cascade-sigma", "weibull-no-speed"],
)
def test_simulated_forecast_is_the_numpy_forecast_on_the_grid(tmp_path, tp, sd, n, p_deep):
    m, runs = 10, 150
    tree = synthetic_tree(tmp_path, n, seed=n + 1, p_deep=p_deep)
    real = F.cascade_arrays(tree, earliest_users(tree, None))
    c = grid_prefix(real, m, 1.0)
    obs = F.observed_mask(c, m)
    assert 2 < obs.sum() < n - 2  # a prefix, and a future
    g = draw_shifts(c, tp, sd, m, runs, component_rng(0, 92))
    events = simulate_forecast(tree, tp, sd, m, g, tmp_path)
    prefix = np.sort(np.where(c.parent[obs] < 0, 0.0, c.delay[obs]))
    for _, t in events:  # the prefix is replayed at its grid times; nobody else reshares before m
        assert np.allclose(np.sort(t[t <= m]), prefix)
    sim = events_curves(events, MINUTES)
    z = max_z(sim, _forecast_on_grid(c, tp, sd, m, 4000, 1))
    assert max(z.values()) < Z_MAX, z
    # the test can fail: the forecast in continuous minutes on the real prefix is not the grid's
    t = F.replica_times(real, tp, sd, m, 4000, component_rng(1, 93), condition=True)
    assert max(max_z(sim, F.curves_from_times(c.parent, t, MINUTES)).values()) > Z_MAX


def test_each_copy_gets_its_own_speed(tmp_path):
    """Copies with g = -3 and +3 (about 20x faster / slower) reach different sizes by minute 30."""
    tree = synthetic_tree(tmp_path, 30, seed=9, p_deep=0.3)
    events = simulate_forecast(tree, WEIBULL, 0.0, 10, np.array([-3.0, 3.0] * 10), tmp_path)
    at30 = np.array([int((t <= 30).sum()) for _, t in events])
    assert at30[0::2].min() > at30[1::2].max()


@needs_data("twitter15/twitter15_trees.tar.gz")
@pytest.mark.parametrize("cid", REAL[:2])
def test_simulated_forecast_on_real_cascades(tmp_path, cid):
    """Fold 0's fitted law (cascade_sigma 0.667 measured by the benchmark's fit), minute 10 observed."""
    from socium.experiments.propagation.data.realcascades import load_twitter15

    tree = load_twitter15(ids=[cid])[cid]
    c = grid_prefix(F.cascade_arrays(tree, earliest_users(tree, None)), 10, 1.0)
    g = draw_shifts(c, FOLD0, 0.667, 10, 60, component_rng(2, 92))
    sim = events_curves(simulate_forecast(tree, FOLD0, 0.667, 10, g, tmp_path), MINUTES)
    z = max_z(sim, _forecast_on_grid(c, FOLD0, 0.667, 10, 2000, 2))
    assert max(z.values()) < Z_MAX, z


def test_cv_scores_the_simulator_forecast_beside_the_numpy_one(tmp_path):
    """cv.models: [forecast_sim] runs the prefix-conditioned forecast in the simulator for every held-out
    cascade and scores it on the same window; the summary pairs it with the numpy forecast."""
    files = _trees(tmp_path / "trees", n_trees=4)
    spec = PropagationSpec(
        tree_files=[str(f) for f in files],
        minutes=60,
        observe_minutes=10,
        follows="tree",
        topics_csv=str(tmp_path / "none.csv"),
        cv={"folds": 2, "seed": 0, "families": ["lognormal"], "runs": 20, "models": ["forecast_sim"]},
        counterfactual={"strategies": {"remove": {"remove": True}}, "bootstrap": 0},
        base={"seed": 0},
    )
    res = run_propagation(spec, tmp_path / "out")
    rows = res["cascades"]
    assert all(set(r["forecast"]["forecast_sim"]) >= {"scale", "depth", "max_breadth", "final_scale"} for r in rows)
    assert "forecast_sim" not in rows[0]["models"]  # scored with the forecast, not as a full-window model
    f = res["summary"]["forecast"]
    assert f["forecast_sim"]["scale"]["n"] == 4 and f["forecast_minus_forecast_sim"]["scale"]["n"] == 4
    # the simulator replays the observed prefix: no replica ends below what was seen by minute 10 (the
    # equivalence of the two forecasts is pinned above on fits that are not degenerate; a 2-tree fold fit is)
    for r in rows:
        assert r["forecast"]["forecast_sim"]["final_scale"] >= r["counterfactual"]["observed"] >= 1
        assert all(0 <= r["forecast"]["forecast_sim"][k] < 5 for k in ("scale", "depth", "max_breadth"))
    assert list((tmp_path / "out" / "cv").glob("fold*/forecast_sim/*/run/trace.duckdb"))  # simulator runs


def test_forecast_sim_needs_the_prefix_and_the_whole_tree():
    with pytest.raises(ValueError, match="forecast_sim is the prefix-conditioned forecast"):
        PropagationSpec(tree_files=["x.txt"], cv={"folds": 2, "models": ["forecast_sim"]})
    with pytest.raises(ValueError, match="whole tree population"):
        PropagationSpec(
            tree_files=["x.txt"], cv={"folds": 2, "models": ["forecast_sim"]}, observe_minutes=10, follows="both"
        )
