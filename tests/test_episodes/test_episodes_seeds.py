"""socium.episodes.tallies: the counts behind the dyadic-episodes reading and the judge check."""

from __future__ import annotations

import numpy as np
import pytest

from socium.episodes import tallies as es
from socium.episodes.tasks import make_bargaining, make_mutual_friend

AGENTS = [{"first_name": "Morgan", "last_name": "Diaz"}, {"first_name": "Robin", "last_name": "Mehta"}]


def _mf_episode(answers, mode="agents"):
    task = make_mutual_friend(np.random.default_rng(1), n_friends=3)
    spec = {"task": task.model_dump(mode="json"), "agents": AGENTS}
    return task, {"mode": mode, "spec": spec, "answers": answers, "n_speak": 0}


def test_mutual_friend_answers_use_the_scorers_name_rule():
    task, _ = _mf_episode([None, None])
    _, ep1 = _mf_episode([{"friend_name": f"  {task.shared_name.upper()}. "}, {"friend_name": "Morgan Diaz"}])
    other = next(f.name for f in task.friends[0] if f.name != task.shared_name)
    _, ep2 = _mf_episode([None, {"friend_name": "mehta"}])
    _, ep3 = _mf_episode([{"friend_name": other}, {"friend_name": "MorganDiaz"}])
    _, ep4 = _mf_episode([{"friend_name": "Robin Mehta"}, {"friend_name": "robin mehta!"}])
    _, ep5 = _mf_episode([{"friend_name": "none"}, {"friend_name": "None"}])
    t = es.tally_episodes([ep1, ep2, ep3])
    assert t["mf_answers"] == 6  # invalid answers count in the denominator
    assert t["mf_shared"] == 1
    assert t["mf_character"] == 2  # "MorganDiaz" is not a character's name
    t = es.tally_episodes([ep1, ep4, ep5])
    assert (t["mf_episodes"], t["mf_agree"], t["mf_agree_wrong"]) == (3, 1, 1)  # "none" twice is no agreement


def test_bargaining_deals_need_both_sides_and_are_placed_against_targets():
    task = make_bargaining(np.random.default_rng(2))
    spec = {"task": task.model_dump(mode="json"), "agents": AGENTS}
    hi, lo = task.seller_target + 1, task.buyer_target
    eps = [
        {"mode": "agents", "spec": spec, "answers": [{"deal": True, "price": hi}, {"deal": True, "price": hi}]},
        {
            "mode": "script",
            "spec": spec,
            "answers": [{"deal": True, "price": lo}, {"deal": True, "price": lo}],
            "n_speak": 2,
        },
        {"mode": "agents", "spec": spec, "answers": [{"deal": True, "price": lo}, {"deal": True, "price": hi}]},
        {"mode": "agents", "spec": spec, "answers": [{"deal": True, "price": hi}, None]},
    ]
    t = es.tally_episodes(eps)
    assert (t["bargaining"], t["deals"], t["deal_seller"], t["deal_buyer"], t["deal_between"]) == (4, 2, 1, 1, 0)
    assert (t["scripts"], t["script_speak_turns"]) == (1, 2)


def test_proportion_pools_with_wilson_and_takes_seeds_as_unit_for_t():
    p = es.proportion([(2, 34), (0, 0), (4, 34)])
    assert (p["k"], p["n"]) == (6, 68)
    lo, hi = p["wilson"]
    assert lo == pytest.approx(0.04107, abs=1e-4) and hi == pytest.approx(0.17944, abs=1e-4)  # scipy binomtest wilson
    assert p["seed_mean"] == pytest.approx((2 / 34 + 4 / 34) / 2)  # the empty seed is left out
    tlo, thi = p["seed_t"]
    assert tlo < p["seed_mean"] < thi and (thi - tlo) > (hi - lo)  # 2 seeds: far wider than Wilson
    same = es.proportion([(3, 30)] * 3)
    assert same["seed_t"] == (pytest.approx(0.1), pytest.approx(0.1))


def _judgement(goal0, goal1, believability=0):
    dims = {
        "believability": believability,
        "relationship": 0,
        "knowledge": 0,
        "secret": 0,
        "social_rules": 0,
        "financial_and_material_benefits": 0,
    }
    return {"agent_0": {**dims, "goal": goal0, "overall": 0.0}, "agent_1": {**dims, "goal": goal1, "overall": 0.0}}


def test_judge_tally_counts_rejections_detects_constancy_and_errors_per_episode():
    eps = [
        {"judge_scores": _judgement(0, 0), "judge_error": None, "goal_0": 5.0, "goal_1": 5.0},
        {"judge_scores": _judgement(0, 0), "judge_error": None, "goal_0": 0.0, "goal_1": 0.0},
        {"judge_scores": None, "judge_error": "believability 11 out of range", "goal_0": 0.0, "goal_1": 0.0},
        {"judge_scores": None, "judge_error": None, "goal_0": 0.0, "goal_1": 0.0},  # not judged at all
        {
            "judge_scores": None,
            "judge_error": "backend error (client): request exceeds the context",
            "goal_0": 0.0,
            "goal_1": 0.0,
        },
    ]
    j = es.judge_tally(eps)
    assert (j["judged"], j["valid"], j["failed"], j["nonzero_rule"]) == (4, 2, 2, 1)
    assert j["errors"][0].startswith("believability 11")
    assert j["constant"] is True
    assert j["episode_abs_err"] == [5.0, 0.0]
    eps[1]["judge_scores"] = _judgement(3, 0, believability=2)
    j = es.judge_tally(eps)
    assert j["constant"] is False
    assert j["episode_abs_err"] == [5.0, 1.5]


def test_script_turn_kinds_counts_only_script_episodes(tmp_path):
    import duckdb

    con = duckdb.connect(str(tmp_path / "episodes.duckdb"))
    con.execute("CREATE TABLE episodes (episode_id VARCHAR, mode VARCHAR)")
    con.execute("CREATE TABLE turns (episode_id VARCHAR, action_type VARCHAR)")
    con.execute("INSERT INTO episodes VALUES ('a', 'script'), ('b', 'agents')")
    con.execute("INSERT INTO turns VALUES ('a', 'speak'), ('a', 'action'), ('a', 'action'), ('b', 'speak')")
    con.close()
    assert es.script_turn_kinds(str(tmp_path)) == {"action": 2, "speak": 1}
