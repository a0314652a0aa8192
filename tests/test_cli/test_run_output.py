"""What `socium run` and `socium query` print where no terminal reads them (logs, pipes), and the docs
that describe their output: one flushed line per committed step, a resume line when a run is stopped,
status lines never cut at 80 columns, every csv row, and README/docs examples that hold."""

from __future__ import annotations

import csv
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app

runner = CliRunner()
SMALL = {
    "name": "talk",
    "seed": 1,
    "steps": 4,
    "population": {"n_agents": 120, "mean_activity": 0.3},
    "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
    "policy": {"kind": "random", "p_post": 0.3, "p_like": 0.3, "p_repost": 0.2},
    "seed_posts": [{"author": 0, "content": "seed post"}],
}


def _repo_root() -> Path:
    here = Path(__file__).resolve()
    return next(p for p in here.parents if (p / "pyproject.toml").is_file())


def _config(tmp_path: Path, **over) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**SMALL, **over}))
    return path


def _last_step(run_dir: Path) -> int:
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        return int(con.execute("SELECT max(step) FROM steps").fetchone()[0])
    finally:
        con.close()


def test_a_logged_run_prints_one_whole_line_per_step(tmp_path):
    out = tmp_path / ("a-run-directory-whose-path-is-long-enough-to-pass-eighty-columns-" + "x" * 30)
    r = runner.invoke(app, ["run", str(_config(tmp_path)), "--out", str(out)])  # CliRunner: not a terminal
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    steps = [ln for ln in lines if re.match(r"talk: step \d+ committed", ln)]
    assert [int(ln.split()[2]) for ln in steps] == [0, 1, 2, 3]
    assert steps[-1].startswith("talk: step 3 committed (4/4) t=3.0h active=")
    assert "━" not in r.stdout  # no bar drawn into the log at the end
    assert f"trace: {out / 'trace.duckdb'}" in lines  # one line, not cut at 80 columns
    r = runner.invoke(app, ["run", str(_config(tmp_path)), "--out", str(tmp_path / "q"), "--quiet"])
    assert r.exit_code == 0 and "committed" not in r.stdout and "ran 4 steps" in r.stdout


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_names_its_last_step_and_the_resume_command(tmp_path, sig):
    """Through a pipe, as in a log: step lines arrive while the run runs; a signal leaves the resume line."""
    out = tmp_path / "run"
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    env.pop("PYTHONUNBUFFERED", None)  # the lines must be flushed by socium itself
    cmd = [sys.executable, "-m", "socium.cli", "run", str(_config(tmp_path, steps=100_000)), "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 300
        while len([ln for ln in seen if " committed " in ln]) < 3:
            line = proc.stdout.readline()
            assert line and time.monotonic() < deadline, f"no step lines before the run ended: {seen}"
            seen.append(line)
        assert proc.poll() is None  # the lines came while the run was still running
        proc.send_signal(sig)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = "".join(seen) + rest
    assert proc.returncode == 128 + sig, log
    last = _last_step(out)
    assert last >= 2
    assert (
        f"stopped after step {last} (steps 0..{last} are committed); `socium run --resume --out {out}` continues" in log
    )
    assert "Traceback" not in log
    r = runner.invoke(app, ["run", "--resume", "--out", str(out), "--steps", str(last + 3), "--quiet"])
    assert r.exit_code == 0 and "ran 2 steps" in r.stdout, r.output  # the printed command continues the run


@pytest.fixture(scope="module")
def cascades_run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cascades")
    cfg = {**SMALL, "steps": 8, "policy": {"kind": "random", "p_post": 0.3, "p_like": 0.1, "p_repost": 0.4}}
    (d / "c.yaml").write_text(yaml.safe_dump(cfg))
    r = runner.invoke(app, ["run", str(d / "c.yaml"), "--out", str(d / "run"), "--quiet"])
    assert r.exit_code == 0, r.output
    return d / "run"


def test_query_csv_and_json_print_every_row_a_table_says_what_it_kept(cascades_run):
    sql = "SELECT post_id FROM posts ORDER BY post_id"
    con = duckdb.connect(str(cascades_run / "trace.duckdb"), read_only=True)
    n = con.execute("SELECT count(*) FROM posts").fetchone()[0]
    con.close()
    assert n > 50  # more than a table shows
    r = runner.invoke(app, ["query", str(cascades_run), sql, "--format", "csv"])
    assert r.exit_code == 0 and len(list(csv.reader(io.StringIO(r.stdout)))) == n + 1  # header + every row
    assert "truncated" not in r.output
    r = runner.invoke(app, ["query", str(cascades_run), sql, "--format", "json"])
    assert r.exit_code == 0 and r.stdout.count('"post_id"') == n
    r = runner.invoke(app, ["query", str(cascades_run), sql, "--format", "csv", "--limit", "5"])
    assert len(r.stdout.splitlines()) == 6 and "truncated to the first 5 rows" in r.output and "--out FILE" in r.output
    r = runner.invoke(app, ["query", str(cascades_run), sql])
    assert "truncated to the first 50 rows" in r.output


def test_readme_cascade_example_shows_distinct_cascades(cascades_run):
    readme = (_repo_root() / "README.md").read_text(encoding="utf-8")
    m = re.search(r'socium query RUN_DIR "(SELECT \* FROM cascade_metrics[^"]*)"', readme)
    assert m, "README's cascade_metrics example is gone"
    con = duckdb.connect(str(cascades_run / "trace.duckdb"), read_only=True)
    try:
        rows = con.execute(m.group(1)).fetchall()
        (cascades,) = con.execute("SELECT count(DISTINCT root_id) FROM cascade_metrics").fetchone()
    finally:
        con.close()
    assert cascades > 1
    roots = [r[0] for r in rows]
    assert len(roots) == len(set(roots)) == min(10, cascades)  # ten cascades, not one cascade ten times
    sizes = [r[2] for r in rows]
    assert sizes == sorted(sizes, reverse=True)


def _strip_parens(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(out)


def test_docs_trace_lists_the_llm_calls_columns_the_trace_has():
    from socium.llm.cache import LLM_CALLS_COLUMNS

    doc = (_repo_root() / "docs" / "trace.md").read_text(encoding="utf-8")
    row = next(ln for ln in doc.splitlines() if ln.startswith("| `llm_calls` |"))
    cols = [c.strip() for c in _strip_parens(row.split("|")[2]).split(",")]
    assert cols == [name for name, _ in LLM_CALLS_COLUMNS]


def test_readme_usage_lists_every_command():
    import typer.main

    readme = (_repo_root() / "README.md").read_text(encoding="utf-8")
    usage = readme.split("## Usage", 1)[1].split("```", 2)[1]
    group = typer.main.get_command(app)
    names = []
    for name, cmd in group.commands.items():
        subs = getattr(cmd, "commands", None)
        names += [f"{name} {sub}" for sub in subs] if subs else [name]
    missing = [n for n in names if not re.search(rf"^socium {re.escape(n)}\b", usage, re.M)]
    assert not missing, f"README's usage list lacks: {missing}"


def test_sensitivity_example_states_the_run_count_its_design_makes():
    from socium.experiments.designs.sensitivity import design, load_sensitivity

    path = _repo_root() / "examples" / "sensitivity.yaml"
    spec = load_sensitivity(path)
    _, _, points = design(spec)
    stated = re.search(r"= (\d+) runs", path.read_text(encoding="utf-8"))
    assert stated and int(stated.group(1)) == len(points) * spec.replicates
