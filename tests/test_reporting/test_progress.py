"""One progress display over experiments, sweeps and episodes; reused runs are announced."""

import io

import yaml
from rich.console import Console
from typer.testing import CliRunner

from conftest import herding_inputs
from socium.cli.main import app
from socium.reporting.progress import RichProgress, current, reporting

runner = CliRunner()


def test_rich_progress_counts_runs_steps_calls_and_reuse():
    buf = io.StringIO()
    con = Console(file=buf, width=200, force_terminal=False)
    with RichProgress("exp", "runs", con) as prog, reporting(prog):
        assert current() is prog
        prog.expect(3)
        prog.start_item("a", steps=4)
        prog.step(0, llm_calls=5, tokens=700)
        prog.step(1, llm_calls=5, tokens=300)
        assert prog._progress.tasks[0].completed == 0.5  # half of the first of three runs
        prog.finish_item("a")
        prog.finish_item("b", reused=True)
    out = buf.getvalue()
    assert "reused finished run b" in out
    assert "2/3 runs (1 reused)" in out and "10 LLM calls" in out and "1,000 tokens" in out
    assert prog.summary().startswith("2 runs done, 1 reused")
    assert current() is not prog  # uninstalled after the block
    # no terminal: a plain status line per finished run, so nothing long runs silently in a log
    assert "exp: 1/3 runs" in out and "exp: 2/3 runs (1 reused)" in out
    assert "━" not in out and "0/?" not in out  # only the plain lines: no bar at the end, no line before a count
    buf = io.StringIO()
    with RichProgress("rule", "runs", Console(file=buf, width=200, force_terminal=False)) as prog:
        prog.expect(1)
        prog.finish_item("a")
    assert "rule: 1/1 runs · " in buf.getvalue() and "LLM" not in buf.getvalue()  # no calls, no call count


def test_an_unknown_or_empty_count_is_never_shown_as_a_question_mark():
    """On a terminal: nothing left to run is a full bar saying so; a count not yet known has no denominator."""
    buf = io.StringIO()
    with RichProgress("episodes e", "episodes", Console(file=buf, width=200, force_terminal=True)) as prog:
        prog.expect(0)  # every episode was already in the store
        task = prog._progress.tasks[0]
        assert task.fields["count"] == "nothing left to run" and task.completed == task.total == 1
    assert "0/?" not in buf.getvalue() and "nothing left to run" in buf.getvalue()
    buf = io.StringIO()
    with RichProgress("compare", "runs", Console(file=buf, width=200, force_terminal=True)) as prog:
        prog.start_item("a", steps=2)  # no expect(): how many runs is not known
        prog.finish_item("a")
        assert prog._progress.tasks[0].fields["count"] == "runs done: 1"
        prog.expect(3)
        assert prog._progress.tasks[0].fields["count"] == "1/3 runs"
    assert "/?" not in buf.getvalue()


def _herding_spec(tmp_path):
    items, people = herding_inputs(tmp_path)
    spec = {
        "experiment": "herding",
        "items": items,
        "personas": people,
        "n_items": 6,
        "activation": 0.6,
        "bootstrap": 10,
        "base": {"seed": 2, "steps": 2, "llm": {"backend": "random"}},
    }
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path / "h.yaml"


def test_experiment_shows_progress_and_says_when_runs_are_reused(tmp_path):
    spec = _herding_spec(tmp_path)
    out = tmp_path / "exp"
    r = runner.invoke(app, ["experiment", "herding", str(spec), "--out", str(out), "--no-report"])
    assert r.exit_code == 0, r.output
    assert "2 runs done in" in r.output and "reused" not in r.output
    assert "LLM calls" in r.output
    r = runner.invoke(app, ["experiment", "herding", str(spec), "--out", str(out), "--no-report"])
    assert r.exit_code == 0, r.output
    assert r.output.count("reused finished run") == 2 and "2 runs done, 2 reused" in r.output


def test_sweep_cell_reports_progress_and_reuse(tmp_path):
    from socium.experiments.designs.sweep import read_progress, run_one

    base = {
        "name": "s",
        "steps": 3,
        "population": {"n_agents": 40},
        "policy": {"kind": "llm"},
        "llm": {"backend": "random"},
        "seed_posts": [{"author": 0, "content": "x"}],
    }
    first = run_one(base, ["seed=1"], str(tmp_path / "c"))
    assert first["ok"] and not first["reused"] and first["llm_calls"] > 0 and first["tokens"] > 0
    assert read_progress(tmp_path / "c") == (3, 3, first["llm_calls"], first["tokens"])
    again = run_one(base, ["seed=1"], str(tmp_path / "c"))
    assert again["ok"] and again["reused"] and again["llm_calls"] == 0


def test_episodes_show_progress_and_say_when_episodes_are_reused(tmp_path):
    cfg = {
        "name": "ep",
        "llm": {"backend": "random"},
        "modes": ["agents", "script"],
        "tasks": {"mutual_friend": 1, "bargaining": 1},
        "max_turns": 3,
    }
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(cfg))
    args = ["episodes", str(tmp_path / "e.yaml"), "--out", str(tmp_path / "ep")]
    r = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "ep: 4/4 episodes" in r.output and "LLM calls" in r.output and "reusing" not in r.output
    r = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "reusing 4 finished episodes" in r.output and "ran 0 episodes (4 already done)" in r.output
