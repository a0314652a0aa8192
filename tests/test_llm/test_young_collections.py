"""While a batch of LLM calls runs, the young generation is collected less often; before and after, as set."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from socium.llm.base import YOUNG_THRESHOLD, fewer_young_collections, run_coro_sync


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_a_batch_runs_with_the_relaxed_threshold_and_restores_it(thresholds: tuple[int, int, int]) -> None:
    async def seen() -> tuple[int, int, int]:
        return gc.get_threshold()

    assert run_coro_sync(seen()) == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == thresholds

    async def boom() -> None:
        raise RuntimeError("a failed batch")

    with pytest.raises(RuntimeError):
        run_coro_sync(boom())
    assert gc.get_threshold() == thresholds


def test_cycles_are_still_collected_in_a_batch(thresholds: tuple[int, int, int]) -> None:
    class Node:
        pass

    async def make_garbage() -> tuple[int, int]:
        before = gc.get_stats()[0]["collections"]
        for _ in range(5 * YOUNG_THRESHOLD):
            a, b = Node(), Node()
            a.other, b.other = b, a  # type: ignore[attr-defined]
        return gc.get_stats()[0]["collections"] - before, gc.collect()

    young, left = run_coro_sync(make_garbage())
    # 10^5 objects: ~10 young collections at the relaxed threshold (~140 at 700), and they freed the cycles
    assert 3 <= young <= 40 and left < YOUNG_THRESHOLD


@pytest.mark.parametrize("setting", [(0, 10, 10), (50_000, 10, 10)])
def test_a_callers_own_setting_is_left_alone(setting: tuple[int, int, int]) -> None:
    saved = gc.get_threshold()
    gc.set_threshold(*setting)
    try:
        with fewer_young_collections():
            assert gc.get_threshold() == setting
        assert gc.get_threshold() == setting
    finally:
        gc.set_threshold(*saved)


def test_a_change_made_inside_is_kept(thresholds: tuple[int, int, int]) -> None:
    with fewer_young_collections():
        gc.set_threshold(1234, 5, 5)
    assert gc.get_threshold() == (1234, 5, 5)
