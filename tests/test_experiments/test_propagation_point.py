"""socium.experiments.propagation.fit.emulator: the vectorised emulator and the point predictors it compares.

The choice of ``cv.runs`` for the 134-cascade CV rests on this emulator (docs/results.md), so its
curves must be the curves the reference functions give for the same reshare times, and a per-replica
cascade speed must really be drawn per replica.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from socium.experiments.propagation.data.realcascades import parse_tree
from socium.experiments.propagation.fit import emulator as point
from socium.simulator.timing import MIN_DELAY_MIN, DelayDistribution, TimingParams
from socium.trace.queries.cascades import RESHARE_AT
from socium.trace.queries.curves import CURVE_NAMES, cascade_curves_from_events


def _tree(tmp_path, n=40, seed=0):
    rng = np.random.default_rng(seed)
    lines = ["['ROOT', 'ROOT', '0.0']->['u0', '1', '0.0']"]
    times = [0.0]
    for i in range(1, n):
        p = int(rng.integers(0, i)) if rng.random() < 0.5 else 0
        times.append(times[p] + float(np.exp(rng.normal(2.0, 1.0))))
        lines.append(f"['u{p}', '1', '{times[p]:.2f}']->['u{i}', '1', '{times[i]:.2f}']")
    f = tmp_path / "1.txt"
    f.write_text("\n".join(lines) + "\n")
    return parse_tree(f, strict=False)


def _draws(rng, runs, n):
    return {"u": rng.random((runs, n)), "v": rng.random((runs, n)), "z": rng.standard_normal((runs, n)),
            "g": rng.standard_normal(runs)}  # fmt: skip


def test_replica_curves_equal_the_reference_curves_of_the_same_reshare_times(tmp_path):
    tree = _tree(tmp_path)
    tp = TimingParams(DelayDistribution("lognormal_mixture", {"weights": [0.5, 0.5], "mus": [0.5, 3.5],
                                                              "sigmas": [1.0, 1.5]}), 0.1, 0.05, 0.6)  # fmt: skip
    draws = _draws(np.random.default_rng(1), 6, len(tree.nodes))
    got = point.replica_curves(tree, tp, 0.2, 0.4, draws)
    _, parent, _ = tree.events()
    children = np.bincount(parent[parent >= 0], minlength=len(parent))
    dist = tp.delay.narrowed(math.sqrt(tp.user_sigma**2 + 0.4**2))
    for r in range(6):  # node by node, in attachment order (parents first), as the simulator stamps reshares
        step = np.zeros(len(parent))
        for i in range(1, len(parent)):
            p = parent[i]
            logd = float(dist.log_quantile(draws["u"][r, i : i + 1], draws["v"][r, i : i + 1])[0])
            logd += tp.b_author * math.log1p(children[p]) + tp.b_root * math.log1p(children[0]) + 0.2
            logd += tp.user_sigma * draws["z"][r, i] + 0.4 * draws["g"][r]
            step[i] = step[p] + max(1, math.ceil(max(math.exp(logd), MIN_DELAY_MIN) - 1e-9))
        ref = cascade_curves_from_events(parent, np.where(parent < 0, 0.0, step + RESHARE_AT), 150)
        for c in CURVE_NAMES:
            assert np.array_equal(got[c][r], ref[c]), (r, c)


def test_cascade_speed_is_drawn_per_replica(tmp_path):
    tree = _tree(tmp_path, n=60)
    tp = TimingParams(DelayDistribution("lognormal", {"mu": 3.0, "sigma": 1.2}))
    draws = _draws(np.random.default_rng(2), 8, len(tree.nodes))
    draws["g"] = np.linspace(-2.0, 2.0, 8)  # replica r gets its own shift; a faster replica reaches more
    reach = point.replica_curves(tree, tp, 0.0, 0.8, draws)["scale"][:, 60]
    assert reach[0] > reach[-1]
    assert np.all(np.diff(reach) <= 0)
    flat = point.replica_curves(tree, tp, 0.0, 0.0, draws)["scale"][:, 60]  # no draw: g is ignored
    same_g = dict(draws, g=np.zeros(8))
    assert np.array_equal(flat, point.replica_curves(tree, tp, 0.0, 0.0, same_g)["scale"][:, 60])


def test_weighted_geomedian_minimises_the_nrmse_risk_of_the_replicas():
    rng = np.random.default_rng(3)
    curves = np.cumsum(rng.random((9, 150)) * rng.uniform(0.2, 3.0, (9, 1)), axis=1)

    def risk(p):
        return float(np.sum(np.sqrt(((curves - p) ** 2).sum(1)) / curves.max(1)))

    best = point.weighted_geomedian(curves)
    for other in [curves.mean(0), np.median(curves, 0), *curves, best * 1.01, best * 0.99]:
        assert risk(best) <= risk(other) + 1e-9


_MIX = DelayDistribution("lognormal_mixture", {"weights": [0.4, 0.6], "mus": [4.0, 0.5], "sigmas": [1.0, 0.7]})


def _star(tmp_path, name, w_fast, n=600, seed=0):
    """A source with ``n`` direct reshares whose delays come fast (component mu 0.5) with share ``w_fast``."""
    rng = np.random.default_rng(seed)
    fast = rng.random(n) < w_fast
    delay = np.exp(np.where(fast, rng.normal(0.5, 0.7, n), rng.normal(4.0, 1.0, n)))
    lines = ["['ROOT', 'ROOT', '0.0']->['s', '1', '0.0']"]
    lines += [f"['s', '1', '0.0']->['u{i}', '1', '{d:.3f}']" for i, d in enumerate(delay)]
    f = tmp_path / f"{name}.txt"
    f.write_text("\n".join(lines) + "\n")
    return parse_tree(f, strict=False, horizon_min=None)


def test_per_tree_fast_weight_is_recovered_and_its_spread_measured(tmp_path):
    truth = [0.2, 0.5, 0.8]
    trees = [_star(tmp_path, str(k), w, seed=k) for k, w in enumerate(truth)]
    tp = TimingParams(_MIX)
    w, n = point.tree_fast_weights(trees, tp)
    assert np.allclose(w, truth, atol=0.06), w  # the fast component is the one with the smaller mu, wherever it sits
    assert np.array_equal(n, [600, 600, 600])
    mu, sd, raw = point.logit_normal_fit(w, n)
    assert 0.9 < raw < 1.5 and sd < raw  # logit sd of 0.2 / 0.5 / 0.8 is 1.39; noise removed makes it smaller


def test_fast_weight_per_replica_keeps_the_fitted_law_and_moves_the_curve(tmp_path):
    rng = np.random.default_rng(4)
    u, v = rng.random((3, 500)), rng.random((3, 500))
    # the fitted weight in every row gives exactly the fitted law's quantiles (same random numbers)
    same = point._log_quantile_fast(_MIX, u, v, np.full(3, 0.6))
    assert np.allclose(same, _MIX.log_quantile(u, v))
    tree = _tree(tmp_path, n=80)
    draws = _draws(np.random.default_rng(5), 3, len(tree.nodes))
    reach = point.replica_curves(tree, TimingParams(_MIX), 0.0, 0.0, draws, fast_weight=np.array([0.05, 0.6, 0.95]))
    at = reach["scale"][:, 30]
    assert at[0] < at[1] < at[2]  # a replica with more fast reactions reaches more users by minute 30


def _tree_with_own_speed(tmp_path, slope, n=400, seed=3, name="2"):
    """A tree whose users react faster the more children they have (log delay = 2 + slope * log1p(children))."""
    rng = np.random.default_rng(seed)
    parent = [-1] + [int(rng.integers(0, i)) if rng.random() < 0.6 else 0 for i in range(1, n)]
    kids = np.bincount(np.array(parent[1:]), minlength=n)
    times = [0.0]
    lines = [f"['ROOT', 'ROOT', '0.0']->['u0', '{name}', '0.0']"]
    for i in range(1, n):
        p = parent[i]
        times.append(times[p] + float(np.exp(2.0 + slope * math.log1p(kids[i]) + rng.normal(0, 0.5))))
        lines.append(f"['u{p}', '{name}', '{times[p]:.4f}']->['u{i}', '{name}', '{times[i]:.4f}']")
    f = tmp_path / f"{name}.txt"
    f.write_text("\n".join(lines) + "\n")
    return parse_tree(f, strict=False)


def test_own_children_slope_is_recovered_and_shifts_the_curve(tmp_path):
    tp = TimingParams(DelayDistribution("lognormal", {"mu": 2.0, "sigma": 0.5}))
    fast = _tree_with_own_speed(tmp_path, -0.6)
    _, b = point.self_degree_fit([fast], tp)
    assert -0.75 < b < -0.45
    _, b0 = point.self_degree_fit([_tree_with_own_speed(tmp_path, 0.0, name="3")], tp)
    assert abs(b0) < 0.15
    draws = _draws(np.random.default_rng(4), 4, len(fast.nodes))
    base = point.replica_curves(fast, tp, 0.0, 0.0, draws)["scale"]
    quick = point.replica_curves(fast, tp, 0.0, 0.0, draws, node_shift=np.full(len(fast.nodes), -1.0))["scale"]
    assert np.all(quick[:, 20] >= base[:, 20]) and quick[:, 20].sum() > base[:, 20].sum()


def test_bias_summary_separates_a_shared_bias_from_spread():
    rng = np.random.default_rng(0)
    spread = rng.normal(0, 0.2, (200, 150))
    biased = spread + 0.3
    s0 = point.bias_summary(spread, log=lambda *_: None)
    s1 = point.bias_summary(biased, log=lambda *_: None)
    assert s1["nrmse"] > s0["nrmse"] + 0.1
    assert s1["nrmse_mean_bias_removed"] == pytest.approx(s0["nrmse_mean_bias_removed"], abs=1e-9)
    assert all(abs(m - 0.3) < 0.1 for m in s1["mean_signed"])
