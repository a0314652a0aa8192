"""``socium explore``: its trace queries against a small run (fast, no browser), and the app itself in
headless Chromium driven by Playwright (marked ``browser``; skipped without chromium, playwright or
the ``explore`` extra): what each page shows equals the trace rows, hostile text stays text."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.core.console_text import neutralise
from socium.errors import UsageError
from socium.explore import require_solara
from socium.explore.diff import pairing, peers, prompt_diff, prompt_text
from socium.explore.export import file_bytes
from socium.explore.source import open_source, overrides
from socium.simulator.simulation import Simulation
from socium.trace.queries import explore as q
from socium.trace.queries.runs import open_run

HOSTILE_POST = (
    '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    "**not bold** \u202eRTL override \u05e9\u05dc\u05d5\u05dd " + "x" * 30_000
)
HOSTILE_BIO = "<b>bold?</b><script>window.__pwned = 3</script> [link](javascript:alert(1))"
ERROR = "HTTP 500: <i>boom</i> server fell over"


def _run(path: Path, seed: int, llm: bool, perspective: str = "local") -> Path:
    over: dict = {"steps": 3, "seed": seed, "population": {"n_agents": 30, "mean_activity": 0.4}}
    if llm:
        llm_cfg = {"backend": "random", "max_concurrency": 1}
        over |= {"policy": {"kind": "llm"}, "llm": llm_cfg, "perspective": perspective}
        over["surveys"] = [{"question": "Do you <b>support</b> the bike lanes?", "every": 2}]
    Simulation(small_config(**over), path).run()
    return path


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An experiment folder: one LLM-agent world under three perspectives (local, with one failed call
    and hostile text planted in its trace; mindreader; omniscient) and a rule-based run, another seed."""
    root = tmp_path_factory.mktemp("exp")
    run = _run(root / "local", 3, llm=True)
    for perspective in ("mindreader", "omniscient"):
        _run(root / perspective, 3, llm=True, perspective=perspective)
    _run(root / "rules", 4, llm=False)
    con = duckdb.connect(str(run / "trace.duckdb"))
    try:
        con.execute("UPDATE posts SET content = ? WHERE post_id = 0", [HOSTILE_POST])
        con.execute("UPDATE agents SET bio = ? WHERE agent_id = 0", [HOSTILE_BIO])
        con.execute(
            "UPDATE llm_calls SET outcome = 'backend_error', error = ?, response = NULL WHERE call_id = 0", [ERROR]
        )
    finally:
        con.close()
    return root


@pytest.fixture()
def con(experiment: Path):
    with open_run(experiment / "local") as c:
        yield c


def _activations(con) -> list[tuple[int, int]]:
    return con.execute("SELECT DISTINCT agent_id, step FROM exposures ORDER BY 1, 2").fetchall()


def test_feed_is_exactly_the_exposures_rows(con) -> None:
    shown = Counter()
    for agent_id, step in _activations(con):
        feed = q.feed(con, agent_id, step)
        assert [i.rank for i in feed] == sorted(i.rank for i in feed)
        shown.update((step, agent_id, i.post_id, i.rank, i.source) for i in feed)
    rows = Counter(con.execute("SELECT step, agent_id, post_id, rank, source FROM exposures").fetchall())
    assert shown == rows and sum(rows.values()) > 20  # every row once, duplicates kept, nothing added


def test_the_feed_shown_is_the_feed_the_prompt_held(con) -> None:
    checked = 0
    for agent_id, step in _activations(con):
        prompts = " ".join(m["content"] for c in q.calls_at(con, agent_id, step) for m in c.messages)
        for item in q.feed(con, agent_id, step) if prompts else []:
            assert f"<<<{item.post_id} u" in prompts, (agent_id, step, item.post_id)
            checked += 1
    assert checked > 10


def test_prompt_and_response_are_the_stored_ones(con) -> None:
    stored = con.execute("SELECT call_id, agent_id, step, prompt, response FROM llm_calls WHERE agent_id IS NOT NULL")
    for call_id, agent_id, step, prompt, response in stored.fetchall():
        got = {c.call_id: c for c in q.calls_at(con, agent_id, step)}[call_id]
        assert got.messages == json.loads(prompt) and got.response == response


