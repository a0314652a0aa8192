"""Emulator-only studies in the explorer (issue 40 item 7): a ``socium forecast`` folder (with counterfactual
arms) and a propagation counterfactual experiment open per cascade: the observed prefix, the forecast fan, the
real future and each arm; the experiment page draws its own figures and names no absolute path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from socium import forecast as fc
from socium.experiments.propagation.counterfactual import CounterfactualSpec
from socium.explore.files import experiment_files, shown_path
from socium.explore.studies import QCOLS, open_study
from socium.testing.cascades import write_cascade_csv

ARMS = {"act_minutes": [10, 20], "bootstrap": 20, "strategies": {"remove": {"remove": True}, "label": {"label": True}}}


@pytest.fixture(scope="module")
def forecast_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny forecast (4 cascades, observed for 5 and 10 minutes, 60-minute horizon) with two arms at two
    minutes, and a report figure."""
    tmp = tmp_path_factory.mktemp("study")
    train = fc.load_cascades(write_cascade_csv(tmp / "train.csv", 12, 0))
    fit = fc.load_fit(fc.write_fit_file(fc.fit(train, families=["lognormal"]), tmp / "fit.json"))
    test = fc.load_cascades(write_cascade_csv(tmp / "test.csv", 4, 1))
    res = fc.forecast(
        fit, test, observe_minutes=[5, 10], horizon_minutes=60, replicas=16, baselines=["null"],
        counterfactual=CounterfactualSpec.model_validate(ARMS),
    )  # fmt: skip
    out = tmp / "fc"
    fc.write_forecast(res, out)
    (out / "report").mkdir()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    fig.savefig(out / "report" / "fans.png")
    return out


