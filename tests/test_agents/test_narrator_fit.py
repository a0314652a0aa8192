"""Script mode's narrator prompts fit the backend's context window, and exposures stay what prompts held.

Why: a narrator writes for ``llm_agents.group_size`` characters and its prompt grows with the group; a
prompt over the model's context is refused and the whole group's turn is lost (8 characters overflowed
n_ctx 2,048 and once 4,096 in the intervention example).
"""

import json

import duckdb

from conftest import replayed_like_recorded, small_config
from socium.agents.llm_policy import LLMPolicy
from socium.agents.narrator_fit import fit_calls
from socium.llm.cache import MemoryCache
from socium.llm.context import context_window, estimate_prompt_tokens, prompt_counter
from socium.llm.model_free import ScriptedBackend
from socium.llm.wrappers import CachingBackend
from socium.simulator.simulation import Simulation
from socium.testing.invariants import exposures_not_in_prompts

MAX_TOKENS = 32


def cfg(**over):
    base = {
        "name": "narrator-fit",
        "steps": 3,
        "perspective": "omniscient",
        "population": {"n_agents": 8, "activity": "uniform", "mean_activity": 1.0},
        "graph": {"kind": "random_out", "params": {"out_degree": 7}},
        "recsys": {"kind": "chronological", "k": 6},
        "policy": {"kind": "llm"},
        "llm": {"backend": "random", "max_tokens": MAX_TOKENS},
        "llm_agents": {"group_size": 8, "actions": ["create_post", "like_post", "repost", "do_nothing"]},
        "seed_posts": [{"author": i, "content": f"seed post {i} about the harbour " * 6} for i in range(6)],
    }
    base.update(over)
    return small_config(**base)


def answer_all(req):
    """Every character of the call posts (so feeds and memories grow from step to step)."""
    return json.dumps(
        {
            f"agent_{a}": {"type": "create_post", "content": f"news from {a} at the harbour"}
            for a in req.metadata["group"]
        }
    )


def run(tmp_path, n_ctx, count=estimate_prompt_tokens):
    backend = ScriptedBackend(answer_all)
    backend.context_tokens = n_ctx  # as the embedded backend reports llm.n_ctx
    backend.count_prompt_tokens = count
    c = cfg()
    pol = LLMPolicy(c, backend_factory=lambda cache: CachingBackend(backend, cache))
    Simulation(c, tmp_path / "r", policy=pol).run()
    return backend.calls


def narrator_calls(calls):
    return [r for r in calls if "group" in r.metadata]


def trimmed_feed(calls):
    """The calls that trimmed a member (only ever one alone) and the (step, agent, post id) feed items
    they dropped; neither empty."""
    trimmed = [r for r in calls if "trimmed" in r.metadata]
    assert trimmed and all(len(r.metadata["group"]) == 1 for r in trimmed)
    dropped = {
        (r.metadata["step"], int(a), pid)
        for r in trimmed
        for a, t in r.metadata["trimmed"].items()
        for pid in t.get("feed", [])
    }
    assert dropped
    return trimmed, dropped


def test_the_wrapper_stack_reports_the_innermost_window_and_counter():
    inner = ScriptedBackend(["{}"])
    stack = CachingBackend(inner, cache=MemoryCache())
    assert context_window(stack) is None and prompt_counter(stack) is estimate_prompt_tokens
    inner.context_tokens = 900
    inner.count_prompt_tokens = lambda msgs: 7
    assert context_window(stack) == 900 and prompt_counter(stack)([]) == 7


def test_a_group_too_long_for_the_context_is_split_into_calls_that_each_fit(tmp_path):
    unbounded = narrator_calls(run(tmp_path / "a", n_ctx=10**9))
    full = max(estimate_prompt_tokens([m.model_dump() for m in r.messages]) for r in unbounded)
    assert all(len(r.metadata["group"]) == 8 for r in unbounded)  # one call per group when it fits
    n_ctx = full // 2 + 8 * MAX_TOKENS // 2  # the biggest prompt cannot go as one call
    calls = narrator_calls(run(tmp_path / "b", n_ctx=n_ctx))
    for r in calls:
        tokens = estimate_prompt_tokens([m.model_dump() for m in r.messages])
        assert tokens + r.max_tokens <= n_ctx, (tokens, r.max_tokens, n_ctx)
        assert r.max_tokens == MAX_TOKENS * len(r.metadata["group"])
    split = [r for r in calls if len(r.metadata["group"]) < 8]
    assert split and all(r.metadata["narrator_group"] == list(range(8)) for r in split)
    # every character of every step was written by exactly one first-attempt call
    for step in range(3):
        members = [
            a for r in calls if r.metadata["step"] == step and "attempt" not in r.metadata for a in r.metadata["group"]
        ]
        assert sorted(members) == list(range(8))
    assert exposures_not_in_prompts(tmp_path / "b" / "r") == []


