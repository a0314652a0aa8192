"""What a tree population is, in a few recorded words: the fit file records it as ``meta.training`` and
the transfer check describes a scored population the same way (its own module so that the fit file and
the transfer study, which reads fit files, do not import each other)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from socium.errors import InputFileError
from socium.experiments.propagation.data.realcascades import CascadeTree, oasis_cascade_ids


def _oasis_ids() -> set[str]:
    try:
        return set(oasis_cascade_ids())
    except InputFileError:  # no research data here: nothing is known to be OASIS's
        return set()


def population_kind(train_args: Sequence[str] = (), ids: Sequence[str] = (), files: bool = False) -> str:
    """One word for a tree population: 'oasis' (OASIS's 134 Twitter15 cascades), 'twitter15', 'tree files'
    or 'mixed'. From ``socium fit propagation --train`` values, or from a spec's cascade ids / own files."""
    kinds = set()
    for a in train_args:
        kinds.add(a if a in ("oasis", "twitter15") else "tree files")
    if ids:
        kinds.add("oasis" if set(ids) <= _oasis_ids() else "twitter15")
    if files:
        kinds.add("tree files")
    return kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "unknown")


def training_population(
    train_args: Sequence[str], trees: Mapping[str, CascadeTree], kind: str | None = None
) -> dict[str, Any]:
    """What a fit was trained on, for its parameter file's ``meta.training``: data, kind, tree count,
    sizes and ids."""
    sizes = np.array([len(t.nodes) for t in trees.values()], float)
    return {
        "data": [str(a) for a in train_args],
        "kind": kind or population_kind(train_args),
        "n_trees": len(trees),
        "users_median": float(np.median(sizes)) if len(sizes) else 0.0,
        "users_p10_p90": [float(x) for x in np.percentile(sizes, [10, 90])] if len(sizes) else [],
        "ids": list(trees),
    }
