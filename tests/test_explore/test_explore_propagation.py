"""A propagation experiment in the explorer (issue 40 items 6 and 7): each run's charts draw its cascade beside
the real one, and every step label says the simulated time the step stands for."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from socium.experiments.propagation.study import PropagationSpec, run_propagation
from socium.explore.clock import StepClock
from socium.explore.real_curve import real_curve_of
from socium.trace.queries.cascades import propagation_curves
from socium.trace.queries.runs import open_run

# root 10 at 0; 11, 12, 13 retweet the root; 14 retweets 11; 15 retweets 14 (tests/test_experiments/test_propagation)
TREE = """['ROOT', 'ROOT', '0.0']->['10', '99', '0.0']
['10', '99', '0.0']->['11', '99', '1.0']
['10', '99', '0.0']->['12', '99', '2.5']
['10', '99', '0.0']->['13', '99', '40.0']
['11', '99', '1.0']->['14', '99', '5.0']
['14', '99', '5.0']->['15', '99', '7.0']
"""


@pytest.fixture(scope="module")
def exp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("prop")
    (tmp / "99.txt").write_text(TREE)
    base = {"seed": 2, "step_minutes": 5, "start_hour": 23,
            "policy": {"kind": "independent_cascade", "p_repost": 0.9, "p_post": 0.0}}  # fmt: skip
    spec = PropagationSpec(
        tree_files=[str(tmp / "99.txt")], source_texts={"99": "the source"}, activation=1.0, minutes=90,
        base=base, topics_csv=str(tmp / "none.csv"),
    )  # fmt: skip
    run_propagation(spec, tmp / "exp")
    return tmp / "exp"


def test_real_curve_is_the_studys_and_only_for_its_runs(exp: Path) -> None:
    res = json.loads((exp / "results.json").read_text())
    c = res["cascades"][0]
    for arm in ("model", "null"):
        got = real_curve_of(exp / "runs" / "99" / arm)
        assert got is not None and (got.cascade_id, got.arm) == ("99", arm)
        assert got.real == c["real"]["scale"] and got.nrmse == pytest.approx(c["runs"][arm]["nrmse"]["scale"])
        with open_run(exp / "runs" / "99" / arm) as con:  # the trace's curve by the study's measure: the study's
            assert list(propagation_curves(con, 0, len(got.real))["scale"]) == c["runs"][arm]["curves"]["scale"]
    assert real_curve_of(exp / "runs" / "98" / "model") is None
    assert real_curve_of(exp) is None


def test_step_labels_are_the_simulators_times(exp: Path) -> None:
    from test_explore import step_time

    run = exp / "runs" / "99" / "model"
    with open_run(run) as con:
        cfg = json.loads(con.execute("SELECT config FROM runs").fetchone()[0])
        steps = [int(r[0]) for r in con.execute("SELECT step FROM steps WHERE step >= 0 ORDER BY 1").fetchall()]
    clock = StepClock.of(cfg)
    assert len(steps) == 18 and {step_time(run, s)[:5] for s in steps} == {"day 1", "day 2"}  # past midnight
    for s in steps:
        assert clock.label(s) == f"step {s} · {step_time(run, s)}"
    assert clock.label(-1) == "set-up"
    dated = StepClock.of({**cfg, "start_datetime": "2016-03-01T23:50:00"})
    assert dated.label(3) == "step 3 · 2016-03-02 00:05"


@pytest.mark.browser
def test_a_propagation_run_in_a_browser(exp: Path) -> None:
    from test_explore import CHROMIUM, serving, step_time

    res = json.loads((exp / "results.json").read_text())
    real_final = res["cascades"][0]["real"]["scale"][-1]
    run = exp / "runs" / "99" / "model"
    with open_run(run) as con:
        sim_final = propagation_curves(con, 0, len(res["cascades"][0]["real"]["scale"]))["scale"][-1]
        posts = dict(con.execute("SELECT post_id, step FROM posts").fetchall())
        reposter = con.execute("SELECT author FROM posts WHERE kind = 'repost' ORDER BY post_id LIMIT 1").fetchone()[0]
        sql = "SELECT DISTINCT step FROM exposures WHERE agent_id = ? ORDER BY 1 LIMIT 5"
        acts = [s for (s,) in con.execute(sql, [reposter]).fetchall()]
    with serving(exp) as url:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1100, "height": 1400})
            page.set_default_timeout(60_000)
            page.goto(url)
            page.locator(".run-link").first.wait_for()
            labels = page.locator(".run-link").all_inner_texts()
            index = labels.index("runs/99/model")
            # no absolute path on the experiment page (the runs' population files are under the folder)
            assert str(exp) not in page.content()
            page.goto(f"{url}/run/{index}/charts")
            page.locator(".real-beside img").wait_for()
            data = page.locator(".real-data")
            assert data.get_attribute("data-cascade") == "99"
            assert float(data.get_attribute("data-real-final") or -1) == real_final
            assert float(data.get_attribute("data-sim-final") or -1) == sim_final
            page.screenshot(path=str(exp.parent / "prop-charts.png"), full_page=True)
            # every post card's step label is its step's simulated time
            page.goto(f"{url}/run/{index}")
            page.locator(".post").first.wait_for()
            for card in page.locator(".post").all()[:8]:
                pid = int(card.get_attribute("data-post") or -1)
                head = card.locator(".post-head").inner_text()
                assert f"step {posts[pid]} · {step_time(run, posts[pid])}" in head, head
            # an agent's activations and a post's cascade rows too
            page.goto(f"{url}/run/{index}/agent/{reposter}")
            page.locator(".activation .v-card__title").first.wait_for()
            titles = page.locator(".activation .v-card__title").all_inner_texts()
            assert titles[: len(acts)] == [f"Step {s} · {step_time(run, s)}" for s in acts]
            page.goto(f"{url}/run/{index}/post/0")
            page.locator(".cascade-node").first.wait_for()
            for row in page.locator(".cascade-node").all()[:5]:
                m = re.search(r"step (\d+) · (day \d+ \d\d:\d\d)", row.inner_text())
                assert m and m.group(2) == step_time(run, int(m.group(1))), row.inner_text()
            page.screenshot(path=str(exp.parent / "prop-post.png"), full_page=True)
            browser.close()