@pytest.fixture(scope="module")
def cf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A propagation counterfactual experiment's results.json as the cross-validation writes it (per cascade:
    each arm's reach per replica, the oracle's, the observed and real final size; no curves)."""
    rng = np.random.default_rng(3)
    cascades = []
    for i in range(3):
        arms = {k: {"reach": rng.integers(5, 60, 40).tolist(), "eventual": [60] * 40}
                for k in ("none", "remove@10", "label@10")}  # fmt: skip
        oracle = {k: rng.integers(5, 60, 40).tolist() for k in ("remove@10", "label@10")}
        cascades.append({"id": f"c{i}", "label": "false", "agents": 60, "real_final": {"scale": 42 + i},
                         "counterfactual": {"observed": 7 + i, "arms": arms, "oracle": oracle}})  # fmt: skip
    out = tmp_path_factory.mktemp("cf") / "exp"
    out.mkdir()
    spec = {"observe_minutes": 10, "inputs": "/home/someone/data/x.csv"}
    results = {"experiment": "propagation", "mode": "cv", "minutes": 150, "spec": spec, "cascades": cascades}
    (out / "results.json").write_text(json.dumps(results))
    return out


def _horizon(forecast_dir: Path, cid: str, m: int) -> dict[str, dict[str, float]]:
    """Each model's and arm's mean and quantiles at the last minute, read from curves.parquet directly."""
    t = pq.read_table(forecast_dir / "curves.parquet").to_pylist()
    rows = [r for r in t if r["cascade_id"] == cid and r["observe_minutes"] == m and r["curve"] == "scale"]
    last = max(r["minute"] for r in rows)
    return {r["model"]: {k: r[k] for k in ("mean", *QCOLS)} for r in rows if r["minute"] == last}


def test_forecast_writes_each_arms_curve_conditioned_on_the_prefix(forecast_dir: Path) -> None:
    curves = pq.read_table(forecast_dir / "curves.parquet").to_pylist()
    table = pq.read_table(forecast_dir / "cascades.parquet").to_pylist()
    want = {"arm:none", *(f"arm:{s}@{a}" for s in ("remove", "label") for a in (10, 20))}
    for row in (r for r in table if r["model"] == "forecast"):
        cid, m = row["cascade_id"], row["observe_minutes"]
        at_m = {r["model"]: r for r in curves if r["cascade_id"] == cid and r["observe_minutes"] == m
                and r["minute"] == m and r["curve"] == "scale"}  # fmt: skip
        assert want <= set(at_m)
        for model in want:  # every arm runs on replicas that hold the observed prefix: all agree at minute m
            assert at_m[model]["q05"] == at_m[model]["q95"] == row["observed"], (cid, m, model)
    res = json.loads((forecast_dir / "results.json").read_text())
    assert "quantiles" not in json.dumps(res["by_observe_minutes"]["10"]["counterfactual"]["arms"])


def test_study_reader_is_the_files(forecast_dir: Path, cf_dir: Path) -> None:
    study = open_study(forecast_dir)
    assert study is not None and study.kind == "forecast" and study.observe_minutes == [5, 10]
    rows = study.cascades()
    table = pq.read_table(forecast_dir / "cascades.parquet").to_pylist()
    assert [c.cascade_id for c in rows] == list(dict.fromkeys(r["cascade_id"] for r in table))
    for c in rows:
        for m in (5, 10):
            got = study.curves(c.cascade_id, m)
            assert got is not None and got.forecast is not None
            want = _horizon(forecast_dir, c.cascade_id, m)
            fans = [got.forecast, *got.baselines, *got.arms]
            assert {f.model for f in fans} == set(want)
            for f in fans:
                assert float(f.mean[-1]) == pytest.approx(want[f.model]["mean"])
                assert [float(f.q[k][-1]) for k in QCOLS] == pytest.approx(
                    [want[f.model][k] for k in QCOLS], nan_ok=True
                )
            assert float(got.real[m]) == c.observed[m] and float(got.real[-1]) == c.real_final
    cf = open_study(cf_dir)
    assert cf is not None and cf.kind == "counterfactual"
    res = json.loads((cf_dir / "results.json").read_text())
    for c, row in zip(cf.cascades(), res["cascades"], strict=True):
        arms = cf.arm_reach(c.cascade_id)
        assert [a.arm for a in arms] == list(row["counterfactual"]["arms"])
        for a in arms:
            reach = row["counterfactual"]["arms"][a.arm]["reach"]
            assert [a.reach[k] for k in QCOLS] == pytest.approx(list(np.quantile(reach, [0.05, 0.25, 0.5, 0.75, 0.95])))
    assert open_study(cf_dir.parent) is None


def test_experiment_files_and_paths_shown(forecast_dir: Path) -> None:
    assert experiment_files(forecast_dir) == ["results.json", "cascades.parquet", "curves.parquet", "report/fans.png"]
    assert shown_path(str(forecast_dir / "inputs" / "a.csv"), forecast_dir) == "inputs/a.csv"
    assert shown_path("/home/someone/data/x.csv", forecast_dir) == "…/data/x.csv"
    assert shown_path(3, forecast_dir) == 3 and shown_path("chronological", forecast_dir) == "chronological"


def _arm_rows(page: object) -> list[dict[str, str]]:
    js = "els => els.map(e => Object.fromEntries(Object.entries(e.dataset)))"
    return page.locator(".horizon-table .arm-row").evaluate_all(js)  # type: ignore[attr-defined,no-any-return]


@pytest.mark.browser
def test_a_forecast_folder_opens_per_cascade(forecast_dir: Path) -> None:
    from test_explore import CHROMIUM, serving

    study = open_study(forecast_dir)
    assert study is not None
    cids = [c.cascade_id for c in study.cascades()]
    with serving(forecast_dir) as url:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1100, "height": 1200})
            page.set_default_timeout(60_000)
            page.goto(url)
            page.locator(".study-link").wait_for()
            # the experiment's own figure, drawn (served by the folder route) and no absolute path on the page
            page.locator(".experiment-figure img").wait_for()
            page.wait_for_function("() => document.querySelector('.experiment-figure img').naturalWidth > 0")
            assert str(forecast_dir) not in page.content()
            page.locator(".study-link").click()
            page.locator(".study-table .study-cascade").first.wait_for()
            assert page.locator(".study-table .study-cascade").all_inner_texts() == cids
            page.locator(".study-table .study-cascade").nth(1).click()
            page.locator(".horizon-table .arm-row").first.wait_for()
            assert page.locator(".study-cascade-id").inner_text() == f"cascade {cids[1]}"
            page.locator(".study-cascade-page img").wait_for()
            want = _horizon(forecast_dir, cids[1], 5)

            def check(want: dict[str, dict[str, float]]) -> None:
                rows = _arm_rows(page)
                assert [r["model"] for r in rows] == ["forecast", "null", "arm:none", "arm:remove@10",
                                                      "arm:label@10", "arm:remove@20", "arm:label@20"]  # fmt: skip
                for r in rows:
                    assert float(r["mean"]) == pytest.approx(want[r["model"]]["mean"], abs=1e-3)
                    for k in QCOLS:
                        w = want[r["model"]][k]
                        assert (r[k] == "") if w != w else float(r[k]) == pytest.approx(w, abs=1e-3)

            check(want)
            page.screenshot(path=str(forecast_dir.parent / "study-cascade.png"), full_page=True)
            # from minute 10: the table becomes minute 10's
            page.locator(".v-select:has-text('observed for')").first.click()
            page.locator(".v-menu__content .v-list-item:has-text('10')").first.click()
            w10 = _horizon(forecast_dir, cids[1], 10)
            order = ["forecast", "null", "arm:none", "arm:remove@10", "arm:label@10", "arm:remove@20", "arm:label@20"]
            page.wait_for_function(  # every row redrawn (a page updates its widgets one message at a time)
                "v => [...document.querySelectorAll('.horizon-table .arm-row')].map(e => e.dataset.mean).join() === v",
                arg=",".join(str(round(w10[m]["mean"], 3)) for m in order),
            )
            check(w10)
            page.locator(".study-next").click()
            page.wait_for_function(
                "v => document.querySelector('.study-cascade-id')?.innerText === v", arg=f"cascade {cids[2]}"
            )
            browser.close()


@pytest.mark.browser
def test_a_counterfactual_experiment_opens_per_cascade(cf_dir: Path) -> None:
    from test_explore import CHROMIUM, serving

    res = json.loads((cf_dir / "results.json").read_text())
    row = res["cascades"][2]
    with serving(cf_dir) as url:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1100, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(f"{url}/study/cascade/2")
            page.locator(".horizon-table .arm-row").first.wait_for()
            page.locator(".study-cascade-page img").wait_for()
            rows = _arm_rows(page)
            assert [r["arm"] for r in rows] == list(row["counterfactual"]["arms"])
            for r in rows:
                reach = row["counterfactual"]["arms"][r["arm"]]["reach"]
                qs = np.quantile(reach, [0.05, 0.25, 0.5, 0.75, 0.95])
                assert [float(r[k]) for k in QCOLS] == pytest.approx(list(qs), abs=1e-3)
                assert float(r["mean"]) == pytest.approx(np.mean(reach), abs=1e-3)
            assert "real final size 44" in page.locator(".study-cascade-page").inner_text()
            page.screenshot(path=str(cf_dir.parent / "cf-cascade.png"), full_page=True)
            browser.close()
