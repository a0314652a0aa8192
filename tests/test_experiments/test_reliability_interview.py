"""Issue 31, defect 8: ``socium interview`` respects the run's call budget (1969b96 recorded 18 calls
against a budget of 17): the budget is the run's, and an interview that would pass it is refused."""

from __future__ import annotations

import json

import duckdb
from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.config.loading import config_from_dict
from socium.simulator.simulation import Simulation

LLM = {
    "policy": {"kind": "llm"},
    "population": {"n_agents": 10, "mean_activity": 0.8},
    "llm": {"backend": "scripted", "scripted_responses": ['{"type": "do_nothing"}'], "call_budget": 1000},
}


def _calls(run) -> int:
    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM llm_calls").fetchone()[0]
    finally:
        con.close()


def _set_budget(run, budget: int) -> None:
    con = duckdb.connect(str(run / "trace.duckdb"))
    data = json.loads(con.execute("SELECT config FROM runs").fetchone()[0])
    data["llm"]["call_budget"] = budget
    con.execute("UPDATE runs SET config = ?", [config_from_dict(data).canonical_json()])
    con.close()


def test_interview_refused_once_the_runs_call_budget_is_spent(tmp_path) -> None:
    run = tmp_path / "r"
    Simulation(small_config(steps=2, **LLM), run).run()
    used = _calls(run)
    assert used > 0
    _set_budget(run, used)  # the run spent its whole budget
    for extra in ([], ["--record"]):
        r = CliRunner().invoke(app, ["interview", str(run), "How was your day?", "--agent", "0", *extra])
        assert r.exit_code != 0 and "call budget" in r.output and f"{used} of its {used} calls" in r.output, r.output
    assert _calls(run) == used
    _set_budget(run, used + 1)  # room for one more: a recorded interview fits and is counted
    r = CliRunner().invoke(app, ["interview", str(run), "How was your day?", "--agent", "0", "--record"])
    assert r.exit_code == 0, r.output
    assert _calls(run) == used + 1
    r = CliRunner().invoke(app, ["interview", str(run), "And now?", "--agent", "0", "--record"])
    assert r.exit_code != 0 and "call budget" in r.output, r.output
    assert _calls(run) == used + 1
