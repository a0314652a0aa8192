"""Issue 11.1: a live run directory is never destroyed; one writer per run directory; foreign folders refused.

Real concurrent processes: a slow run holds the directory while others try ``--force``, ``--resume``
and a second resume against it.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import yaml
from typer.testing import CliRunner

from socium.cli.main import app

HERE = Path(__file__).resolve().parent  # this module, imported by the child run as its recsys plugin
TESTS = HERE.parent
SRC = TESTS.parent / "src"
runner = CliRunner()


class SlowRecommender:
    """Chronological feeds, slowed by $SOCIUM_TEST_FEED_DELAY seconds per step (not part of the config hash)."""

    def __init__(self, window_steps: int = 48, context=None) -> None:
        from socium.recsys.chronological import ChronologicalRecommender

        self.inner = ChronologicalRecommender(window_steps)

    def observe(self, state, new_posts, step):
        self.inner.observe(state, new_posts, step)

    def feeds(self, state, users, k, step, rng):
        time.sleep(float(os.environ.get("SOCIUM_TEST_FEED_DELAY", "0")))
        return self.inner.feeds(state, users, k, step, rng)


CFG = {
    "name": "lock",
    "seed": 3,
    "steps": 40,
    "population": {"n_agents": 80, "mean_activity": 0.3},
    "recsys": {"kind": "test_rundir_lock:SlowRecommender"},
    "seed_posts": [{"author": 0, "content": "hello"}],
}


def _env(delay: float) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(HERE), str(TESTS), env.get("PYTHONPATH", "")])
    env["SOCIUM_TEST_FEED_DELAY"] = str(delay)
    return env


def _cmd(cfg_path, out, *extra):
    return [sys.executable, "-m", "socium.cli", "run", str(cfg_path), "--out", str(out), "--quiet", *extra]


def _start_holding(cfg_path, out, *extra) -> subprocess.Popen:
    """Start a slow run and return once it holds the directory's lock and has committed its set-up."""
    # 6 s a step: the holder holds for 40 x 6 s, longer than any refused run takes to start and give up even on
    # a loaded machine (at 1.5 s a step, three refused CLI starts under load could outlast the holder)
    p = subprocess.Popen(_cmd(cfg_path, out, *extra), env=_env(6), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lock = out / ".socium.lock"
    deadline = time.time() + 120
    while time.time() < deadline:
        assert p.poll() is None, p.stderr.read().decode()
        try:
            owner = json.loads(lock.read_text() or "{}")
        except (OSError, ValueError):
            owner = {}
        if owner.get("pid") == p.pid and (out / "config.json").exists():
            return p
        time.sleep(0.1)
    p.kill()
    raise AssertionError("the slow run never took the lock")


def _refused(cfg_path, out, holder: subprocess.Popen, *extra) -> None:
    r = subprocess.run(_cmd(cfg_path, out, *extra), env=_env(0), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert f"in use by pid {holder.pid}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "IOException" not in r.stderr
    assert holder.poll() is None, "the holder died: its run was disturbed"


def _steps(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM steps WHERE step >= 0").fetchone()[0]
    finally:
        con.close()


def test_concurrent_runs_on_one_directory_one_proceeds(tmp_path):
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump(CFG))
    out = tmp_path / "run"
    a = _start_holding(cfg_path, out)
    try:
        _refused(cfg_path, out, a, "--force")  # --force must not delete a live trace
        _refused(cfg_path, out, a, "--resume")  # run + resume
        _refused(cfg_path, out, a)  # run + run
        assert (out / "trace.duckdb").exists()
    finally:
        a.send_signal(signal.SIGKILL)
        a.wait()
    # The lock a SIGKILLed holder leaves behind is stale: a resume takes it over and says whose it was.
    c = _start_holding(cfg_path, out, "--resume")
    try:
        _refused(cfg_path, out, c, "--resume")  # resume + resume
    finally:
        c.send_signal(signal.SIGKILL)
        c.wait()
    done = subprocess.run(_cmd(cfg_path, out, "--resume"), env=_env(0), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"stale lock left by pid {c.pid}" in done.stderr
    assert _steps(out / "trace.duckdb") == CFG["steps"]
    # Finished and unlocked: the directory can be read and (with --force) overwritten again.
    again = subprocess.run(_cmd(cfg_path, out, "--force"), env=_env(0), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr


def test_in_process_second_writer_is_refused_until_the_first_closes(tmp_path):
    from socium.config.loading import config_from_dict
    from socium.errors import RunDirError
    from socium.simulator.simulation import Simulation

    cfg = config_from_dict({**CFG, "recsys": {"kind": "chronological"}, "steps": 3})
    first = Simulation(cfg, tmp_path / "r")
    try:
        Simulation(cfg, tmp_path / "r", force=True)
    except RunDirError as exc:
        assert f"pid {os.getpid()}" in str(exc)
    else:
        raise AssertionError("a second writer got the directory")
    first.run()
    Simulation(cfg, tmp_path / "r", resume=True).run()  # released by close()


def test_foreign_directory_is_refused_without_force(tmp_path):
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump({**CFG, "recsys": {"kind": "chronological"}, "steps": 2}))
    out = tmp_path / "mine"
    out.mkdir()
    (out / "config.json").write_text('{"my": "own file"}')
    (out / "notes.txt").write_text("thesis notes")
    r = runner.invoke(app, ["run", str(cfg_path), "--out", str(out), "--quiet"])
    assert r.exit_code == 2 and "did not write" in r.output and "config.json" in r.output, r.output
    assert (out / "config.json").read_text() == '{"my": "own file"}' and not (out / "trace.duckdb").exists()
    r = runner.invoke(app, ["run", str(cfg_path), "--out", str(out), "--quiet", "--force"])
    assert r.exit_code == 0, r.output
    assert (out / "notes.txt").read_text() == "thesis notes" and (out / "trace.duckdb").exists()
