"""Every answer has a typed outcome (issue 11, point 6): surveys re-ask then record a reason."""

from __future__ import annotations

import duckdb

from socium.agents.llm_policy import LLMPolicy
from socium.config import config_from_dict
from socium.llm import CachingBackend
from socium.simulator.simulation import Simulation
from socium.testing.backends import LatencyBackend, schema_answer

N = 10


def cfg(**over):
    base = {
        "name": "outcomes", "seed": 2, "steps": 2,
        "population": {"n_agents": N, "mean_activity": 0.5},
        "graph": {"kind": "random_out", "params": {"out_degree": 3}},
        "policy": {"kind": "llm"}, "llm": {"backend": "random"},
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
    policy = LLMPolicy(c, backend_factory=lambda cache: CachingBackend(LatencyBackend(0.0, responder=survey_responder),
                                                                       cache))
    Simulation(c, tmp_path / "r", policy=policy).run()
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    rows = con.execute("SELECT step, agent_id, answer, value, reason FROM surveys ORDER BY step, agent_id").fetchall()
    assert len(rows) == 2 * N
    for step, agent, answer, value, reason in rows:
        if agent % 3 == 0:
            assert value is None and reason.startswith("invalid output after re-ask: 'value' must be a number"), reason
        else:
            assert value == 0.25 and reason is None and answer == "somewhat"
    # the re-ask happened for the even agents (out of range first) and the refusers, and is logged
    calls = dict(con.execute("SELECT agent_id, count(*) FROM llm_calls WHERE metadata->>'survey' = 'true' "
                             "AND step = 0 GROUP BY 1").fetchall())
    assert all(calls[a] == (2 if a % 3 == 0 or a % 2 == 0 else 1) for a in range(N))
    reask = con.execute("SELECT prompt FROM llm_calls WHERE request_id = 'survey-s0-a2-1'").fetchone()[0]
    assert "outside -1..1" in reask
