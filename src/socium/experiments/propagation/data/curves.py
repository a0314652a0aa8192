"""Per-minute propagation curves and their NRMSE, shared by simulated and real cascades.

OASIS (arXiv 2411.11581, App. F.2) judges an information-spreading run by how far its per-minute
scale, depth and max-breadth curves lie from the real cascade's. Real trees and simulated events
both go through :func:`cascade_curves_from_events`, so a difference between the two curves can only
come from the cascades themselves, never from two implementations of "depth" drifting apart.

Conventions (they match OASIS's shipped real curves for ``False_Business_0``):

* index ``t`` of a curve is minute ``t`` since the source post, ``t = 0 .. minutes - 1``;
  a node counts at minute ``t`` when its time is ``<= t``;
* ``scale`` counts every node reached, the root included (so ``scale[0] == 1`` for a lone root);
* ``depth`` is the largest depth reached (root = 0);
* ``max_breadth`` is the largest number of nodes at one depth ``>= 1`` (the root level is left
  out, so a cascade nobody has shared yet has breadth 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
from numpy.typing import ArrayLike

from socium.trace.queries.curves import (  # noqa: F401 - re-exported: the curves live in the metrics layer
    CURVE_NAMES,
    DEFAULT_MINUTES,
    CascadeDataError,
    cascade_curves_from_events,
    node_depths,
)


def nrmse(sim: ArrayLike, real: ArrayLike, minutes: int = DEFAULT_MINUTES) -> float:
    """RMSE over the first ``minutes`` minutes divided by the real curve's maximum there.

    Normalising by the real maximum makes errors comparable between a 20-user and a 2,000-user
    cascade. When the real curve is all zero (nobody shared within the window) there is nothing to
    normalise by, so the plain RMSE in the curve's own units is returned: 0 when the simulation also
    stays at zero, and otherwise a finite number that still ranks runs, instead of ``inf`` that
    would poison an average over cascades.
    """
    s = np.asarray(sim, dtype=np.float64)
    r = np.asarray(real, dtype=np.float64)
    if minutes < 1:
        raise CascadeDataError(f"minutes must be >= 1, got {minutes}")
    if s.ndim != 1 or r.ndim != 1:
        raise CascadeDataError("curves must be one-dimensional")
    if s.shape[0] < minutes or r.shape[0] < minutes:
        # Padding would have to guess what happened after a run stopped; make the caller decide.
        raise CascadeDataError(f"curves need at least {minutes} minutes, got sim={s.shape[0]} real={r.shape[0]}")
    s, r = s[:minutes], r[:minutes]
    if not (np.isfinite(s).all() and np.isfinite(r).all()):
        raise CascadeDataError("curves contain NaN or infinite values")
    rmse = math.sqrt(float(np.mean((s - r) ** 2)))
    peak = float(r.max())
    return rmse / peak if peak > 0 else rmse


def nrmse_curves(
    sim: Mapping[str, ArrayLike], real: Mapping[str, ArrayLike], minutes: int = DEFAULT_MINUTES
) -> dict[str, float]:
    """NRMSE of each of :data:`CURVE_NAMES` for one simulated/real cascade pair."""
    missing = [k for k in CURVE_NAMES if k not in sim or k not in real]
    if missing:
        raise CascadeDataError(f"curve dicts lack {missing}; expected keys {list(CURVE_NAMES)}")
    return {k: nrmse(sim[k], real[k], minutes) for k in CURVE_NAMES}


def mean_nrmse(
    pairs: Iterable[tuple[Mapping[str, ArrayLike], Mapping[str, ArrayLike]]],
    minutes: int = DEFAULT_MINUTES,
) -> dict[str, float]:
    """Per-curve NRMSE averaged over ``(sim, real)`` cascade pairs, each cascade weighted equally.

    Equal weights follow OASIS: a large cascade should not drown out the many small ones.
    """
    totals = dict.fromkeys(CURVE_NAMES, 0.0)
    n = 0
    for sim, real in pairs:
        for k, v in nrmse_curves(sim, real, minutes).items():
            totals[k] += v
        n += 1
    if n == 0:
        raise CascadeDataError("mean_nrmse needs at least one (sim, real) pair")
    return {k: v / n for k, v in totals.items()}
