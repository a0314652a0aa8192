"""Cross-validation folds over cascade ids: the seeded split and its train / held-out pairs.

Why in the data room: the cross-validation scores on these folds, and the interval calibration of a fit
(:mod:`~socium.experiments.propagation.fit.dispersion`) reproduces them on the training cascades, so both
read one split from below either of them.
"""

from __future__ import annotations

import numpy as np

from socium.errors import ConfigError


def fold_split(ids: list[str], folds: int, seed: int) -> list[list[str]]:
    """Cascade ids shuffled with ``seed`` and cut into ``folds`` near-equal parts."""
    if len(ids) < folds:
        raise ConfigError(f"cv.folds: {folds} folds need at least {folds} cascades, got {len(ids)}")
    perm = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(31,))).permutation(len(ids))
    return [[ids[i] for i in part] for part in np.array_split(perm, folds)]


def train_and_held(ids: list[str], folds: int, seed: int) -> list[tuple[list[str], list[str]]]:
    """Per fold of :func:`fold_split`: the ids fitted on (every other fold, in ``ids`` order) and the held-out ids.

    The one place the split becomes train/held pairs, so the CV and the benchmarks that reproduce a fold
    (``benchmarks/forecast_vs_simulator.py``, ``bench_propagation_cv.py``, ...) cannot drift apart.
    """
    out = []
    for held in fold_split(ids, folds, seed):
        held_set = set(held)
        out.append(([c for c in ids if c not in held_set], held))
    return out
