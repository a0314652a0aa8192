"""Herding metrics recover a known, scripted bias and report none when voters ignore the score."""

import json

import numpy as np
import pytest

from socium.core.actions import DislikePost, LikePost
from socium.core.contracts import Decision
from socium.core.rng import POLICY, agent_rng
from socium.errors import ConfigError
from socium.experiments.opinions.herding import HerdingSpec, herding_configs, herding_metrics, run_herding, sample_items
from socium.simulator.simulation import Simulation


class ScriptedVoter:
    """Votes on every unvoted item it sees: up with probability q[sign(score)]."""

    def __init__(self, q, seed=0):
        self.q, self.seed = q, seed

    def decide(self, obs):
        rng = agent_rng(self.seed, POLICY, obs.agent_id, obs.step)
        acts = []
        for it in obs.feed:
            if it.liked or it.disliked:
                continue
            up = rng.random() < self.q[int(np.sign(it.likes - it.dislikes))]
            acts.append(LikePost(post_id=it.post_id) if up else DislikePost(post_id=it.post_id))
        return Decision(obs.agent_id, acts)


def _files(tmp_path, n_items=150):
    items = [{"text": f"claim number {i}", "group": ("up", "control", "down")[i % 3]} for i in range(n_items)]
    people = [
        {"realname": f"P {i}", "username": f"p{i}", "bio": "a voter", "persona": "votes a lot"} for i in range(10)
    ]
    (tmp_path / "items.json").write_text(json.dumps(items))
    (tmp_path / "people.json").write_text(json.dumps(people))
    return {"items": str(tmp_path / "items.json"), "personas": str(tmp_path / "people.json")}


def _run(tmp_path, q, name):
    spec = HerdingSpec(
        n_items=150,
        n_agents=60,
        activation=1.0,
        **_files(tmp_path),
        base={"seed": 4, "steps": 2, "policy": {"kind": "random"}, "recsys": {"kind": "random", "k": 10}},
    )
    cfg, groups = herding_configs(spec, tmp_path / name)
    Simulation(cfg, tmp_path / name / "run", policy=ScriptedVoter(q)).run()
    return herding_metrics(tmp_path / name / "run", n_boot=300, seed=1), groups


def test_known_bias_is_recovered(tmp_path):
    q = {1: 0.9, 0: 0.5, -1: 0.15}
    m, groups = _run(tmp_path, q, "biased")
    g = m["groups"]
    assert {k: g[k]["items"] for k in g} == {"up": 50, "control": 50, "down": 50} and groups.count("up") == 50
    for name, truth in (("up", 0.9), ("control", 0.5), ("down", 0.15)):
        lo, hi = g[name]["p_next_positive_ci"]
        assert g[name]["items_voted"] >= 45
        assert lo - 0.05 <= truth <= hi + 0.05, (name, g[name]["p_next_positive"], (lo, hi))
    assert m["effects"]["up_p_next_positive_lift"] > 0.4 and m["effects"]["down_p_next_positive_lift"] < -0.4
    e = m["effects"]
    assert e["up_crowd_mean_diff_ci"][0] > 0 and e["down_crowd_mean_diff_ci"][1] < 0  # the crowd herds
    lo, hi = e["up_p_next_positive_diff_ci"]
    assert 0 < lo <= 0.9 - 0.5 <= hi and e["up_p_next_positive_n"] == [g[k]["items_voted"] for k in ("up", "control")]
    # trajectories are the crowd's votes alone: they end at the crowd mean score, not treatment + crowd
    for name in ("up", "control", "down"):
        assert g[name]["trajectory"][-1] == pytest.approx(g[name]["crowd_mean_score"])
        assert g[name]["final_mean_score"] - g[name]["crowd_mean_score"] == {"up": 1, "control": 0, "down": -1}[name]


def test_score_blind_voters_show_no_herding(tmp_path):
    m, _ = _run(tmp_path, {1: 0.6, 0: 0.6, -1: 0.6}, "blind")
    g = m["groups"]
    for name in ("up", "control", "down"):
        lo, hi = g[name]["p_next_positive_ci"]
        assert lo - 0.05 <= 0.6 <= hi + 0.05
    assert abs(g["up"]["crowd_mean_score"] - g["down"]["crowd_mean_score"]) < 1.0
    e = m["effects"]
    for k in ("up_crowd_mean_diff_ci", "down_crowd_mean_diff_ci", "up_p_next_positive_diff_ci"):
        assert e[k][0] <= 0 <= e[k][1], (k, e[k])


