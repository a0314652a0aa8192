"""socium forecast: fit file, predictive measures, transfer check, dispersion, outputs, CLI and bad input."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from conftest import SHARED_DATA as DATA
from socium.cli.main import app
from socium.errors import ConfigError, InputFileError, RunDirError
from socium.experiments.propagation.data.cascade_format import cascade_trees, read_csv
from socium.experiments.propagation.fit.dispersion import Finals, calibrate_dispersion
from socium.experiments.propagation.fit.fit_file import fit_cascades, load_fit, write_fit_file
from socium.experiments.propagation.fit.transfer_check import compare_populations
from socium.experiments.propagation.forecast.predictive import (
    Prediction,
    prefix_sd,
    quantile_interval,
    randomised_pit,
    sample_crps,
    score_cascade,
    widen,
)
from socium.experiments.propagation.forecast_run import ForecastSettings, forecast_cascades, write_forecast
from socium.experiments.report import write_report

TAR = DATA / "twitter15" / "twitter15_trees.tar.gz"
runner = CliRunner()


def synth_csv(path: Path, n: int, seed: int, size: tuple[int, int] = (20, 60), mu: float = 1.5) -> Path:
    """Cascades with a per-cascade speed and random trees (a known generative model), in the row format."""
    rng = np.random.default_rng(seed)
    lines = ["cascade_id,node_id,parent_id,user_id,time_s,label"]
    for c in range(n):
        k = int(rng.integers(*size))
        g = rng.normal(0, 0.5)
        t = [0.0]
        lines.append(f"s{seed}c{c},n0,,src{c % 4},0,{'true' if c % 2 else 'false'}")
        for j in range(1, k):
            p = int(rng.integers(0, j))
            t.append(t[p] + float(np.exp(rng.normal(mu + g, 1.0))))
            lines.append(f"s{seed}c{c},n{j},n{p},u{seed}_{c}_{j},{t[j] * 60:.3f},")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    d = tmp_path_factory.mktemp("fc")
    train = cascade_trees(read_csv(synth_csv(d / "train.csv", 16, 1)))
    fit_path = write_fit_file(
        fit_cascades(train, data=["train.csv"], bootstrap=0, families=["lognormal"]), d / "fit.json"
    )
    test_csv = synth_csv(d / "test.csv", 6, 2)
    return {"dir": d, "train": train, "fit": fit_path, "test_csv": test_csv, "test": cascade_trees(read_csv(test_csv))}


# ---- fit file -------------------------------------------------------------------------------------------
def test_fit_file_is_self_contained(world: dict) -> None:
    raw = json.loads(world["fit"].read_text())
    assert raw["format_version"] == 2 and raw["cascade_sigma"] == raw["estimates"]["cascade_sigma"]
    assert raw["training"]["ids"] == list(world["train"]) and raw["training"]["digest"].startswith("sha256:")
    assert len(raw["training"]["stats"]["size"]) == 16
    assert raw["timing"]["root_effects"]  # per-account speeds travel with it
    f = load_fit(world["fit"])
    assert f.note is None and f.cascade_sigma > 0 and f.dispersion == 1.0 and f.training_kind == "tree files"
    # the digest is content, not ids: one changed time changes it
    raw2 = fit_cascades(world["train"], bootstrap=0, families=["lognormal"])
    assert raw2["training"]["digest"] == raw["training"]["digest"]


def test_old_and_bad_fit_files(world: dict, tmp_path: Path) -> None:
    raw = json.loads(world["fit"].read_text())
    old = {k: raw[k] for k in ("timing", "estimates", "ci95", "families")}  # format 1: sigma under estimates
    (tmp_path / "old.json").write_text(json.dumps(old))
    f = load_fit(tmp_path / "old.json")
    assert f.cascade_sigma == raw["estimates"]["cascade_sigma"] and "estimates.cascade_sigma" in (f.note or "")
    (tmp_path / "bare.json").write_text(json.dumps(raw["timing"]))
    with pytest.raises(ConfigError, match=r"bare.json: no cascade_sigma .*--cascade-sigma"):
        load_fit(tmp_path / "bare.json")
    assert load_fit(tmp_path / "bare.json", cascade_sigma=0.3).cascade_sigma == 0.3
    with pytest.raises(ConfigError, match="--cascade-sigma: expected a finite number >= 0"):
        load_fit(tmp_path / "bare.json", cascade_sigma=-1)
    (tmp_path / "future.json").write_text(json.dumps({**raw, "format_version": 9}))
    with pytest.raises(InputFileError, match="format_version 9"):
        load_fit(tmp_path / "future.json")
    (tmp_path / "neg.json").write_text(json.dumps({**raw, "cascade_sigma": -0.1}))
    with pytest.raises(ConfigError, match="neg.json: cascade_sigma: expected a finite number"):
        load_fit(tmp_path / "neg.json")
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(InputFileError, match="junk.json: cannot read fit file"):
        load_fit(tmp_path / "junk.json")


# ---- measures -------------------------------------------------------------------------------------------
def test_sample_crps_matches_its_definition() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(10, 3, 37)
    brute = np.mean(np.abs(x - 11.0)) - 0.5 * np.mean(np.abs(x[:, None] - x[None, :]))
    assert sample_crps(x, 11.0) == pytest.approx(brute)
    assert sample_crps(np.full(5, 4.0), 7.0) == pytest.approx(3.0)  # a point mass: the absolute error
    assert randomised_pit(np.array([1.0, 2, 2, 3]), 2.0, 0.0) == 0.25
    assert randomised_pit(np.array([1.0, 2, 2, 3]), 2.0, 1.0) == 0.75


def test_quantile_interval_brackets_and_refuses_small_n() -> None:
    v = list(np.random.default_rng(0).exponential(1.0, 200))
    q = quantile_interval(v, 0.5)
    assert q["low"] < q["estimate"] < q["high"] and q["method"] == "order statistics"
    assert quantile_interval([1.0, 2.0], 0.5)["low"] is None
    assert quantile_interval(v[:20], 0.9)["high"] is None or quantile_interval(v[:20], 0.9)["high"] >= max(v[:20]) * 0.5


def test_widen_scales_log_growth_and_keeps_point() -> None:
    x = np.array([[1.0, 5, 9, 20], [1.0, 5, 7, 12], [1.0, 5, 6, 8]])
    real = {"scale": np.array([1.0, 5, 6, 10])}
    same = widen({"scale": x}, real, 1, 1.0, {})
    assert same["scale"] is x
    w = widen({"scale": x}, real, 1, 2.0, {"scale": 1000.0})["scale"]
    assert (w[:, :2] == x[:, :2]).all()  # the observed part never moves
    z, zw = np.log1p(x[:, -1] - 5), np.log1p(w[:, -1] - 5)
    assert zw - np.median(zw) == pytest.approx(2 * (z - np.median(z)))
    capped = widen({"scale": x}, real, 1, 5.0, {"scale": 30.0})["scale"]
    assert capped.max() == 30.0 and capped[:, 1:].min() >= 5.0


def test_score_cascade_counts_coverage() -> None:
    samples = {
        "scale": np.tile(np.arange(1.0, 101.0)[:, None], (1, 3)),
        "depth": np.ones((100, 3)),
        "max_breadth": np.ones((100, 3)),
    }
    pred = Prediction(1, 3, {"forecast": samples}, {"forecast": {k: v.mean(0) for k, v in samples.items()}})
    real = {"scale": np.array([1.0, 1, 50]), "depth": np.ones(3), "max_breadth": np.ones(3)}
    row = score_cascade(pred, real)["forecast"]
    assert row["covered"]["50"]["scale"] and row["covered"]["90"]["scale"]
    real["scale"] = np.array([1.0, 1, 97])
    row = score_cascade(pred, real)["forecast"]
    assert not row["covered"]["90"]["scale"] and not row["covered"]["50"]["scale"]
    assert row["ape"] == pytest.approx(abs(50.5 - 97) / 97)
    assert row["sle"] == pytest.approx((np.log2(1 + 49.5) - np.log2(1 + 96)) ** 2)


# ---- the tool -------------------------------------------------------------------------------------------
def test_forecast_end_to_end(world: dict, tmp_path: Path) -> None:
    f = load_fit(world["fit"])
    s = ForecastSettings(observe_minutes=(5, 10), horizon_minutes=60, replicas=20, seed=0)
    res = forecast_cascades(f, world["test"], s, source="test.csv")
    by = res.results["by_observe_minutes"]
    assert set(by) == {"5", "10"} and by["10"]["n"] == 6
    fc = by["10"]["forecast"]
    assert 0 <= fc["coverage"]["80"]["scale"]["estimate"] <= 1 and sum(fc["pit_histogram"]) == 6
    assert {"forecast_minus_null", "forecast_minus_seismic", "forecast_minus_hawkes_powerlaw"} <= set(by["10"])
    assert res.results["transfer"]["in_training"] == []
    out = write_forecast(res, tmp_path / "o").parent
    casc = pq.read_table(out / "cascades.parquet").to_pylist()
    assert len(casc) == 6 * 2 * 6  # cascades x observe minutes x (forecast + 5 baselines)
    curves = pq.read_table(out / "curves.parquet", filters=[("model", "=", "forecast")]).to_pydict()
    assert len(curves["minute"]) == 6 * 2 * 3 * 60
    q = np.array([curves[k] for k in ("q05", "q25", "q50", "q75", "q95")])
    assert (np.diff(q, axis=0) >= -1e-9).all()  # quantiles ordered at every minute
    row = next(r for r in casc if r["model"] == "forecast" and r["observe_minutes"] == 10)
    first = [
        i
        for i, (c, m) in enumerate(zip(curves["cascade_id"], curves["observe_minutes"]))
        if c == row["cascade_id"] and m == 10
    ]
    assert curves["mean"][first[59]] == pytest.approx(row["final_mean"])
    with pytest.raises(RunDirError, match="already holds results.json"):
        write_forecast(res, out)
    rep = write_report(out)
    assert {p.name for p in rep.images} == {"calibration.png", "fans.png"}
    assert all(p.stat().st_size > 10_000 for p in rep.images)


def test_forecast_is_reproducible_and_dispersion_widens_only_intervals(world: dict) -> None:
    from dataclasses import replace

    f = load_fit(world["fit"])
    s = ForecastSettings(observe_minutes=(10,), horizon_minutes=60, replicas=20, baselines=("null",))
    a = forecast_cascades(f, world["test"], s)
    b = forecast_cascades(f, world["test"], s)
    assert a.cascades.equals(b.cascades)
    w = forecast_cascades(replace(f, dispersion=4.0), world["test"], s)
    for ra, rw in zip(a.cascades.to_pylist(), w.cascades.to_pylist()):
        assert ra["nrmse_scale"] == rw["nrmse_scale"] and ra["sle"] == rw["sle"]  # the point forecast is kept
        if ra["model"] == "forecast":
            assert (rw["final_q95"] - rw["final_q05"]) >= (ra["final_q95"] - ra["final_q05"]) - 1e-9


def test_forecast_results_do_not_depend_on_worker_count(world: dict) -> None:
    f = load_fit(world["fit"])
    s = ForecastSettings(observe_minutes=(5, 10), horizon_minutes=60, replicas=20, baselines=("null", "seismic"))
    one = forecast_cascades(f, world["test"], s)
    two = forecast_cascades(f, world["test"], replace(s, workers=2))
    assert one.cascades.equals(two.cascades)
    c1, c2 = one.curves.to_pydict(), two.curves.to_pydict()
    assert c1.keys() == c2.keys() and len(c1["minute"]) > 0
    for k in c1:  # quantile columns hold NaN before the observe minute: equal where both are NaN
        a, b = np.asarray(c1[k]), np.asarray(c2[k])
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), k
    drop = {"wall_s"}
    assert {k: v for k, v in one.results.items() if k not in drop} == {
        k: v for k, v in two.results.items() if k not in drop
    }
    with pytest.raises(ConfigError, match="--workers"):
        forecast_cascades(f, world["test"], replace(s, workers=0))


def test_transfer_check_compares_cascades(world: dict, tmp_path: Path) -> None:
    f = load_fit(world["fit"])
    same = compare_populations(f, world["test"])
    assert same["warning"] is None and same["ks"]["size"]["D"] is not None
    big = cascade_trees(read_csv(synth_csv(tmp_path / "big.csv", 30, 5, size=(300, 400))))
    diff = compare_populations(f, big)
    assert "size at minute 150 (KS D = 1.00" in diff["warning"]
    inside = compare_populations(f, {k: world["train"][k] for k in list(world["train"])[:3]})
    assert inside["in_training"] and "in the fit's training cascades" in inside["warning"]


def test_bad_settings_are_named(world: dict) -> None:
    f = load_fit(world["fit"])
    for s, opt in (
        (ForecastSettings(observe_minutes=(60,), horizon_minutes=60), "--observe-minutes: 60"),
        (ForecastSettings(replicas=1), "--replicas"),
        (ForecastSettings(baselines=("prophet",)), "--baselines: 'prophet'"),
    ):
        with pytest.raises(ConfigError, match=opt):
            forecast_cascades(f, world["test"], s)


def test_dispersion_is_chosen_in_cv_on_training_cascades(world: dict) -> None:
    cal = calibrate_dispersion(
        world["train"],
        folds=2,
        replicas=20,
        horizon_minutes=60,
        families=["lognormal"],
        grid=(1.0, 3.0, 10.0),
        floor_grid=(0.0, 0.2),
        per_node_grid=(0.0, 1.0),
        extra_minutes=(2, 5),
    )
    assert cal["dispersion"] in (1.0, 3.0, 10.0)
    assert cal["dispersion_sd"]["floor"] in (0.0, 0.2) and cal["dispersion_sd"]["per_node"] in (0.0, 1.0)
    assert cal["cv_minutes"] == [2, 5, 10] and cal["n"] == 16 * 3  # every training cascade from 3 minutes
    k_only = cal["coverage_k_only"]
    assert k_only["10"]["90"] >= k_only["1"]["90"] and k_only["10"]["50"] >= k_only["1"]["50"]
    gap = sum(abs(cal["coverage"][lv] - float(lv) / 100) for lv in ("50", "80", "90"))
    assert gap <= min(sum(abs(c[lv] - float(lv) / 100) for lv in ("50", "80", "90")) for c in k_only.values()) + 1e-12


def test_added_sd_widens_agreeing_replicas_and_matches_the_cv(world: dict) -> None:
    """Replicas that all agree (a small tree every replica completes) get an interval only from the added sd;
    the CV's vectorised widening is the tool's :func:`widen` at the final minute."""
    x = np.full((40, 30), 50.0)
    x[:, :10] = 5.0
    real = {"scale": np.r_[np.full(11, 5.0), np.full(19, 40.0)]}
    caps = {"scale": 80.0}
    same = widen({"scale": x}, real, 10, 3.0, caps)["scale"][:, -1]
    assert np.ptp(same) == 0  # k alone cannot widen agreeing replicas
    wide = widen({"scale": x}, real, 10, 1.0, caps, (0.0, 1.0))["scale"]
    assert np.ptp(wide[:, -1]) > 20 and wide[:, -1].max() <= 80 and (wide[:, :10] == 5).all()
    assert prefix_sd(4.0, (0.0, 1.0)) == pytest.approx(0.5) and prefix_sd(100.0, (0.3, 1.0)) > 0.3
    rng = np.random.default_rng(1)
    xs = 5 + rng.integers(0, 60, size=(40, 30)).cumsum(axis=1).astype(float) / 20
    fin = Finals(xs[None, :, -1], np.array([40.0]), np.array([real["scale"][10]]), np.array([80.0]))
    for k, sd in ((1.0, (0.0, 0.0)), (2.5, (0.1, 1.5))):
        ref = widen({"scale": xs}, real, 10, k, caps, sd)["scale"][:, -1]
        np.testing.assert_allclose(fin.widened(k, sd)[0], ref)


# ---- the command line -----------------------------------------------------------------------------------
def test_cli_forecast_and_report(world: dict, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    args = [
        "forecast",
        "--fit",
        str(world["fit"]),
        "--cascades",
        str(world["test_csv"]),
        "--out",
        str(out),
        "--horizon-minutes",
        "60",
        "--replicas",
        "10",
        "--limit",
        "3",
    ]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert json.loads((out / "results.json").read_text())["cascades"]["n"] == 3
    assert "intervals are not calibrated" in " ".join(r.output.split())  # the fixture's fit has dispersion 1
    raw = json.loads(world["fit"].read_text())
    (tmp_path / "calibrated.json").write_text(json.dumps({**raw, "dispersion": 3.5}))
    wide = [a if a != str(world["fit"]) else str(tmp_path / "calibrated.json") for a in args]
    r2 = runner.invoke(app, [a if a != str(out) else str(tmp_path / "cli2") for a in wide])
    assert r2.exit_code == 0 and "not calibrated" not in r2.output, r2.output
    before = (out / "results.json").read_bytes()
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and "already holds results.json" in r.output
    assert (out / "results.json").read_bytes() == before
    assert runner.invoke(app, ["report", str(out)]).exit_code == 0


def test_cli_calibrates_at_the_forecasts_window_and_says_when_it_differs(world: dict, tmp_path: Path) -> None:
    """``--calibrate-observe-minutes`` / ``--calibrate-horizon-minutes`` reach the CV (Weibo forecasts from minute
    60 over 24 h, not Twitter15's 10 / 150); a forecast at another window says its coverage is not calibrated."""
    fit = tmp_path / "fit.json"
    train = synth_csv(tmp_path / "train.csv", 16, 1)
    r = runner.invoke(
        app,
        ["fit", "propagation", "--train", str(train), "--bootstrap", "0", "--calibrate-intervals"]
        + ["--calibrate-observe-minutes", "5", "--calibrate-horizon-minutes", "60", "--out", str(fit)],
    )
    assert r.exit_code == 0, r.output
    cal = json.loads(fit.read_text())["dispersion_cv"]
    assert (cal["observe_minutes"], cal["horizon_minutes"], cal["n"]) == (5, 60, 16)
    assert load_fit(fit).dispersion_window == (5, 60) and load_fit(world["fit"]).dispersion_window is None
    base = ["forecast", "--fit", str(fit), "--cascades", str(world["test_csv"]), "--horizon-minutes", "60"]
    base += ["--replicas", "10", "--limit", "2"]
    same = runner.invoke(app, [*base, "--observe-minutes", "5", "--out", str(tmp_path / "same")])
    other = runner.invoke(app, [*base, "--observe-minutes", "10", "--out", str(tmp_path / "other")])
    assert same.exit_code == 0 and other.exit_code == 0, same.output + other.output
    said = " ".join(other.output.split())
    assert "calibrated for observe minute 5, horizon 60 min" in said and "not calibrated" in said
    assert "calibrated for observe minute" not in " ".join(same.output.split())


@pytest.mark.parametrize(
    ("rows", "extra", "msg"),
    [
        (["c,r,,u,0", "c,x,r,v,-1"], [], "bad.csv:3: column 'time_s'"),
        (["c,r,,u,0", "c,x,q,v,5"], [], "bad.csv:3: column 'parent_id': unknown parent 'q'"),
        (["c,r,,u,0"], ["--observe-minutes", "200"], "--observe-minutes: 200 must lie in"),
    ],
)
def test_cli_bad_input_is_one_error_line_and_writes_nothing(
    world: dict, tmp_path: Path, rows: list[str], extra: list[str], msg: str
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(["cascade_id,node_id,parent_id,user_id,time_s", *rows]) + "\n")
    out = tmp_path / "never"
    r = runner.invoke(app, ["forecast", "--fit", str(world["fit"]), "--cascades", str(bad), "--out", str(out), *extra])
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    err = [ln for ln in lines if ln.startswith("error:")]
    assert len(err) == 1 and msg in " ".join(r.output.split()), r.output
    assert not out.exists()


def test_cli_bare_timing_file_is_refused(world: dict, tmp_path: Path) -> None:
    bare = tmp_path / "timing.json"
    bare.write_text(json.dumps(json.loads(world["fit"].read_text())["timing"]))
    r = runner.invoke(
        app, ["forecast", "--fit", str(bare), "--cascades", str(world["test_csv"]), "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 2 and "no cascade_sigma" in r.output and not (tmp_path / "o").exists()


@pytest.mark.skipif(not TAR.exists(), reason="shared Twitter15 data not present")
def test_twitter15_transfer_without_overlap(world: dict) -> None:
    from socium.experiments.propagation.data.cascade_sources import load_cascade_table

    oasis = cascade_trees(load_cascade_table("oasis", limit=12))
    fit = write_fit_file(
        fit_cascades(oasis, data=["oasis"], bootstrap=0, families=["lognormal"]), world["dir"] / "oasis12.json"
    )
    others = cascade_trees(load_cascade_table("twitter15-not-oasis", limit=4))
    res = forecast_cascades(load_fit(fit), others, ForecastSettings(replicas=10, baselines=("null",)))
    assert res.results["transfer"]["in_training"] == []
    assert res.results["fit"]["training"]["kind"] == "oasis"
    assert res.results["by_observe_minutes"]["10"]["n"] == 4


def test_chronological_split_trains_on_earlier_cascades() -> None:
    import datetime as dt

    from socium.experiments.propagation.cv.cv import chronological_split
    from socium.experiments.propagation.spec import CVSpec

    t0 = dt.datetime(2015, 1, 1, tzinfo=dt.timezone.utc)
    ids = [f"c{i}" for i in range(10)]
    posted = {c: t0 + dt.timedelta(days=(7 * i) % 10) for i, c in enumerate(ids)}
    pairs = chronological_split(ids, 5, posted)
    assert len(pairs) == 4
    for train, held in pairs:
        assert max(posted[c] for c in train) <= min(posted[c] for c in held) and not set(train) & set(held)
    assert sorted(c for _, h in pairs for c in h) == sorted(set(ids) - set(pairs[0][0]))
    posted["c3"] = None
    with pytest.raises(ConfigError, match="cv.split: chronological needs each cascade's posting time; 'c3'"):
        chronological_split(ids, 5, posted)
    assert (
        "split" not in CVSpec().model_dump() and CVSpec(split="chronological").model_dump()["split"] == "chronological"
    )


def test_cli_counterfactual_arms_and_bad_arms_file(world: dict, tmp_path: Path) -> None:
    arms = tmp_path / "arms.yaml"
    arms.write_text(
        "counterfactual:\n  act_minutes: [10, 20]\n  bootstrap: 50\n  strategies:\n    remove: {remove: true}\n"
    )
    out = tmp_path / "cf"
    base = [
        "forecast",
        "--fit",
        str(world["fit"]),
        "--cascades",
        str(world["test_csv"]),
        "--horizon-minutes",
        "60",
        "--replicas",
        "10",
        "--baseline",
        "null",
    ]
    r = runner.invoke(app, [*base, "--out", str(out), "--counterfactual", str(arms)])
    assert r.exit_code == 0, r.output
    cf = json.loads((out / "results.json").read_text())["by_observe_minutes"]["10"]["counterfactual"]
    assert cf["n"] == 6 and set(cf["arms"]) == {"remove@10", "remove@20"}
    assert cf["arms"]["remove@10"]["relative"]["estimate"] <= cf["arms"]["remove@20"]["relative"]["estimate"] + 1e-9
    assert runner.invoke(app, ["report", str(out)]).exit_code == 0
    arms.write_text("counterfactual:\n  strategies:\n    remove: {remove: maybe}\n")
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "x"), "--counterfactual", str(arms)])
    assert r.exit_code == 2 and "arms.yaml: counterfactual.strategies.remove.remove" in " ".join(r.output.split())
    arms.write_text("act_minutes: [90]\n")
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "x"), "--counterfactual", str(arms)])
    assert r.exit_code == 2 and "counterfactual.act_minutes: 90" in r.output and not (tmp_path / "x").exists()


