"""The one Policy contract (socium.core.policy): the required core is checked once when the policy is
built, and the loop asks only for the capabilities the policy has."""

from __future__ import annotations

import dataclasses

import duckdb
import numpy as np
import pytest

from conftest import small_config
from socium.agents.group_policy import GroupLLMPolicy
from socium.agents.llm_policy import LLMPolicy
from socium.agents.rules import RULE_POLICIES
from socium.config.loading import config_from_dict
from socium.core.actions import CreatePost
from socium.core.contracts import Decision, Observation
from socium.core.policy import capabilities_of
from socium.errors import ConfigError, SociumError
from socium.simulator.executors import InProcessExecutor
from socium.simulator.simulation import Simulation


class NoDecide:
    """Has an async hook but not the required core."""

    async def adecide(self, obs: Observation) -> Decision:
        return Decision(obs.agent_id, [])


class OnlyDecide:
    """The required core and nothing else: posts once per activation."""

    def decide(self, obs: Observation) -> Decision:
        return Decision(obs.agent_id, [CreatePost(content=f"agent {obs.agent_id} at step {obs.step}")])


class AsyncFirst(OnlyDecide):
    """Both ways of deciding: the in-process executor must prefer ``adecide`` (no ``decide_batch``)."""

    def __init__(self) -> None:
        self.async_calls = 0

    def decide(self, obs: Observation) -> Decision:
        raise AssertionError("decide called although adecide exists")

    async def adecide(self, obs: Observation) -> Decision:
        self.async_calls += 1
        return Decision(obs.agent_id, [])


def _llm_cfg(kind: str = "llm"):
    return config_from_dict(
        {
            "name": "contract",
            "seed": 3,
            "steps": 2,
            "population": {"n_agents": 12, "mean_activity": 0.5},
            "graph": {"kind": "barabasi_albert", "params": {"m": 2}},
            "policy": {"kind": kind},
            "llm": {"backend": "random"},
        }
    )


def test_a_policy_without_the_required_core_is_refused_when_the_run_is_built(tmp_path):
    run = tmp_path / "r"
    with pytest.raises(ConfigError) as err:
        Simulation(small_config(), run, policy=NoDecide())  # type: ignore[arg-type]
    assert "NoDecide" in str(err.value) and "decide(obs" in str(err.value)
    assert isinstance(err.value, SociumError)
    assert not run.exists()  # refused before anything was written; the directory it made is gone
    with pytest.raises(ConfigError, match="builtins.object"):
        capabilities_of(object())


def test_a_policy_with_only_the_core_runs_a_small_simulation(tmp_path):
    caps = capabilities_of(OnlyDecide())
    assert caps.names() == [] and caps.policy_class == "OnlyDecide"
    with Simulation(small_config(steps=3), tmp_path / "r", policy=OnlyDecide()) as sim:
        assert sim.caps.names() == [] and not sim.world.needs_profile
        stats = sim.run()
    assert len(stats) == 3 and sum(s.n_active for s in stats) > 0
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    posts = con.execute("SELECT count(*) FROM actions WHERE type = 'create_post' AND origin = 'policy'").fetchone()
    con.close()
    assert posts is not None and posts[0] == sum(s.n_active for s in stats)  # one post per activation


def test_the_capabilities_record_is_frozen_and_chooses_the_executor_path():
    pol = AsyncFirst()
    caps = capabilities_of(pol)
    assert caps.adecide is pol and caps.batch is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.batch = pol  # type: ignore[misc]
    obs = [Observation(a, 0, 0.0, 0, [], None) for a in (3, 1, 2)]
    got = InProcessExecutor(pol, caps=caps).run(obs)
    assert [d.agent_id for d in got] == [1, 2, 3] and pol.async_calls == 3


def test_capabilities_of_the_rule_policies():
    for kind, cls in RULE_POLICIES.items():
        caps = capabilities_of(cls(small_config().policy, 1))
        assert caps.batch is None and caps.adecide is None and caps.surveys is None, kind
        assert not caps.needs_profile, kind
        assert caps.needs_adoption == (kind == "threshold"), kind


def test_capabilities_of_the_llm_and_group_policies():
    llm = capabilities_of(LLMPolicy(_llm_cfg()))
    expected = {
        "needs_profile",
        "batch",
        "adecide",
        "adecide_batch",
        "route",
        "budgets",
        "calls",
        "rows",
        "absorb",
        "closer",
        "chunker",
        "actor_local",
        "partitioner",
        "shard_budgets",
        "surveys",
        "interviews",
        "importance",
        "reflection",
    }
    assert set(llm.names()) == expected and llm.restorer is None
    group = capabilities_of(GroupLLMPolicy(_llm_cfg("group_llm"), np.zeros(12, dtype=np.int32)))
    assert set(group.names()) == expected | {"restorer"}
    assert group.chunker is not None and group.chunker.step_chunk(64) is None  # a group step stays whole


def test_a_built_llm_run_holds_its_capabilities(tmp_path):
    with Simulation(_llm_cfg("group_llm"), tmp_path / "g") as sim:
        assert isinstance(sim.policy, GroupLLMPolicy)
        assert sim.caps.policy is sim.policy and sim.caps.restorer is sim.policy and sim.world.needs_profile