def test_a_character_too_long_alone_is_trimmed_and_its_exposures_are_withdrawn(tmp_path):
    calls = narrator_calls(run(tmp_path / "a", n_ctx=10**9))
    single = min(estimate_prompt_tokens([m.model_dump() for m in r.messages]) for r in calls if r.metadata["step"] == 2)
    n_ctx = single // 8 + 600  # one character's prompt with everything does not fit either
    calls = narrator_calls(run(tmp_path / "b", n_ctx=n_ctx))
    for r in calls:
        assert estimate_prompt_tokens([m.model_dump() for m in r.messages]) + r.max_tokens <= n_ctx
    trimmed, dropped = trimmed_feed(calls)
    con = duckdb.connect(str(tmp_path / "b" / "r" / "trace.duckdb"), read_only=True)
    rows = set(con.execute("SELECT step, agent_id, post_id FROM exposures WHERE source != 'global'").fetchall())
    logged = [json.loads(m) for (m,) in con.execute("SELECT metadata FROM llm_calls").fetchall()]
    con.close()
    assert not dropped & rows  # a feed post no prompt showed is no exposure
    assert any("trimmed" in m for m in logged)  # the trace says what was dropped
    assert exposures_not_in_prompts(tmp_path / "b" / "r") == []


def test_fitting_stops_when_nothing_is_left_to_drop():
    from socium.core.contracts import FeedItem, Observation

    item = FeedItem(1, 2, "original", "text", 1, 0, 0, 0, 0, "chrono", 0)
    o = Observation(0, 0, 0.0, 0, [item], memory=["a", "b"])
    render = lambda g: [{"role": "user", "content": "x" * (100 + 50 * len(g[0].feed) + 10 * len(g[0].memory))}]
    count = lambda msgs: len(msgs[0]["content"])
    (call,) = fit_calls([o], render, count, budget=50, reserve_per_member=0)
    assert call.trimmed[0]["still_over"] and call.trimmed[0]["feed"] == [1] and call.trimmed[0]["memory_lines"] == 2
    assert call.unshown == {0: [(1, "chrono")]}
    assert o.feed == [item] and o.memory == ["a", "b"]  # the caller's observation is left as it was
    (call,) = fit_calls([o], render, count, budget=160, reserve_per_member=0)
    assert call.trimmed[0]["feed"] == [1] and "memory_lines" not in call.trimmed[0] and call.tokens == 120


def test_a_replay_splits_and_trims_as_the_recorded_run_did(tmp_path):
    """The window is recorded with each narrator call, so a replay (no model, no window of its own) asks
    exactly the recorded requests: the split and trimmed prompts, not the whole group's."""
    calls = narrator_calls(run(tmp_path / "a", n_ctx=10**9))
    single = min(estimate_prompt_tokens([m.model_dump() for m in r.messages]) for r in calls if r.metadata["step"] == 2)
    n_ctx = single // 8 + 600
    recorded = narrator_calls(run(tmp_path / "b", n_ctx=n_ctx))
    assert any("trimmed" in r.metadata for r in recorded) and all(
        r.metadata["context_tokens"] == n_ctx for r in recorded
    )
    c = cfg(llm={"backend": "replay", "model": "scripted", "max_tokens": MAX_TOKENS})
    assert replayed_like_recorded(c, tmp_path / "b" / "r", tmp_path / "c")  # a replay miss would raise


def test_another_members_empty_feed_reads_in_the_third_person():
    """The narrator (and an omniscient_agents agent) describe other members' views in the third person:
    an empty feed there is "their feed", never "your feed" (which once told the model it had no feed)."""
    from socium.agents.profiles import AgentProfile
    from socium.agents.prompts import character_block
    from socium.core.contracts import Observation

    block = character_block(AgentProfile(id=3, username="u3", bio="b"), Observation(3, 0, 0.0, 9, []), [])
    assert "Their feed:\n(their feed is empty)" in block
    assert "your feed" not in block.lower()
