"""``socium run --explore`` (the explorer served from the running process, reading through the writer's
own connection) and the exports of the agent, post and side-by-side pages (issue 27, items 7 and 8).

The live test starts a slow run (the ``fake`` LLM backend, one request at a time with a delay) in a
subprocess, opens its explorer in headless Chromium while it runs, sees the committed step count grow,
and checks the finished trace equals one written without ``--explore``."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import small_config
from socium.errors import UsageError
from socium.explore.export import rows_bytes
from socium.explore.page_rows import agent_exports, compare_exports, post_exports
from socium.explore.source import Source, open_source
from socium.simulator.simulation import Simulation
from socium.trace.queries import explore as q
from socium.trace.queries.runs import open_run
from socium.trace.store import trace_digest

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
HOSTILE = '=HYPERLINK("x") <script>alert(1)</script> \u05e9\u05dc\u05d5\u05dd'


def _config(seed: int = 3, perspective: str = "local", steps: int = 3):
    return small_config(
        steps=steps,
        seed=seed,
        population={"n_agents": 30, "mean_activity": 0.4},
        policy={"kind": "llm"},
        llm={"backend": "random", "max_concurrency": 1},
        perspective=perspective,
    )


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("live")
    for perspective in ("local", "omniscient"):
        Simulation(_config(perspective=perspective), root / perspective).run()
    import duckdb

    con = duckdb.connect(str(root / "local" / "trace.duckdb"))
    try:
        con.execute("UPDATE posts SET content = ? WHERE post_id = 0", [HOSTILE])
    finally:
        con.close()
    return root


def _busiest(run: Path) -> tuple[int, int]:
    with open_run(run) as c:
        row = c.execute("SELECT agent_id, step FROM exposures GROUP BY ALL ORDER BY count(*) DESC, 1, 2").fetchone()
    return int(row[0]), int(row[1])


def _csv(rows: list[dict], columns: list[str]) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(rows_bytes([rows], columns, "csv").decode("utf-8"))))


def test_agent_page_export_is_every_activations_rows(experiment: Path) -> None:
    src = open_source(experiment)
    run = src.view(src.labels().index("local"))
    agent_id, _ = _busiest(experiment / "local")
    feed, calls, actions = agent_exports(run, agent_id)
    with open_run(experiment / "local") as c:
        want_feed = c.execute(
            "SELECT step, rank, post_id, source FROM exposures WHERE agent_id = ? ORDER BY step, rank, post_id",
            [agent_id],
        ).fetchall()
        want_calls = [
            r[0] for r in c.execute("SELECT call_id FROM llm_calls WHERE agent_id = ?", [agent_id]).fetchall()
        ]
        want_actions = c.execute(
            "SELECT step, seq, type FROM actions WHERE agent_id = ? AND origin != 'seed' ORDER BY step, seq",
            [agent_id],
        ).fetchall()
    rows = feed.rows()
    assert [(r["step"], r["rank"], r["post_id"], r["source"]) for r in rows] == want_feed
    assert {r["agent_id"] for r in rows} == {agent_id} and rows[0]["run"] == "local"
    got_calls = calls.rows()
    assert set(want_calls) <= {r["call_id"] for r in got_calls} and want_calls
    assert [(r["step"], r["seq"], r["type"]) for r in actions.rows()] == want_actions
    # the files hold the same rows, text intact (a cell starting with "=" stays text)
    back = _csv(rows, feed.columns)
    assert [int(r["post_id"]) for r in back] == [r["post_id"] for r in rows]
    assert list(back[0]) == feed.columns
    parquet = pq.read_table(io.BytesIO(rows_bytes(calls.fetch(), calls.columns, "parquet")))
    assert parquet.column("call_id").to_pylist() == [r["call_id"] for r in got_calls]


def test_post_and_side_by_side_exports_are_the_pages_rows(experiment: Path) -> None:
    src = open_source(experiment)
    run = src.view(src.labels().index("local"))
    with open_run(experiment / "local") as c:
        post_id = int(c.execute("SELECT post_id FROM exposures GROUP BY 1 ORDER BY count(*) DESC, 1").fetchone()[0])
        shown = c.execute(
            "SELECT step, agent_id, rank, source FROM exposures WHERE post_id = ? ORDER BY step, agent_id, rank",
            [post_id],
        ).fetchall()
    p = run(q.post, post_id)
    assert p is not None
    exports = {e.name: e for e in post_exports(run, post_id, p.root_id, None)}
    got = exports[f"post{post_id}-shown-to"].rows()
    assert [tuple(r.values())[:4] for r in got if r["via_post"] is None] == [tuple(r) for r in shown]
    assert len(exports) == 3 and [tuple(r.values()) for r in exports[f"cascade{p.root_id}"].rows()] == [
        tuple(r) for r in run(q.cascade, p.root_id, limit=10**6)
    ]
    agent_id, step = _busiest(experiment / "local")
    views = [src.view(i) for i in range(len(src.labels()))]
    feed = compare_exports(views, agent_id, step)[0].rows()
    for v in views:
        want = [(it.rank, it.post_id) for it in v(q.feed, agent_id, step)]
        assert [(r["rank"], r["post_id"]) for r in feed if r["run"] == v.label] == want
    hostile = [r for r in feed if r["post_id"] == 0 and r["run"] == "local"]
    if hostile:  # post 0 in this agent's feed: its text exported as it was written
        assert _csv(hostile, compare_exports(views, agent_id, step)[0].columns)[0]["content"] == HOSTILE


def test_a_live_source_reads_committed_steps_through_the_writer(tmp_path: Path) -> None:
    """A reader thread queries all the time while the run writes; it sees whole steps only, and once
    detached the writer closes cleanly and the file opens again (no second open while it ran)."""
    cfg = _config(steps=4)
    sim = Simulation(cfg, tmp_path / "run")
    src = Source.live(sim.trace_store.con, tmp_path / "run", cfg.steps)
    view = src.view(0)
    seen: list[tuple[int, int]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def watch() -> None:
        try:
            while not stop.is_set():
                seen.append((view(q.committed_steps), view(q.count_timeline)))
        except UsageError:
            pass  # detached: the run is closing
        except BaseException as exc:  # noqa: BLE001 (any failure here is the test's failure)
            errors.append(exc)

    watcher = threading.Thread(target=watch)
    watcher.start()
    posts_after = {0: view(q.count_timeline)}
    for _ in range(cfg.steps):
        stats = sim.advance()
        posts_after[stats.step + 1] = posts_after[stats.step] + stats.n_posts
    # until the reader has seen the last step (a fixed 0.2 s was not enough under load)
    deadline = time.monotonic() + 60
    while not (seen and seen[-1][0] == cfg.steps) and not errors:
        assert time.monotonic() < deadline and watcher.is_alive(), "the reader never saw the last step"
        time.sleep(0.01)
    src.detach()
    stop.set()
    watcher.join(timeout=30)
    sim.close()
    assert not errors, errors
    assert seen and [c for c, _ in seen] == sorted(c for c, _ in seen) and seen[-1][0] == cfg.steps
    assert all(posts_after[c] <= n for c, n in seen)  # never less than the steps it says are committed
    with pytest.raises(UsageError, match="the run has ended"):
        view(q.committed_steps)
    reopened = open_source(tmp_path / "run")
    assert not reopened.is_live and reopened.view(0)(q.committed_steps) == cfg.steps
    reopened.close()


def test_a_busy_port_stops_the_run_before_it_makes_its_folder(tmp_path: Path) -> None:
    pytest.importorskip("solara")
    from typer.testing import CliRunner

    from socium.cli.main import app

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = CliRunner().invoke(
            app,
            [
                "run",
                str(ROOT / "examples/quickstart.yaml"),
                "--out",
                str(tmp_path / "r"),
                "--explore-port",
                str(port),
                "--explore",
            ],
        )
    assert res.exit_code == 2 and f"--explore-port {port}" in res.output, res.output
    assert not (tmp_path / "r").exists()


@pytest.mark.browser
def test_agent_page_downloads_its_feed_rows(experiment: Path, tmp_path: Path) -> None:
    """In the browser: the agent page's "feed csv" button gives the agent's exposures rows."""
    pytest.importorskip("solara")
    pytest.importorskip("playwright.sync_api")
    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    port = _free_port()
    cmd = [sys.executable, "-m", "socium.cli.main", "explore", str(experiment), "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    agent_id, _ = _busiest(experiment / "local")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.set_default_timeout(60_000)
            for _ in range(120):
                try:
                    page.goto(f"http://127.0.0.1:{port}/run/0/agent/{agent_id}")
                    break
                except Exception:  # not serving yet
                    time.sleep(0.5)
            with page.expect_download() as got:
                page.get_by_text("feed csv").click()
            got.value.save_as(tmp_path / "feed.csv")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    rows = list(csv.DictReader((tmp_path / "feed.csv").open(encoding="utf-8")))
    with open_run(experiment / "local") as c:
        want = c.execute(
            "SELECT step, rank, post_id FROM exposures WHERE agent_id = ? ORDER BY step, rank, post_id", [agent_id]
        ).fetchall()
    assert [(int(r["step"]), int(r["rank"]), int(r["post_id"])) for r in rows] == want
    assert {r["run"] for r in rows} == {"local"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _socium(*args: str, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "socium.cli.main", "run", "examples/llm-agents.yaml", "--out", str(out), "--steps", "5",
        "--set", "llm.backend=fake", "--set", "llm.fake_delay_s=0.25", "--set", "llm.max_concurrency=1", "--quiet",
        *args,
    ]  # fmt: skip


@pytest.mark.browser
def test_run_with_explore_is_watched_live_and_writes_the_same_trace(tmp_path: Path) -> None:
    """Watched in Chromium while it runs: the marker's count grows through every committed step, the last
    included; then "run finished (exit status 0)" over the finished trace, whose pages stay readable
    until the run is stopped (SIGINT: exit 0, no traceback); the trace equals the run's without --explore."""
    pytest.importorskip("solara")
    pytest.importorskip("playwright.sync_api")
    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    proc = subprocess.Popen(
        _socium("--explore", "--explore-port", "0", out=tmp_path / "live"),
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    counts: list[int] = []
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the explorer is up before the first step runs, on the port really served
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found and found.group(1) != "0", line
        url = found.group(0)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.set_default_timeout(30_000)
            page.goto(url)
            live = page.locator(".live").first
            live.wait_for()
            deadline = time.monotonic() + 180
            state = ""
            while time.monotonic() < deadline:
                # the marker is re-rendered as each step lands (and the page with it while "follow" is on): wait
                # for it up to the deadline, then read its attributes in one call, never from a vanished node
                live.wait_for(timeout=max(1.0, deadline - time.monotonic()) * 1000)
                marks = live.evaluate("e => ['state', 'committed', 'planned'].map(k => e.getAttribute('data-' + k))")
                state = marks[0] or ""
                counts.append(int(marks[1] or -1))
                assert int(marks[2] or -1) == 5
                if state == "finished":
                    break
                time.sleep(0.3)
            assert state == "finished", counts
            # the marker names the simulated time of the last step (the trace's sim_time_s from the config's start hour)
            from test_explore import step_time

            when = step_time(tmp_path / "live", 4)
            assert live.inner_text() == f"steps 5 of 5 committed · run finished (exit status 0) · last: {when}"
            # the timeline shows the last step's posts, and another page opens from the finished trace
            with open_run(tmp_path / "live") as c:
                last = c.execute("SELECT max(step) FROM posts").fetchone()[0]
                agent = c.execute("SELECT agent_id FROM exposures ORDER BY step DESC, agent_id LIMIT 1").fetchone()[0]
            page.locator(f".post-head:has-text('step {last}')").first.wait_for()
            page.goto(f"{url}run/0/agent/{agent}")
            page.locator(".activation").first.wait_for()
            assert page.locator(".live").first.get_attribute("data-state") == "finished"
            browser.close()
        assert proc.poll() is None  # still serving until stopped
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "Traceback" not in out and "hooks" not in out, out
    assert "run finished (exit status 0)" in out
    assert counts == sorted(counts) and counts[-1] == 5 and counts[0] < 5, counts  # it grew while watched
    subprocess.run(_socium(out=tmp_path / "plain"), cwd=ROOT, env=env, check=True, capture_output=True)
    live_digest, plain_digest = (trace_digest(tmp_path / d / "trace.duckdb") for d in ("live", "plain"))
    live_digest.pop("runs"), plain_digest.pop("runs")
    assert live_digest == plain_digest
