"""The explorer's pictures (issue 40, item 6): the numbers each chart draws equal a replay of the trace,
and in Chromium the charts page, a cascade's tree and an agent's neighbourhood are drawn."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from conftest import small_config
from socium.simulator.simulation import Simulation
from socium.trace.queries import explore as q
from socium.trace.queries.runs import open_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("charts") / "run"
    Simulation(small_config(steps=4, seed=11, population={"n_agents": 80, "mean_activity": 0.5}), path).run()
    import duckdb

    con = duckdb.connect(str(path / "trace.duckdb"))  # planted: set-up stances, and changes at steps 1 and 3
    try:
        con.execute("UPDATE agents SET stance = (agent_id % 7) / 3.5 - 0.9")
        con.execute("INSERT INTO stances SELECT 1, agent_id, 0.5 FROM agents WHERE agent_id % 3 = 0")
        con.execute("INSERT INTO stances SELECT 3, agent_id, -0.25 FROM agents WHERE agent_id % 4 = 0")
    finally:
        con.close()
    return path


def test_stance_distribution_is_every_agents_latest_stance(run: Path) -> None:
    with open_run(run) as con:
        initial = dict(con.execute("SELECT agent_id, stance FROM agents").fetchall())
        changes = con.execute("SELECT step, agent_id, stance FROM stances ORDER BY step").fetchall()
        got = q.stance_by_step(con)
        steps = [s for s, *_ in q.activity_by_step(con)]
    assert [s for s, _, _ in got] == steps == list(range(4))
    now = dict(initial)
    for step, quantiles, mean in got:
        for s, a, v in changes:
            if s == step:
                now[a] = v
        vals = np.array(list(now.values()))
        assert mean == pytest.approx(vals.mean())
        assert quantiles == pytest.approx(list(np.quantile(vals, [0.1, 0.25, 0.5, 0.75, 0.9])))


def test_activity_and_cascades_are_the_steps_and_cascade_rows(run: Path) -> None:
    with open_run(run) as con:
        steps = con.execute(
            "SELECT step, n_active, n_actions, n_posts FROM steps WHERE step >= 0 ORDER BY 1"
        ).fetchall()
        assert [(s, a, n, p) for s, _, a, n, p in q.activity_by_step(con)] == steps
        top = q.top_cascades_by_step(con, 3)
        sizes = dict(con.execute("SELECT root_id, count(*) FROM cascade_nodes GROUP BY 1").fetchall())
    assert list(top) and all(top[r][-1][1] == sizes[r] for r in top)
    assert sorted(sizes.values(), reverse=True)[: len(top)] == [top[r][-1][1] for r in top]


def test_neighbourhood_replays_follow_events(run: Path) -> None:
    with open_run(run) as con:
        events = con.execute("SELECT src, dst, event FROM follow_events ORDER BY step, seq").fetchall()
        state: dict[tuple[int, int], int] = {}
        for s, d, e in events:
            state[(s, d)] = e
        out: dict[int, set[int]] = defaultdict(set)
        into: dict[int, set[int]] = defaultdict(set)
        for (s, d), e in state.items():
            if e == 1:
                out[s].add(d)
                into[d].add(s)
        for agent in (0, 1, 7, 42):
            followees, followers = q.neighbourhood(con, agent, most=10_000)
            assert followees == sorted(out[agent]) and followers == sorted(into[agent])


@pytest.mark.browser
def test_charts_tree_and_neighbourhood_are_drawn(run: Path) -> None:
    from test_explore import CHROMIUM, serving

    with open_run(run) as con:
        root = con.execute("SELECT root_id FROM cascade_nodes GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1").fetchone()[
            0
        ]
        agent = con.execute("SELECT src FROM follow_events GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1").fetchone()[0]
        followees, followers = q.neighbourhood(con, agent)
    with serving(run) as url:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1100, "height": 1400})
            page.set_default_timeout(60_000)
            page.goto(f"{url}/run/0/charts")
            page.locator(".charts img").nth(2).wait_for()
            assert page.locator(".charts img").count() == 3
            page.screenshot(path=str(run.parent / "charts.png"), full_page=True)
            page.goto(f"{url}/run/0/post/{root}")
            page.locator(".cascade-tree img").wait_for()
            page.goto(f"{url}/run/0/agent/{agent}")
            page.locator(".neighbourhood img").wait_for()
            assert (
                page.locator(".neighbourhood-counts")
                .inner_text()
                .startswith(f"follows {len(followees)} · followed by {len(followers)}")
            )
            browser.close()
