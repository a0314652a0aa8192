"""Propagation experiment: tree -> population -> runs -> curves and NRMSE, checked against hand counts."""

import duckdb
import pytest

from conftest import small_config
from socium.core.actions import QuotePost, Repost
from socium.core.contracts import Decision
from socium.experiments.propagation.data.curves import nrmse_curves
from socium.experiments.propagation.data.realcascades import earliest_users, parse_tree
from socium.experiments.propagation.sim.population import simulated_curves
from socium.experiments.propagation.spec import PropagationSpec
from socium.experiments.propagation.study import run_propagation
from socium.simulator.simulation import Simulation

# root 10 at 0; 11, 12, 13 retweet the root; 14 retweets 11; 15 retweets 14 (depth 3).
TREE = """['ROOT', 'ROOT', '0.0']->['10', '99', '0.0']
['10', '99', '0.0']->['11', '99', '1.0']
['10', '99', '0.0']->['12', '99', '2.5']
['10', '99', '0.0']->['13', '99', '40.0']
['11', '99', '1.0']->['14', '99', '5.0']
['14', '99', '5.0']->['15', '99', '7.0']
['12', '99', '2.5']->['12', '99', '2.5']
['10', '99', '0.0']->['11', '99', '1.0']
"""


@pytest.fixture
def tree_file(tmp_path):
    p = tmp_path / "99.txt"
    p.write_text(TREE)
    return p


def _spec(tree_file, **over):
    base = {"seed": 2, "step_minutes": 5, "policy": {"kind": "independent_cascade", "p_repost": 0.5, "p_post": 0.0}}
    kw = dict(
        tree_files=[str(tree_file)],
        source_texts={"99": "breaking: the <b>source</b> tweet"},
        activation=1.0,
        minutes=30,
        base=base,
        topics_csv=str(tree_file.parent / "none.csv"),
    )
    kw.update(over)
    return PropagationSpec(**kw)


def test_propagation_runs_scores_and_reports_defects(tmp_path, tree_file):
    res = run_propagation(_spec(tree_file), tmp_path / "exp")
    c = res["cascades"][0]
    assert c["id"] == "99" and c["agents"] == 6 and c["real_users"] == 6 and c["source_text"] == "spec"
    assert c["edges"] == {"tree": 5, "real": 0, "noise": 0}
    assert res["defects"]["self_loops"] == 1 and res["defects"]["duplicate_edges"] == 1 and res["defects_balanced"]
    real = c["real"]
    assert (
        real["scale"][0] == 1
        and real["scale"][2] == 2
        and real["scale"][3] == 3
        and real["scale"][7] == 5
        and real["scale"][29] == 5
    )
    assert real["depth"][7] == 3 and real["max_breadth"][3] == 2
    model = c["runs"]["model"]
    # the source post carries the spec's text, by the source author (agent 0), at step 0
    con = duckdb.connect(model["dir"] + "/trace.duckdb", read_only=True)
    assert con.execute("SELECT author, step, content FROM posts WHERE post_id = 0").fetchone() == (
        0,
        0,
        "breaking: the <b>source</b> tweet",
    )
    follows = con.execute("SELECT src, dst FROM follows ORDER BY src").fetchall()
    n_reshares = con.execute(
        "SELECT count(DISTINCT author) FROM posts WHERE root_id = 0 AND kind = 'repost'"
    ).fetchone()[0]
    con.close()
    assert follows == [(1, 0), (2, 0), (3, 1), (4, 3), (5, 0)]  # earliest-first order: 11, 12, 14, 15, 13
    assert model["final"]["scale"] == 1 + n_reshares
    assert model["nrmse"] == pytest.approx(nrmse_curves(model["curves"], real, 30))
    null = c["runs"]["null"]
    assert null["p"] == model["reshare_fit"]["p"] and 0 < null["p"] <= 1
    assert res["summary"]["model"]["nrmse"] == pytest.approx(model["nrmse"])
    # re-running reuses finished runs instead of simulating again
    again = run_propagation(_spec(tree_file), tmp_path / "exp")
    assert again["cascades"][0]["runs"]["model"]["status"] == "reused"


def test_max_users_keeps_an_earliest_connected_prefix(tmp_path, tree_file):
    tree = parse_tree(tree_file, strict=False)
    assert earliest_users(tree, 4) == ["10", "11", "12", "14"]
    res = run_propagation(_spec(tree_file, max_users=4, run_null=False), tmp_path / "exp")
    c = res["cascades"][0]
    assert c["agents"] == 4 and "null" not in c["runs"]
    assert c["real"]["scale"][29] == 4 and c["real_full"]["scale"][29] == 5


def test_minutes_must_be_covered(tmp_path, tree_file):
    from socium.errors import ConfigError

    spec = _spec(tree_file)
    spec.base["steps"] = 2
    with pytest.raises(ConfigError, match="do not cover"):
        run_propagation(spec, tmp_path / "exp")


class _Script:
    """Agent 1 reposts the root at step 0, agent 2 reposts that at step 1, agent 1 quotes agent 2's at step 2."""

    plan = {(1, 0): Repost(post_id=0), (2, 1): Repost(post_id=1), (1, 2): QuotePost(post_id=2, content="again")}

    def decide(self, obs):
        a = self.plan.get((obs.agent_id, obs.step))
        return Decision(obs.agent_id, [a] if a else [])


def test_simulated_curves_count_each_user_once_at_mid_step(tmp_path):
    cfg = small_config(
        steps=3,
        step_minutes=4,
        population={"n_agents": 5, "activity": "uniform", "mean_activity": 1.0},
        graph={"kind": "empty", "params": {}},
        seed_posts=[{"author": 0, "content": "root"}],
        recsys={"kind": "global", "k": 10},
    )
    Simulation(cfg, tmp_path / "r", policy=_Script()).run()
    c = simulated_curves(tmp_path / "r", 0, 12)
    # nodes: root t=0 (user 0), user 1 at (0 + .5) * 4 = 2 min, user 2 at (1 + .5) * 4 = 6 min;
    # the quote is user 1 again
    assert c["scale"].tolist() == [1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3]
    assert c["depth"][-1] == 2 and c["max_breadth"][-1] == 1
