"""Forecasting a cascade from its first minutes: speed posterior, conditioned replicas, SEISMIC, and the CV wiring."""

from __future__ import annotations

import json

import numpy as np
import pytest

from socium.core.rng import component_rng
from socium.experiments.propagation.forecast import forecast as F
from socium.experiments.propagation.forecast.predictive import forecast_cascade
from socium.experiments.propagation.spec import PropagationSpec
from socium.experiments.propagation.study import run_propagation
from socium.experiments.report import write_report
from socium.simulator.timing import DelayDistribution, TimingParams
from socium.trace.queries.curves import cascade_curves_from_events

TP = TimingParams(DelayDistribution("lognormal", {"mu": 1.5, "sigma": 1.0}))
CASC_SD = 0.7


def _cascade(n: int, g: float, seed: int) -> F.CascadeArrays:
    """A random tree whose every delay is log-normal(1.5 + g, sd sqrt(1 - 0.7^2)): a cascade of speed g."""
    rng = np.random.default_rng(seed)
    parent = np.array([-1] + [int(rng.integers(0, i)) if rng.random() < 0.3 else 0 for i in range(1, n)])
    sd = np.sqrt(1.0 - CASC_SD**2)
    t = np.zeros(n)
    for i in range(1, n):
        t[i] = t[parent[i]] + np.exp(1.5 + g + sd * rng.standard_normal())
    return F.CascadeArrays(parent.astype(np.int64), t, "root")


def _real(c: F.CascadeArrays, minutes: int = 150):
    return cascade_curves_from_events(c.parent, c.delay, minutes)


def test_vectorised_curves_match_the_metrics_layer():
    c = _cascade(80, 0.0, 1)
    times = F.replica_times(c, TP, CASC_SD, 10, 5, component_rng(0, 41), condition=True)
    got = F.curves_from_times(c.parent, times, 150)
    for r in range(5):
        want = cascade_curves_from_events(c.parent, times[r], 150)
        for k in want:
            assert np.array_equal(got[k][r], want[k]), k


def test_speed_posterior_reads_slow_and_fast_cascades_from_ten_minutes():
    slow, fast = [], []
    for s in range(8):
        for g, into in ((0.8, slow), (-0.8, fast)):
            grid, w = F.speed_posterior(_cascade(200, g, s), TP, CASC_SD, 10)
            assert w.sum() == pytest.approx(1.0) and (w >= 0).all()
            into.append(float((grid * w).sum()))
    assert np.mean(slow) > 0.4 and np.mean(fast) < -0.4
    assert F.speed_posterior(_cascade(50, 0.0, 0), TP, 0.0, 10)[0].tolist() == [0.0]  # no spread fitted: g = 0


def test_conditioned_replicas_keep_the_prefix_and_respect_it():
    c = _cascade(150, 0.5, 3)
    m = 10
    times = F.replica_times(c, TP, CASC_SD, m, 20, component_rng(0, 41, 1))
    obs = F.observed_mask(c, m)
    assert obs.sum() > 1 and (times[:, obs] == c.delay[obs]).all()
    # nobody unobserved reshares before m (the prefix says they had not), and children follow parents
    assert (times[:, ~obs] > m).all()
    assert (times[:, 1:] >= times[:, c.parent[1:]]).all()


def test_forecast_beats_the_unconditioned_null_on_fast_and_slow_cascades():
    rows = []
    for s in range(10):
        c = _cascade(200, 0.9 if s % 2 else -0.9, 100 + s)
        rows.append(forecast_cascade(c, TP, CASC_SD, 10, 30, 150, _real(c), component_rng(0, 41, s)))
    fc = np.mean([r["forecast"]["scale"] for r in rows])
    null = np.mean([r["null"]["scale"] for r in rows])
    assert fc < 0.6 * null, (fc, null)
    summ = F.forecast_summary([{"forecast": r} for r in rows], 10)
    assert summ["n"] == 10 and summ["forecast_minus_null"]["scale"]["high"] < 0
    assert summ["seismic"]["depth"] is None and summ["seismic"]["scale"]["n"] == 10


