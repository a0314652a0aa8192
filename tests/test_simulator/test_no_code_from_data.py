"""Issue 11.3: a config value cannot run code; plugins are recommender classes or entry points."""

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml

from socium.config.world import RecsysConfig
from socium.errors import ConfigError
from socium.recsys.registry import make_recommender

SRC = Path(__file__).resolve().parents[2] / "src"
ENV = {**os.environ, "PYTHONPATH": str(SRC)}
BASE = {"name": "p", "steps": 2, "population": {"n_agents": 30}, "seed_posts": [{"author": 0, "content": "x"}]}


def _run(args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "socium.cli", "run", *args, "--quiet"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=ENV,
    )


@pytest.mark.parametrize(
    "kind", ["os:system", "os.system", "subprocess:run", "builtins:exec", "os", "functools:partial"]
)
def test_callables_that_are_not_recommender_classes_are_refused(tmp_path, kind):
    marker = tmp_path / "pwned"
    with pytest.raises(ConfigError, match="recsys.kind"):
        make_recommender(RecsysConfig(kind=kind, params={"command": f"touch {marker}", "args": ["touch", str(marker)]}))
    assert not marker.exists()


def test_config_cannot_run_a_shell_command_and_writes_nothing(tmp_path):
    marker = tmp_path / "pwned"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**BASE, "recsys": {"kind": "os:system", "params": {"command": f"touch {marker}"}}}))
    r = _run([str(cfg), "--out", str(tmp_path / "run")], tmp_path)
    assert r.returncode == 2 and "error:" in r.stderr and "recsys.kind" in r.stderr, r.stderr
    assert not marker.exists() and not (tmp_path / "run").exists()


def test_planted_trace_config_runs_nothing_on_resume(tmp_path):
    """A trace's ``runs.config`` is data: a planted plugin path is refused before it is called."""
    from socium.config.loading import config_from_dict

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**BASE, "steps": 4}))
    out = tmp_path / "run"
    subprocess.run(
        [sys.executable, "-m", "socium.cli", "run", str(cfg), "--out", str(out), "--quiet", "--steps", "1"],
        check=True,
        capture_output=True,
        env=ENV,
    )
    marker = tmp_path / "pwned"
    con = duckdb.connect(str(out / "trace.duckdb"))
    planted = json.loads(con.execute("SELECT config FROM runs").fetchone()[0])
    planted["recsys"] = {**planted["recsys"], "kind": "os:system", "params": {"command": f"touch {marker}"}}
    forged = config_from_dict(planted)
    con.execute("UPDATE runs SET config = ?, config_hash = ?", [forged.canonical_json(), forged.config_hash()])
    con.close()
    r = _run(["--resume", "--out", str(out)], tmp_path)
    assert r.returncode == 2 and "names code to import" in r.stderr, r.stderr  # refused before any import
    assert not marker.exists()


def test_entry_point_plugin_is_found_by_name(tmp_path, monkeypatch):
    pkg = tmp_path / "myrecs.py"
    pkg.write_text(
        "from socium.recsys.chronological import ChronologicalRecommender\n\n"
        "class Newest(ChronologicalRecommender):\n    pass\n\n"
        "def not_a_class(**kw):\n    return None\n"
    )
    dist = tmp_path / "myrecs-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: myrecs\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[socium.recommenders]\nnewest = myrecs:Newest\nbad = myrecs:not_a_class\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    rec = make_recommender(RecsysConfig(kind="newest"))
    assert type(rec).__name__ == "Newest"
    with pytest.raises(ConfigError, match="not a recommender class"):
        make_recommender(RecsysConfig(kind="bad"))
