"""The explorer's pictures (issue 40, item 6): the numbers each chart draws equal a replay of the trace,
and in Chromium the charts page, a cascade's tree and an agent's neighbourhood are drawn."""

from __future__ import annotations

import time
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
        top_followed = q.agents_table(con, sort="followers", descending=True, limit=5)
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
            # the agents list sorted by followers, most first: its first rows are the query's
            page.goto(f"{url}/run/0/agents")
            page.locator(".agents-table .agent-link").first.wait_for()
            page.locator(".v-select:has-text('sort by')").first.click()
            page.locator(".v-menu__content .v-list-item:has-text('followers')").first.click()
            page.locator("label:has-text('descending')").first.click()
            want = [f"agent {r.agent_id}" for r in top_followed]
            deadline = time.monotonic() + 60  # as long as the page's own default wait
            js = "els => els.map(e => e.innerText)"
            while page.eval_on_selector_all(".agents-table .agent-link", js)[:5] != want:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            browser.close()


def test_agents_list_columns_sort_and_filter(run: Path) -> None:
    with open_run(run) as con:
        rows = q.agents_table(con, limit=10_000)
        stances = dict(con.execute("SELECT agent_id, stance FROM agents").fetchall())
        for _step, a, v in con.execute("SELECT step, agent_id, stance FROM stances ORDER BY step").fetchall():
            stances[a] = v
        n_actions = dict(
            con.execute("SELECT agent_id, count(*) FROM actions WHERE origin != 'seed' GROUP BY 1").fetchall()
        )
        shown = dict(con.execute("SELECT agent_id, count(DISTINCT step) FROM exposures GROUP BY 1").fetchall())
        assert [r.agent_id for r in rows] == sorted(stances)
        for r in rows:
            assert r.stance == pytest.approx(stances[r.agent_id])
            assert r.n_actions == n_actions.get(r.agent_id, 0) and r.activations == shown.get(r.agent_id, 0)
            assert r.followers == len(q.neighbourhood(con, r.agent_id, most=10_000)[1])
        for sort, key in (("followers", "followers"), ("stance", "stance"), ("actions", "n_actions")):
            got = q.agents_table(con, sort=sort, descending=True, limit=10_000)
            assert [r.agent_id for r in got] == [
                r.agent_id for r in sorted(rows, key=lambda r: (-getattr(r, key), r.agent_id))
            ]
        found = q.agents_table(con, "7", limit=10_000)
        assert 7 in [r.agent_id for r in found]
        assert all("7" in f"{r.agent_id} {r.username} {r.name}".lower() for r in found) and len(found) < len(rows)
        page2 = q.agents_table(con, sort="followers", limit=10, offset=10)
        assert page2 == sorted(rows, key=lambda r: (r.followers, r.agent_id))[10:20]
        with pytest.raises(ValueError, match="not one of"):
            q.agents_table(con, sort="agent_id; DROP TABLE posts")


def test_a_sorted_agents_order_is_kept_until_the_trace_changes(run: Path, tmp_path: Path) -> None:
    import shutil

    from socium.explore.source import open_source

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    src = open_source(copy)
    view = src.view(0)
    calls: list[int] = []

    def order() -> list[int]:
        calls.append(1)
        return view(q.agent_order, sort="activations", descending=True)

    first = view.memo(("order",), order)
    assert view.memo(("order",), order) == first and len(calls) == 1  # the second page does not scan again
    with open_run(copy) as con:
        rows = q.agents_table(con, sort="activations", descending=True, limit=10_000)
        assert first == [r.agent_id for r in rows]
        assert q.agent_rows(con, first[5:9]) == rows[5:9]
    src.close()
    import duckdb

    last = first[-1]  # the run resumed: 50 later steps each show the least shown agent a feed
    con = duckdb.connect(str(copy / "trace.duckdb"))
    con.execute("INSERT INTO exposures SELECT s, ?, 0, 0, 'in_network' FROM range(100, 150) t(s)", [last])
    con.close()
    again = view.memo(("order",), order)
    assert len(calls) == 2 and again[0] == last and sorted(again) == sorted(first)


def test_warm_up_queries_the_first_page_and_survives_a_bad_trace(run: Path, tmp_path: Path) -> None:
    from socium.explore.source import open_source

    src = open_source(run)
    assert src._last == {}
    src.warm()  # what `socium explore` runs in a thread while the browser loads Solara
    assert set(src._last) == {"."}
    src.close()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "trace.duckdb").write_bytes(b"not a duckdb file")
    broken = open_source(bad)
    broken.warm()  # nothing raised: the page says what is wrong when it is opened
    broken.close()