def test_seismic_kernel_and_prediction():
    # the memory kernel's survival is continuous at s0 and integrates the constant part exactly
    s0 = F.SEISMIC_S0
    assert F._seismic_ccdf(np.array([s0 - 1e-6]))[0] == pytest.approx(F._seismic_ccdf(np.array([s0 + 1e-6]))[0])
    assert F._seismic_ccdf(np.array([60.0]))[0] == pytest.approx(1 - F.SEISMIC_C * 60)
    c = _cascade(120, 0.0, 5)
    pred = F.seismic_scale(c, 10, 150, cap=120)
    real = _real(c)["scale"]
    assert np.array_equal(pred[:11], real[:11])  # the observed part is the data, up to minute m included
    assert (np.diff(pred) >= -1e-9).all() and pred.max() <= 120
    lone = F.CascadeArrays(np.array([-1, 0, 0]), np.array([0.0, 30.0, 40.0]), "r")  # nothing seen by minute 10
    assert F.seismic_infectiousness(lone, 10)[0] == 0.0 and F.seismic_scale(lone, 10, 60)[-1] == 1.0


def _trees(folder, n_trees=6):
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for t in range(n_trees):
        g = 0.8 if t % 2 else -0.8
        lines = [f"['ROOT', 'ROOT', '0.0']->['u{t}_0', '{t}', '0.0']"]
        times = [0.0]
        for i in range(1, 40):
            p = int(rng.integers(0, i)) if rng.random() < 0.3 else 0
            times.append(times[p] + float(np.exp(rng.normal(1.5 + g, 0.7))))
            lines.append(f"['u{t}_{p}', '{t}', '{times[p]:.2f}']->['u{t}_{i}', '{t}', '{times[i]:.2f}']")
        (folder / f"{1000 + t}.txt").write_text("\n".join(lines) + "\n")
    return sorted(folder.glob("*.txt"))


def test_cv_with_observe_minutes_scores_forecast_and_baselines(tmp_path):
    files = _trees(tmp_path / "trees")
    spec = PropagationSpec(
        tree_files=[str(f) for f in files],
        minutes=60,
        observe_minutes=10,
        follows="tree",
        topics_csv=str(tmp_path / "none.csv"),
        cv={"folds": 3, "seed": 0, "families": ["lognormal"], "runs": 2, "models": ["calibrated"]},
        base={"seed": 0},
    )
    res = run_propagation(spec, tmp_path / "out")
    f = res["summary"]["forecast"]
    assert f["n"] == 6 and f["observe_minutes"] == 10
    assert f["forecast"]["scale"]["n"] == 6 and f["forecast"]["scale"]["low"] <= f["forecast"]["scale"]["estimate"]
    row = res["cascades"][0]
    assert set(row["forecast"]) == {
        "forecast",
        "null",
        "seismic",
        "seismic_direct",
        "hawkes",
        "hawkes_powerlaw",
        "hawkes_cv_kernel",
    }
    assert set(row["models"]["calibrated"]["nrmse_remaining"]) == {"scale", "depth", "max_breadth"}
    json.dumps(res)
    html = write_report(tmp_path / "out").html.read_text()
    assert "after observing 10 minutes" in html and "forecast - null" in html
    assert f["forecast_minus_hawkes_powerlaw"]["scale"]["n"] == 6
    assert "forecast - hawkes_<wbr>powerlaw" in html  # the page lets long names break after "_"


def test_observe_minutes_needs_cv_and_room(tmp_path):
    with pytest.raises(ValueError, match="cross-validation"):
        PropagationSpec(tree_files=["x.txt"], observe_minutes=10)
    with pytest.raises(ValueError, match="leaves nothing"):
        PropagationSpec(tree_files=["x.txt"], observe_minutes=60, minutes=60, cv={"folds": 2})
