"""Issue 36 item 15: a budget stop before step 0 was committed said "steps 0..-1 are committed"."""

from __future__ import annotations

import yaml
from typer.testing import CliRunner

from socium.cli.main import app

runner = CliRunner()


def test_a_budget_stop_at_step_0_says_no_step_is_committed(tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": "budget0",
                "seed": 1,
                "steps": 3,
                "population": {"n_agents": 20, "mean_activity": 1.0},
                "policy": {"kind": "llm"},
                "llm": {"backend": "scripted", "scripted_responses": ['{"type": "do_nothing"}'], "call_budget": 2},
                "seed_posts": [{"author": 0, "content": "x"}],
            }
        )
    )
    r = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "run"), "--quiet"])
    assert r.exit_code == 3, r.output
    said = " ".join(r.output.split())
    assert "no step is committed yet" in said and "0..-1" not in said, said
