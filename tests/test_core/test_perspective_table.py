"""The perspective table (issue 25 item 1, issue 29 item 5): a perspective is one table entry.

Every observation and prompt must hold exactly what its perspective's row says; a fifth perspective
registered with a row and its prompt text, nothing else, runs end to end; ``omniscient_agents`` has the
narrator's knowledge with one call per agent, so information and narration are separate contrasts.
"""

import re

import pytest

from conftest import small_config
from socium.agents import perspectives as views
from socium.agents.llm_policy import LLMPolicy
from socium.core.perspective import (
    Perspective,
    differences,
    perspective,
    perspective_names,
    register_perspective,
    unregister_perspective,
)
from socium.errors import ConfigError
from socium.llm.model_free import ScriptedBackend
from socium.llm.wrappers import CachingBackend
from socium.simulator.simulation import Simulation

N = 8
FACT = "zzfact the claim is false"
ORACLE = Perspective(
    "oracle",
    "reads the minds of authors shown, sees the platform and environment-only facts",
    "shown_authors",
    global_view=True,
    narrated=False,
    environment_facts=True,
    prompt_text="zzoracle: you can read the private side of everyone whose posts you see.",
)


@pytest.fixture
def oracle():
    register_perspective(ORACLE)
    yield ORACLE
    unregister_perspective(ORACLE.name)


def cfg(name: str, group_size: int = 8, steps: int = 1):
    return small_config(
        name="table",
        steps=steps,
        perspective=name,
        population={
            "n_agents": N,
            "activity": "uniform",
            "mean_activity": 1.0,
            "goals": [f"zzgoal{i}" for i in range(N)],
        },
        graph={"kind": "random_out", "params": {"out_degree": N - 1}},  # everyone follows everyone
        recsys={"kind": "chronological", "k": 10},
        policy={"kind": "llm"},
        llm={"backend": "random"},
        llm_agents={"group_size": group_size, "ground_truth": FACT},  # visible_to left empty on purpose
        seed_posts=[{"author": i, "content": f"zzpost by {i}"} for i in range(4)],
    )


def run(c, tmp_path, monkeypatch):
    """Run ``c`` with a scripted model; returns (observations filled per agent, requests sent)."""
    seen = []
    fill = views.fill_observation

    def recording(sim, o, rec):
        fill(sim, o, rec)
        seen.append(o)

    monkeypatch.setattr(views, "fill_observation", recording)
    backend = ScriptedBackend(lambda req: '{"type": "do_nothing"}' if "group" not in req.metadata else _narrated(req))
    pol = LLMPolicy(c, backend_factory=lambda cache: CachingBackend(backend, cache))
    Simulation(c, tmp_path / "r", policy=pol).run()
    return seen, backend.calls


def _narrated(req) -> str:
    ids = re.findall(r"^## Character agent_(\d+)$", req.messages[1].content, re.M)
    return "{" + ", ".join(f'"agent_{i}": {{"type": "do_nothing"}}' for i in ids) + "}"


def check_row(row: Perspective, seen, calls):
    """Each observation and prompt holds what ``row`` says and nothing more."""
    assert seen, "no LLM agent was observed"
    for o in seen:
        others = [it for it in o.feed if it.author != o.agent_id]
        assert others, "the test world must show posts by others"
        shown_private = [it.author_private is not None for it in others]
        assert all(shown_private) if row.others_private == "shown_authors" else not any(shown_private)
        assert (o.stats is not None) == row.global_view and (bool(o.global_feed) or not row.global_view)
        co = o.co_acting
        assert (co is not None) == (row.grouped and not row.narrated)
    for req in calls:
        system, user = req.messages[0].content, req.messages[1].content
        assert (row.prompt_text in system) if row.prompt_text else True
        assert (FACT in user) == row.environment_facts
        assert ("## Most engaging recent posts (everyone's view)" in user) == row.global_view
        assert ("Private goal: zzgoal" in user) == (row.others_private == "everyone")