def test_activations_are_every_step_the_agent_was_shown_acted_or_called(con) -> None:
    for agent_id in range(30):
        want = {
            s
            for (s,) in con.execute(
                "SELECT step FROM exposures WHERE agent_id = ? UNION SELECT step FROM actions WHERE agent_id = ? "
                "AND origin != 'seed' UNION SELECT step FROM llm_calls WHERE agent_id = ?",
                [agent_id] * 3,
            ).fetchall()
        }
        assert q.activation_steps(con, agent_id, limit=100) == sorted(want)
        assert q.activation_steps(con, agent_id, limit=1, offset=1) == sorted(want)[1:2]


def test_timeline_pages_and_filters(con) -> None:
    total = q.count_timeline(con)
    pages = [p for off in range(0, total, 7) for p in q.timeline(con, limit=7, offset=off)]
    ids = [p.post_id for p in pages]
    assert len(ids) == total == len(set(ids)) and total > 10
    assert [(p.step, p.post_id) for p in pages] == sorted(((p.step, p.post_id) for p in pages), reverse=True)
    texts = dict(con.execute("SELECT post_id, content FROM posts").fetchall())
    word = texts[max(i for i, t in texts.items() if t and i > 0)].split()[-1].upper()  # case-insensitive
    hits = q.timeline(con, text=word, limit=1000)
    assert {p.post_id for p in hits} == {i for i, t in texts.items() if word.lower() in (t or "").lower()}
    assert q.count_timeline(con, text=word) == len(hits)
    assert all(p.step == 1 for p in q.timeline(con, step=1, limit=1000)) and q.count_timeline(con, step=1)
    assert all(p.author == 0 for p in q.timeline(con, author=0, limit=1000))
    assert q.count_timeline(con, text="'; DROP TABLE posts; --") == 0 and q.count_timeline(con) == total
    for p in pages:
        if p.parent_id is not None:
            assert p.parent_content == texts[p.parent_id]  # a reshare carries its original


def test_agent_survey_answers_are_its_rows(experiment: Path) -> None:
    with open_run(experiment / "local") as c:
        n = c.execute("SELECT count(*) FROM surveys").fetchone()[0]
        got = [r for a in range(30) for r in q.surveys(c, a)]
    assert n > 5 and len(got) == n and all({"question", "answer", "value", "step"} <= set(r) for r in got)


def test_post_page_queries(con) -> None:
    root = con.execute("SELECT root_id FROM cascade_nodes GROUP BY 1 ORDER BY count(*) DESC LIMIT 1").fetchone()[0]
    nodes = q.cascade(con, root, limit=1000)
    assert nodes[0][0] == root and {n[1] for n in nodes[1:]} <= {n[0] for n in nodes}
    assert q.cascade_size_by_step(con, root)[-1][1] == len(nodes)
    for step, size in q.cascade_size_by_step(con, root):
        assert len(q.cascade(con, root, until=step, limit=1000)) == size
        assert all(n[3] <= step for n in q.cascade(con, root, until=step, limit=1000))
    n_shown = con.execute("SELECT count(*) FROM exposures WHERE post_id = ?", [root]).fetchone()[0]
    shown = q.exposed_to(con, root, limit=10_000)
    assert len(shown) == sum(q.exposure_sources(con, root).values())
    assert len([r for r in shown if r[4] is None]) == n_shown
    acted = {(s, a, t) for s, a, t, _ in q.acted_on(con, root, limit=1000)}
    reshares = con.execute(
        "SELECT a.step, a.agent_id, a.type FROM actions a JOIN posts p ON p.post_id = a.post_id "
        "WHERE p.parent_id = ? AND p.kind IN ('repost', 'quote')",
        [root],
    ).fetchall()
    assert set(reshares) <= acted
    every = con.execute("SELECT step, agent_id, type, args FROM actions").fetchall()  # every action, parsed here
    assert acted == {(s, a, t) for s, a, t, args in every if json.loads(args or "{}").get("post_id") == root}


