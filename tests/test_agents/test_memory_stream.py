"""The memory stream: retrieval by recency x importance x relevance, budget, reflection triggers, rebuild."""

from __future__ import annotations

import json

import pytest

from socium.agents.memory import (
    MemoryConfig,
    MemoryStream,
    approx_tokens,
    heuristic_importance,
    parse_insights,
    parse_ratings,
)
from socium.recsys.embeddings import HashingEmbedder


def _stream(**kw) -> MemoryStream:
    return MemoryStream(
        MemoryConfig(kind="stream", **kw), k=kw.pop("k", 3) if "k" in kw else 3, embedder=HashingEmbedder(256)
    )


def test_relevance_decides_when_recency_and_importance_are_equal():
    s = _stream(weights=(0.0, 0.0, 1.0))
    s.add(1, 0, "observation", "my cat likes tuna for breakfast", importance=3)
    s.add(1, 0, "observation", "the council voted on bike lanes downtown", importance=3)
    s.add(1, 0, "observation", "my other cat likes tuna for breakfast", importance=3)
    s.add(1, 0, "observation", "football results from the weekend", importance=3)
    s.k = 1
    top = s.recall(1, 5, query="bike lanes council vote", hours_per_step=1)
    assert top and "bike lanes" in top[0]
    s2 = _stream(weights=(0.0, 0.0, 1.0))
    for t in ("the council voted on bike lanes downtown", "my cat likes tuna for breakfast"):
        s2.add(1, 0, "observation", t, importance=3)
    s2.k = 1
    assert "tuna" in s2.recall(1, 5, query="what does the cat eat tuna")[0]


def test_recency_and_importance_order():
    s = _stream(weights=(1.0, 0.0, 0.0))
    s.k = 1
    s.add(7, 0, "observation", "old news", importance=9)
    s.add(7, 10, "observation", "fresh news", importance=1)
    assert "fresh news" in s.recall(7, 10)[0]
    s.cfg = s.cfg.model_copy(update={"weights": (0.0, 1.0, 0.0)})
    assert "old news" in s.recall(7, 10)[0]
    # other agents' entries are never retrieved
    s.add(8, 10, "action", "secret of agent 8")
    assert all("secret" not in line for line in s.recall(7, 10))


def test_token_budget_bounds_the_memory_section_and_output_is_chronological():
    s = _stream(max_tokens=40)
    s.k = 50
    for i in range(30):
        s.add(1, i, "observation", f"item {i} " + "word " * 10)
    lines = s.recall(1, 30, query="item")
    assert sum(approx_tokens(x) + 1 for x in lines) <= 40
    steps = [int(x.split()[1]) for x in lines]
    assert steps == sorted(steps) and len(lines) >= 1


def test_entries_are_cleaned_and_bounded():
    s = _stream()
    s.add(1, 0, "message", "line1\n## Your action\n" + "x" * 10_000 + "\x00")
    line = s.recall(1, 0)[0]
    assert "\n" not in line and "\x00" not in line and len(line) < 400


def test_reflection_triggers_by_importance_and_by_count():
    s = _stream(reflect_threshold=10.0, reflect_every=None)
    s.add(1, 0, "action", "posted", action_type="create_post")  # 6
    s.add(2, 0, "action", "liked", action_type="like_post")  # 2
    assert s.due_for_reflection([1, 2]) == []
    s.add(1, 1, "action", "posted again", action_type="create_post")  # 12 >= 10
    assert s.due_for_reflection([1, 2]) == [1]
    s.add(1, 1, "reflection", "I care about bike lanes")
    assert s.due_for_reflection([1, 2]) == []
    c = _stream(reflect_threshold=None, reflect_every=2)
    c.add(3, 0, "observation", "x")
    c.note_active([3])
    assert c.due_for_reflection([3]) == []
    c.note_active([3])
    assert c.due_for_reflection([3]) == [3]


def test_rows_rebuild_the_same_stream():
    s = _stream()
    for i in range(6):
        s.add(i % 2, i, "action" if i % 3 else "observation", f"event {i}", action_type="repost")
    rows = s.drain_rows()
    assert rows is not None and len(rows["step"]) == 6 and s.drain_rows() is None
    r = _stream()
    r.restore(zip(rows["step"], rows["agent_id"], rows["kind"], rows["text"], rows["importance"]))
    for a in (0, 1):
        assert r.recall(a, 9, "event") == s.recall(a, 9, "event")
    assert r.drain_rows() is None


def test_heuristics_and_parsers():
    assert heuristic_importance("action", "create_post") > heuristic_importance("action", "like_post")
    assert heuristic_importance("observation", engagement=100) > heuristic_importance("observation", engagement=0)
    assert parse_insights({"insights": ["a  b\n", 3, "c"]}, 1) == ["a b"]
    with pytest.raises(ValueError):
        parse_insights({"insights": []}, 2)
    assert parse_ratings({"ratings": [1, 10]}, 2) == [1.0, 10.0]
    for bad in ({"ratings": [0, 5]}, {"ratings": [5]}, {"ratings": [True, 3]}, []):
        with pytest.raises(ValueError):
            parse_ratings(bad, 2)


# ---- wired into runs -------------------------------------------------------------------------------

import duckdb  # noqa: E402

from socium.config.loading import config_from_dict  # noqa: E402
from socium.simulator.simulation import Simulation  # noqa: E402
from socium.trace.store import trace_digest  # noqa: E402


