"""A run killed with SIGKILL at random points and resumed equals the uninterrupted run."""

import os
import re
import signal
import subprocess
import sys
import time

import duckdb
import numpy as np
import yaml

from socium.trace.store import check_no_duplicates, trace_digest

CFG = {
    "name": "resume",
    "seed": 5,
    "steps": 30,
    "population": {"n_agents": 1000, "mean_activity": 0.3},  # 30 steps of writes to kill into; 3000 took 2x as long
    "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
    "policy": {"kind": "random", "p_post": 0.2, "p_like": 0.2, "p_repost": 0.1},
    "seed_posts": [{"author": 0, "content": "seed"}, {"author": 1, "content": "later", "step": 7}],
}


STEP_LINE = re.compile(rb": step (\d+) committed ")


def _cmd(cfg_path, out, resume):
    """The run, not quiet: through a pipe it prints one flushed line per committed step, which paces the kills."""
    cmd = [sys.executable, "-m", "socium.cli", "run", str(cfg_path), "--out", str(out)]
    return cmd + (["--resume"] if resume else [])


def _step_lines(p: subprocess.Popen, n: int, t0: float) -> list[tuple[int, float]]:
    """Read until ``n`` step lines came (fewer if the run ended first): each step and when it came."""
    got: list[tuple[int, float]] = []
    assert p.stdout is not None
    while len(got) < n and (line := p.stdout.readline()):
        if m := STEP_LINE.search(line):
            got.append((int(m.group(1)), time.perf_counter() - t0))
    return got


def test_sigkill_then_resume_equals_clean_run(tmp_path):
    """Kills land at random points of the run, paced by its own step lines rather than by the clock: a kill
    comes a random fraction of one step (or of the set-up) after the j-th step line, j drawn so that steps are
    left, so every kill lands mid-run however loaded the machine is. (Timed from the clean run's length, the
    kills missed when the machine got faster between the clean run and the killed ones.)"""
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(CFG))
    clean = tmp_path / "clean"
    t0 = time.perf_counter()
    p = subprocess.Popen(_cmd(cfg_path, clean, False), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = _step_lines(p, CFG["steps"], t0)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0 and [s for s, _ in lines] == list(range(CFG["steps"])), err.decode()
    setup_s = lines[0][1]  # start to step 0's line: imports, set-up, step 0
    step_s = (lines[-1][1] - lines[0][1]) / (len(lines) - 1)
    ref = trace_digest(clean / "trace.duckdb")
    rng = np.random.default_rng(7)
    kills_that_landed_mid_run = 0
    for trial in range(3):
        out = tmp_path / f"killed{trial}"
        resume = False
        done = 0  # steps known committed (a lower bound: a kill may land after a line not yet read)
        for attempt in range(4):
            t0 = time.perf_counter()
            p = subprocess.Popen(_cmd(cfg_path, out, resume), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            left = CFG["steps"] - done
            if attempt == 3 or left < 4:  # then the run is left to finish: the test ends on a loaded machine too
                _, err = p.communicate(timeout=300)
                assert p.returncode == 0, err.decode()
                break
            j = int(rng.integers(0, left - 3))  # step lines to wait for; at least 3 steps are left after them
            seen = _step_lines(p, j, t0)
            done = max([done] + [s + 1 for s, _ in seen])
            time.sleep(float(rng.uniform(0.0, 1.0)) * (step_s if seen else setup_s))
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
                kills_that_landed_mid_run += 1
            else:
                _, err = p.communicate()
                assert p.returncode == 0, err.decode()
                break
            p.stdout.close()
            p.stderr.close()
            resume = (out / "trace.duckdb").exists()
        got = trace_digest(out / "trace.duckdb")
        assert got == ref, trial
        con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
        assert set(check_no_duplicates(con).values()) == {0}
        assert con.execute("SELECT count(*) FROM steps").fetchone()[0] == CFG["steps"] + 1
        con.close()
    assert kills_that_landed_mid_run >= 3  # the test really interrupted runs (each trial at least once)


def test_resume_of_finished_run_is_a_noop_and_overwrite_needs_force(tmp_path):
    from socium.config.loading import config_from_dict
    from socium.errors import RunDirError
    from socium.simulator.simulation import Simulation

    cfg = config_from_dict({**CFG, "steps": 3, "population": {"n_agents": 50}})
    Simulation(cfg, tmp_path / "r").run()
    before = trace_digest(tmp_path / "r" / "trace.duckdb")
    sim = Simulation(cfg, tmp_path / "r", resume=True)
    assert sim.next_step == 3
    sim.run()
    assert trace_digest(tmp_path / "r" / "trace.duckdb") == before
    try:
        Simulation(cfg, tmp_path / "r")
    except RunDirError as exc:
        assert "finished run" in str(exc) and "--force" in str(exc)
    else:
        raise AssertionError("overwrote a finished run without --force")
    other = config_from_dict({**CFG, "steps": 3, "seed": 9, "population": {"n_agents": 50}})
    try:
        Simulation(other, tmp_path / "r", resume=True)
    except RunDirError as exc:
        assert "config differs" in str(exc)
    else:
        raise AssertionError("resumed with a different config")
    Simulation(cfg, tmp_path / "r", force=True).run()
    assert trace_digest(tmp_path / "r" / "trace.duckdb") == before
