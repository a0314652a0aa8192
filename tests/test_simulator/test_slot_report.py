"""Where a user meets the client-side slot measure (issue 41, item 3): each step line of ``socium run``
against an HTTP server says how busy the connection limit kept its slots, and the run card sums it; a run
without such a backend prints and records nothing new (its card unchanged)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from socium.cli.main import app
from socium.llm.fake_server import FakeOpenAIServer
from socium.reporting.card import simulation_card

runner = CliRunner()


def _cfg(tmp_path: Path, llm: dict) -> Path:
    cfg = {
        "name": "slots",
        "seed": 2,
        "steps": 2,
        "population": {"n_agents": 12, "mean_activity": 0.8},
        "graph": {"kind": "random_out", "params": {"out_degree": 3}},
        "policy": {"kind": "llm"},
        "llm": llm,
        "seed_posts": [{"author": i, "content": f"opening post {i}"} for i in range(3)],
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_an_http_run_reports_slots_per_step_and_in_its_card(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeOpenAIServer(delay_s=0.02, batch_limit=3, record=False) as srv:
        llm = {"backend": "openai", "base_urls": [srv.base_url], "model": "m", "max_concurrency": 3}
        r = runner.invoke(app, ["run", str(_cfg(tmp_path, llm)), "--out", str(out)])  # not a terminal: plain lines
    assert r.exit_code == 0, r.output
    steps = [ln for ln in r.stdout.splitlines() if re.match(r"slots: step \d+ committed", ln)]
    assert len(steps) == 2
    for ln in steps:
        m = re.search(r"slots (\d+)% busy, idle (\d+)%$", ln)
        assert m is not None, ln
        assert 0 < int(m.group(1)) <= 100 and 0 <= int(m.group(2)) <= 100
    slots = simulation_card(out)["llm"]["slots"]
    assert slots["steps_measured"] == 2
    assert 0 < slots["occupancy"] <= 1 and 0 <= slots["idle_share"] <= 1
    assert slots["llm_window_s"] > 0
    totals = json.loads((out / "llm_slots.json").read_text())
    assert totals["busy_slot_s"] <= totals["slot_s"] + 1e-9  # never more than the limit held


def test_a_run_without_a_connection_limit_prints_and_records_nothing_new(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", str(_cfg(tmp_path, {"backend": "random"})), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "LLM calls=" in r.stdout and "busy, idle" not in r.stdout
    assert not (out / "llm_slots.json").exists()
    assert "slots" not in simulation_card(out)["llm"]
