"""Figures of ``benchmarks/foryou_study.py`` (PNG, matplotlib): measures per world and recommender with
their seed-level intervals and every seed's value, the quickstart cascade-size CCDF, and each world's own
outcome; with the added arms (``--embeddings``, ``--fitted``) the same measures for the foryou variants
and the fitted value model's reliability diagram. Kept apart so the study script stays about running and measuring."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402

from socium.core.intervals import proportion_interval  # noqa: E402
from socium.recsys.foryou.value_model import HEADS  # noqa: E402

ORDER = ("chronological", "x", "reddit_hot", "foryou", "random")
COLOURS = {
    "chronological": "#4d4d4d",
    "x": "#1f77b4",
    "reddit_hot": "#ff7f0e",
    "foryou": "#d62728",
    "random": "#9467bd",
    "x+minilm": "#17becf",
    "foryou+minilm": "#8c564b",
    "foryou+fitted": "#e377c2",
}
ARMS_ORDER = ("x", "x+minilm", "foryou", "foryou+minilm", "foryou+fitted")  # the arms figure's rows
GRID = (  # (measure key, row label); herding's Gini is per post (one account posted every item)
    ("oon", "OON share\n(viewer did not follow author)"),
    ("cross", "cross-stance share\n(viewer and author in\nopposite camps)"),
    ("gini", "Gini of impressions\n(per author; herding:\nper post)"),
    ("cascade_mean", "mean cascade size\n(nodes incl. root)"),
)
WORLDS = ("quickstart", "polarisation", "herding", "propagation")


def _key(world: str, key: str) -> str:
    return ("gini_post" if world == "herding" else "gini_author") if key == "gini" else key


NO_RESHARES = {"polarisation", "herding"}  # their rule-based agents post or vote, never reshare
UNIT_RANGE = {"oon", "gini_author", "gini_post"}  # shares on one [0, 1] axis, comparable across worlds


def _message(ax: Any, text: str) -> None:
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, color="0.35")


def _panel(
    ax: Any, runs: list[dict[str, Any]], summary: dict[str, Any], world: str, key: str, order: tuple[str, ...] = ORDER
) -> None:
    """One measure in one world: a 95% interval bar and the mean per recommender, every seed as a dot."""
    kinds = [k for k in order if k in summary.get(world, {})]
    if key == "cross" and all(summary[world][k][key]["mean"] is None for k in kinds):
        return _message(ax, "not measured:\nno stances in this world")
    if key == "cascade_mean" and world in NO_RESHARES:
        return _message(ax, "every cascade is its root alone:\nthese agents never reshare")
    for y, kind in enumerate(kinds):
        ci = summary[world][kind][key]
        vals = [
            v for v in (r["m"].get(key) for r in runs if r["world"] == world and r["kind"] == kind) if v is not None
        ]
        if ci["mean"] is None:
            ax.text(0.02, y, "n/a (nothing shown: no follow graph)", va="center", fontsize=8,
                    transform=ax.get_yaxis_transform(), color="0.35")  # fmt: skip
            continue
        c = COLOURS.get(kind, "k")
        ax.scatter(vals, y + np.linspace(-0.18, 0.18, len(vals)), s=9, color=c, alpha=0.45, lw=0)
        if ci["lo"] is not None:
            ax.plot([ci["lo"], ci["hi"]], [y, y], color=c, lw=2.5)
        ax.plot([ci["mean"]], [y], marker="|", ms=14, mew=2.5, color=c)
    ax.set_yticks(range(len(kinds)), kinds)
    ax.set_ylim(-0.6, len(kinds) - 0.4)
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    if key in UNIT_RANGE:
        ax.set_xlim(-0.03, 1.03)
    if key == "cross":  # two equal camps mixed at random: half of all exposures cross
        ax.axvline(0.5, color="0.5", ls="--", lw=0.8)
    return None


def measures_figure(
    study: dict[str, Any],
    summary: dict[str, Any],
    path: Path,
    order: tuple[str, ...] = ORDER,
    title: str = "The same worlds under four feeds",
) -> Path:
    worlds = [w for w in WORLDS if w in summary]
    fig, axes = plt.subplots(len(GRID), len(worlds), figsize=(4.2 * len(worlds), 2.6 * len(GRID)), squeeze=False)
    for j, world in enumerate(worlds):
        n = len({r["seed"] for r in study["runs"] if r["world"] == world})
        axes[0, j].set_title(f"{world} (n = {n} seeds)", fontsize=11)
        for i, (key, label) in enumerate(GRID):
            ax = axes[i, j]
            _panel(ax, study["runs"], summary, world, _key(world, key), order)
            if key == "cascade_mean" and world == "quickstart":
                ax.set_xlim(left=1.0)
            if j == 0:
                ax.set_ylabel(label, fontsize=9)
            elif ax.get_yticks().size:
                ax.tick_params(axis="y", labelsize=8)
    sep = ": " if order == ORDER else ":\n"  # the original figure's title as it was; the arms' is wider
    fig.suptitle(
        f"{title}{sep}mean (tick), 95% bootstrap interval over seeds (bar), each seed (dots); rule-based agents",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def ccdf_figure(study: dict[str, Any], path: Path) -> Path:
    """P(size >= s) of quickstart cascades, pooled over seeds, per recommender (log-log)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for kind in ORDER:
        counts: dict[int, int] = {}
        for r in study["runs"]:
            if r["world"] == "quickstart" and r["kind"] == kind:
                for s, c in r["m"]["sizes"].items():
                    counts[int(s)] = counts.get(int(s), 0) + c
        if not counts:
            continue
        sizes = np.array(sorted(counts))
        n = np.array([counts[s] for s in sizes], float)
        ccdf = n[::-1].cumsum()[::-1] / n.sum()
        ax.step(sizes, ccdf, where="post", label=kind, color=COLOURS[kind], lw=1.8)
    seeds = len({r["seed"] for r in study["runs"] if r["world"] == "quickstart"})
    ax.set(xscale="log", yscale="log", xlabel="cascade size s (nodes incl. root)", ylabel="P(size >= s)")
    ax.set_title(f"quickstart: cascade sizes, every original post, {seeds} seeds pooled", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def outcomes_figure(study: dict[str, Any], summary: dict[str, Any], path: Path, order: tuple[str, ...] = ORDER) -> Path:
    """Each opinion world's own outcome per recommender (95% t interval over seeds), against 0 (no effect)."""
    gap = "change of the camp gap (mean of the + camp minus mean of the\n- camp), last survey minus assigned stances"
    herd = "crowd score of up-treated minus control items\n(score-blind voters: no herding in the agents)"
    panels = [("polarisation", "pol_gap", gap), ("herding", "herd_up", herd)]
    panels = [p for p in panels if p[0] in summary]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(6.2 * max(1, len(panels)), 3.6), squeeze=False)
    for ax, (world, key, label) in zip(axes[0], panels, strict=False):
        _panel(ax, study["runs"], summary, world, key, order)
        ax.axvline(0, color="k", lw=0.8)
        ax.set_xlabel(label, fontsize=9)
        n = len({r["seed"] for r in study["runs"] if r["world"] == world})
        ax.set_title(f"{world} (n = {n} seeds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def reliability_figure(study: dict[str, Any], path: Path) -> Path | None:
    """Observed action rate against predicted probability per bin (served runs' rows, seeds pooled), for the
    fitted and the default value model, one panel per (world, head) that saw actions; log axes."""
    from foryou_study_arms import MODELS, active_heads, pooled_bins  # lazy: only with the fitted arm

    panels = []
    for world in WORLDS:
        cells = [r for r in study["runs"] if r["world"] == world and "calibration" in r["m"]]
        panels += [(world, h, cells) for h in active_heads(cells)]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 4.2), squeeze=False)
    for ax, (world, h, cells) in zip(axes[0], panels, strict=True):
        for model, colour, mark in zip(MODELS, (COLOURS["foryou+fitted"], COLOURS["foryou"]), "os", strict=True):
            b = [x for x in pooled_bins(cells, "served", model, h) if x[2] >= 20]  # bins of < 20 rows left out
            ivs = [proportion_interval(k, n) for _, _, n, k, _ in b]
            pred = np.array([x[4] for x in b])
            obs = np.array([iv.estimate for iv in ivs], float)
            err = np.array([[o - iv.low, iv.high - o] for o, iv in zip(obs, ivs, strict=True)]).T
            ax.errorbar(pred, np.maximum(obs, 1e-4), yerr=err if len(b) else None, fmt=mark, color=colour,
                        label=f"{model} model", ms=6, capsize=3)  # fmt: skip
        shown = [v for ln in ax.get_lines() for v in (*ln.get_xdata(), *ln.get_ydata()) if v > 0]
        lim = (max(1e-4, 10 ** np.floor(np.log10(min(shown, default=1e-4) / 1.5))), 1.6)  # p = 1 stays in view
        ax.plot(lim, lim, color="0.5", ls="--", lw=0.8, label="perfect calibration")
        ax.set(xscale="log", yscale="log", xlim=lim, ylim=lim, xlabel="predicted probability (bin mean)")
        ax.set_ylabel("observed action rate (Wilson 95%, nominal)")
        ax.set_title(f"{world}: {HEADS[h]} head, {len(cells)} seeds", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle("foryou's value model on the served runs' rows\n(fitted on each seed's first run; bins of >= 20 rows)",
                 fontsize=10)  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw(study: dict[str, Any], summary: dict[str, Any], folder: Path) -> list[Path]:
    """The study's figures; the original three show the original feeds only (ORDER), whatever arms ran."""
    folder.mkdir(parents=True, exist_ok=True)
    out = [
        measures_figure(study, summary, folder / "foryou-study-measures.png"),
        ccdf_figure(study, folder / "foryou-study-cascades.png"),
        outcomes_figure(study, summary, folder / "foryou-study-outcomes.png"),
    ]
    if any("+" in r["kind"] for r in study["runs"]):
        title = "foryou with MiniLM, and with a value model fitted to its first run, beside the hashing fallback"
        out.append(measures_figure(study, summary, folder / "foryou-study-arms.png", ARMS_ORDER, title))
        out.append(outcomes_figure(study, summary, folder / "foryou-study-arms-outcomes.png", (*ARMS_ORDER, "random")))
        out.append(reliability_figure(study, folder / "foryou-study-calibration.png"))
    return [p for p in out if p is not None]
