"""Sorted, deduplicated int64 edge keys (``src * n + dst``), shared by every graph generator.

Why its own module: :mod:`socium.platform.graph` and :mod:`socium.platform.twitter_graph` both
dedupe edge keys, and graph calls the twitter generator; a leaf both import keeps them out of a cycle.
"""

from __future__ import annotations

import numpy as np


def sorted_unique(key: np.ndarray) -> np.ndarray:
    """Sort and dedupe; ``np.unique`` in numpy 2.4 took 13 s on 10^7 int64 keys where sort+mask takes 0.2 s."""
    if len(key) > 1 and not np.all(key[1:] > key[:-1]):  # generators already give sorted, unique keys
        key = np.sort(key)
        key = key[np.concatenate(([True], key[1:] != key[:-1]))]
    return key
