"""Every answer has a typed outcome (issue 11, point 6): surveys re-ask then record a reason; the
omniscient narrator gets a per-member schema and one re-ask for members it skipped or got wrong."""

from __future__ import annotations

import json

import duckdb
import pytest

from socium.agents.llm_policy import LLMPolicy
from socium.config.loading import config_from_dict
from socium.llm.model_free import LatencyBackend, schema_answer
from socium.llm.wrappers import CachingBackend
from socium.simulator.simulation import Simulation

N = 10


def cfg(**over):
    base = {
        "name": "outcomes",
        "seed": 2,
        "steps": 2,
        "population": {"n_agents": N, "mean_activity": 0.5},
        "graph": {"kind": "random_out", "params": {"out_degree": 3}},
        "policy": {"kind": "llm"},
        "llm": {"backend": "random"},
        "seed_posts": [{"author": i, "content": f"opening post {i}"} for i in range(3)],
        "surveys": [{"every": 1, "question": "Trust the news?", "scale": [-1, 1]}],
    }
    base.update(over)
    return config_from_dict(base)


def survey_responder(req):
    """Agents get schema answers. In surveys, agent ids divisible by 3 never answer validly, other
    even ids answer out of range first and validly when re-asked, odd ids answer validly at once."""
    md = req.metadata
    if not md.get("survey"):
        return schema_answer(req)
    agent, reask = md["agent_id"], req.request_id.endswith("-1")
    if agent % 3 == 0:
        return "I would rather not say" if not reask else '{"answer": "no", "value": "high"}'
    if agent % 2 == 0 and not reask:
        return '{"answer": "very much", "value": 7}'
    return '{"answer": "somewhat", "value": 0.25}'


def test_survey_answers_failing_validation_are_reasked_then_given_a_reason(tmp_path) -> None:
    c = cfg()
    policy = LLMPolicy(
        c, backend_factory=lambda cache: CachingBackend(LatencyBackend(0.0, responder=survey_responder), cache)
    )
    Simulation(c, tmp_path / "r", policy=policy).run()
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    rows = con.execute("SELECT step, agent_id, answer, value, reason FROM surveys ORDER BY step, agent_id").fetchall()
    assert len(rows) == 2 * N
    for _step, agent, answer, value, reason in rows:
        if agent % 3 == 0:
            assert value is None and reason.startswith("invalid output after re-ask: 'value' must be a number"), reason
        else:
            assert value == 0.25 and reason is None and answer == "somewhat"
    # the re-ask happened for the even agents (out of range first) and the refusers, and is logged
    calls = dict(
        con.execute(
            "SELECT agent_id, count(*) FROM llm_calls WHERE metadata->>'survey' = 'true' AND step = 0 GROUP BY 1"
        ).fetchall()
    )
    assert all(calls[a] == (2 if a % 3 == 0 or a % 2 == 0 else 1) for a in range(N))
    reask = con.execute("SELECT prompt FROM llm_calls WHERE request_id = 'survey-s0-a2-1'").fetchone()[0]
    assert "outside -1..1" in reask


def narrator_responder(req):
    """A narrator that skips the group's first member and gives the second a post id outside its
    feed; asked again, it fixes the first and repeats the mistake for the second."""
    if req.metadata.get("survey"):
        return '{"answer": "ok", "value": 0}'
    props = req.json_schema["properties"]
    keys = sorted(props, key=lambda k: int(k.split("_")[1]))
    answer = {k: json.loads(schema_answer(req.model_copy(update={"json_schema": props[k]}))) for k in keys}
    if req.metadata.get("attempt"):
        if len(keys) > 1:
            answer[keys[1]] = {"type": "like_post", "post_id": 999_999}
        return json.dumps(answer)
    answer.pop(keys[0])
    if len(keys) > 1:
        answer[keys[1]] = {"type": "like_post", "post_id": 999_999}
    return json.dumps(answer)


