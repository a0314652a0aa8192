"""Figures of intervention effects estimated on real cascades (the propagation study's counterfactual).

Kept apart from :mod:`socium.reporting.plots` (one module per kind of figure, each small): the numbers
drawn are exactly the summary's, so the page's table and its picture cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from socium.reporting.plots import save_figure

ACT_STYLES = (("black", "o"), ("dimgray", "s"), ("darkgray", "^"), ("silver", "D"), ("gainsboro", "v"))
"""Action minutes in grays with their own markers, so they never share a colour with the curves' strategies."""


def counterfactual_figure(
    path: Path,
    arms: Sequence[Mapping[str, Any]],
    curves: Mapping[str, Sequence[float]],
    real_curve: Sequence[float] | None,
    observe_minutes: int,
    n: int,
    measure: str = "reach",
) -> Path:
    """Left: each strategy's relative change in reach (%, 95% two-level bootstrap interval), one marker per
    action minute. Right: the pooled mean reach curve of the no-intervention forecast and of each
    strategy at the first action minute, beside the real cascades' mean.

    ``arms``: dicts with ``strategy``, ``act_minute``, ``estimate``, ``low``, ``high`` (shares, not %) and,
    when known, ``real_future``: the same intervention applied to the real cascades' own future (a cross).
    ``curves``: arm key (``none`` and ``name@minute``) -> mean scale per minute.
    """
    strategies = list(dict.fromkeys(a["strategy"] for a in arms))
    acts = sorted({int(a["act_minute"]) for a in arms})
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 0.5 * len(strategies) + 3.2))
    off = np.linspace(-0.25, 0.25, len(acts)) if len(acts) > 1 else np.zeros(1)
    for j, act in enumerate(acts):
        rows = [a for a in arms if int(a["act_minute"]) == act]
        y = np.array([strategies.index(a["strategy"]) for a in rows]) + off[j]
        est = np.array([100 * a["estimate"] for a in rows])
        lo = np.array([100 * (a["low"] if a["low"] is not None else a["estimate"]) for a in rows])
        hi = np.array([100 * (a["high"] if a["high"] is not None else a["estimate"]) for a in rows])
        ax.errorbar(
            est,
            y,
            xerr=[est - lo, hi - est],
            fmt=ACT_STYLES[j % len(ACT_STYLES)][1],
            ms=5,
            capsize=3,
            color=ACT_STYLES[j % len(ACT_STYLES)][0],
            label=f"acting at minute {act}",
        )
        real = [(yy, 100 * a["real_future"]) for yy, a in zip(y, rows) if a.get("real_future") is not None]
        if real:
            ax.scatter(
                [r for _, r in real],
                [yy for yy, _ in real],
                marker="x",
                s=28,
                color="tab:blue",
                zorder=3,
                label="the same intervention on the real future (x)" if j == 0 else None,
            )
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(strategies)), strategies)
    ax.invert_yaxis()
    what = "reach by the window's end" if measure == "reach" else "eventual reach"
    ax.set_xlabel(f"change in {what} vs no intervention (%)")
    ax.set_title(f"Effect per strategy, {n} held-out cascades\n(95% bootstrap over cascades and replicas)", fontsize=10)
    minutes = len(next(iter(curves.values())))
    x = np.arange(minutes)
    if real_curve is not None:
        bx.plot(x, real_curve, color="black", lw=2.0, label="real (Twitter15), mean")
    bx.plot(x, curves["none"], color="tab:blue", lw=1.8, label="forecast, no intervention")
    first = acts[0]
    for k, name in enumerate(strategies):
        key = f"{name}@{first}"
        if key in curves:
            bx.plot(
                x, curves[key], lw=1.3, ls="--", color=plt.get_cmap("tab10")(k + 2), label=f"{name} at minute {first}"
            )
    bx.axvline(observe_minutes, color="gray", ls=":", lw=1.0, label=f"end of the observed {observe_minutes} minutes")
    bx.set_xlabel("minutes since the source post")
    bx.set_ylabel("users reached (mean over cascades)")
    bx.set_ylim(bottom=0)
    bx.set_title(f"Mean reach curve, acting at minute {first}", fontsize=10)
    return save_figure(fig, path, [ax, bx], ncol=3)
