"""Group agents' prompts (policy.kind: group_llm) fit the backend's context window, and exposures stay
what prompts held.

Why: one group call holds every member's profile, memory and feed (the posts quoted once), so it grows
with ``policy.group_max_members`` and the run; a prompt over the model's context is refused and every
member's turn is lost. The fitting is script mode's (``agents/narrator_fit.py``): split, then trim.
"""

import json

import duckdb
import pytest
from test_narrator_fit import MAX_TOKENS, answer_all, trimmed_feed
from test_narrator_fit import cfg as narrator_cfg

from conftest import replayed_like_recorded
from socium.llm.context import estimate_prompt_tokens
from socium.llm.model_free import ScriptedBackend
from socium.llm.types import LLMResult
from socium.llm.wrappers import CachingBackend
from socium.simulator.simulation import Simulation
from socium.testing.invariants import exposures_not_in_prompts

N = 8  # agents (test_narrator_fit's world)


def cfg(**over):
    """Script mode's test world (8 agents, all active, posting every step), run by group agents."""
    policy = {
        "kind": "group_llm",
        "group_cluster_size": N,  # one persona cluster: every step's active agents are one chunk
        "group_max_members": N,
        "group_embedder": "hashing",
    }
    return narrator_cfg(**{"name": "group-fit", "perspective": "local", "policy": policy, **over})


def run(path, n_ctx):
    backend = ScriptedBackend(answer_all)
    backend.context_tokens = n_ctx  # as the embedded backend reports llm.n_ctx
    backend.count_prompt_tokens = estimate_prompt_tokens
    sim = Simulation(cfg(), path / "r")
    sim.policy.backend_factory = lambda cache: CachingBackend(backend, cache)
    sim.run()
    return backend.calls


def tokens(req):
    return estimate_prompt_tokens([m.model_dump() for m in req.messages])


def first_attempt_members(calls, step):
    return sorted(
        a for r in calls if r.metadata["step"] == step and not r.metadata["attempt"] for a in r.metadata["group"]
    )


def test_a_chunk_too_long_for_the_context_is_split_into_calls_that_each_fit(tmp_path):
    unbounded = run(tmp_path / "a", n_ctx=10**9)
    assert all(len(r.metadata["group"]) == N for r in unbounded)  # one call per chunk when it fits
    full = max(tokens(r) for r in unbounded)
    n_ctx = full // 2 + N * MAX_TOKENS // 2  # the biggest chunk cannot go as one call
    calls = run(tmp_path / "b", n_ctx=n_ctx)
    for r in calls:
        assert tokens(r) + r.max_tokens <= n_ctx, (tokens(r), r.max_tokens, n_ctx)
        assert r.max_tokens == MAX_TOKENS * len(r.metadata["group"]) and r.metadata["context_tokens"] == n_ctx
    split = [r for r in calls if len(r.metadata["group"]) < N]
    assert split and all(r.metadata["split_from"] == list(range(N)) for r in split)
    for step in range(3):  # every member of every step was asked by exactly one first-attempt call
        assert first_attempt_members(calls, step) == list(range(N))
    assert exposures_not_in_prompts(tmp_path / "b" / "r") == []


def trimmed_run(tmp_path):
    calls = run(tmp_path / "a", n_ctx=10**9)
    whole = min(tokens(r) for r in calls if r.metadata["step"] == 2)
    n_ctx = whole // N + 500  # one member's prompt with everything does not fit either
    return n_ctx, run(tmp_path / "b", n_ctx=n_ctx)


def test_a_member_too_long_alone_is_trimmed_and_its_exposures_are_withdrawn(tmp_path):
    n_ctx, calls = trimmed_run(tmp_path)
    for r in calls:
        assert tokens(r) + r.max_tokens <= n_ctx
    for step in range(3):
        assert first_attempt_members(calls, step) == list(range(N))
    trimmed, dropped = trimmed_feed(calls)
    for r in trimmed:  # a member may not act on a post its prompt no longer shows
        (a,) = r.metadata["group"]
        offered = set()
        for v in r.json_schema["properties"][f"agent_{a}"].get("anyOf", []):
            offered |= set(v["properties"].get("post_id", {}).get("enum", []))
        assert offered and not offered & set(r.metadata["trimmed"][str(a)].get("feed", []))
    con = duckdb.connect(str(tmp_path / "b" / "r" / "trace.duckdb"), read_only=True)
    rows = set(con.execute("SELECT step, agent_id, post_id FROM exposures").fetchall())
    logged = [json.loads(m) for (m,) in con.execute("SELECT metadata FROM llm_calls").fetchall()]
    con.close()
    assert not dropped & rows  # a feed post no prompt showed is no exposure
    assert any("trimmed" in m and m["context_tokens"] == n_ctx for m in logged)  # the trace says what and why
    assert exposures_not_in_prompts(tmp_path / "b" / "r") == []


def test_a_replay_splits_and_trims_as_the_recorded_run_did(tmp_path):
    """The window is recorded with each group call, so a replay (no model, no window of its own) asks
    exactly the recorded requests: the split and trimmed prompts, not the whole chunk's."""
    n_ctx, recorded = trimmed_run(tmp_path)
    assert any("trimmed" in r.metadata for r in recorded)
    c = cfg(llm={"backend": "replay", "model": "scripted", "max_tokens": MAX_TOKENS})
    assert replayed_like_recorded(c, tmp_path / "b" / "r", tmp_path / "c")  # a replay miss would raise


@pytest.mark.parametrize("mode", ["narrator", "group"])
def test_a_failed_member_call_makes_every_member_invalid_naming_the_error(tmp_path, mode):
    """Script mode and group agents share the sending of a multi-member call (``_ask_members``): each
    keeps its own request id, seed salt (99 / 500) and metadata, and a backend error after retries
    leaves every member one invalid decision naming it, with no re-ask."""
    backend = ScriptedBackend(lambda req: LLMResult.failure(req.request_id, "down for maintenance", "server"))
    llm = {"backend": "random", "max_tokens": MAX_TOKENS, "max_invalid_fraction": None}
    c = narrator_cfg(llm=llm) if mode == "narrator" else cfg(llm=llm)
    sim = Simulation(c, tmp_path / "r")
    pol = sim.policy
    pol.backend_factory = lambda cache: CachingBackend(backend, cache)
    sim.run()
    assert backend.calls
    for r in backend.calls:
        step, first, group = r.metadata["step"], r.metadata["agent_id"], r.metadata["group"]
        assert first == group[0] and r.max_tokens == MAX_TOKENS * len(group)
        if mode == "narrator":
            assert "attempt" not in r.metadata and r.request_id == f"s{step}-g{first}"
            assert r.seed == pol.seed(first, step, 99)
        else:
            assert r.metadata["attempt"] == 0 and r.request_id == f"s{step}-c{int(pol.labels[first])}-a{first}-0"
            assert r.seed == pol.seed(first, step, 500)
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    try:
        got = con.execute(
            "SELECT step, agent_id, reason FROM actions WHERE origin = 'llm' ORDER BY step, agent_id"
        ).fetchall()
    finally:
        con.close()
    asked = sorted((r.metadata["step"], a) for r in backend.calls for a in r.metadata["group"])
    assert [(s, a) for s, a, _ in got] == asked  # each member once
    assert {why for _, _, why in got} == {"backend error (server): down for maintenance"}