def test_spec_with_a_saved_fit_and_observe_minutes_points_to_socium_forecast(world: dict) -> None:
    from pydantic import ValidationError

    from socium.experiments.propagation.spec import PropagationSpec

    with pytest.raises(ValidationError, match="socium forecast --fit FILE"):
        PropagationSpec(timing_file=str(world["fit"]), observe_minutes=10, cv={"runs": 2})


def test_chronological_cv_end_to_end(tmp_path: Path) -> None:
    """cv.split: chronological on tree files named by snowflake-like ids: later blocks scored by earlier fits."""
    from socium.experiments.propagation.spec import PropagationSpec
    from socium.experiments.propagation.study import run_propagation

    rng = np.random.default_rng(7)
    folder = tmp_path / "trees"
    folder.mkdir()
    ids = [str(10**17 + i * 10**13) for i in range(9)]  # ids carry increasing posting times
    for t in ids:
        lines = [f"['ROOT', 'ROOT', '0.0']->['u{t}_0', '{t}', '0.0']"]
        times = [0.0]
        for i in range(1, 12):
            p = int(rng.integers(0, i))
            times.append(times[p] + float(np.exp(rng.normal(1.5, 1.0))))
            lines.append(f"['u{t}_{p}', '{t}', '{times[p]:.2f}']->['u{t}_{i}', '{t}', '{times[i]:.2f}']")
        (folder / f"{t}.txt").write_text("\n".join(lines) + "\n")
    spec = PropagationSpec(
        tree_files=[str(folder / f"{t}.txt") for t in ids[::-1]],  # given newest first: the split orders them
        minutes=30,
        follows="tree",
        observe_minutes=5,
        topics_csv=str(tmp_path / "none.csv"),
        cv={"folds": 3, "runs": 4, "models": [], "split": "chronological", "families": ["lognormal"]},
        base={"seed": 0},
    )
    res = run_propagation(spec, tmp_path / "out")
    folds = res["folds"]
    assert [f["train"] for f in folds] == [ids[:3], ids[:6]] and [f["held_out"] for f in folds] == [ids[3:6], ids[6:]]
    assert res["summary"]["split"] == "chronological" and res["summary"]["forecast"]["n"] == 6
    assert res["spec"]["cv"]["split"] == "chronological"
    assert "chronological cross-validation" in write_report(tmp_path / "out").html.read_text()
