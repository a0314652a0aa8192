"""Errors that point the way: each mistake a newcomer makes is one `error:` line naming the fix, and
following the fix works (issue 30, item 3)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.simulator.simulation import Simulation

runner = CliRunner()


def _repo_root() -> Path:
    here = Path(__file__).resolve()
    return next(p for p in here.parents if (p / "pyproject.toml").is_file())


def _text(r) -> str:
    return re.sub(r"\s+", " ", r.output)


def _error_line(r) -> str:
    """The output is exactly one `error:` line (no traceback, no list of unknown keys)."""
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    return lines[0]


def _yaml(tmp_path: Path, cfg) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(json.loads(cfg.canonical_json())))
    return path


def test_a_finished_run_is_called_finished_and_extending_it_works(tmp_path):
    out = tmp_path / "run"
    Simulation(small_config(steps=3), out).run()
    longer = _yaml(tmp_path, small_config(steps=6))  # same world (steps is outside the hash), more steps
    line = _error_line(runner.invoke(app, ["run", str(longer), "--out", str(out)]))
    assert "a finished run of this config (3 of 3 steps committed)" in line and "unfinished" not in line
    assert f"socium run --resume --out {out} --steps N" in line and "--force" in line
    r = runner.invoke(app, ["run", "--resume", "--out", str(out), "--steps", "6", "--quiet"])  # the advice
    assert r.exit_code == 0 and "ran 3 steps" in r.output, r.output
    other = _yaml(tmp_path, small_config(steps=6, seed=5))  # another world: --resume is not offered
    line = _error_line(runner.invoke(app, ["run", str(other), "--out", str(out)]))
    assert "a finished run of another config (6 of 6 steps committed)" in line
    assert "--resume" not in line and "--force" in line and "another --out" in line


def test_an_unfinished_run_points_at_resume_and_resume_continues_it(tmp_path):
    out = tmp_path / "run"
    Simulation(small_config(steps=5), out).run(steps=2)
    line = _error_line(runner.invoke(app, ["run", str(_yaml(tmp_path, small_config(steps=5))), "--out", str(out)]))
    assert "an unfinished run of this config (2 of 5 steps committed)" in line
    assert f"`socium run --resume --out {out}`" in line
    r = runner.invoke(app, ["run", "--resume", "--out", str(out), "--quiet"])
    assert r.exit_code == 0 and "ran 3 steps" in r.output, r.output


def test_resume_accepts_the_runs_own_seed_and_refuses_another(tmp_path):
    out = tmp_path / "run"
    Simulation(small_config(steps=4, seed=7), out).run(steps=2)
    line = _error_line(runner.invoke(app, ["run", "--resume", "--out", str(out), "--seed", "8", "--quiet"]))
    assert "cannot honour --seed 8" in line and "made with seed 7" in line and "another --out" in line
    cfg_file = _yaml(tmp_path, small_config(steps=4, seed=7))
    line = _error_line(runner.invoke(app, ["run", str(cfg_file), "--resume", "--out", str(out), "--seed", "8"]))
    assert "cannot honour --seed 8" in line
    r = runner.invoke(app, ["run", "--resume", "--out", str(out), "--seed", "7", "--quiet"])
    assert r.exit_code == 0 and "ran 2 steps" in r.output, r.output


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux /proc")
def test_an_uncreatable_out_is_one_line(tmp_path):
    cfg = _yaml(tmp_path, small_config(steps=2))
    line = _error_line(runner.invoke(app, ["run", str(cfg), "--out", "/proc/socium-test/run"]))
    assert line.startswith("error: --out /proc/socium-test/run: cannot create or write /proc/socium-test")
    assert "choose another --out" in line


@pytest.mark.parametrize(
    "example, command",
    [
        ("herding.yaml", "socium experiment herding"),
        ("intervention.yaml", "socium experiment intervention"),
        ("sweep.yaml", "socium sweep"),
        ("sensitivity.yaml", "socium sensitivity"),
        ("episodes.yaml", "socium episodes"),
        ("group-episodes.yaml", "socium group-episodes"),
    ],
)
def test_another_commands_file_given_to_run_names_that_command(example, command, tmp_path):
    path = _repo_root() / "examples" / example
    line = _error_line(runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "x")]))
    assert f"`{command} {path}`" in line and "not a run config" in line and "unknown key" not in line
    assert not (tmp_path / "x").exists()


def test_a_misspelt_run_config_still_names_the_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "stepz": 3}))
    r = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "stepz: unknown key" in r.output and "not a run config" not in r.output


def test_card_and_query_on_an_experiment_folder_point_at_its_runs(tmp_path):
    exp = tmp_path / "exp"
    for arm in ("model", "null"):
        Simulation(small_config(steps=1), exp / "runs" / arm).run()
    (exp / "results.json").write_text("{}")
    line = _error_line(runner.invoke(app, ["card", str(exp)]))
    assert f"{exp} is not a run but holds 2 runs: {exp / 'runs' / 'model'}, {exp / 'runs' / 'null'}" in line
    assert f"`socium card {exp / 'runs' / 'model'}`" in line and f"`socium report {exp}`" in line
    line = _error_line(runner.invoke(app, ["query", str(exp), "SELECT 1"]))
    assert f"`socium query {exp / 'runs' / 'model'}`" in line
    r = runner.invoke(app, ["card", str(tmp_path / "nothing")])  # not socium's folder at all: as before
    assert r.exit_code == 2 and "no trace found" in r.output


def test_missing_research_data_names_the_fetch_command_and_the_variable(tmp_path):
    spec = _repo_root() / "examples" / "herding.yaml"
    r = runner.invoke(
        app, ["experiment", "herding", str(spec), "--out", str(tmp_path / "h")], env={"SOCIUM_DATA_DIR": str(tmp_path)}
    )
    line = _error_line(r)
    assert "research data missing" in line and "`socium data fetch oasis`" in line
    assert "SOCIUM_DATA_DIR" in line and "`socium data`" in line


def test_an_unreadable_trace_in_the_way_is_named_with_the_fix(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "trace.duckdb").write_bytes(b"not a database")
    line = _error_line(runner.invoke(app, ["run", str(_yaml(tmp_path, small_config(steps=2))), "--out", str(out)]))
    assert "a trace with no readable set-up" in line and "--force" in line and "--resume" not in line
    r = runner.invoke(
        app, ["run", str(_yaml(tmp_path, small_config(steps=2))), "--out", str(out), "--force", "--quiet"]
    )
    assert r.exit_code == 0 and "ran 2 steps" in r.output, r.output
