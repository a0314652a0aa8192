"""A user's script: only ``socium.forecast`` does the work (the stable entry point must be enough on its own;
the test data come from ``socium.testing.cascades``, a generator, not a forecast internal)."""

from __future__ import annotations

import json
from pathlib import Path

from socium import forecast as fc
from socium.testing.cascades import write_cascade_csv


def test_load_fit_forecast_score_write(tmp_path: Path) -> None:
    train = fc.load_cascades(write_cascade_csv(tmp_path / "train.csv", 12, 0))
    assert len(train) == 12 and train.table.schema == fc.SCHEMA
    fit_path = fc.write_fit_file(fc.fit(train, families=["lognormal"]), tmp_path / "fit.json")
    fit = fc.load_fit(fit_path)
    assert fit.format_version == fc.FIT_FORMAT_VERSION and fit.training_ids == list(train.trees)
    test = fc.load_cascades(write_cascade_csv(tmp_path / "test.csv", 5, 1))
    res = fc.forecast(fit, test, observe_minutes=[5, 10], horizon_minutes=60, replicas=16, baselines=["null"])
    s = res.results["by_observe_minutes"]["10"]
    assert s["n"] == 5 and 0.0 <= s["forecast"]["coverage"]["90"]["scale"]["estimate"] <= 1.0
    assert s["forecast_minus_null"]["crps"]["n"] == 5
    out = fc.write_forecast(res, tmp_path / "out")
    assert json.loads(out.read_text())["fit"]["sha256"] == fit.sha256
    # one cascade by hand through the same functions
    sub = test.subset([next(iter(test.trees))])
    assert len(sub) == 1 and sub.table.num_rows == len(next(iter(sub.trees.values())).nodes)
