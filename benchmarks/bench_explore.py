"""The explorer's page times on a big trace, as a person opening it sees them (issue 40's targets: the first
page in a fresh browser within 3 s, any page within 2 s after that).

    python benchmarks/bench_explore.py RUN_DIR [--cold 3] [--rounds 3] [--queries-only] [--src OLD/src]

Make the trace first, e.g. the 10^5-agent quickstart (rule-based agents, no model):

    socium run examples/quickstart.yaml --set population.n_agents=100000 --steps 24 --out runs/big

It starts ``socium explore RUN_DIR --port 0`` (this checkout's ``src``) and drives Debian's Chromium with
Playwright. **Cold**: ``--cold`` times, a new Chromium process (empty cache, no session) opens the first page
(the timeline); timed from ``goto`` until its first post is on the screen. **Warm**: in one of those browsers
after its first page, each page ``--rounds`` times (a fresh navigation each: the session is new, the browser
has the scripts), timed until the page's own content is there: timeline, a text-filtered timeline, the most
exposed agent, the largest cascade's post page, the agents list (sorted by followers), the call log, the
charts. Then each page's trace queries alone, in this process, on a read-only connection (median of 3).
Prints the machine, the load average before and after, and per page the median and the max.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"


def serve(run: Path, src: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, "-m", "socium.cli.main", "explore", str(run), "--port", "0"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    found = re.search(r"http://127\.0\.0\.1:\d+", proc.stdout.readline())
    if not found:
        raise SystemExit(proc.stderr.read() if proc.stderr else "the explorer did not start")
    url = found.group(0)
    for _ in range(240):
        try:
            urllib.request.urlopen(url, timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.25)
    raise SystemExit("the explorer did not answer")


def pages(run: Path) -> list[tuple[str, str, str]]:
    """(name, path, selector of the page's own content) for the pages timed warm."""
    import duckdb

    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    try:
        agent = con.execute("SELECT agent_id FROM exposures GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1").fetchone()
        post = con.execute("SELECT root_id FROM cascade_nodes GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1").fetchone()
    finally:
        con.close()
    a, p = (agent or [0])[0], (post or [0])[0]
    return [
        ("timeline", "/run/0", ".timeline .post"),
        (f"agent {a} (most exposed)", f"/run/0/agent/{a}", ".activation .v-card__title"),
        (f"post {p} (largest cascade)", f"/run/0/post/{p}", ".cascade-node"),
        ("agents list", "/run/0/agents", ".agents-table .agent-link"),
        ("call log", "/run/0/calls", ".v-alert, .call"),
        ("charts", "/run/0/charts", ".charts img"),
    ]


def time_queries(run: Path) -> list[tuple[str, float]]:
    """Each page's trace queries alone (median of 3 runs), on a read-only connection."""
    import duckdb

    sys.path.insert(0, str(ROOT / "src"))  # the queries of this checkout
    from socium.trace.queries import explore as q

    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    agent = con.execute("SELECT agent_id FROM exposures GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1").fetchone()[0]
    root = con.execute("SELECT root_id FROM cascade_nodes GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1").fetchone()[0]
    jobs = {
        "overview (every page's header)": lambda: q.overview(con),
        "timeline page + count": lambda: (q.timeline(con, limit=20), q.count_timeline(con)),
        "timeline filtered by text": lambda: (
            q.timeline(con, text="bike", limit=20),
            q.count_timeline(con, text="bike"),
        ),
        "agent: activations, feeds, calls": lambda: [
            (q.feed(con, agent, s), q.calls_at(con, agent, s), q.actions(con, agent, s))
            for s in q.activation_steps(con, agent, limit=6)
        ],
        "agent: neighbourhood": lambda: q.neighbourhood(con, agent),
        "post: cascade page, growth, shown to": lambda: (
            q.cascade(con, root, limit=20),
            q.cascade_size_by_step(con, root),
            q.exposed_to(con, root, limit=20),
            q.exposure_sources(con, root),
            q.acted_on(con, root, limit=20),
        ),  # fmt: skip
        "agents list (by id)": lambda: q.agents_table(con, limit=21),
        "agents list (by followers)": lambda: q.agents_table(con, sort="followers", descending=True, limit=21),
        "charts: activity": lambda: q.activity_by_step(con),
        "charts: stance distribution": lambda: q.stance_by_step(con),
        "charts: largest cascades": lambda: q.top_cascades_by_step(con),
    }
    out = []
    for name, fn in jobs.items():
        took = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            took.append(time.perf_counter() - t0)
        out.append((name, statistics.median(took)))
    con.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--cold", type=int, default=3, help="fresh browsers opening the first page")
    ap.add_argument("--rounds", type=int, default=3, help="loads of each page after the first")
    ap.add_argument("--queries-only", action="store_true")
    ap.add_argument(
        "--src", type=Path, default=ROOT / "src", help="the socium sources served (e.g. an older checkout's)"
    )
    a = ap.parse_args()
    load0 = os.getloadavg()
    size = (a.run / "trace.duckdb").stat().st_size
    print(f"machine: {platform.node()}, {os.cpu_count()} cores, {platform.processor() or platform.machine()}")
    print(f"served from: {a.src}")
    print(f"trace: {a.run} ({size / 1e6:.0f} MB); load average before: {load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f}")
    rows: list[tuple[str, list[float]]] = []
    if not a.queries_only:
        from playwright.sync_api import sync_playwright

        proc, url = serve(a.run, a.src)
        try:
            with sync_playwright() as p:
                cold: list[float] = []
                browser = None
                for _ in range(a.cold):
                    if browser is not None:
                        browser.close()
                    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                    page = browser.new_page(viewport={"width": 1100, "height": 900})
                    page.set_default_timeout(120_000)
                    t0 = time.perf_counter()
                    page.goto(url + "/")
                    page.locator(".timeline .post").first.wait_for()
                    cold.append(time.perf_counter() - t0)
                rows.append(("first page, fresh browser (timeline)", cold))
                assert browser is not None
                page = browser.new_page(viewport={"width": 1100, "height": 900})
                page.set_default_timeout(120_000)
                for name, path, sel in pages(a.run):
                    took = []
                    for _ in range(a.rounds):
                        t0 = time.perf_counter()
                        page.goto(url + path)
                        page.locator(sel).first.wait_for()
                        took.append(time.perf_counter() - t0)
                    rows.append((name, took))
                browser.close()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(30)
    print()
    print(f"{'page (Chromium)':48} {'n':>3} {'median s':>9} {'max s':>7}   each")
    for name, took in rows:
        each = ", ".join(f"{t:.2f}" for t in took)
        print(f"{name:48} {len(took):>3} {statistics.median(took):>9.2f} {max(took):>7.2f}   {each}")
    print()
    print(f"{'queries alone (median of 3)':48} {'s':>9}")
    for name, t in time_queries(a.run):
        print(f"{name:48} {t:>9.3f}")
    load1 = os.getloadavg()
    print(f"\nload average after: {load1[0]:.1f} {load1[1]:.1f} {load1[2]:.1f}")


if __name__ == "__main__":
    main()