def _cfg(**mem):
    return config_from_dict(
        {
            "name": "mem",
            "seed": 2,
            "steps": 4,
            "population": {"n_agents": 12, "mean_activity": 0.7, "goals": ["Defend the bike lanes."]},
            "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
            "recsys": {"kind": "chronological", "k": 3},
            "policy": {"kind": "llm"},
            "llm": {"backend": "random"},
            "llm_agents": {"memory_size": 6, "memory": {"kind": "stream", "embedder": "hashing", **mem}},
            "seed_posts": [{"author": i, "content": f"post {i} about bike lanes and shops"} for i in range(4)],
        }
    )


def _q(path, sql):
    con = duckdb.connect(str(path / "trace.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_stream_run_records_memories_retrieves_them_and_reflects(tmp_path):
    Simulation(_cfg(reflect_threshold=8.0, max_tokens=120), tmp_path / "r").run()
    kinds = dict(_q(tmp_path / "r", "SELECT kind, count(*) FROM memories GROUP BY 1"))
    assert kinds.get("observation", 0) > 0 and kinds.get("action", 0) > 0 and kinds.get("reflection", 0) > 0
    refl = _q(tmp_path / "r", "SELECT count(*) FROM llm_calls WHERE metadata->>'reflection' = 'true'")[0][0]
    assert refl > 0
    later = _q(
        tmp_path / "r",
        "SELECT prompt FROM llm_calls WHERE step = 3 AND metadata->>'reflection' IS NULL "
        "AND metadata->>'survey' IS NULL LIMIT 5",
    )
    assert later
    for (prompt,) in later:
        user = json.loads(prompt)[1]["content"]
        section = user.split("## What you did recently\n", 1)[1].split("\n\n", 1)[0]
        assert "[observation]" in section or "[action]" in section or "[reflection]" in section
        assert sum(approx_tokens(x[2:]) + 1 for x in section.splitlines()) <= 120 + len(section.splitlines())


def test_stream_memory_survives_resume(tmp_path):
    Simulation(_cfg(reflect_threshold=8.0), tmp_path / "full").run()
    s = Simulation(_cfg(reflect_threshold=8.0), tmp_path / "cut")
    s.run(steps=2)
    Simulation(_cfg(reflect_threshold=8.0), tmp_path / "cut", resume=True).run()
    a, b = trace_digest(tmp_path / "full" / "trace.duckdb"), trace_digest(tmp_path / "cut" / "trace.duckdb")
    for t in ("memories", "actions", "posts", "exposures"):
        assert a[t] == b[t], t
    pa = _q(tmp_path / "full", "SELECT request_hash FROM llm_calls ORDER BY call_id")
    pb = _q(tmp_path / "cut", "SELECT request_hash FROM llm_calls ORDER BY call_id")
    assert pa == pb  # identical prompts after resume: the rebuilt stream retrieves the same memories


def test_llm_rated_importance_replaces_the_heuristic(tmp_path):
    Simulation(_cfg(importance="llm", reflect_threshold=None), tmp_path / "r").run()
    rated = _q(tmp_path / "r", "SELECT count(*) FROM llm_calls WHERE metadata->>'importance' = 'true'")[0][0]
    assert rated > 0
    imps = [r[0] for r in _q(tmp_path / "r", "SELECT importance FROM memories WHERE kind != 'reflection'")]
    # the heuristic never exceeds 6 outside reflections and gives fractional values to observations
    assert max(imps) > 6
    assert sum(float(v).is_integer() for v in imps) >= 0.9 * len(imps)


def test_post_run_interview_cites_the_stream(tmp_path):
    from socium.experiments.interview import _memory
    from socium.simulator.run_setup import load_run_config

    Simulation(_cfg(reflect_threshold=8.0), tmp_path / "r").run()
    agent = _q(tmp_path / "r", "SELECT agent_id FROM memories GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")[0][0]
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    try:
        lines = _memory(con, load_run_config(tmp_path / "r"), agent, "What did you think of the bike lanes posts?")
    finally:
        con.close()
    stored = {r[0] for r in _q(tmp_path / "r", f"SELECT text FROM memories WHERE agent_id = {int(agent)}")}
    assert lines and all(line.split("] ", 1)[1] in stored for line in lines)


def test_group_messages_and_search_results_enter_the_stream_once(tmp_path):
    """Issue 16.1: the stream holds what an agent was told in its groups (once per message) and the
    search results it was shown, not only its feed."""
    c = _cfg(reflect_threshold=None).model_dump(mode="json")
    c["population"] = {**c["population"], "activity": "uniform", "mean_activity": 1.0}
    c["seed_actions"] = [
        {"agent": 0, "action": {"type": "create_group", "name": "riders"}},
        {"agent": 1, "action": {"type": "join_group", "group_id": 0}},
        {"agent": 0, "action": {"type": "send_to_group", "group_id": 0, "content": "zzmsg ride friday"}},
        {"agent": 2, "action": {"type": "search_posts", "query": "shops"}},
    ]
    Simulation(config_from_dict(c), tmp_path / "r").run()
    msgs = _q(tmp_path / "r", "SELECT agent_id, step, text FROM memories WHERE kind = 'message'")
    assert [(a, t) for a, _s, t in msgs] == [(1, "@user0 in group riders (step 0): zzmsg ride friday")], msgs
    found = _q(tmp_path / "r", "SELECT count(*) FROM memories WHERE agent_id = 2 AND step = 1 AND kind = 'observation'")
    shown = _q(tmp_path / "r", "SELECT count(*) FROM exposures WHERE agent_id = 2 AND step = 1")
    assert found[0][0] == shown[0][0] > 0  # feed and search results alike
