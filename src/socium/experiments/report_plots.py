"""Matplotlib figures for experiment reports; every function writes one PNG and returns its path.

Kept apart from the report logic so the numbers (series.json) and the pictures cannot disagree:
each plot takes exactly the series the report also writes out. The Agg backend is forced, so
reports render on headless machines and in tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

CURVE_TITLES = {"scale": "scale (users reached)", "depth": "depth", "max_breadth": "max breadth"}
STYLE = {"real": {"color": "black", "lw": 2.0}, "model": {"color": "tab:blue", "lw": 1.6},
         "null": {"color": "tab:orange", "lw": 1.4, "ls": "--"}}  # fmt: skip
GROUP_COLORS = {"up": "tab:green", "control": "tab:gray", "down": "tab:red",
                "conservative": "tab:purple", "progressive": "tab:cyan"}  # fmt: skip


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def cascade_curves(path: Path, title: str, series: Mapping[str, Mapping[str, Sequence[float]]]) -> Path:
    """Scale, depth and max breadth per minute, one line per source (real, model, null, ...)."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for ax, key in zip(axes, CURVE_TITLES):
        for name, curves in series.items():
            y = curves.get(key)
            if y is not None:
                ax.plot(np.arange(len(y)), y, label=name, **STYLE.get(name, {}))
        ax.set_title(CURVE_TITLES[key])
        ax.set_xlabel("minutes since source")
    axes[0].legend()
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def nrmse_bars(path: Path, nrmse: Mapping[str, Mapping[str, float]], reference: float | None) -> Path:
    """Mean NRMSE per curve for each model, with OASIS's reported level as a dashed line."""
    fig, ax = plt.subplots(figsize=(6, 3.4))
    keys = list(CURVE_TITLES)
    width = 0.8 / max(len(nrmse), 1)
    for i, (name, vals) in enumerate(nrmse.items()):
        ax.bar(np.arange(len(keys)) + i * width, [vals[k] for k in keys], width, label=name, color=STYLE.get(name, {}).get("color"))
    if reference is not None:
        ax.axhline(reference, color="black", ls=":", label=f"OASIS ~{reference:.0%}")
    ax.set_xticks(np.arange(len(keys)) + width * (len(nrmse) - 1) / 2, keys)
    ax.set_ylabel("normalised RMSE")
    ax.legend()
    return _save(fig, path)


def group_trajectories(path: Path, series: Mapping[str, Mapping[str, Sequence[float]]], ylabel: str, title: str) -> Path:
    """One line per (run, group): solid for the model, dashed for the null."""
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for run, groups in series.items():
        for g, y in groups.items():
            if len(y):
                ax.plot(np.arange(len(y)), y, color=GROUP_COLORS.get(g), ls="--" if run == "null" else "-", label=f"{run}: {g}")
    ax.set_xlabel("steps completed")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)


def group_bars(path: Path, values: Mapping[str, Mapping[str, float | None]], cis: Mapping[str, Mapping[str, Any]],
               ylabel: str, title: str) -> Path:  # fmt: skip
    """A bar per (group, run) with its 95% bootstrap interval where there is one."""
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    runs = list(values)
    groups = list(next(iter(values.values()), {}))
    width = 0.8 / max(len(runs), 1)
    for i, run in enumerate(runs):
        ys = [np.nan if values[run][g] is None else values[run][g] for g in groups]
        err = [[0, 0] if not cis.get(run, {}).get(g) or np.isnan(y) else [y - cis[run][g][0], cis[run][g][1] - y]
               for g, y in zip(groups, ys)]  # fmt: skip
        ax.bar(np.arange(len(groups)) + i * width, ys, width, yerr=np.array(err).T if err else None, capsize=3, label=run,
               color=STYLE.get(run, {}).get("color"))  # fmt: skip
    ax.set_xticks(np.arange(len(groups)) + width * (len(runs) - 1) / 2, groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend()
    return _save(fig, path)


def stance_distributions(path: Path, series: Mapping[str, Mapping[str, Sequence[float]]]) -> Path:
    """Violins of stance values per survey step (step -1 = assigned stances), one panel per run."""
    fig, axes = plt.subplots(1, max(len(series), 1), figsize=(5.5 * max(len(series), 1), 3.6), squeeze=False)
    for ax, (run, by_step) in zip(axes[0], series.items()):
        steps = [s for s, v in by_step.items() if len(v) > 1]
        if steps:
            ax.violinplot([by_step[s] for s in steps], positions=range(len(steps)), showmeans=True)
            ax.set_xticks(range(len(steps)), steps)
        ax.set_ylim(-1.05, 1.05)
        ax.set_xlabel("survey step")
        ax.set_ylabel("stance")
        ax.set_title(run)
    return _save(fig, path)


def stance_trajectories(path: Path, series: Mapping[str, Mapping[str, Sequence[float | None]]]) -> Path:
    """Mean |stance|, variance and bimodality per survey step for each run."""
    keys = ("mean_abs", "variance", "bimodality")
    fig, axes = plt.subplots(1, len(keys), figsize=(12, 3.4))
    for ax, key in zip(axes, keys):
        for run, s in series.items():
            y = np.array([np.nan if v is None else v for v in s[key]], dtype=float)
            ax.plot(s["steps"], y, marker="o", label=run, **{k: v for k, v in STYLE.get(run, {}).items() if k != "lw"})
        if key == "bimodality":
            ax.axhline(5 / 9, color="black", ls=":", label="5/9")
        ax.set_title(key)
        ax.set_xlabel("survey step")
    axes[0].legend()
    return _save(fig, path)


def perspective_bars(path: Path, tokens: Mapping[str, tuple[float, float]]) -> Path:
    """Prompt and completion tokens per perspective (stacked)."""
    fig, ax = plt.subplots(figsize=(6, 3.4))
    names = list(tokens)
    pt = [tokens[n][0] for n in names]
    ct = [tokens[n][1] for n in names]
    ax.bar(names, pt, label="prompt")
    ax.bar(names, ct, bottom=pt, label="completion")
    ax.set_ylabel("tokens")
    ax.legend()
    return _save(fig, path)
