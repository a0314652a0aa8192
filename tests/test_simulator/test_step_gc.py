"""The collector's thresholds are raised only while a step runs (driver and Ray actor), and a middle
collection that fell due during the step runs when it ends."""

from __future__ import annotations

import asyncio
import gc

import pytest

from conftest import small_config
from socium.core.contracts import Decision, Observation
from socium.simulator import step_gc as step_gc_module
from socium.simulator.simulation import Simulation
from socium.simulator.step_gc import STEP_GC_GEN0, STEP_GC_GEN1, step_gc


@pytest.fixture
def thresholds():
    """Restores the collector's thresholds whatever a test does to them."""
    old = gc.get_threshold()
    yield
    gc.set_threshold(*old)


def _raised(t: tuple[int, ...]) -> tuple[int, ...]:
    return (max(t[0], STEP_GC_GEN0), max(t[1], STEP_GC_GEN1), *t[2:])


def _thresholds_in_step(sim: Simulation) -> list[tuple[int, int, int]]:
    """Advance one step, noting the collector's thresholds each time the policy decides."""
    seen: list[tuple[int, int, int]] = []
    decide = sim.policy.decide

    def spy(*a, **k):  # type: ignore[no-untyped-def]
        seen.append(gc.get_threshold())
        return decide(*a, **k)

    sim.policy.decide = spy
    sim.advance()
    assert seen, "the policy was never asked to decide"
    return seen


def test_threshold_raised_inside_a_step_and_restored_after(tmp_path, thresholds):
    gc.set_threshold(700, 10, 10)
    with Simulation(small_config(steps=2), tmp_path / "run", force=True) as sim:
        seen = _thresholds_in_step(sim)
        assert gc.get_threshold() == (700, 10, 10)
    assert set(seen) == {(STEP_GC_GEN0, STEP_GC_GEN1, 10)}


def test_user_thresholds_kept_when_higher_or_disabled(tmp_path, thresholds):
    for user in ((500_000, 5_000, 10), (0, 10, 10)):
        gc.set_threshold(*user)
        with Simulation(small_config(steps=1), tmp_path / f"run{user[0]}", force=True) as sim:
            assert set(_thresholds_in_step(sim)) == {user}
        assert gc.get_threshold() == user


def test_overlapping_uses_restore_when_the_last_one_ends(thresholds):
    gc.set_threshold(700, 10, 10)
    a, b = step_gc(), step_gc()
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)  # not LIFO: an actor's chunks end in any order
    assert gc.get_threshold() == _raised((700, 10, 10))
    b.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


def test_middle_collection_waits_for_the_end_of_the_step(thresholds, monkeypatch):
    """Enough surviving containers for many young collections: no middle one during the step, one after."""
    if not gc.isenabled():
        pytest.skip("the collector is disabled in this process")
    monkeypatch.setattr(step_gc_module, "STEP_GC_GEN0", 10_000)  # the rule, at a size a test can afford
    gc.set_threshold(700, 10, 10)
    gc.collect()
    seen: list[tuple[str, int]] = []

    def note(phase, info):  # type: ignore[no-untyped-def]
        if phase == "start":
            seen.append(("in" if inside else "after", info["generation"]))

    inside = True
    gc.callbacks.append(note)
    try:
        with step_gc():
            held = [[i] for i in range(10_000 * 15)]  # > 10 young collections' worth, all alive
            del held
            inside = False
    finally:
        gc.callbacks.remove(note)
    during = [g for where, g in seen if where == "in"]
    assert during.count(0) > 10, during  # young collections still ran
    assert max(during) == 0, during
    assert ("after", 1) in seen, seen


def test_ray_actor_decides_with_raised_thresholds(thresholds):
    pytest.importorskip("ray")
    from socium.simulator.ray_actor import ActorContext, ShardActor
    from socium.simulator.ray_wire import pack_observations, unpack_decisions

    seen: list[tuple[int, int, int]] = []

    class Policy:
        def decide(self, obs: Observation) -> Decision:
            seen.append(gc.get_threshold())
            return Decision(obs.agent_id, [])

    gc.set_threshold(700, 10, 10)
    actor = ShardActor(Policy(), ActorContext(shard=0, n_shards=1, seed=1, concurrency=4))
    obs = Observation(agent_id=3, step=0, time_s=0.0, hour=0, feed=[])
    packed, _rows, stopped = asyncio.run(actor.decide(pack_observations([obs])))
    assert stopped is None  # decided in full
    assert [d.agent_id for d in unpack_decisions(packed)] == [3]
    assert seen == [_raised((700, 10, 10))]
    assert gc.get_threshold() == (700, 10, 10)


def test_a_chunk_of_live_containers_gets_no_young_pass(thresholds):
    """What a chunk of a step holds alive (~60,000 containers for 1,024 LLM activations) is walked by no
    young pass: a pass then would walk all of it, whatever the threshold below it (the module docstring)."""
    if not gc.isenabled():
        pytest.skip("the collector is disabled in this process")
    gc.set_threshold(700, 10, 10)
    gc.collect()
    during: list[int] = []
    inside = False

    def note(phase, info):  # type: ignore[no-untyped-def]
        if phase == "start" and inside:
            during.append(info["generation"])

    gc.callbacks.append(note)
    try:
        with step_gc():
            inside = True
            held = [[i] for i in range(100_000)]
            inside = False
            del held
    finally:
        gc.callbacks.remove(note)
    assert during == [], during