def _random_run(tmp_path, herding, name, n_items=300):
    """The random actor as the crowd: ``herding`` 0 is the null that cannot see the score."""
    policy = {"kind": "random", "p_post": 0.0, "p_repost": 0.0, "p_like": 0.2, "p_dislike": 0.1, "herding": herding}
    spec = HerdingSpec(
        n_items=n_items,
        n_agents=60,
        activation=1.0,
        **_files(tmp_path, n_items),
        base={"seed": 7, "steps": 3, "policy": policy, "recsys": {"kind": "random", "k": 10}},
    )
    cfg, _ = herding_configs(spec, tmp_path / name)
    Simulation(cfg, tmp_path / name / "run").run()
    return herding_metrics(tmp_path / name / "run", n_boot=1000, seed=1)


def test_a_null_that_cannot_herd_shows_no_effect_and_the_treatment_vote_is_not_counted(tmp_path):
    m = _random_run(tmp_path, 0.0, "null")
    g, e = m["groups"], m["effects"]
    assert m["crowd_votes"] > 400 and e["up_crowd_mean_n"] == [100, 100]
    for k in ("up_crowd_mean_diff", "down_crowd_mean_diff", "up_p_next_positive_diff", "down_p_next_positive_diff"):
        lo, hi = e[f"{k}_ci"]
        assert lo <= 0 <= hi, (k, e[k], (lo, hi))
    # big enough to say so: the crowd-mean interval is narrower than the treatment vote it leaves out
    lo, hi = e["up_crowd_mean_diff_ci"]
    assert hi - lo < 1.0
    # counting the experimenter's vote (the old "final mean lift") shows herding where there is none
    assert g["up"]["final_mean_score"] - g["control"]["final_mean_score"] > hi


def test_a_crowd_that_herds_shows_a_positive_crowd_effect(tmp_path):
    e = _random_run(tmp_path, 0.8, "herds", n_items=150)["effects"]
    assert e["up_crowd_mean_diff_ci"][0] > 0 and e["up_p_next_positive_diff_ci"][0] > 0
    assert e["down_crowd_mean_diff_ci"][1] < 0


def test_item_sample_is_stratified_and_seeded():
    items = [(f"t{i}", ("up", "control", "down")[i % 3]) for i in range(90)]
    a, b = sample_items(items, 10, 3), sample_items(items, 10, 3)
    assert a == b and sorted(g for _, g in a).count("up") == 4 and len(a) == 10
    assert sample_items(items, 10, 4) != a


def test_experiment_owned_keys_cannot_be_overridden(tmp_path):
    spec = HerdingSpec(**_files(tmp_path), base={"graph": {"kind": "barabasi_albert"}})
    with pytest.raises(ConfigError, match="base.graph is set by the experiment"):
        herding_configs(spec, tmp_path / "x")


def test_llm_run_and_fitted_null(tmp_path):
    spec = HerdingSpec(
        n_items=12,
        n_agents=12,
        activation=0.5,
        bootstrap=50,
        **_files(tmp_path),
        base={"seed": 1, "steps": 3, "llm": {"backend": "random"}},
    )
    res = run_herding(spec, tmp_path / "exp")
    model, null = res["runs"]["model"], res["runs"]["null"]
    assert model["usage"]["llm_calls"] > 0 and null["usage"]["llm_calls"] == 0
    assert model["metrics"]["crowd_votes"] > 0
    fit = null["fit"]
    assert fit["trials"] > 0 and fit["p_like"] == pytest.approx(fit["ups"] / fit["trials"])


@pytest.mark.parametrize("experiment", ["herding", "polarisation"])
def test_a_refused_spec_leaves_no_population_file(tmp_path, experiment):
    """Issue 36 item 15: a base key the config refuses left ``inputs/population.csv`` behind."""
    out = tmp_path / "exp"
    base = {"seed": 1, "steps": 2, "policy": {"kind": "random"}, "no_such_key": 1}
    if experiment == "herding":
        with pytest.raises(ConfigError, match="no_such_key"):
            herding_configs(HerdingSpec(n_items=6, n_agents=4, **_files(tmp_path), base=base), out)
    else:
        from socium.experiments.opinions.polarisation import PolarisationSpec, run_polarisation

        with pytest.raises(ConfigError, match="no_such_key"):
            run_polarisation(PolarisationSpec(population="synthetic", n_agents=4, base=base), out)
    assert not (out / "inputs" / "population.csv").exists()