def test_a_fifth_perspective_is_one_table_entry_and_its_observations_hold_exactly_its_row(
    oracle, tmp_path, monkeypatch
):
    assert perspective_names()[-1] == "oracle"
    seen, calls = run(cfg("oracle"), tmp_path / "o", monkeypatch)
    check_row(oracle, seen, calls)
    assert len(calls) == N  # not narrated: one call per active agent
    # the mindreader line is rendered from the table's others_private, as for the built-in mindreader
    assert "goal: zzgoal" in calls[0].messages[1].content
    # and the card describes it from the same row
    seen_card = views.who_saw_what(cfg("oracle").model_dump())
    assert seen_card["description"] == oracle.description and seen_card["ground_truth"] == "shown"


@pytest.mark.parametrize("name", ["local", "mindreader", "omniscient", "omniscient_agents"])
def test_every_built_in_perspective_shows_what_its_row_says(name, tmp_path, monkeypatch):
    seen, calls = run(cfg(name), tmp_path / name, monkeypatch)
    check_row(perspective(name), seen, calls)


def test_omniscient_agents_make_one_call_per_active_agent_and_see_exactly_the_narrators_group(tmp_path, monkeypatch):
    _, narrated = run(cfg("omniscient", group_size=4, steps=2), tmp_path / "n", monkeypatch)
    seen, per_agent = run(cfg("omniscient_agents", group_size=4, steps=2), tmp_path / "a", monkeypatch)
    assert len(per_agent) == N * 2  # every agent active at both steps: one call each
    assert len(narrated) == (N // 4) * 2 < len(per_agent)  # one narrator call per group of 4
    for req in per_agent:
        me = req.metadata["agent_id"]
        group = range(me // 4 * 4, me // 4 * 4 + 4)  # runs of group_size of the sorted active agents
        text = req.messages[1].content
        shown = {int(g) for g in re.findall(r"Private goal: zzgoal(\d+)", text)}
        assert shown == set(group) - {me}, (me, shown)
        assert f"Your private goal: zzgoal{me}" in text
    # the narrator of agents 0-3 saw the same goals
    first = next(r for r in narrated if "agent_0" in r.messages[1].content)
    assert {int(g) for g in re.findall(r"Private goal: zzgoal(\d+)", first.messages[1].content)} == {0, 1, 2, 3}
    assert set(differences("omniscient", "omniscient_agents")) == {"calls", "prompt text"}


def test_an_unknown_perspective_is_a_config_error_naming_it_and_the_known_ones():
    with pytest.raises(
        ConfigError, match=r"perspective: unknown perspective 'telepath'; known: local, .*omniscient_agents"
    ):
        small_config(perspective="telepath")
    with pytest.raises(ConfigError, match="veracity_visible_to.0: unknown perspective 'seer'"):
        small_config(moderation={"veracity_visible_to": ["seer"]})
    with pytest.raises(ConfigError, match="unknown perspective 'x'"):
        perspective("x")
    assert small_config(perspective="omniscient_agents").perspective == "omniscient_agents"


def test_the_table_rejects_inconsistent_rows_and_protects_the_built_in_ones(oracle):
    with pytest.raises(ConfigError, match="already registered"):
        register_perspective(Perspective("oracle", "other", "none", global_view=False, narrated=False))
    assert register_perspective(ORACLE) is ORACLE  # the same row again is harmless
    with pytest.raises(ConfigError, match="others_private must be 'everyone'"):
        Perspective("lonely_narrator", "d", "none", global_view=False, narrated=True)
    with pytest.raises(ConfigError, match="episode mode 'script' already stands for 'omniscient'"):
        register_perspective(Perspective("s2", "d", "everyone", global_view=True, narrated=True, episode_mode="script"))
    with pytest.raises(ConfigError, match="built in"):
        unregister_perspective("local")
    with pytest.raises(ConfigError, match="lowercase"):
        Perspective("Bad Name", "d", "none", global_view=False, narrated=False)
