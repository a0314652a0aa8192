"""`socium validate` on a tree-replay population: graph and activity facts are n/a with the reason, never fail."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.experiments.propagation.spec import PropagationSpec
from socium.experiments.propagation.study import run_propagation
from socium.experiments.validation import stylized as S
from socium.experiments.validation.validate import TREE_REPLAY, scorecard
from socium.simulator.simulation import Simulation

GRAPH_FACTS = ("follower (in-degree)", "reciprocity", "clustering", "assortativity of follow", "echo-chamber")
ACTIVITY_FACTS = ("burstiness", "activity heterogeneity")


def _tree_text(n: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    lines = ["['ROOT', 'ROOT', '0.0']->['u0', '1', '0.0']"]
    times = [0.0]
    for i in range(1, n):
        p = int(rng.integers(0, i)) if rng.random() < 0.3 else 0
        times.append(times[p] + float(np.exp(rng.normal(1.5, 1.0))))
        lines.append(f"['u{p}', '1', '{times[p]:.2f}']->['u{i}', '1', '{times[i]:.2f}']")
    return "\n".join(lines) + "\n"


def test_tree_replay_detection():
    # a tree (each agent follows the one it reshared from) and two disjoint copies of it
    assert S.is_tree_replay(np.array([1, 2, 3]), np.array([0, 0, 1]), 4)
    assert S.is_tree_replay(np.array([1, 2, 4, 5]), np.array([0, 1, 3, 4]), 6)
    assert not S.is_tree_replay(np.array([1, 1, 2]), np.array([0, 2, 0]), 3)  # agent 1 follows two accounts
    assert not S.is_tree_replay(np.array([0, 1]), np.array([1, 0]), 2)  # a mutual pair is a cycle
    assert not S.is_tree_replay(np.array([0, 1, 2]), np.array([1, 2, 0]), 3)  # a 3-cycle: out-degree 1, no root
    assert not S.is_tree_replay(np.zeros(0, np.int64), np.zeros(0, np.int64), 5)  # no graph is not a tree


def test_propagation_run_scores_graph_facts_na_not_fail(tmp_path):
    tree = tmp_path / "7.txt"
    tree.write_text(_tree_text(60, 0))
    spec = PropagationSpec(
        tree_files=[str(tree)],
        source_texts={"7": "a source tweet"},
        follows="tree",
        activation=1.0,
        minutes=30,
        topics_csv=str(tmp_path / "none.csv"),
        run_null=False,
        base={"seed": 0, "step_minutes": 5, "policy": {"kind": "independent_cascade", "p_repost": 1.0, "p_post": 0}},
    )
    run_propagation(spec, tmp_path / "exp")
    card = scorecard(tmp_path / "exp")
    facts = {f["name"]: f for f in card["facts"]}
    for key in GRAPH_FACTS + ACTIVITY_FACTS:
        (f,) = [f for name, f in facts.items() if key in name]
        assert f["status"] == "n/a" and TREE_REPLAY in f["detail"], (key, f)
    # the replayed tree really would have failed them: every agent reshared once (top 10% hold ~10%)
    (het,) = [f for name, f in facts.items() if "activity heterogeneity" in name]
    assert het["value"] is not None and het["value"] < 0.5
    assert card["failed"] == sum(f["status"] == "fail" for f in card["facts"])
    assert not any(f["status"] == "fail" for name, f in facts.items() if any(k in name for k in GRAPH_FACTS))
    res = CliRunner().invoke(app, ["validate", str(tmp_path / "exp")], terminal_width=400)
    assert res.exit_code == 0 and "n/a: does not apply: tree-replay population" in res.output


def test_social_graph_run_still_scores_graph_facts(tmp_path):
    cfg = small_config(population={"n_agents": 300, "mean_activity": 0.3}, steps=6)
    Simulation(cfg, tmp_path / "run").run()
    facts = {f["name"]: f for f in scorecard(tmp_path / "run")["facts"]}
    (recip,) = [f for name, f in facts.items() if "reciprocity" in name]
    assert recip["status"] in ("pass", "fail") and "does not apply" not in recip["detail"]