def test_shown_to_counts_exposures_through_reposts_and_quotes(con) -> None:
    """A post reaches whoever is shown one of its reposts or quotes (the prompt renders the original); the
    post page counts those, labelled with the reshare they came through, beside the direct ones."""
    rows = con.execute(
        "SELECT p.parent_id, count(*) FROM exposures e JOIN posts p USING (post_id) "
        "WHERE p.kind IN ('repost', 'quote') GROUP BY 1 ORDER BY 2 DESC, 1"
    ).fetchall()
    assert rows, "the fixture run has reshares that were shown"
    for original, n_via in rows:
        direct = con.execute("SELECT count(*) FROM exposures WHERE post_id = ?", [original]).fetchone()[0]
        shown = q.exposed_to(con, original, limit=100_000)
        via = [r for r in shown if r[4] is not None]
        assert len(via) == n_via and len(shown) == direct + n_via
        kinds = dict(con.execute("SELECT post_id, kind FROM posts WHERE parent_id = ?", [original]).fetchall())
        assert all(kinds[r[4]] == r[5] for r in via)
        want = sorted(
            con.execute(
                "SELECT e.step, e.agent_id, e.rank, e.post_id FROM exposures e JOIN posts p USING (post_id) "
                "WHERE e.post_id = ? OR (p.parent_id = ? AND p.kind IN ('repost', 'quote'))",
                [original, original],
            ).fetchall()
        )
        assert sorted((r[0], r[1], r[2], r[4] if r[4] is not None else original) for r in shown) == want
        sources = q.exposure_sources(con, original)
        assert sum(v for k, v in sources.items() if k.startswith("via ")) == n_via


