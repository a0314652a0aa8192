"""Counterfactual interventions on the conditioned forecast (issue 28, build 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.test_experiments.test_propagation_forecast import _cascade, _trees

from socium.errors import ConfigError
from socium.experiments.propagation import counterfactual as CF
from socium.experiments.propagation import spec as S
from socium.experiments.propagation.forecast import forecast as F
from socium.experiments.propagation.spec import PropagationSpec
from socium.experiments.propagation.study import run_propagation
from socium.experiments.report import write_report
from socium.simulator.timing import DelayDistribution, TimingParams

ONLY_REMOVAL = {"strategies": {"remove": {"remove": True}}, "bootstrap": 0}
TP = TimingParams(DelayDistribution("lognormal", {"mu": 1.5, "sigma": 1.0}))


def _spec(**kw):
    return S.CounterfactualSpec(**kw)


def _cv_spec(tmp_path, files, seed: int, runs: int, counterfactual: dict) -> PropagationSpec:
    """A small cross-validated counterfactual on synthetic trees (60 minutes, 3 folds, log-normal law)."""
    return PropagationSpec(
        tree_files=[str(f) for f in files],
        minutes=60,
        observe_minutes=10,
        follows="tree",
        topics_csv=str(tmp_path / "none.csv"),
        cv={"folds": 3, "seed": seed, "families": ["lognormal"], "runs": runs, "models": []},
        counterfactual=counterfactual,
        base={"seed": seed},
    )


def test_keep_probability_composes_the_strategy_keys():
    inoc = np.array([False, True])
    assert CF.keep_probability(S.StrategySpec(remove=True, downrank=0.9), 0.25, 0.2, inoc).tolist() == [0.0, 0.0]
    k = CF.keep_probability(S.StrategySpec(label=True, downrank=0.5, prebunk=1.0), 0.25, 0.2, inoc)
    assert k == pytest.approx([0.5 * 0.75, 0.5 * 0.75 * 0.8])
    assert CF.keep_probability(S.StrategySpec(), 0.25, 0.2, inoc).tolist() == [1.0, 0.8]  # inoculation alone


def test_a_lost_reshare_takes_its_subtree_and_the_past_never_changes():
    parent = np.array([-1, 0, 1, 2, 0], np.int64)  # a chain 0-1-2-3 and a leaf 4
    times = np.array([[0.0, 5.0, 20.0, 30.0, 25.0]])
    keep = np.ones((1, 5))
    u = np.array([[0.0, 0.0, 0.99, 0.0, 0.0]])
    keep[0, 2] = 0.5  # node 2 (late) fails its draw; node 3 would pass but its parent is gone
    out = CF.apply_arm(parent, times, 10.0, keep, u)
    assert out[0].tolist() == [0.0, 5.0, CF.NEVER, CF.NEVER, 25.0]
    # removal at minute 10: only what happened by then remains, even with keep 0 for early nodes
    gone = CF.apply_arm(parent, times, 10.0, np.zeros((1, 5)), np.zeros((1, 5)))
    assert gone[0].tolist() == [0.0, 5.0, CF.NEVER, CF.NEVER, CF.NEVER]
    late_act = CF.apply_arm(parent, times, 27.0, np.zeros((1, 5)), np.zeros((1, 5)))
    assert late_act[0].tolist() == [0.0, 5.0, 20.0, CF.NEVER, 25.0]


def test_label_effect_on_a_star_and_compounding_on_a_chain():
    rng = np.random.default_rng(1)
    n, R = 2001, 50
    star = np.r_[-1, np.zeros(n - 1, np.int64)].astype(np.int64)
    times = np.c_[np.zeros((R, 1)), rng.uniform(20, 100, (R, n - 1))]
    keep = np.full((R, n), 0.75)
    out = CF.apply_arm(star, times, 10.0, keep, rng.random((R, n)))
    share = float((out[:, 1:] < CF.NEVER).mean())
    assert abs(share - 0.75) < 4 * np.sqrt(0.75 * 0.25 / (R * (n - 1)))
    L = 6
    chain = np.arange(-1, L, dtype=np.int64)
    t = np.tile(np.arange(L + 1, dtype=float) * 20.0, (20000, 1))
    alive = CF.apply_arm(chain, t, 10.0, np.full(t.shape, 0.75), rng.random(t.shape)) < CF.NEVER
    # node k (k hops, all after the action) survives only if every late ancestor did: 0.75^k
    assert alive.mean(0)[1:] == pytest.approx(0.75 ** np.arange(1, L + 1), abs=0.015)


def test_arms_share_the_forecasts_replicas():
    c = _cascade(120, 0.3, seed=4)
    spec = _spec(act_minutes=[10, 40], strategies={**S.default_strategies(), "nothing": {"downrank": 1.0}})
    out = CF.counterfactual_cascade(c, TP, 0.7, 10, 30, 150, spec, np.random.default_rng(0), real_scale=np.ones(150))
    none = np.array(out["arms"]["none"]["reach"])
    assert out["arms"]["nothing@10"]["reach"] == out["arms"]["none"]["reach"]  # a no-op arm is the forecast itself
    for key, arm in out["arms"].items():
        assert (np.array(arm["reach"]) <= none).all(), key  # every arm only ever removes reshares
        assert (np.array(arm["eventual"]) >= np.array(arm["reach"])).all()
    assert set(np.array(out["arms"]["remove@10"]["reach"])) == {out["observed"]}  # removal keeps exactly the prefix
    assert (np.array(out["arms"]["remove@40"]["reach"]) == np.array(out["reach_at_act"]["40"])).all()
    assert np.mean(out["arms"]["remove@10"]["reach"]) < np.mean(out["arms"]["remove@40"]["reach"])  # later acts less
    # the oracle applies each arm to the real future: a no-op arm there is the real reach, removal the real prefix
    real_reach = int((c.delay <= 149).sum())
    assert set(out["oracle"]["nothing@10"]) == {real_reach}
    assert set(out["oracle"]["remove@40"]) == {int((c.delay <= 40).sum())}
    # same stream: the no-intervention arm is the conditioned forecast's replicas
    t = F.replica_times(c, TP, 0.7, 10, 30, np.random.default_rng(0), True)
    assert np.array_equal(F.curves_from_times(c.parent, t, 150)["scale"][:, -1], none)


def test_nested_bootstrap_counts_replica_noise_and_follows_the_interval_policy():
    rng = np.random.default_rng(0)
    reps = rng.normal(10.0, 3.0, 40)
    same = np.tile(reps, (20, 1))[:, :, None]  # 20 cascades with identical replicas: only replica noise is left
    iv = CF.nested_bootstrap(same, lambda x: x[..., 0].mean(-1), n_boot=400, seed=1)
    assert iv.has_bounds and iv.low < iv.estimate < iv.high and iv.n == 20
    one_level = same.mean(1)[:, 0]
    assert one_level.std() < 1e-9  # a bootstrap over cascade means alone would report zero width
    # each cascade's replicas resampled on their own: the width of a mean over 20 x 40 replica draws
    expect = 2 * 1.96 * reps.std() / np.sqrt(20 * 40)
    assert 0.7 * expect < iv.high - iv.low < 1.3 * expect
    small = CF.nested_bootstrap(same[:2], lambda x: x[..., 0].mean(-1))
    assert not small.has_bounds and small.n == 2


def test_spec_rules_name_the_key():
    with pytest.raises(ValueError, match="set observe_minutes"):
        PropagationSpec(tree_files=["x.txt"], cv={"folds": 2}, counterfactual={})
    with pytest.raises(ValueError, match="counterfactual.act_minutes: 5"):
        PropagationSpec(tree_files=["x.txt"], cv={"folds": 2}, observe_minutes=10, counterfactual={"act_minutes": [5]})
    with pytest.raises(ValueError, match="arm name"):
        S.CounterfactualSpec(strategies={"a@b": {"remove": True}})
    with pytest.raises(ValueError, match="extra"):
        S.CounterfactualSpec(strategies={"x": {"delete": True}})


def test_cv_counterfactual_end_to_end(tmp_path):
    files = _trees(tmp_path / "trees")
    spec = _cv_spec(tmp_path, files, 0, 8, {"act_minutes": [10, 20], "bootstrap": 200})
    res = run_propagation(spec, tmp_path / "out")
    cf = res["summary"]["counterfactual"]
    assert cf["n"] == 6 and set(cf["arms"]) == {f"{s}@{a}" for s in S.default_strategies() for a in (10, 20)}
    rem = cf["arms"]["remove@10"]
    assert rem["averted_share"]["estimate"] == pytest.approx(1.0)
    assert (
        rem["relative"]["estimate"] < 0
        and rem["relative"]["high"] <= 0
        and cf["arms"]["label@10"]["relative"]["estimate"] > rem["relative"]["estimate"]
    )
    assert cf["arms"]["remove@20"]["relative"]["estimate"] > rem["relative"]["estimate"]
    err = rem["effect_error"]
    assert err["mae"]["estimate"] >= abs(err["bias"]["estimate"]) and -1 <= err["r"] <= 1
    assert rem["oracle_relative"]["estimate"] < 0
    assert "curve" not in res["cascades"][0]["counterfactual"]["arms"]["none"]  # folded into the pooled curves
    assert len(cf["curves"]["none"]) == 60 and len(cf["real_curve"]) == 60
    assert cf["assumptions"]["label_effect"] == S.LABEL_EFFECT
    json.dumps(res)
    rep = write_report(tmp_path / "out")
    html = rep.html.read_text()
    assert "Had the platform acted" in html and "Martel &amp; Rand 2024" in html and "on the real future" in html
    assert (tmp_path / "out" / "report" / "counterfactual.png").stat().st_size > 10_000
    assert not (tmp_path / "out" / "report" / "nrmse.png").exists()  # cv.models: []: no empty NRMSE figure
    assert "Mean NRMSE on held-out cascades" not in html


def test_seed_replicates_of_a_counterfactual_pool_by_cv_seed(tmp_path):
    """`socium seeds` pools cross-validated runs that differ only in cv.seed / base.seed: forecast - null is
    paired per seed, each arm's relative change is a signed mean over seeds."""
    from socium.experiments.designs.seeds import pool_seeds

    files = _trees(tmp_path / "trees")
    dirs = []
    for seed in (0, 1, 2):
        spec = _cv_spec(tmp_path, files, seed, 4, ONLY_REMOVAL)
        res = run_propagation(spec, tmp_path / f"s{seed}")
        dirs.append(tmp_path / f"s{seed}")
    pooled = pool_seeds(dirs)
    assert [s["cv.seed"] for s in pooled["seeds"]] == [0, 1, 2]
    rel = pooled["metrics"]["counterfactual.remove@10.relative"]
    assert (
        rel["n"] == 3
        and rel["method"] == "t"
        and rel["values"][2] == res["summary"]["counterfactual"]["arms"]["remove@10"]["relative"]["estimate"]
    )
    assert pooled["metrics"]["forecast.nrmse_scale"]["method"] == "bootstrap"
    assert pooled["paired"]["forecast - null: nrmse_scale"]["n"] == 3
    with pytest.raises(ConfigError, match="more than its seeds"):
        run_propagation(_cv_spec(tmp_path, files, 5, 5, ONLY_REMOVAL), tmp_path / "s5")
        pool_seeds([*dirs, tmp_path / "s5"])
