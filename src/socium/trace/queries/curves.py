"""Per-minute propagation curves (scale, depth, max breadth) of a cascade given as parent links and times.

Part of the metrics layer because simulated cascades (:func:`socium.trace.queries.cascades.propagation_curves`)
and real Twitter trees (``socium.experiments.propagation.data.realcascades``) must go through one
implementation: a difference between two curves can then only come from the cascades themselves.

Conventions (they match OASIS's shipped real curves for ``False_Business_0``):

* index ``t`` of a curve is minute ``t`` since the source post, ``t = 0 .. minutes - 1``;
  a node counts at minute ``t`` when its time is ``<= t``;
* ``scale`` counts every node reached, the root included (so ``scale[0] == 1`` for a lone root);
* ``depth`` is the largest depth reached (root = 0);
* ``max_breadth`` is the largest number of nodes at one depth ``>= 1`` (the root level is left
  out, so a cascade nobody has shared yet has breadth 0).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from socium.errors import SociumError

CURVE_NAMES: tuple[str, ...] = ("scale", "depth", "max_breadth")
"""Keys of every curve dict; the same names as OASIS's ``real_world_prop_data`` files."""

DEFAULT_MINUTES = 150
"""OASIS compares only the first 150 minutes; later delays are dominated by outliers."""


class CascadeDataError(SociumError, ValueError):
    """Arrays handed to the curve functions do not describe a cascade (bad parent, NaN time, ...).

    Also a ``ValueError`` so generic numeric callers that expect one still catch it.
    """


def node_depths(parent: ArrayLike) -> NDArray[np.int64]:
    """Depth of every node from parent indices (``-1`` = a root), rejecting cycles and bad indices.

    Parents may come after their children in the arrays: simulated event logs are not guaranteed
    to be in topological order, so depths are resolved by walking up with memoisation.
    """
    par = np.asarray(parent, dtype=np.int64)
    if par.ndim != 1:
        raise CascadeDataError(f"parent must be one-dimensional, got shape {par.shape}")
    n = par.shape[0]
    bad = (par < -1) | (par >= n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CascadeDataError(f"parent[{i}] = {int(par[i])} is not -1 or a node index in [0, {n})")
    depth = np.full(n, -1, dtype=np.int64)
    plist = par.tolist()
    for start in range(n):
        if depth[start] >= 0:
            continue
        chain: list[int] = []
        on_chain: set[int] = set()
        node = start
        while node != -1 and depth[node] < 0:
            if node in on_chain:
                raise CascadeDataError(f"parent links form a cycle through node {node}")
            on_chain.add(node)
            chain.append(node)
            node = plist[node]
        base = -1 if node == -1 else int(depth[node])
        for k, member in enumerate(reversed(chain)):
            depth[member] = base + 1 + k
    return depth


def cascade_curves_from_events(
    parent: ArrayLike, time_min: ArrayLike, minutes: int = DEFAULT_MINUTES
) -> dict[str, NDArray[np.int64]]:
    """Scale, depth and max-breadth per minute for nodes given as parent index and time in minutes.

    Works on plain arrays so a simulator can call it on its own event log without building a tree
    object first; several ``-1`` parents are allowed (a forest of seeds). Times are used as given:
    a child timed before its parent counts at its own time, which is why the real-data loader
    clamps such children before calling this.
    """
    if minutes < 1:
        raise CascadeDataError(f"minutes must be >= 1, got {minutes}")
    times = np.asarray(time_min, dtype=np.float64)
    depth = node_depths(parent)
    if times.shape != depth.shape:
        raise CascadeDataError(f"time_min has shape {times.shape} but parent has {depth.shape}")
    if np.isnan(times).any():
        raise CascadeDataError(f"time_min[{int(np.flatnonzero(np.isnan(times))[0])}] is NaN")
    order = np.argsort(times, kind="stable")
    t_sorted = times[order]
    d_sorted = depth[order]
    minute_grid = np.arange(minutes, dtype=np.float64)
    # Number of nodes with time <= t; prefix-based values are read at that count.
    reached = np.searchsorted(t_sorted, minute_grid, side="right")

    running_depth = np.zeros(len(order) + 1, dtype=np.int64)
    running_breadth = np.zeros(len(order) + 1, dtype=np.int64)
    if len(order):
        running_depth[1:] = np.maximum.accumulate(d_sorted)
        level_count: dict[int, int] = {}
        best = 0
        for k, d in enumerate(d_sorted.tolist(), start=1):
            if d >= 1:
                c = level_count.get(d, 0) + 1
                level_count[d] = c
                best = max(best, c)
            running_breadth[k] = best
    return {
        "scale": reached.astype(np.int64),
        "depth": running_depth[reached],
        "max_breadth": running_breadth[reached],
    }
