"""SeedInts gives exactly numpy's draws, so model-call seeds (in the trace) did not change."""

from __future__ import annotations

import numpy as np
import pytest

from socium.core.rng import LLM, component_rng
from socium.core.seed_ints import SeedInts


@pytest.mark.parametrize("seed", [0, 1, 2**32 + 5, 2**130 + 7])
@pytest.mark.parametrize("high", [2**31 - 1, 1, 2, 1000, 2**32])
def test_equals_numpy(seed: int, high: int) -> None:
    rng = np.random.default_rng(seed % 1000 + high % 97)
    si = SeedInts(seed, LLM)
    for _ in range(150):
        key = [int(rng.integers(0, 10**6)), int(rng.integers(0, 500)), int(rng.integers(0, 3))]
        if rng.random() < 0.2:
            key[0] = int(rng.integers(2**32, 2**62))  # several 32-bit words
        want = int(component_rng(seed, LLM, *key).integers(0, high))
        assert si.integer(high, *key) == want, (seed, high, key)


def test_other_key_lengths_and_bad_input() -> None:
    si = SeedInts(9, 3, 11)
    assert si.integer(2**31 - 1) == int(component_rng(9, 3, 11).integers(0, 2**31 - 1))
    assert si.integer(50, 1, 2, 3, 4) == int(component_rng(9, 3, 11, 1, 2, 3, 4).integers(0, 50))
    with pytest.raises(ValueError, match="non-negative"):
        si.integer(10, -1)
    with pytest.raises(ValueError, match="high"):
        si.integer(0, 1)
    with pytest.raises(ValueError, match="prefix"):
        SeedInts(1)
