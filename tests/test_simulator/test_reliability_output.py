"""Issue 31, build 5: unusable model output counts toward stopping.

On 1969b96 a model answering 100% unusable text gave a successful run (exit 0, invalid rate 0.98,
nothing on the terminal): ``max_invalid_fraction`` counted only backend failures.
"""

from __future__ import annotations

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.errors import UnusableModelOutput
from socium.simulator.llm_health import OutputHealth
from socium.simulator.simulation import Simulation

GOOD = '{"type": "do_nothing"}'


def _llm_config(responses: list[str], **llm) -> dict:
    return {
        "name": "garbage",
        "seed": 2,
        "steps": 4,
        "population": {"n_agents": 60, "mean_activity": 0.6},
        "graph": {"kind": "random_out", "params": {"out_degree": 3}},
        "policy": {"kind": "llm"},
        "llm": {"backend": "scripted", "scripted_responses": responses, **llm},
        "llm_agents": {"reask": False},
        "seed_posts": [{"author": 0, "content": "hello"}],
    }


def _steps(run) -> int:
    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM steps WHERE step >= 0").fetchone()[0]
    finally:
        con.close()


def test_a_model_answering_garbage_stops_the_run_naming_likely_causes(tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(_llm_config(["not json at all", "{", "```json\n{]\n```"])))
    r = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "run"), "--quiet"])
    assert r.exit_code == 4, r.output
    text = " ".join(r.output.split())
    assert "model output unusable" in text and "chat template" in text and "JSON" in text, text
    assert "min_valid_fraction" in text and "--resume" in text
    assert _steps(tmp_path / "run") == 0  # the failing step was not committed
    con = duckdb.connect(str(tmp_path / "run" / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM llm_calls").fetchone()[0] > 0  # its calls are still logged
    con.close()


def test_a_mostly_valid_model_runs_to_the_end(tmp_path) -> None:
    cfg = small_config(**_llm_config([GOOD, GOOD, GOOD, "not json"]))
    Simulation(cfg, tmp_path / "run").run()
    assert _steps(tmp_path / "run") == 4


def test_the_floor_can_be_switched_off(tmp_path) -> None:
    cfg = small_config(**_llm_config(["not json at all"], min_valid_fraction=None))
    Simulation(cfg, tmp_path / "run").run()
    assert _steps(tmp_path / "run") == 4


def _actions(rows: list[tuple[int, str, str]]) -> dict[str, list]:
    return {
        "agent_id": [r[0] for r in rows],
        "origin": ["llm"] * len(rows),
        "type": [r[1] for r in rows],
        "reason": [r[2] for r in rows],
    }


def test_small_steps_are_judged_together_and_backend_failures_are_left_out() -> None:
    health = OutputHealth(0.5, min_answers=20)
    bad = ("invalid_llm_output", "invalid output after re-ask: not JSON")
    assert health.check(0, _actions([(0, *bad), (1, *bad)])) is None  # 2 answers: too few to judge
    backend = ("invalid_llm_output", "backend error (timeout): timeout")
    assert health.check(1, _actions([(a, *backend) for a in range(50)])) is None  # max_invalid_fraction's job
    for step in range(2, 10):
        got = health.check(step, _actions([(a, *bad) for a in range(3)]))
    assert isinstance(got, UnusableModelOutput) and "steps " in str(got)
    healthy = OutputHealth(0.5, min_answers=20)
    rows = [(a, "do_nothing", None) for a in range(30)] + [(a, *bad) for a in range(30, 40)]
    assert healthy.check(0, _actions(rows)) is None


@pytest.mark.parametrize("floor", [0.0, 1.0])
def test_floor_bounds(floor) -> None:
    health = OutputHealth(floor, min_answers=1)
    got = health.check(0, _actions([(0, "do_nothing", None), (1, "invalid_llm_output", "bad")]))
    assert (got is None) == (floor == 0.0)