def test_narrator_gets_per_member_schemas_and_one_reask_for_skipped_or_wrong_members(tmp_path) -> None:
    c = cfg(perspective="omniscient", llm_agents={"group_size": 4}, surveys=[])
    fake = LatencyBackend(0.0, responder=narrator_responder)
    policy = LLMPolicy(c, backend_factory=lambda cache: CachingBackend(fake, cache))
    Simulation(c, tmp_path / "r", policy=policy).run()
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    calls = con.execute("SELECT step, request_id, params, metadata FROM llm_calls ORDER BY call_id").fetchall()
    firsts = [(s, json.loads(p), json.loads(m)) for s, rid, p, m in calls if not json.loads(m).get("attempt")]
    reasks = [(s, json.loads(p), json.loads(m)) for s, rid, p, m in calls if json.loads(m).get("attempt")]
    assert firsts and len(reasks) == len(firsts)  # every group had a member to re-ask
    feeds = {
        (s, a): {
            p
            for (p,) in con.execute("SELECT post_id FROM exposures WHERE step = ? AND agent_id = ?", [s, a]).fetchall()
        }
        for s, a in con.execute("SELECT DISTINCT step, agent_id FROM exposures").fetchall()
    }
    n_offered = 0
    for step, params, md in firsts:
        props = params["json_schema"]["properties"]
        assert sorted(props) == sorted(f"agent_{a}" for a in md["group"])  # one key per member, all required
        assert params["json_schema"]["required"] == list(props)
        for key, one in props.items():  # each member's schema offers only its own feed's post ids
            offered = {
                v
                for alt in one.get("anyOf", one.get("oneOf", [one]))
                for v in alt.get("properties", {}).get("post_id", {}).get("enum", [])
            }
            assert offered <= feeds.get((step, int(key.split("_")[1])), set())
            n_offered += len(offered)
    assert n_offered > 0
    for step, _params, md in reasks:  # the re-ask covers exactly the skipped and the wrong member
        first = next(m for s, p, m in firsts if s == step and m["agent_id"] == md["agent_id"])
        assert md["group"] == first["group"][:2] if len(first["group"]) > 1 else first["group"]
    # outcomes: one per agent-step; the skipped member recovered, the one repeating wrong ids is invalid
    per = con.execute(
        "SELECT s.step, s.n_active, count(a.agent_id), count(DISTINCT a.agent_id) FROM steps s "
        "LEFT JOIN actions a ON a.step = s.step AND a.origin != 'seed' WHERE s.step >= 0 "
        "GROUP BY ALL"
    ).fetchall()
    assert all(n_active == rows == agents for _, n_active, rows, agents in per)
    reasons = [r for (r,) in con.execute("SELECT reason FROM actions WHERE outcome = 'invalid_llm_output'").fetchall()]
    multi = sum(len(m["group"]) > 1 for _, _, m in firsts)
    assert len(reasons) == multi and all(
        r == "narrator output: post_id 999999 is not a post shown to you" for r in reasons
    )
    con.close()
    from socium.reporting.card import simulation_card

    card = simulation_card(tmp_path / "r")
    n = sum(r[1] for r in per)
    assert card["narrator"]["invalid"] == multi and card["narrator"]["agent_steps"] == n
    assert card["narrator"]["invalid_rate"] == round(multi / n, 4) and card["narrator"]["reask_calls"] == len(reasks)


def test_survey_schema_closes_the_object_and_bounds_the_answer() -> None:
    """Constrained decoding follows the schema: keys beyond answer/value, or an answer longer than fits
    the token budget, were what left SmolLM2's surveys without a value."""
    jsonschema = pytest.importorskip("jsonschema")
    from socium.agents.survey_answers import SURVEY_ANSWER_CHARS, survey_schema

    v = jsonschema.Draft202012Validator(survey_schema((-1.0, 1.0)))
    assert v.is_valid({"answer": "yes", "value": 0.5})
    assert not v.is_valid({"answer": "yes", "value": 0.5, "description": {"text": "..."}})
    assert not v.is_valid({"answer": "x" * (SURVEY_ANSWER_CHARS + 1), "value": 0.5})
    assert not v.is_valid({"answer": "yes", "value": 1.5})
