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


def _people(path, bio: str) -> None:
    from socium.experiments.spec import PersonRow, write_population_csv

    rows = [PersonRow(str(i), f"n{i}", f"u{i}", f"{bio} {i}", [], [0.8] * 24) for i in range(6)]
    write_population_csv(path, rows)


def test_interview_reads_the_file_the_run_read_not_the_current_folders(tmp_path, monkeypatch) -> None:
    """Issue 36 item 5: the persona came from whatever people.csv the current folder held, and --record stored
    that impostor's answer. The recorded sha256 finds the run's own file (relative paths from the folder the run
    was started in); where none matches, the interview is refused and nothing is recorded."""
    import yaml

    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    _people(home / "people.csv", "the real persona")
    _people(elsewhere / "people.csv", "an impostor")
    cfg = {
        "name": "iv",
        "seed": 1,
        "steps": 1,
        "population": {"source": "oasis_csv", "path": "people.csv"},
        "graph": {"kind": "profiles"},
        "seed_posts": [{"author": 0, "content": "x"}],
        **{k: v for k, v in LLM.items() if k != "population"},
    }
    (home / "c.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.chdir(home)
    r = CliRunner().invoke(app, ["run", "c.yaml", "--out", "runs/iv", "--quiet"])
    assert r.exit_code == 0, r.output
    run = home / "runs" / "iv"
    used = _calls(run)
    monkeypatch.chdir(elsewhere)  # an impostor people.csv here; the run's own is two folders above the run
    r = CliRunner().invoke(app, ["interview", str(run), "Who are you?", "--agent", "0", "--record"])
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    prompt = con.execute("SELECT prompt FROM llm_calls ORDER BY call_id DESC LIMIT 1").fetchone()[0]
    con.close()
    assert "the real persona 0" in prompt and "impostor" not in prompt, prompt
    assert _calls(run) == used + 1
    _people(home / "people.csv", "edited since")  # the run's file changed: no file holds what the run read
    r = CliRunner().invoke(app, ["interview", str(run), "Who are you?", "--agent", "0", "--record"])
    errors = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 2 and len(errors) == 1 and "population.path: people.csv is not the file" in r.output
    assert _calls(run) == used + 1  # nothing recorded


def test_a_recorded_interview_beside_a_live_run_names_a_real_option(tmp_path) -> None:
    """Item 15: the refusal said "choose another --out", an option interview does not have."""
    import subprocess
    import sys

    run = tmp_path / "r"
    Simulation(small_config(steps=1, **LLM), run).run()
    used = _calls(run)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from socium.trace.rundir import RunDirLock; l = RunDirLock(sys.argv[1]).acquire(); "
            "print('held', flush=True); time.sleep(60)",
            str(run),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        r = CliRunner().invoke(app, ["interview", str(run), "Hi?", "--agent", "0", "--record"])
        assert r.exit_code == 2 and "without --record" in r.output and "--out" not in r.output, r.output
    finally:
        holder.kill()
        holder.wait()
    assert _calls(run) == used  # refused before the model was asked: no call made, none lost
