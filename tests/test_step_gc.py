"""The collector's young-generation threshold is raised only while a step runs."""

from __future__ import annotations

import gc

from conftest import small_config
from socium.simulator.simulation import STEP_GC_GEN0, Simulation


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


def test_threshold_raised_inside_a_step_and_restored_after(tmp_path):
    before = gc.get_threshold()
    with Simulation(small_config(steps=2), tmp_path / "run", force=True) as sim:
        seen = _thresholds_in_step(sim)
        assert gc.get_threshold() == before
    assert all(t == (max(before[0], STEP_GC_GEN0), *before[1:]) for t in seen)


def test_user_thresholds_kept_when_higher_or_disabled(tmp_path):
    old = gc.get_threshold()
    try:
        for user in ((50_000, 10, 10), (0, 10, 10)):
            gc.set_threshold(*user)
            with Simulation(small_config(steps=1), tmp_path / f"run{user[0]}", force=True) as sim:
                assert set(_thresholds_in_step(sim)) == {user}
            assert gc.get_threshold() == user
    finally:
        gc.set_threshold(*old)
