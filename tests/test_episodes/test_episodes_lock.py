"""Issue 11.1 for episode runs: `socium episodes` and `socium group-episodes` take the run-directory lock.

Without it a second invocation with ``--force`` unlinks ``episodes.duckdb`` under a live writer (and a
plain second invocation races it for the DuckDB file lock). A holder in another process is simulated
by a real subprocess (and, for speed, by a lock taken in this process on its own descriptor, which
``flock`` treats as another owner).
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
from typer.testing import CliRunner

from socium.cli.main import app
from socium.trace.rundir import RunDirLock

SRC = Path(__file__).resolve().parents[2] / "src"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def _count(db: Path, table: str) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def _episodes_cfg(tmp_path: Path) -> Path:
    f = tmp_path / "e.yaml"
    f.write_text("name: lock\ntasks: {mutual_friend: 1, bargaining: 0}\nllm: {backend: random}\nmax_turns: 2\n")
    return f


def test_episodes_force_is_refused_while_another_process_holds_the_directory(tmp_path) -> None:
    f, out = _episodes_cfg(tmp_path), tmp_path / "run"
    first = runner.invoke(app, ["episodes", str(f), "--out", str(out), "--quiet"])
    assert first.exit_code == 0, first.output
    db = out / "episodes.duckdb"
    before = _count(db, "episodes")
    assert before == 3
    with RunDirLock(out):
        for extra in (["--force"], []):
            r = runner.invoke(app, ["episodes", str(f), "--out", str(out), "--quiet", *extra])
            assert r.exit_code == 2, r.output
            assert f"in use by pid {os.getpid()}" in r.output and "Traceback" not in r.output
        assert db.exists() and _count(db, "episodes") == before  # --force deleted nothing
    # released: --force now replaces the run
    again = runner.invoke(app, ["episodes", str(f), "--out", str(out), "--quiet", "--force"])
    assert again.exit_code == 0 and "ran 3 episodes" in again.output, again.output


def test_group_episodes_force_is_refused_while_another_process_holds_the_directory(tmp_path) -> None:
    out = tmp_path / "g"
    args = ["group-episodes", str(EXAMPLES / "group-episodes.yaml"), "--out", str(out), "--set", "deals=1"]
    assert runner.invoke(app, args).exit_code == 0
    db = out / "group_episodes.duckdb"
    before = _count(db, "group_episodes")
    with RunDirLock(out):
        r = runner.invoke(app, [*args, "--force"])
        assert r.exit_code == 2 and f"in use by pid {os.getpid()}" in r.output, r.output
        assert _count(db, "group_episodes") == before
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0


def test_episodes_lock_left_by_a_killed_process_is_stale(tmp_path) -> None:
    f, out = _episodes_cfg(tmp_path), tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    hold = (
        "import sys, time; from socium.trace.rundir import RunDirLock; "
        "lock = RunDirLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(600)"
    )
    out.mkdir()
    p = subprocess.Popen([sys.executable, "-c", hold, str(out)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "held"
        r = subprocess.run(
            [sys.executable, "-m", "socium.cli", "episodes", str(f), "--out", str(out), "--quiet", "--force"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 2 and f"in use by pid {p.pid}" in r.stderr + r.stdout, (r.stdout, r.stderr)
        assert not (out / "episodes.duckdb").exists()
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    time.sleep(0.1)
    done = runner.invoke(app, ["episodes", str(f), "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert f"stale lock left by pid {p.pid}" in done.output


def test_episodes_refuse_a_folder_of_the_users_files_without_force(tmp_path) -> None:
    f, out = _episodes_cfg(tmp_path), tmp_path / "mine"
    out.mkdir()
    (out / "config.json").write_text('{"my": "own file"}')
    (out / "notes.txt").write_text("thesis notes")
    r = runner.invoke(app, ["episodes", str(f), "--out", str(out), "--quiet"])
    assert r.exit_code == 2 and "did not write" in r.output and "notes.txt" in r.output, r.output
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "notes.txt"]  # nothing written, lock removed
    g = runner.invoke(app, ["group-episodes", str(EXAMPLES / "group-episodes.yaml"), "--out", str(out)])
    assert g.exit_code == 2 and "did not write" in g.output, g.output
    r = runner.invoke(app, ["episodes", str(f), "--out", str(out), "--quiet", "--force"])
    assert r.exit_code == 0, r.output
    assert (out / "notes.txt").read_text() == "thesis notes" and (out / "episodes.duckdb").exists()
    again = runner.invoke(app, ["episodes", str(f), "--out", str(out), "--quiet"])  # its own folder now
    assert again.exit_code == 0 and "ran 0 episodes" in again.output, again.output
