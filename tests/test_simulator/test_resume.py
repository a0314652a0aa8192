"""A run killed with SIGKILL at random points and resumed equals the uninterrupted run."""

import os
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


def _cmd(cfg_path, out, resume):
    cmd = [sys.executable, "-m", "socium.cli", "run", str(cfg_path), "--out", str(out), "--quiet"]
    return cmd + (["--resume"] if resume else [])


def test_sigkill_then_resume_equals_clean_run(tmp_path):
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(CFG))
    clean = tmp_path / "clean"
    t0 = time.perf_counter()
    subprocess.run(_cmd(cfg_path, clean, False), check=True, capture_output=True, timeout=300)
    full = time.perf_counter() - t0  # kill times scale with how fast this machine is right now
    ref = trace_digest(clean / "trace.duckdb")
    rng = np.random.default_rng(7)
    kills_that_landed_mid_run = 0
    for trial in range(3):
        out = tmp_path / f"killed{trial}"
        resume = False
        for attempt in range(4):
            p = subprocess.Popen(_cmd(cfg_path, out, resume), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if attempt == 3:  # after three kills the run is left to finish: the test ends on a loaded machine too
                _, err = p.communicate(timeout=300)
                assert p.returncode == 0, err.decode()
                break
            time.sleep(float(rng.uniform(0.35, 0.95)) * full)
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
                kills_that_landed_mid_run += 1
            else:
                assert p.returncode == 0, p.stderr.read().decode()
                break
            resume = (out / "trace.duckdb").exists()
        got = trace_digest(out / "trace.duckdb")
        assert got == ref, trial
        con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
        assert set(check_no_duplicates(con).values()) == {0}
        assert con.execute("SELECT count(*) FROM steps").fetchone()[0] == CFG["steps"] + 1
        con.close()
    assert kills_that_landed_mid_run >= 2  # the test really interrupted runs


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
