"""`socium run --resume`: no config needed, overrides it cannot honour refused by name, runs extended.

Also: ``steps.wall_s`` adds up to the real wall time (set-up and resume included).
"""

import json
import re
import time

import duckdb
import yaml
from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.simulator.simulation import Simulation
from socium.trace.store import trace_digest

runner = CliRunner()


def _text(r):
    return " ".join(r.output.split())  # the error console wraps long lines


def _write(cfg, path):
    path.write_text(yaml.safe_dump(json.loads(cfg.canonical_json())))
    return path


def test_steps_is_not_part_of_the_config_hash():
    assert small_config(steps=3).config_hash() == small_config(steps=30).config_hash()
    assert small_config(seed=1).config_hash() != small_config(seed=2).config_hash()


def test_extended_run_equals_run_to_n_from_the_start(tmp_path):
    cfg_path = _write(small_config(steps=3), tmp_path / "c.yaml")
    r = runner.invoke(app, ["run", str(cfg_path), "--out", str(tmp_path / "short"), "--quiet"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["run", "--resume", "--out", str(tmp_path / "short"), "--steps", "7", "--quiet"])
    assert r.exit_code == 0, r.output
    assert "ran 4 steps" in r.output
    Simulation(small_config(steps=7), tmp_path / "full").run()
    ext, full = trace_digest(tmp_path / "short" / "trace.duckdb"), trace_digest(tmp_path / "full" / "trace.duckdb")
    assert ext == full  # every table, the run row (config with steps=7) included
    assert json.loads((tmp_path / "short" / "config.json").read_text())["steps"] == 7
    r = runner.invoke(app, ["card", str(tmp_path / "short"), "--json"])
    assert json.loads(r.output)["steps_committed"] == "7 of 7"


def test_extended_llm_run_equals_run_to_n_from_the_start(tmp_path):
    llm = {
        "policy": {"kind": "llm"},
        "llm": {"backend": "random"},
        "population": {"n_agents": 30, "mean_activity": 0.4},
    }
    Simulation(small_config(steps=2, **llm), tmp_path / "short").run()
    Simulation(small_config(steps=4, **llm), tmp_path / "short", resume=True).run()
    Simulation(small_config(steps=4, **llm), tmp_path / "full").run()
    assert trace_digest(tmp_path / "short" / "trace.duckdb") == trace_digest(tmp_path / "full" / "trace.duckdb")


def test_resume_needs_no_config_and_refuses_overrides_by_name(tmp_path):
    out = tmp_path / "r"
    Simulation(small_config(steps=5), out).run(steps=2)
    for extra, named in ((["--seed", "3"], "--seed 3"), (["--set", "policy.p_post=0.9"], "--set policy.p_post=0.9")):
        r = runner.invoke(app, ["run", "--resume", "--out", str(out), "--quiet", *extra])
        assert r.exit_code == 2 and named in _text(r) and "cannot honour" in _text(r), r.output
    con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT max(step) FROM steps").fetchone()[0] == 1  # nothing ran
    con.close()
    r = runner.invoke(app, ["run", "--resume", "--out", str(out), "--quiet", "--set", "executor.kind=inprocess"])
    assert r.exit_code == 0, r.output
    assert "ran 3 steps" in r.output
    r = runner.invoke(app, ["run", "--resume", "--out", str(out), "--quiet"])  # finished: says so, runs nothing
    assert r.exit_code == 0 and "already finished: 5 of 5 steps" in _text(r) and "ran 0 steps" not in r.output
    Simulation(small_config(steps=5), tmp_path / "full").run()
    assert trace_digest(out / "trace.duckdb") == trace_digest(tmp_path / "full" / "trace.duckdb")


def test_resume_cannot_shorten_a_run(tmp_path):
    out = tmp_path / "r"
    Simulation(small_config(steps=4), out).run()
    r = runner.invoke(app, ["run", "--resume", "--out", str(out), "--steps", "2", "--quiet"])
    assert r.exit_code == 2 and "4 steps are already committed" in _text(r)


def test_wall_time_includes_set_up(tmp_path, monkeypatch):
    import socium.simulator.world as simmod

    real = simmod.build_population

    def slow_build(cfg):
        time.sleep(0.4)
        return real(cfg)

    monkeypatch.setattr(simmod, "build_population", slow_build)
    t0 = time.perf_counter()
    stats = Simulation(small_config(steps=3), tmp_path / "r").run()
    elapsed = time.perf_counter() - t0
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    total = con.execute("SELECT sum(wall_s) FROM steps").fetchone()[0]
    setup = con.execute("SELECT wall_s FROM steps WHERE step = -1").fetchone()[0]
    con.close()
    assert setup >= 0.4  # the set-up row carries the slow build
    # the step-only time misses the set-up: what the trace adds to it is at least the 0.4 s build (stated as a
    # difference, not as "the 3 steps took under 0.4 s", which a loaded machine can break)
    assert total - sum(s.wall_s for s in stats) >= 0.4
    assert total <= elapsed
    # the CLI's summary line counts the same set-up (it printed the steps' time alone)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"name": "w", "steps": 2, "population": {"n_agents": 30}}))
    r = runner.invoke(app, ["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "cli"), "--quiet"])
    assert r.exit_code == 0, r.output
    printed = float(re.search(r"ran 2 steps in ([0-9.]+)s \(wall time, set-up included\)", r.output).group(1))
    assert printed >= 0.4
