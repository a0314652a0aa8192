"""Issue 11.2: resume means the same world (input file contents, config keys), and resume of nothing starts."""

import json

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app
from socium.config.loading import config_from_dict
from socium.errors import RunDirError
from socium.simulator.simulation import Simulation

runner = CliRunner()


def _cfg(tmp_path, **over):
    edges = tmp_path / "edges.txt"
    if not edges.exists():
        edges.write_text("".join(f"{i} {(i * 7 + 1) % 60}\n" for i in range(60)))
    base = {
        "name": "world",
        "seed": 2,
        "steps": 5,
        "population": {"n_agents": 60, "mean_activity": 0.4},
        "graph": {"kind": "edgelist", "path": str(edges)},
        "seed_posts": [{"author": 0, "content": "hi"}],
    }
    base.update(over)
    return config_from_dict(base), edges


def test_resume_refuses_an_edited_input_file_naming_it(tmp_path):
    cfg, edges = _cfg(tmp_path)
    Simulation(cfg, tmp_path / "r").run(steps=2)
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    inputs = json.loads(con.execute("SELECT input_digests FROM runs").fetchone()[0])
    con.close()
    assert set(inputs) == {"graph.path"} and len(inputs["graph.path"]["sha256"]) == 64
    original = edges.read_text()
    edges.write_text(original.replace("0 1\n", "0 2\n"))  # same path, different world
    with pytest.raises(RunDirError, match=r"graph\.path: .*edges\.txt changed since the run started"):
        Simulation(cfg, tmp_path / "r", resume=True)
    edges.write_text(original)
    sim = Simulation(cfg, tmp_path / "r", resume=True)
    assert sim.next_step == 2
    sim.run()


def test_changed_config_is_refused_naming_the_keys(tmp_path):
    cfg, _ = _cfg(tmp_path)
    Simulation(cfg, tmp_path / "r").run(steps=1)
    other, _ = _cfg(tmp_path, policy={"kind": "random", "p_post": 0.9}, name="renamed")
    with pytest.raises(RunDirError) as err:
        Simulation(other, tmp_path / "r", resume=True)
    msg = str(err.value)
    assert "config differs" in msg and "policy.p_post: 0.2 -> 0.9" in msg and "name: 'world' -> 'renamed'" in msg


def test_resume_of_a_directory_without_setup_starts_and_says_so(tmp_path):
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump({"name": "fresh", "steps": 2, "population": {"n_agents": 30}}))
    for out in (tmp_path / "new", tmp_path / "empty"):
        if out.name == "empty":
            out.mkdir()
        r = runner.invoke(app, ["run", str(cfg_path), "--out", str(out), "--quiet", "--resume"])
        assert r.exit_code == 0, r.output
        assert "no committed set-up to resume, so the run starts from step 0" in r.output
        con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
        assert con.execute("SELECT count(*) FROM steps WHERE step >= 0").fetchone()[0] == 2
        con.close()
