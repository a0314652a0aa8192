"""The forecast's bias calibration (forecast/bias.py) and ``cv.bias_calibration`` in the cross-validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests.test_experiments.test_propagation_forecast import _trees

from socium.experiments.propagation.forecast.bias import (
    calibrate_curves,
    growth_log_ratio,
    learn_bias,
    shift_growth,
)
from socium.experiments.propagation.forecast.predictive import bias_note, final_bias
from socium.experiments.propagation.spec import CVSpec, PropagationSpec
from socium.experiments.propagation.study import run_propagation


def test_growth_log_ratio_is_positive_when_the_forecast_is_low() -> None:
    assert growth_log_ratio(forecast_final=30.0, real_final=50.0, real_at_m=10.0) == pytest.approx(
        math.log(41.0) - math.log(21.0)
    )
    assert growth_log_ratio(60.0, 50.0, 10.0) < 0.0
    assert growth_log_ratio(5.0, 10.0, 10.0) == 0.0  # a forecast below the observed value has no growth


def test_learn_bias_is_the_median_per_curve_and_zero_without_rows() -> None:
    rows = [
        {"scale": (20.0, 40.0, 10.0), "depth": (2.0, 2.0, 1.0)},
        {"scale": (30.0, 30.0, 10.0), "depth": (3.0, 3.0, 1.0)},
        {"scale": (1000.0, 20.0, 10.0), "depth": (3.0, 3.0, 1.0)},  # one wild miss does not set the median
    ]
    beta = learn_bias(rows)
    assert beta["scale"] == pytest.approx(0.0)
    assert beta["depth"] == 0.0
    assert beta["max_breadth"] == 0.0  # no rows for it
    assert learn_bias([]) == {"scale": 0.0, "depth": 0.0, "max_breadth": 0.0}
    low = learn_bias([{"scale": (20.0, 40.0, 10.0)}, {"scale": (15.0, 25.0, 10.0)}, {"scale": (12.0, 16.0, 10.0)}])
    assert low["scale"] == pytest.approx(math.log(16.0) - math.log(6.0))


def test_shift_growth_scales_growth_after_m_and_respects_the_cap() -> None:
    x = np.array([[0.0, 5.0, 10.0, 20.0, 40.0], [0.0, 5.0, 10.0, 12.0, 14.0]])
    assert shift_growth(x, 10.0, 2, 0.0) is x  # the identity at beta 0
    y = shift_growth(x, 10.0, 2, math.log(2.0), cap=50.0)
    assert np.array_equal(y[:, :2], x[:, :2])  # the observed minutes do not move
    assert y[0, 3] == pytest.approx(10.0 + (11.0 * 2.0 - 1.0))
    assert y[0, 4] == 50.0  # capped at what the tree can reach
    assert np.all(np.diff(y, axis=1) >= 0)  # still a cumulative curve
    down = shift_growth(x, 10.0, 2, -5.0)
    assert np.all(down[:, 2:] >= 10.0)  # never below the observed value
    curves = calibrate_curves({"scale": x[0]}, {"scale": x[0]}, 2, {"scale": math.log(2.0)}, {"scale": 50.0})
    assert curves["scale"][3] == pytest.approx(31.0)


def test_final_bias_and_its_warning() -> None:
    real = [100.0 + 10 * i for i in range(40)]
    low = final_bias([0.9 * r for r in real], real)
    assert low["median_log_ratio"]["estimate"] == pytest.approx(math.log(0.9))
    assert low["share_low"]["estimate"] == 1.0 and low["n"] == 40
    note = bias_note(low)
    assert note is not None and "biased low" in note and "low on 100% of 40" in note
    mixed = final_bias([r * (1.1 if i % 2 else 0.9) for i, r in enumerate(real)], real)
    assert bias_note(mixed) is None  # the interval holds 0: nothing to warn about
    assert bias_note(final_bias([1.0, 2.0], [2.0, 4.0])) is None  # n = 2: no interval, no claim
    high = bias_note(final_bias([1.2 * r for r in real], real), "forecast_bc")
    assert high is not None and high.startswith("forecast_bc is biased high")


def test_bias_calibration_key_is_omitted_from_the_dump_while_off() -> None:
    assert "bias_calibration" not in CVSpec().model_dump(mode="json")
    assert CVSpec(bias_calibration=True).model_dump(mode="json")["bias_calibration"] is True


def test_cv_bias_calibration_adds_forecast_bc_and_leaves_the_forecast_as_it_was(tmp_path, monkeypatch) -> None:
    files = _trees(tmp_path / "trees", n_trees=9)

    def run(bias: bool, out: str) -> dict:
        cv = {"folds": 3, "seed": 0, "families": ["lognormal"], "runs": 4, "models": [], "bias_calibration": bias}
        spec = PropagationSpec(
            tree_files=[str(f) for f in files],
            minutes=16,  # short: the trees are still growing at the horizon, so the calibration has room
            observe_minutes=4,
            follows="tree",
            topics_csv=str(tmp_path / "none.csv"),
            cv=cv,
            base={"seed": 0},
        )
        return run_propagation(spec, tmp_path / out)

    plain, calibrated = run(False, "plain"), run(True, "bc")
    assert "bias_calibration" not in plain["spec"]["cv"]
    assert all("forecast_bc" not in r["forecast"] for r in plain["cascades"])
    for a, b in zip(plain["cascades"], calibrated["cascades"], strict=True):
        assert a["id"] == b["id"]
        assert a["forecast"]["forecast"] == b["forecast"]["forecast"]  # the calibration never touches the forecast
        assert set(b["forecast"]) == set(a["forecast"]) | {"forecast_bc"}
    for fold in calibrated["folds"]:
        learnt = fold["bias_calibration"]
        assert learnt["n_train"] == len(fold["train"])  # learnt on the fold's training cascades, all of them
        assert set(learnt["beta"]) == {"scale", "depth", "max_breadth"}
    assert "forecast_minus_forecast_bc" in calibrated["summary"]["forecast"]
    summ = calibrated["summary"]["bias_calibration"]
    assert summ["forecast"]["n"] == summ["forecast_bc"]["n"] == len(calibrated["cascades"])
    assert "bias_calibration" not in plain["summary"]

    # What is learnt is applied to the held-out cascades: a forecast scaled up by exp(1) on the growth scale.
    def seen(rows):
        assert all(len(r) > 0 for r in rows)  # called with the training cascades' forecasts
        return {"scale": 1.0, "depth": 0.0, "max_breadth": 0.0}

    monkeypatch.setattr("socium.experiments.propagation.cv.cv.learn_bias", seen)
    up = run(True, "up")
    raised = 0
    for a, b in zip(plain["cascades"], up["cascades"], strict=True):
        raw, bc = a["forecast"]["forecast"], b["forecast"]["forecast_bc"]
        assert bc["final_scale"] >= raw["final_scale"] and bc["final_scale"] <= b["agents"]
        assert bc["depth"] == raw["depth"]  # beta 0 leaves a curve as it was
        raised += int(bc["final_scale"] > raw["final_scale"])
    assert raised > 0
