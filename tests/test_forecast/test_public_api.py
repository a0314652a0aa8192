"""A user's script: only ``socium.forecast`` is imported (the stable entry point must be enough on its own)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from socium import forecast as fc


def _csv(path: Path, n: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    lines = ["cascade_id,node_id,parent_id,user_id,time_s"]
    for c in range(n):
        t = [0.0]
        lines.append(f"k{seed}-{c},0,,a{c % 3},0")
        g = rng.normal(0, 0.6)
        for j in range(1, int(rng.integers(15, 40))):
            p = int(rng.integers(0, j))
            t.append(t[p] + float(np.exp(rng.normal(1.2 + g, 1.0))))
            lines.append(f"k{seed}-{c},{j},{p},u{seed}-{c}-{j},{t[j] * 60:.2f}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_fit_forecast_score_write(tmp_path: Path) -> None:
    train = fc.load_cascades(_csv(tmp_path / "train.csv", 12, 0))
    assert len(train) == 12 and train.table.schema == fc.SCHEMA
    fit_path = fc.write_fit_file(fc.fit(train, families=["lognormal"]), tmp_path / "fit.json")
    fit = fc.load_fit(fit_path)
    assert fit.format_version == fc.FIT_FORMAT_VERSION and fit.training_ids == list(train.trees)
    test = fc.load_cascades(_csv(tmp_path / "test.csv", 5, 1))
    res = fc.forecast(fit, test, observe_minutes=[5, 10], horizon_minutes=60, replicas=16, baselines=["null"])
    s = res.results["by_observe_minutes"]["10"]
    assert s["n"] == 5 and 0.0 <= s["forecast"]["coverage"]["90"]["scale"]["estimate"] <= 1.0
    assert s["forecast_minus_null"]["crps"]["n"] == 5
    out = fc.write_forecast(res, tmp_path / "out")
    assert json.loads(out.read_text())["fit"]["sha256"] == fit.sha256
    # one cascade by hand through the same functions
    sub = test.subset([next(iter(test.trees))])
    assert len(sub) == 1 and sub.table.num_rows == len(next(iter(sub.trees.values())).nodes)
