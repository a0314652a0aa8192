"""Matplotlib figures for experiment reports; every function writes one PNG and returns its path.

Kept apart from the report logic so the numbers (series.json) and the pictures cannot disagree:
each plot takes exactly the series the report also writes out, and intervals drawn are the ones
the tables print. The Agg backend is forced, so reports render on headless machines and in tests.

Conventions every figure follows: a title saying what it shows, axis labels with units, integer
ticks on count axes, legends below the axes (never over data), sources named for what they are
("real (Twitter15)", "LLM (SmolLM2-135M-Instruct)", "IC null"), every reference line labelled,
and bars of height zero drawn as a visible zero with their value printed.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from socium.core.intervals import MIN_N, mean_interval, nonnegative_interval
from socium.trace.safe_write import replace_file

CURVE_TITLES = {"scale": "scale (users reached)", "depth": "depth", "max_breadth": "max breadth"}
CURVE_YLABELS = {
    "scale": "users reached (count)",
    "depth": "depth (hops from the source)",
    "max_breadth": "users on the widest level (count)",
}
STYLE: dict[str, dict[str, Any]] = {
    "real": {"color": "black", "lw": 2.0},
    "model": {"color": "tab:blue", "lw": 1.6},
    "null": {"color": "tab:orange", "lw": 1.4, "ls": "--"},
    "run": {"color": "tab:blue", "lw": 1.6},
    "local": {"color": "tab:blue", "lw": 1.6},
    "mindreader": {"color": "tab:green", "lw": 1.6},
    "omniscient": {"color": "tab:red", "lw": 1.6},
    "omniscient_agents": {"color": "tab:red", "lw": 1.6, "ls": ":"},  # omniscient's knowledge, one call per agent
}
GROUP_COLORS = {
    "up": "tab:green",
    "control": "tab:gray",
    "down": "tab:red",
    "conservative": "tab:purple",
    "progressive": "tab:cyan",
}
BIMODALITY_UNIFORM = 5 / 9


def _label(labels: Mapping[str, str] | None, name: str) -> str:
    return (labels or {}).get(name, name)


def _legend_strip(fig: Any, handles: list[Any], names: list[str], ncol: int) -> float:
    """Draw the figure legend at the bottom, measured: fewer columns while it is wider than the figure,
    a wider figure when one column still is, a taller one when the strip would take over half of it.
    Returns the strip's height as a share of the figure. Why measured: the old guess of ~0.06 per row
    cut long legends (``group_means.png``, a comparison's mean-cascade figure) at the canvas edge."""
    renderer = fig.canvas.get_renderer()
    cols = max(1, min(ncol, len(names)))
    while True:
        leg = fig.legend(
            handles, names, loc="lower center", bbox_to_anchor=(0.5, 0.005), ncol=cols, frameon=False, fontsize=8
        )
        box = leg.get_window_extent(renderer)
        if box.width <= 0.98 * fig.bbox.width or cols == 1:
            break
        leg.remove()
        cols -= 1
    if box.width > 0.98 * fig.bbox.width:  # one long label: widen the canvas to hold it
        fig.set_figwidth(fig.get_figwidth() * box.width / (0.96 * fig.bbox.width))
    share = (box.height + 6) / fig.bbox.height
    if share > 0.45:  # many rows: grow the canvas so the axes keep their height
        fig.set_figheight(fig.get_figheight() * share / 0.45)
        share = (box.height + 6) / fig.bbox.height
    return share


def _save(fig: Any, path: Path, legend_from: Any = None, ncol: int | None = None) -> Path:
    """Save with the legend of ``legend_from`` (an axes or a list of them) in its own strip under the
    axes, so it never covers data and always lies inside the canvas."""
    bottom = 0.0
    if legend_from is not None:
        seen: dict[str, Any] = {}
        for ax in legend_from if isinstance(legend_from, (list, tuple, np.ndarray)) else [legend_from]:
            for h, n in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(n, h)
        if seen:
            bottom = _legend_strip(fig, list(seen.values()), list(seen), ncol or min(len(seen), 4))
    fig.tight_layout(rect=(0, bottom, 1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, dpi=110, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    replace_file(path, buf.getvalue())  # a link planted at the name is replaced, never written through
    return path


def save_figure(fig: Any, path: Path, legend_from: Any = None, ncol: int | None = None) -> Path:
    """The one way every figure module saves (legend in its own strip under the axes, Agg, 110 dpi)."""
    return _save(fig, path, legend_from, ncol)


def _fit_whiskers(ax: Any, lows: Sequence[float], highs: Sequence[float]) -> None:
    """Widen the y axis to every interval's ends (and 8% room above for the printed values): a limit set
    from the bars alone cut the whiskers of the next model's bars (the CV report's NRMSE figure)."""
    lo, hi = ax.get_ylim()
    ends = [float(v) for v in (*lows, *highs) if v is not None and math.isfinite(float(v))]
    if not ends:
        return
    span = max(hi, *ends) - min(lo, *ends) or 1.0
    ax.set_ylim(min(lo, min(ends) - 0.03 * span if min(ends) < lo else lo), max(hi, max(ends) + 0.08 * span))


def _integer(ax: Any, axis: str = "y") -> None:
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_locator(MaxNLocator(integer=True))


def t_interval(values: Sequence[float], lo: float | None = None) -> tuple[float, float, float] | None:
    """Mean and 95% interval over independent units (cascades, seeds, episodes) by the one policy of
    :mod:`socium.core.intervals`: None below 3 units (a 1-degree-of-freedom t or a zero-width n = 1
    interval says nothing). ``lo=0.0`` marks a quantity that cannot be negative (an error measure, a
    reach): it gets a percentile bootstrap, whose bounds stay within the values, instead of a t clipped at 0."""
    v = [x for x in values if x is not None and not math.isnan(x)]
    iv = nonnegative_interval(v) if lo == 0.0 and all(x >= 0 for x in v) else mean_interval(v)
    if not iv.has_bounds or iv.estimate is None or iv.low is None or iv.high is None:
        return None
    return iv.estimate, iv.low if lo is None else max(lo, iv.low), iv.high


def _bar_values(ax: Any, bars: Any, values: Sequence[float | None], fmt: str = "{:.2f}") -> None:
    """Print each bar's value; a zero bar gets a visible tick at zero, a missing one 'n/a'."""
    for rect, v in zip(bars, values):
        x = rect.get_x() + rect.get_width() / 2
        if v is None or (isinstance(v, float) and math.isnan(v)):
            ax.annotate("n/a", (x, 0), ha="center", va="bottom", fontsize=7, color="dimgray")
            continue
        if v == 0:
            ax.plot(
                [rect.get_x(), rect.get_x() + rect.get_width()],
                [0, 0],
                color=rect.get_facecolor(),
                lw=3,
                solid_capstyle="butt",
            )
        # left of the bar's centre line, so an error bar drawn there never runs through the number
        ax.annotate(
            fmt.format(v), (x, v), xytext=(-3, 2 if v >= 0 else -9), textcoords="offset points", ha="right", fontsize=7
        )
    finite = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    lo, hi = ax.get_ylim()
    if finite and max(finite) > 0 and hi < max(finite) * 1.1:  # room above the tallest bar for its number
        ax.set_ylim(lo, max(finite) * 1.1)


# ---- cascades ------------------------------------------------------------------------------------
def cascade_curves(
    path: Path, title: str, series: Mapping[str, Mapping[str, Sequence[float]]], labels: Mapping[str, str] | None = None
) -> Path:
    """Scale, depth and max breadth per minute, one line per source (real, model, null, ...)."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    for ax, key in zip(axes, CURVE_TITLES):
        for name, curves in series.items():
            y = curves.get(key)
            if y is not None:
                ax.plot(np.arange(len(y)), y, label=_label(labels, name), **STYLE.get(name, {}))
        ax.set_title(CURVE_TITLES[key], fontsize=10)
        ax.set_xlabel("minutes since the source post")
        ax.set_ylabel(CURVE_YLABELS[key])
        ax.set_ylim(bottom=0)
        _integer(ax)
    fig.suptitle(title, fontsize=11)
    return _save(fig, path, axes[0])


def mean_cascade_curves(
    path: Path,
    title: str,
    per_source: Mapping[str, Sequence[Mapping[str, Sequence[float]]]],
    labels: Mapping[str, str] | None = None,
    bands: bool = True,
) -> Path:
    """Mean curve over cascades per source with its 95% t band (cascades are the independent units; no band
    below 3 cascades, the one interval policy of socium.core.intervals);
    ``bands=False`` for an overview of many sources, whose overlapping bands would hide the lines."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    for ax, key in zip(axes, CURVE_TITLES):
        for name, curves in per_source.items():
            ys = [np.asarray(c[key], dtype=float) for c in curves if c.get(key) is not None]
            if not ys:
                continue
            n = min(len(y) for y in ys)
            arr = np.stack([y[:n] for y in ys])
            mean = arr.mean(axis=0)
            style = STYLE.get(name, {})
            ax.plot(np.arange(n), mean, label=f"{_label(labels, name)} (mean of {len(ys)})", **style)
            if bands and len(ys) >= MIN_N:
                from scipy.special import stdtrit

                half = float(stdtrit(len(ys) - 1, 0.975)) * arr.std(axis=0, ddof=1) / math.sqrt(len(ys))
                ax.fill_between(np.arange(n), mean - half, mean + half, color=style.get("color"), alpha=0.15, lw=0)
        ax.set_title(CURVE_TITLES[key], fontsize=10)
        ax.set_xlabel("minutes since the source post")
        ax.set_ylabel(CURVE_YLABELS[key])
        ax.set_ylim(bottom=0)
        _integer(ax)  # a mean of counts may be fractional, its axis still counts users and hops
    fig.suptitle(title, fontsize=11)
    return _save(fig, path, axes[0])


def nrmse_bars(
    path: Path,
    nrmse: Mapping[str, Mapping[str, float]],
    reference: float | None,
    ci: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
    labels: Mapping[str, str] | None = None,
    n: int | None = None,
    ci_kind: str = "95% t interval",
) -> Path:
    """Mean NRMSE per curve for each model with its 95% interval, and OASIS's reported level."""
    fig, ax = plt.subplots(figsize=(7, 4))
    keys = list(CURVE_TITLES)
    width = 0.8 / max(len(nrmse), 1)
    tops: list[float] = []
    for i, (name, vals) in enumerate(nrmse.items()):
        ys = [vals[k] for k in keys]
        err = None
        if ci and name in ci:
            err = np.array(
                [[max(ys[j] - ci[name][k][0], 0.0), max(ci[name][k][1] - ys[j], 0.0)] for j, k in enumerate(keys)]
            ).T
            tops += [ci[name][k][1] for k in keys]
        bars = ax.bar(
            np.arange(len(keys)) + i * width,
            ys,
            width,
            yerr=err,
            capsize=3,
            label=_label(labels, name),
            color=STYLE.get(name, {}).get("color"),
        )
        _bar_values(ax, bars, ys)
    if reference is not None:
        # over the scale bars only: OASIS reported no depth or breadth NRMSE to compare with
        ax.plot(
            [-width / 2 - 0.05, (len(nrmse) - 0.5) * width + 0.05],
            [reference, reference],
            color="black",
            ls=":",
            label=f"reference: OASIS reported ~{reference:.0%} (scale, 150 min)",
        )
    ax.set_xticks(np.arange(len(keys)) + width * (len(nrmse) - 1) / 2, [CURVE_TITLES[k] for k in keys])
    ax.set_ylabel("NRMSE (RMSE / max of the real curve)")
    ax.set_xlabel("cascade curve")
    ax.set_ylim(bottom=0)
    _fit_whiskers(ax, [], tops)
    over = f" over {n} cascade{'s' if n != 1 else ''}" if n else ""
    ax.set_title(f"Mean NRMSE per curve{over} (lower is better; bars: {ci_kind})", fontsize=10)
    return _save(fig, path, ax)


# ---- groups (herding, polarisation) --------------------------------------------------------------
def group_trajectories(
    path: Path,
    series: Mapping[str, Mapping[str, Sequence[float | None]]],
    ylabel: str,
    title: str,
    xs: Sequence[float] | None = None,
    xlabel: str = "step",
    labels: Mapping[str, str] | None = None,
    reference: tuple[float, str] | None = None,
    end_ci: Mapping[str, Mapping[str, Sequence[float] | None]] | None = None,
) -> Path:
    """One line per (run, group): solid for the model, dashed for the null; ``xs`` are the real x values.
    ``end_ci`` (run -> group -> (lo, hi)) draws the table's interval of each line's last value just right
    of the last step, one bar per line side by side (solid: model, dashed: null), so no two overlap."""
    fig, ax = plt.subplots(figsize=(7, 4))
    k = 0
    for run, groups in series.items():
        for g, y in groups.items():
            ci = (end_ci or {}).get(run, {}).get(g)
            if len(y) and ci is not None and y[-1] is not None and xs is not None and len(xs) >= len(y):
                x_end = float(xs[len(y) - 1]) + 0.15 + 0.08 * k
                k += 1
                err = [[max(float(y[-1]) - ci[0], 0.0)], [max(ci[1] - float(y[-1]), 0.0)]]
                eb = ax.errorbar([x_end], [y[-1]], yerr=err, color=GROUP_COLORS.get(g), capsize=3, lw=1, fmt="o", ms=3)
                eb.lines[2][0].set_linestyle("--" if run == "null" else "-")
            if len(y):
                yy = np.array([np.nan if v is None else v for v in y], dtype=float)
                x = np.asarray(xs[: len(yy)] if xs is not None else np.arange(len(yy)))
                ax.plot(
                    x,
                    yy,
                    color=GROUP_COLORS.get(g),
                    ls="--" if run == "null" else "-",
                    marker="o",
                    ms=3,
                    label=f"{_label(labels, run)}: {g}",
                )
    if reference is not None:
        ax.axhline(reference[0], color="black", ls=":", lw=1, label=reference[1])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    _integer(ax, "x")
    return _save(fig, path, ax, ncol=3)


def group_bars(
    path: Path,
    values: Mapping[str, Mapping[str, float | None]],
    cis: Mapping[str, Mapping[str, Any]],
    ylabel: str,
    title: str,
    labels: Mapping[str, str] | None = None,
    reference: tuple[float, str] | None = None,
    xlabel: str = "treatment group",
) -> Path:
    """A bar per (group, run) with the same 95% interval the table prints; zero bars visible, values printed."""
    fig, ax = plt.subplots(figsize=(7, 4))
    runs = list(values)
    groups = list(dict.fromkeys(g for r in runs for g in values[r]))
    width = 0.8 / max(len(runs), 1)
    ends: list[float] = []
    for i, run in enumerate(runs):
        ys = [values[run].get(g) for g in groups]
        plot_ys = [0.0 if y is None else y for y in ys]
        err = []
        for g, y in zip(groups, ys):
            ci = cis.get(run, {}).get(g)
            ok = y is not None and ci and ci[0] is not None and ci[1] is not None
            err.append([y - ci[0], ci[1] - y] if ok else [np.nan, np.nan])  # type: ignore[index]  # no cap
            if ok:
                ends += [ci[0], ci[1]]  # type: ignore[index]
        bars = ax.bar(
            np.arange(len(groups)) + i * width,
            plot_ys,
            width,
            yerr=np.array(err).T if err else None,
            capsize=3,
            label=_label(labels, run),
            color=STYLE.get(run, {}).get("color"),
        )
        _bar_values(ax, bars, ys)
    if reference is not None:
        ax.axhline(reference[0], color="black", ls=":", lw=1, label=reference[1])
    _fit_whiskers(ax, ends, ends)
    ax.set_xticks(np.arange(len(groups)) + width * (len(runs) - 1) / 2, groups)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    return _save(fig, path, ax)


# ---- stances -------------------------------------------------------------------------------------
def stance_distributions(
    path: Path, series: Mapping[str, Mapping[str, Sequence[float]]], labels: Mapping[str, str] | None = None
) -> Path:
    """Violins of stance values per survey step (step -1 = assigned stances), one panel per run."""
    n = max(len(series), 1)
    fig, axes = plt.subplots(1, n, figsize=(5.5 * n, 3.8), squeeze=False)
    for ax, (run, by_step) in zip(axes[0], series.items()):
        steps = [s for s, v in by_step.items() if len(v) > 1]
        if steps:
            ax.violinplot([by_step[s] for s in steps], positions=range(len(steps)), showmeans=True)
            ax.set_xticks(range(len(steps)), steps)
        ax.axhline(0, color="gray", lw=0.6, ls=":")
        ax.set_ylim(-1.05, 1.05)
        ax.set_xlabel("simulation step of the survey (-1 = assigned stance)")
        ax.set_ylabel("stance (-1 to 1)")
        ax.set_title(f"{_label(labels, run)}: stance distribution per survey", fontsize=10)
    return _save(fig, path)


STANCE_KEYS = {
    "mean_abs": ("mean |stance| (extremity)", "mean |stance| (0 to 1)"),
    "variance": ("variance of stances", "variance (stance units²)"),
    "bimodality": ("bimodality coefficient", "bimodality coefficient"),
}


def stance_trajectories(
    path: Path, series: Mapping[str, Mapping[str, Sequence[float | None]]], labels: Mapping[str, str] | None = None
) -> Path:
    """Mean |stance|, variance and bimodality per survey step for each run."""
    fig, axes = plt.subplots(1, len(STANCE_KEYS), figsize=(12, 3.8))
    for ax, (key, (title, ylabel)) in zip(axes, STANCE_KEYS.items()):
        for run, s in series.items():
            y = np.array([np.nan if v is None else v for v in s[key]], dtype=float)
            ax.plot(
                s["steps"],
                y,
                marker="o",
                label=_label(labels, run),
                **{k: v for k, v in STYLE.get(run, {}).items() if k != "lw"},
            )
        if key == "bimodality":
            ax.axhline(
                BIMODALITY_UNIFORM,
                color="black",
                ls=":",
                label="5/9: a uniform distribution's coefficient (above: two camps)",
            )
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("simulation step of the survey (-1 = assigned)")
        ax.set_ylabel(ylabel)
        _integer(ax, "x")
    fig.suptitle("Stance extremity, spread and bimodality over time", fontsize=11)
    return _save(fig, path, list(axes))


# ---- perspectives --------------------------------------------------------------------------------
def perspective_bars(path: Path, tokens: Mapping[str, tuple[float, float]]) -> Path:
    """Prompt and completion tokens per perspective (stacked), totals printed."""
    fig, ax = plt.subplots(figsize=(7, 4))
    names = list(tokens)
    pt = [tokens[n][0] for n in names]
    ct = [tokens[n][1] for n in names]
    ax.bar(names, pt, label="prompt tokens", color="tab:blue")
    bars = ax.bar(names, ct, bottom=pt, label="completion tokens", color="tab:orange")
    for rect, a, b in zip(bars, pt, ct):
        ax.annotate(
            f"{a + b:,.0f}",
            (rect.get_x() + rect.get_width() / 2, a + b),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            fontsize=8,
        )
    if pt:  # room above the tallest bar for its total
        ax.set_ylim(0, max(a + b for a, b in zip(pt, ct)) * 1.1 or 1)
    ax.set_ylabel("tokens (count, all runs)")
    ax.set_xlabel("perspective")
    ax.set_title("LLM token cost per perspective", fontsize=10)
    _integer(ax)
    return _save(fig, path, ax)


def perspective_lines(
    path: Path,
    title: str,
    xlabel: str,
    ylabel: str,
    series: Mapping[str, tuple[Sequence[float], Sequence[float | None]]],
    integer_y: bool = False,
) -> Path:
    """One line per perspective (x, y), e.g. the mean cascade scale or mean |stance| over time."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, (x, y) in series.items():
        yy = np.array([np.nan if v is None else v for v in y], dtype=float)
        ax.plot(x, yy, marker="o" if len(x) < 30 else None, ms=3, label=name, **STYLE.get(name, {}))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if integer_y:
        _integer(ax)
    return _save(fig, path, ax)
