"""`socium sweep`: a grid of 2 configs x 2 seeds gives 4 independent runs and one summary."""

from __future__ import annotations

import json
import os

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app
from socium.errors import ConfigError
from socium.experiments.designs.sweep import attach_runs, load_sweep, run_one, summarize
from socium.trace.store import trace_digest

BASE = {
    "name": "sw",
    "seed": 0,
    "steps": 4,
    "population": {"n_agents": 150, "mean_activity": 0.3},
    "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
    "policy": {"kind": "independent_cascade", "p_post": 0.2},
    "seed_posts": [{"author": 0, "content": "seed"}],
}


def _write(tmp_path, **over):
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE))
    sweep = {
        "base": "base.yaml",
        "grid": {"policy.p_repost": [0.0, 0.5]},
        "seeds": [1, 2],
        "out": str(tmp_path / "out"),
        "parallel": 2,
        **over,
    }
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    return tmp_path / "sweep.yaml"


@pytest.mark.ray
def test_sweep_2_configs_x_2_seeds_gives_4_runs_and_a_summary(tmp_path):
    ray = pytest.importorskip("ray")
    ray.shutdown()
    os.environ["RAY_DISABLE_USAGE_STATS"] = "1"
    path = _write(tmp_path)
    res = CliRunner().invoke(app, ["sweep", str(path), "--json", "--quiet"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["run"] for r in rows] == ["run-000", "run-001", "run-002", "run-003"]
    assert [(r["overrides"]["policy.p_repost"], r["seed"]) for r in rows] == [(0.0, 1), (0.0, 2), (0.5, 1), (0.5, 2)]
    assert all(r["status"] == "ok" and r["steps"] == 4 and r["actions"] > 0 for r in rows)
    out = tmp_path / "out"
    # each run its own directory and DuckDB file, recording its own overrides and seed
    for r in rows:
        con = duckdb.connect(str(out / r["run"] / "trace.duckdb"), read_only=True)
        cfg = json.loads(con.execute("SELECT config FROM runs").fetchone()[0])
        con.close()
        assert cfg["policy"]["p_repost"] == r["overrides"]["policy.p_repost"] and cfg["seed"] == r["seed"]
    # reposting only happens where p_repost > 0, and seeds differ
    con = duckdb.connect()
    al = attach_runs(con, out)
    reposts = {
        run: con.execute(f"SELECT count(*) FROM {a}.actions WHERE type = 'repost'").fetchone()[0]
        for run, a in al.items()
    }
    con.close()
    assert reposts["run-000"] == reposts["run-001"] == 0 < min(reposts["run-002"], reposts["run-003"])
    assert (
        trace_digest(out / "run-002" / "trace.duckdb")["posts"]
        != trace_digest(out / "run-003" / "trace.duckdb")["posts"]
    )
    # re-running a cell resumes it (a finished run is a no-op); the summary comes from the files alone
    before = trace_digest(out / "run-001" / "trace.duckdb")
    spec = load_sweep(path)
    assert run_one(spec.base, spec.runs[1].override_strings(), str(out / "run-001"))["ok"]
    assert trace_digest(out / "run-001" / "trace.duckdb") == before
    assert [{k: v for k, v in r.items() if k != "wall_s"} for r in summarize(out)] == [
        {k: v for k, v in r.items() if k != "wall_s"} for r in rows
    ]


def test_bad_sweep_files_fail_before_anything_runs(tmp_path):
    with pytest.raises(ConfigError, match="grid"):
        load_sweep(_write(tmp_path, grid={"policy.p_repost": 0.1}))
    with pytest.raises(ConfigError, match="policy.p_repost"):
        load_sweep(_write(tmp_path, grid={"policy.p_repost": [0.1, 7]}))
    with pytest.raises(ConfigError, match="unknown sweep keys"):
        load_sweep(_write(tmp_path, seed=[1]))
    spec = load_sweep(_write(tmp_path, grid={"policy.p_repost": [0.1, 0.2], "recsys.k": [3, 4, 5]}, seeds=[7]))
    assert len(spec.runs) == 6 and spec.runs[5].overrides == {"policy.p_repost": 0.2, "recsys.k": 5}
    assert not (tmp_path / "out").exists()
