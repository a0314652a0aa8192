"""component_seed31 (issue 41.1): the LLM call seed without building a numpy Generator, equal to
``component_rng(...).integers(0, 2**31 - 1)`` on every key, so every recorded seed stays the same."""

from __future__ import annotations

import numpy as np
import pytest

from socium.core.rng import LLM, component_rng, component_seed31


def _numpy(seed: int, purpose: int, *extra: int) -> int:
    return int(component_rng(seed, purpose, *extra).integers(0, 2**31 - 1))


def test_equals_numpy_on_random_keys() -> None:
    g = np.random.default_rng(41)
    seeds = [0, 1, 7, 2**31, 2**32, 2**40 + 5, 2**64 - 1, 2**130 + 3] + [int(x) for x in g.integers(0, 2**63, 20)]
    checked = 0
    for seed in seeds:
        for purpose in (LLM, 0, 2**33):
            for _ in range(40):
                extra = tuple(int(x) for x in g.integers(0, [10**6, 10**4, 3])[: int(g.integers(0, 4))])
                assert component_seed31(seed, purpose, *extra) == _numpy(seed, purpose, *extra), (seed, purpose, extra)
                checked += 1
    assert checked == len(seeds) * 3 * 40


@pytest.mark.parametrize("key", [(7, LLM, -1, 0, 0), (7, LLM, 2**40, 1, 0), (-3, LLM, 1)])
def test_keys_outside_the_fast_path_go_to_numpy(key: tuple[int, ...]) -> None:
    """Negative ids are refused by numpy as before; words wider than 32 bits take numpy's path."""
    try:
        want: int | type[Exception] = _numpy(*key)
    except ValueError:
        want = ValueError
    if want is ValueError:
        with pytest.raises(ValueError):
            component_seed31(*key)
    else:
        assert component_seed31(*key) == want


def test_distinct_keys_give_distinct_seeds() -> None:
    got = {component_seed31(7, LLM, a, s, 0) for a in range(200) for s in range(5)}
    assert len(got) > 990  # 1,000 draws from 2**31 - 1 values: collisions are rare


def test_kept_first_word_pools_give_numpy_seeds_at_every_step() -> None:
    """The pool after an agent's id is kept (``rng._FIRST_WORD``) and reused at later steps and re-asks:
    seeds from a kept pool, and after the store is emptied when full, are still numpy's."""
    from socium.core import rng as R

    R._FIRST_WORD.clear()
    keys = [(agent, step, attempt) for step in range(3) for agent in (0, 5, 2**31, 2**32 - 1) for attempt in (0, 1)]
    for key in keys:  # the first step fills the store, later steps read it
        assert component_seed31(9, LLM, *key) == _numpy(9, LLM, *key), key
    assert len(R._FIRST_WORD) == 4
    old = R._FIRST_WORD_MAX
    R._FIRST_WORD_MAX = 2
    R._FIRST_WORD.clear()
    try:
        for key in keys:
            assert component_seed31(9, LLM, *key) == _numpy(9, LLM, *key), key
        assert len(R._FIRST_WORD) <= 2
    finally:
        R._FIRST_WORD_MAX = old
