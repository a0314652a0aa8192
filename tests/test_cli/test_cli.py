import json

import yaml
from typer.testing import CliRunner

from socium.cli.main import app

runner = CliRunner()
CFG = {"name": "cli", "steps": 3, "population": {"n_agents": 60}, "seed_posts": [{"author": 0, "content": "hi"}]}


def test_run_query_card_and_overwrite_protection(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(CFG))
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", str(cfg), "--out", str(out), "--quiet", "--set", "policy.p_post=0.5"])
    assert r.exit_code == 0, r.output
    assert (out / "trace.duckdb").exists()
    r = runner.invoke(app, ["run", str(cfg), "--out", str(out), "--quiet"])
    assert r.exit_code == 2 and "--force" in r.output
    r = runner.invoke(app, ["query", str(out), "SELECT count(*) AS n FROM steps WHERE step >= 0"])
    assert r.exit_code == 0 and "3" in r.output
    r = runner.invoke(app, ["card", str(out), "--json"])
    card = json.loads(r.output)
    assert "perspective" not in card and card["agents"] == 60 and card["steps_committed"] == "3 of 3"  # rule-based
    stored = json.loads((out / "config.json").read_text())
    assert stored["policy"]["p_post"] == 0.5


def test_bad_config_fails_before_writing(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**CFG, "platform": {"preset": "tiktok"}}))
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", str(cfg), "--out", str(out), "--quiet"])
    assert r.exit_code == 2
    assert "platform.preset: 'tiktok' is not one of 'x', 'reddit'" in r.output
    assert not out.exists()
    r = runner.invoke(
        app, ["run", str(cfg), "--out", str(out), "--quiet", "--set", "platform.preset=reddit", "--set", "nope.x=1"]
    )
    assert r.exit_code == 2 and "nope: unknown key" in r.output and not out.exists()


def test_missing_input_file_names_it(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**CFG, "graph": {"kind": "edgelist", "path": str(tmp_path / "nope.txt")}}))
    r = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "run"), "--quiet"])
    assert r.exit_code == 2 and "nope.txt" in r.output


def test_card_and_report_refuse_a_corrupt_trace_in_one_line(tmp_path):
    (tmp_path / "trace.duckdb").write_bytes(b"not a database at all")
    for cmd in ("card", "report"):
        res = runner.invoke(app, [cmd, str(tmp_path)])
        assert res.exit_code == 2, (cmd, res.output)
        assert "trace.duckdb" in res.output and "not a readable socium trace" in res.output
        assert "Traceback" not in res.output
    assert not (tmp_path / "report").exists() or not any((tmp_path / "report").iterdir())