def test_calls_filter_by_outcome_and_show_the_error(con) -> None:
    failed = q.calls(con, q.CallFilter(outcome="backend_error"))
    assert [c.call_id for c in failed] == [0] and failed[0].error == ERROR
    assert q.count_calls(con) == q.count_calls(con, q.CallFilter(outcome="ok")) + 1
    tokens = {c.call_id: (c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in q.calls(con, limit=1000)}
    cut = sorted(tokens.values())[len(tokens) // 2]
    big = q.calls(con, q.CallFilter(min_tokens=cut), limit=1000)
    assert {c.call_id for c in big} == {i for i, t in tokens.items() if t >= cut} and 0 < len(big) < len(tokens)
    assert q.count_calls(con, q.CallFilter(min_latency_s=1e9)) == 0
    outcomes, models = q.call_facets(con)
    assert outcomes == ["backend_error", "ok"] and models == ["random"]


def test_a_narrator_call_shows_on_every_member_of_its_group(experiment: Path) -> None:
    with open_run(experiment / "omniscient") as c:
        calls = c.execute("SELECT call_id, step, metadata FROM llm_calls").fetchall()
        members = [(cid, step, m) for cid, step, meta in calls for m in json.loads(meta).get("group", [])]
        narrator = [meta for _, _, meta in calls if "group" in json.loads(meta)]
        assert len(members) > len(narrator) > 0  # some group holds several agents
        for cid, step, m in members:
            assert cid in [x.call_id for x in q.calls_at(c, m, step)]


def test_peers_are_the_same_cell_under_other_arms() -> None:
    labels = ["local/runs/1/model", "local/runs/2/model", "mindreader/runs/1/model", "omniscient/runs/1/model"]
    assert peers(labels, labels[0]) == [labels[0], labels[2], labels[3]]
    # a propagation experiment: a cascade's model run beside the same cascade's null, not another cascade's
    prop = [f"runs/{c}/{arm}" for c in ("c01", "c02", "c03") for arm in ("model", "null")]
    assert peers(prop, "runs/c02/model") == ["runs/c02/model", "runs/c02/null"]
    assert peers(prop, "runs/c03/null") == ["runs/c03/null", "runs/c03/model"]
    assert "differ only in folder level 3" in pairing(prop, "runs/c02/model")
    # seeds of a design: the same cell under the other arms, not the other seeds
    design = [f"{arm}/seed{s}" for arm in ("a", "b") for s in range(5)]
    assert peers(design, "a/seed3") == ["a/seed3", "b/seed3"]
    assert peers(["a", "b", "c", "d", "e"], "c") == ["c", "a", "b", "d"]  # one level: every other run differs there
    assert peers(["x/1", "y/2/3"], "x/1") == ["x/1"] and "not paired" in pairing(["x/1", "y/2/3"], "x/1")


def test_prompt_diff_shows_what_one_perspective_added(experiment: Path) -> None:
    src = open_source(experiment)
    local, mind = src.view(0), src.view(1)
    with open_run(experiment / "local") as c:
        agent_id, step = c.execute("SELECT agent_id, step FROM llm_calls WHERE call_id = 1").fetchone()
    assert prompt_diff(local, local, agent_id, step) == ""
    diff = prompt_diff(local, mind, agent_id, step)
    both = local(q.calls_at, agent_id, step), mind(q.calls_at, agent_id, step)
    assert bool(diff) == (prompt_text(both[0]) != prompt_text(both[1]))
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert all(any(ln in m["content"] or ln.startswith("[call") for c in both[1] for m in c.messages) for ln in added)


def test_experiment_folder_lists_runs_with_their_overrides(experiment: Path) -> None:
    src = open_source(experiment)
    assert src.is_experiment and src.labels() == ["local", "mindreader", "omniscient", "rules"]
    with src.cursor("local") as a, src.cursor("rules") as b, src.cursor("omniscient") as c:
        base = q.overview(a)["config"]
        diff, arm = overrides(base, q.overview(b)["config"]), overrides(base, q.overview(c)["config"])
    assert diff["seed"] == 4 and diff["policy.kind"] == "random" and "llm.backend" not in diff
    assert arm == {"perspective": "omniscient"}
    assert not open_source(experiment / "local").is_experiment
    with pytest.raises(UsageError, match="no such run"):
        open_source(experiment / "missing")


def test_export_holds_the_views_rows_text_intact(con) -> None:
    posts = q.timeline(con, limit=q.count_timeline(con))
    rows = list(csv.DictReader(io.StringIO(file_bytes(posts, q.PostView, "csv").decode("utf-8"))))
    assert [int(r["post_id"]) for r in rows] == [p.post_id for p in posts]
    # CSV is read by people too: control and bidi characters escaped as `socium query --format csv` does
    # (issue 36 item 15); Parquet keeps every character
    assert next(r["content"] for r in rows if r["post_id"] == "0") == neutralise(HOSTILE_POST) != HOSTILE_POST
    back = pq.read_table(io.BytesIO(file_bytes(posts, q.PostView, "parquet")))
    assert back.column("content").to_pylist() == [p.content for p in posts]
    calls = q.calls(con, q.CallFilter(outcome="backend_error"))
    got = pq.read_table(io.BytesIO(file_bytes(calls, q.CallView, "parquet"))).to_pylist()
    assert got[0]["error"] == ERROR and json.loads(got[0]["messages"]) == calls[0].messages
    assert file_bytes([], q.CallView, "csv").decode().startswith("call_id,step,agent_id")


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UsageError, match=r"socium\[explore\]"):
        require_solara()


def test_cli_refuses_a_folder_without_runs(tmp_path: Path) -> None:
    got = CliRunner().invoke(app, ["explore", str(tmp_path), "--port", "1"])
    assert got.exit_code == 2 and "no run here" in got.output


# --- in a browser -------------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def step_time(run_dir: Path, step: int) -> str:
    """The simulated time a step stands for, as the pages should label it, from what the simulator recorded:
    ``steps.sim_datetime`` (a run with a start date) or ``steps.sim_time_s`` after the config's start hour."""
    from socium.config.experiment import ExperimentConfig

    with open_run(run_dir) as con:
        sim_s, sim_dt = con.execute("SELECT sim_time_s, sim_datetime FROM steps WHERE step = ?", [step]).fetchone()
        cfg = json.loads(con.execute("SELECT config FROM runs").fetchone()[0])
    if sim_dt is not None:
        return sim_dt.strftime("%Y-%m-%d %H:%M")
    start = cfg.get("start_hour", ExperimentConfig.model_fields["start_hour"].default)
    t = int(start) * 3600 + int(round(sim_s))
    return f"day {t // 86400 + 1} {t % 86400 // 3600:02d}:{t % 3600 // 60:02d}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def explore_command(path: Path, *args: str) -> list[str]:
    """``socium explore PATH --port 0`` (a free port, announced on its first line of output)."""
    return [sys.executable, "-m", "socium.cli.main", "explore", str(path), "--port", "0", *args]


@contextmanager
def serving(path: Path, env: dict[str, str] | None = None, *args: str) -> Iterator[str]:
    """``socium explore``'s server over ``path`` on a free port (its URL), stopped (SIGINT) on exit."""
    pytest.importorskip("playwright.sync_api")
    pytest.importorskip("solara")
    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    proc = subprocess.Popen(
        explore_command(path, *args), env=env or dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert found, line + (proc.stderr.read() if proc.stderr else "")
        url = found.group(0)
        for _ in range(120):
            try:
                urllib.request.urlopen(url, timeout=1)
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()[-2000:] if proc.stderr else ""
                time.sleep(0.5)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise


@pytest.fixture(scope="module")
def server(experiment: Path) -> Iterator[str]:
    with serving(experiment) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module (Playwright's sync API allows one instance at a time)."""
    pytest.importorskip("playwright.sync_api")
    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def page(server: str, browser):
    pg = browser.new_page(viewport={"width": 1100, "height": 1200})
    pg.set_default_timeout(30_000)
    yield pg
    pg.close()


def _busiest(experiment: Path) -> tuple[int, int]:
    """(agent, step) of an activation with a long feed and an answered call."""
    with open_run(experiment / "local") as c:
        row = c.execute(
            "SELECT e.agent_id, e.step FROM exposures e JOIN llm_calls l "
            "ON l.agent_id = e.agent_id AND l.step = e.step AND l.outcome = 'ok' "
            "GROUP BY ALL ORDER BY count(*) DESC, 1, 2 LIMIT 1"
        ).fetchone()
    return int(row[0]), int(row[1])


@pytest.mark.browser
def test_agent_page_shows_its_feed_and_prompt_and_clicks_through(page, server: str, experiment: Path) -> None:
    agent_id, step = _busiest(experiment)
    page.goto(f"{server}/run/0/agent/{agent_id}")
    page.wait_for_selector(".persona")
    seen = 0
    with open_run(experiment / "local") as c:
        for s in q.activation_steps(c, agent_id):
            want = c.execute(
                "SELECT rank, post_id, coalesce(source, '') FROM exposures WHERE agent_id = ? AND step = ? "
                "ORDER BY rank, post_id",
                [agent_id, s],
            ).fetchall()
            items = page.locator(f'.feed[data-step="{s}"] .feed-item')
            got = [
                (int(items.nth(i).get_attribute("data-rank")), int(items.nth(i).get_attribute("data-post")),
                 items.nth(i).get_attribute("data-source"))
                for i in range(items.count())
            ]  # fmt: skip
            assert got == want, s
            seen += len(got)
        prompt = c.execute(
            "SELECT prompt FROM llm_calls WHERE agent_id = ? AND step = ? AND outcome = 'ok' ORDER BY call_id LIMIT 1",
            [agent_id, step],
        ).fetchone()[0]
    assert seen >= 2
    # each item is the text its prompt gave it: joined, they are the prompt's feed section
    texts = page.locator(f'.feed[data-step="{step}"] .feed-item pre.seen')
    assert "\n".join(texts.nth(i).text_content() or "" for i in range(texts.count())) == _prompt_feed(
        json.loads(prompt)
    )
    call = page.locator(f'.calls[data-step="{step}"] .call[data-outcome=ok]').first
    messages = call.locator(".prompt-message")
    assert [messages.nth(i).text_content() for i in range(messages.count())] == [
        m["content"] for m in json.loads(prompt)
    ]
    post_id = int(page.locator(f'.feed[data-step="{step}"] .feed-item').first.get_attribute("data-post"))
    page.locator(f'.feed[data-step="{step}"] .feed-item .post-link').first.click()
    page.wait_for_url(f"**/run/0/post/{post_id}")
    page.wait_for_selector(".exposed")
    shown = page.locator(f'.exposure[data-agent="{agent_id}"][data-step="{step}"]')
    assert shown.count() >= 1  # the agent we came from is among those shown the post, at that step
    shown.first.locator(".agent-link").click()
    page.wait_for_url(f"**/run/0/agent/{agent_id}")
    page.wait_for_selector(".persona")


@pytest.mark.browser
def test_hostile_text_is_shown_as_text(page, server: str) -> None:
    page.goto(f"{server}/run/0/post/0")
    page.wait_for_selector(".post .content")
    content = page.locator(".post .content").first
    assert content.text_content() == HOSTILE_POST[:1000]  # cut to the bound, the rest folded
    assert page.locator(".post .more summary").first.text_content() == f"{len(HOSTILE_POST) - 1000:,} more characters"
    assert content.locator("script, img").count() == 0
    assert content.get_attribute("dir") == "auto"
    page.goto(f"{server}/run/0/agent/0")
    bio = page.locator(".persona-bio")
    bio.wait_for()
    assert bio.text_content() == HOSTILE_BIO and bio.locator("b, script, a").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"


@pytest.mark.browser
def test_calls_page_shows_the_failed_call_and_experiment_opens_each_run(page, server: str, experiment: Path) -> None:
    page.goto(f"{server}/run/0/calls")
    failed = page.locator(".call[data-outcome=backend_error]")
    failed.wait_for()
    assert failed.locator(".call-error").text_content() == f"error: {ERROR}"
    with page.expect_download() as got:
        page.get_by_text("export csv").click()
    rows = list(csv.DictReader(io.StringIO(Path(got.value.path()).read_text(encoding="utf-8"))))
    with open_run(experiment / "local") as c:
        assert [int(r["call_id"]) for r in rows] == [
            i for (i,) in c.execute("SELECT call_id FROM llm_calls ORDER BY 1").fetchall()
        ]
    page.goto(server)
    page.wait_for_selector(".run-row")
    assert page.locator(".run-link").all_text_contents() == ["local", "mindreader", "omniscient", "rules"]
    page.locator(".run-link").nth(3).click()
    page.wait_for_url("**/run/3")
    page.wait_for_selector(".timeline .post")
    with open_run(experiment / "rules") as c:
        assert page.locator(".timeline").get_attribute("data-total") == str(q.count_timeline(c))


OPEN_WITHIN_S = 3.0
"""The explorer's time target: a page of a 10^5-agent run shown within this many seconds of asking."""


@pytest.mark.slow
@pytest.mark.browser
def test_a_hundred_thousand_agent_run_opens_within_the_target(tmp_path: Path, browser) -> None:
    cfg = small_config(
        steps=3,
        population={"n_agents": 100_000, "mean_activity": 0.15},
        graph={"kind": "barabasi_albert", "params": {"m": 3}},
        policy={"kind": "independent_cascade", "p_repost": 0.08, "p_post": 0.05},
    )
    Simulation(cfg, tmp_path / "big").run()
    with serving(tmp_path / "big") as url:
        pg = browser.new_page()
        pg.goto(url + "/run/0/agents")  # the first visit pays for the page's scripts, not for the trace
        pg.wait_for_selector(".agents-table .agent-link")
        took = {}
        for name, path, sel in [("timeline", "/run/0", ".timeline .post"), ("agent", "/run/0/agent/0", ".persona")]:
            t0 = time.perf_counter()
            pg.goto(url + path)
            pg.wait_for_selector(sel)
            took[name] = time.perf_counter() - t0
        pg.close()
    assert max(took.values()) < OPEN_WITHIN_S, took


@pytest.mark.browser
def test_one_agent_step_side_by_side_across_perspectives(page, server: str, experiment: Path) -> None:
    with open_run(experiment / "local") as c:
        agent_id, step = c.execute(
            "SELECT agent_id, step FROM exposures GROUP BY ALL ORDER BY count(*) DESC, 1, 2 LIMIT 1"
        ).fetchone()
    page.goto(f"{server}/run/0/agent/{agent_id}")
    page.locator(".compare-link").first.wait_for()
    page.goto(f"{server}/run/0/compare/{agent_id}/{step}")
    page.wait_for_selector(".compare-run")
    columns = page.locator(".compare-run")
    assert columns.count() == 4  # flat labels: every run, up to MOST
    assert page.locator(".pairing").inner_text().startswith("paired: the runs *, which differ only in folder level 1")
    for i, name in enumerate(["local", "mindreader", "omniscient", "rules"]):
        col = columns.nth(i)
        assert col.locator(".run-link").text_content() == name
        with open_run(experiment / name) as c:
            want = c.execute(
                "SELECT post_id FROM exposures WHERE agent_id = ? AND step = ? ORDER BY rank, post_id",
                [agent_id, step],
            ).fetchall()
        items = col.locator(".feed-item")
        assert [int(items.nth(k).get_attribute("data-post")) for k in range(items.count())] == [p for (p,) in want]


@pytest.mark.browser
def test_post_page_shows_who_saw_it_through_reshares(page, server: str, experiment: Path) -> None:
    with open_run(experiment / "local") as c:
        original, n_via = c.execute(
            "SELECT p.parent_id, count(*) FROM exposures e JOIN posts p USING (post_id) "
            "WHERE p.kind IN ('repost', 'quote') GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1"
        ).fetchone()
        direct = c.execute("SELECT count(*) FROM exposures WHERE post_id = ?", [original]).fetchone()[0]
        first = q.exposed_to(c, original, limit=20)
    page.goto(f"{server}/run/0/post/{original}")
    total = page.locator(".shown-total")
    total.wait_for()
    assert total.inner_text() == (
        f"{direct + n_via:,} times in a feed: {direct:,} as itself, {n_via:,} through its reposts and quotes"
    )
    rows = page.locator(".exposure").all()
    assert [(int(r.get_attribute("data-agent") or -1), r.get_attribute("data-via")) for r in rows] == [
        (a, "" if via is None else str(via)) for _, a, _, _, via, _ in first
    ]
    via_rows = [r for r in rows if r.get_attribute("data-via")]
    if via_rows:
        assert "through a " in via_rows[0].inner_text()


def _prompt_feed(messages: list[dict]) -> str | None:
    """The feed section of a prompt, cut by hand here (not by the code under test)."""
    for m in messages:
        text = str(m.get("content", ""))
        at = text.find("\n## Your feed (")
        if m.get("role") == "user" and (at >= 0 or text.startswith("## Your feed (")):
            body = text.index("\n", at + 1) + 1
            end = text.find("\n\n## ", body)
            return text[body : end if end >= 0 else None]
    return None


def test_the_feed_panel_is_the_prompts_feed_for_every_agent_step(con) -> None:
    """For every (agent, step) decided by the agent's own call: the panel's items, in rank order, are the
    exposures rows' posts, and their texts joined are exactly the prompt's feed section."""
    from socium.explore.seen import paired, seen_feed

    pairs = con.execute(
        "SELECT DISTINCT agent_id, step FROM llm_calls WHERE agent_id IS NOT NULL AND outcome = 'ok' "
        "AND NOT coalesce(TRY_CAST(json_extract(metadata, '$.survey') AS BOOLEAN), false) ORDER BY 1, 2"
    ).fetchall()
    assert len(pairs) > 10
    checked = 0
    for agent_id, step in pairs:
        calls = q.calls_at(con, agent_id, step)
        own = next(c for c in calls if c.agent_id == agent_id and _prompt_feed(c.messages) is not None)
        section = _prompt_feed(own.messages)
        rows = [it.post_id for it in q.feed(con, agent_id, step)]
        texts = paired(rows, seen_feed(calls, agent_id))
        if not rows:
            assert section == "(your feed is empty)"
            continue
        assert None not in texts, (agent_id, step)
        assert "\n".join(t for t in texts if t is not None) == section, (agent_id, step)
        checked += 1
    assert checked > 5
