"""The intervention study's report: reach curves per strategy, effect sizes with CIs, drift tables.

Numbers come from ``results.json`` only (the same series are written to series.json), so a report
can be re-rendered without touching the runs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from socium.config.experiment import ExperimentConfig
from socium.core.intervals import MIN_N, interval_from_dict
from socium.reporting import plots as P
from socium.reporting.card import SMOKE_BACKENDS
from socium.reporting.page import Report, ReportTable, counted, fmt

EFFECT_KEYS = (
    ("false_reach", "false claims: reach (users)"),
    ("true_reach", "true claims: reach (users)"),
    ("false_t50", "false claims: steps to 50% reach"),
    ("false_depth", "false claims: depth (hops)"),
    ("false_engagement", "false claims: engagement (count)"),
    ("stance_abs_change", "mean |stance change| (stance units)"),
)
SHORT_KEYS = ("false_reach", "true_reach", "false_t50")
# the control's levels printed in the terminal: a paper quotes levels next to effects, and a level
# (true claims' speed, say) must carry its interval there too, as every number in results.md must
LEVEL_KEYS = ("false_reach", "true_reach", "false_t50", "true_t50", "false_depth", "true_depth")
TABLE_KEYS = (
    "false_reach",
    "true_reach",
    "false_t50",
    "true_t50",
    "false_depth",
    "true_depth",
    "false_shares",
    "true_shares",
    "false_engagement",
    "true_engagement",
    "false_exposures_all",
    "stance_abs_change",
    "drift_false",
    "drift_true",
)
METRIC_LABELS = {
    "reach": "reach (users)",
    "t50": "steps to 50% reach",
    "depth": "depth (hops)",
    "shares": "shares (count)",
    "engagement": "engagement (count)",
    "exposures_all": "exposures, all (count)",
}


def metric_label(key: str) -> str:
    """'false_reach' -> 'false claims: reach (users)'; other keys read as they are."""
    if key == "stance_abs_change":
        return "mean |stance change| (stance units)"
    if key.startswith("drift_"):
        return f"{key[6:]} claims: drift (1 - similarity)"
    ver, _, metric = key.partition("_")
    return f"{ver} claims: {METRIC_LABELS.get(metric, metric)}" if ver in ("false", "true") else key


def _source_label(src: str, res: dict[str, Any]) -> str:
    if src == "null":
        return "IC null (fitted)"

    model = res.get("model")
    smoke = ", smoke" if model in SMOKE_BACKENDS else ""  # as the other reports name a smoke backend
    return f"LLM ({model}{smoke}), {src.split(':', 1)[1]} perspective"


def _ci(c: dict[str, Any] | None, digits: int = 2, n_seeds: int | None = None) -> str:
    """'mean [lo, hi] (n=3, t) (relative)', or 'mean (n=2: n too small for an interval)' below 3 seeds (the
    policy of socium.core.intervals); with ``n_seeds``, a cell over fewer seeds says how many: steps to 50%
    is undefined for a seed whose claims of that veracity reached nobody, and t_ci drops such seeds."""
    iv = interval_from_dict(c)
    if c is None or iv is None:
        return "n/a"
    s = iv.format(digits)
    s += f" ({c['relative']:+.0%})" if "relative" in c else ""
    n = c.get("n")
    return s + (f" (n = {n} of {n_seeds} seeds)" if n_seeds is not None and n is not None and n < n_seeds else "")


def level_table(src: str, res: dict[str, Any]) -> ReportTable:
    """The control's level of each LEVEL_KEYS metric with its 95% interval over seeds, and over how
    many seeds it was measured (printed in the terminal: the effects table alone gives no levels)."""
    n_seeds = len(res["spec"]["seeds"])
    metrics = res["sources"][src]["strategies"][res["control"]]["summary"]["metrics"]
    rows = []
    for k in LEVEL_KEYS:
        c = metrics.get(k)
        rows.append([metric_label(k), _ci(c), f"{(c or {}).get('n', 0)} of {n_seeds}"])
    return ReportTable(
        f"{_source_label(src, res)}: level under {res['control']}, mean [95% interval over seeds]",
        ["metric", f"{res['control']}: mean [95% interval]", "seeds measured"],
        rows,
        summary=True,
    )


def _step_minutes(res: dict[str, Any]) -> float:
    return float(
        res["spec"].get("base", {}).get("step_minutes") or ExperimentConfig.model_fields["step_minutes"].default
    )


def step_axis(ax: Any, n_steps: int) -> None:
    """Whole steps on x, 0 .. n_steps - 1 with a half-step margin: matplotlib's integer locator falls
    back to fractional ticks (-0.045 .. 0.045) when the data span less than one step."""
    last = max(n_steps - 1, 0)
    ax.set_xlim(-0.5, last + 0.5)
    if last < 10:
        ax.set_xticks(range(last + 1))
    else:
        P._integer(ax, "x")


def curves_plot(path: Path, res: dict[str, Any]) -> Path:
    """Mean cumulative reach per strategy with its 95% t band over seeds (the seeds are the units; no band
    below 3 seeds, the one interval policy)."""
    plt = P.plt
    srcs = list(res["sources"])
    fig, axes = plt.subplots(len(srcs), 2, figsize=(11, 3.4 * len(srcs)), squeeze=False)
    colors = plt.get_cmap("tab10")
    minutes = _step_minutes(res)
    for i, src in enumerate(srcs):
        for j, ver in enumerate(("false", "true")):
            ax = axes[i][j]
            for k, strat in enumerate(res["order"]):
                body = res["sources"][src]["strategies"][strat]
                y = body["summary"].get(f"{ver}_curve") or []
                if not y:
                    continue
                xs = np.arange(len(y))
                ctl = strat == res["control"]
                ax.plot(
                    xs,
                    y,
                    label=strat,
                    color=colors(k % 10),
                    lw=2.2 if ctl else 1.4,
                    ls="-" if ctl else "--",
                    marker="o" if len(y) <= 12 else None,  # a 1-step curve is one point: a line alone is invisible
                    ms=5 if ctl else 3.5,
                )
                seeds = [c for m in body["per_seed"].values() if len(c := m.get(f"{ver}_curve") or []) == len(y)]
                if ctl and len(seeds) >= MIN_N:  # one band: six overlapping ones hide the lines
                    band = [P.t_interval([c[t] for c in seeds], lo=0.0) or (y[t], y[t], y[t]) for t in range(len(y))]
                    ax.fill_between(
                        xs,
                        [b[1] for b in band],
                        [b[2] for b in band],
                        color=colors(k % 10),
                        alpha=0.15,
                        lw=0,
                        label=f"{strat}: 95% bootstrap interval over seeds",
                    )
            ax.set_title(f"{ver} claims, {_source_label(src, res)}", fontsize=9)
            ax.set_xlabel(f"step ({minutes:g} simulated minutes each)", fontsize=8)
            ax.set_ylabel("users reached (mean count per claim)", fontsize=8)
            ax.set_ylim(bottom=0)
            step_axis(ax, len(res["sources"][src]["strategies"][res["control"]]["summary"].get(f"{ver}_curve") or []))
    n = len(res["spec"]["seeds"])
    interval = (
        f"band: the control's 95% bootstrap interval over {n} seeds"
        if n >= MIN_N
        else f"{counted(n, 'seed')}, no interval below {MIN_N} seeds"
    )
    fig.suptitle(f"Cumulative reach of seeded claims per strategy ({interval})", fontsize=11)
    return P._save(fig, path, legend_from=list(axes.ravel()))


def effects_plot(path: Path, res: dict[str, Any]) -> Path:
    """One panel per effect, 3 to a row so labels stay readable; one row of points per strategy."""
    plt = P.plt
    strats = [s for s in res["order"] if s != res["control"]]
    srcs = list(res["sources"])
    ncol = 3
    nrow = math.ceil(len(EFFECT_KEYS) / ncol)
    height = 0.3 * len(strats) * max(1, len(srcs)) + 1.4
    fig, axes = plt.subplots(nrow, ncol, figsize=(13, height * nrow + 0.6), squeeze=False)
    colors = {s: c for s, c in zip(srcs, ("tab:blue", "tab:red", "tab:green", "tab:purple"))}
    if "null" in colors:
        colors["null"] = "tab:orange"
    flat = list(axes.ravel())
    for ax in flat[len(EFFECT_KEYS) :]:
        ax.set_visible(False)
    for idx, (ax, (key, title)) in enumerate(zip(flat, EFFECT_KEYS)):
        for si, src in enumerate(srcs):
            for k, strat in enumerate(strats):
                e = res["sources"][src]["strategies"][strat]["summary"]["effects"].get(key)
                y = k + (si - (len(srcs) - 1) / 2) * 0.25
                if e is None:
                    continue
                bars = e.get("lo") is not None and e.get("hi") is not None  # none below 3 seeds
                ax.errorbar(
                    [e["mean"]],
                    [y],
                    xerr=[[e["mean"] - e["lo"]], [e["hi"] - e["mean"]]] if bars else None,
                    fmt="o",
                    ms=4,
                    color=colors[src],
                    capsize=3,
                    label=_source_label(src, res),
                )
        if not ax.lines and not ax.collections:
            ax.text(
                0.5,
                0.5,
                "n/a: not measured in any run",
                ha="center",
                va="center",
                transform=ax.transAxes,
                fontsize=10,
                color="dimgray",
            )
            ax.set_xticks([])
        ax.axvline(0, color="gray", lw=1, ls=":", label=f"0 = no effect (same as {res['control']})")
        ax.set_yticks(range(len(strats)))
        ax.set_yticklabels(strats if idx % ncol == 0 else [""] * len(strats), fontsize=10)
        ax.set_ylim(len(strats) - 0.5, -0.5)
        ax.set_title(title, fontsize=11)
        ax.set_xlabel(f"difference vs {res['control']}", fontsize=10)
    fig.suptitle(
        f"Effect of each strategy (paired by seed; 95% t intervals over seeds, none below {MIN_N} seeds)", fontsize=12
    )
    return P._save(fig, path, legend_from=flat)


def _interval_note(n: int) -> str:
    """What the intervals are, by the one policy: none below 3 seeds (a 1-df t interval says nothing)."""
    if n >= MIN_N:
        return "Intervals: 95% over seeds (levels: bootstrap, never below 0; effects: t), n beside each"
    return f"No intervals: {counted(n, 'seed')} (n too small; intervals from {MIN_N} seeds)"


def build(rep: Report, res: dict[str, Any]) -> list[Path]:
    sp = res["spec"]
    rep.heading("Interventions against misinformation")
    rep.note(
        f"{counted(len(sp['seeds']), 'seed')} x {counted(len(res['order']), 'condition')} x "
        f"{counted(len(res['sources']), 'population')}; {counted(res['n_agents'], 'agent')}, "
        f"{counted(res['steps'], 'step')}; {sp['n_false']} false and {sp['n_true']} true seeded "
        f"claims (false ones posted by spreaders). Control: '{res['control']}'. "
        f"{_interval_note(len(sp['seeds']))}; "
        "effects: paired per-seed differences vs the control (relative change in brackets)."
    )
    if res.get("null_fit"):
        f = res["null_fit"]
        rep.note(
            f"IC null fitted to the control model runs: p_repost={f['p_repost']:.4f} "
            f"({f['adoptions']}/{f['trials']} exposures), p_post={f['p_post']:.4f}. The null ignores labels "
            "and prebunking by construction; down-ranking, removal and suspension act on it through the platform."
        )
    rep.image(
        curves_plot(rep.out_dir / "intervention_curves.png", res),
        "Reach of false and true claims over time, per strategy; every strategy's interval is in the tables "
        "and, as a difference to the control, in the effect plot",
    )
    rep.image(
        effects_plot(rep.out_dir / "intervention_effects.png", res), "Effect sizes vs the control with 95% intervals"
    )
    dirs: list[Path] = []
    for src, body in res["sources"].items():
        for strat in res["order"]:
            dirs += [Path(d) for d in body["strategies"][strat]["dirs"].values()][:1]
            s = body["strategies"][strat]["summary"]
            rep.series.setdefault(src, {})[strat] = {k: s.get(k) for k in ("false_curve", "true_curve")}
        others = [st for st in res["order"] if st != res["control"]]
        summ = {st: body["strategies"][st]["summary"] for st in res["order"]}
        n_seeds = len(sp["seeds"])
        rep.table(level_table(src, res))
        rep.table(
            ReportTable(
                f"{_source_label(src, res)}: effect vs {res['control']}",
                ["condition", *(metric_label(k) for k in SHORT_KEYS)],
                [[st] + [_ci(summ[st]["effects"].get(k), 1, n_seeds) for k in SHORT_KEYS] for st in others],
                summary=True,
            )
        )
        # metrics as rows, conditions as columns: a dozen metrics fit the page, conditions stay few
        rep.table(
            ReportTable(
                f"{_source_label(src, res)}: mean [95% interval] over seeds",
                ["metric", *res["order"]],
                [
                    [metric_label(k)] + [_ci(summ[st]["metrics"].get(k), 2, n_seeds) for st in res["order"]]
                    for k in TABLE_KEYS
                ],
            )
        )
        rep.table(
            ReportTable(
                f"{_source_label(src, res)}: effect vs {res['control']} [95% interval] (relative)",
                ["metric", *others],
                [
                    [metric_label(k)] + [_ci(summ[st]["effects"].get(k), 2, n_seeds) for st in others]
                    for k in TABLE_KEYS
                ],
            )
        )
        drows = []
        for strat in res["order"]:
            for seed, m in body["strategies"][strat]["per_seed"].items():
                d = m.get("drift") or {}
                for ver, v in (d.get("by_veracity") or {}).items():
                    drows.append(
                        [
                            strat,
                            seed,
                            ver,
                            v["n"],
                            fmt(v["drift"]),
                            " ".join(f"d{k}:{fmt(x, 2)}" for k, x in v["by_depth"].items()),
                        ]
                    )
        if drows:
            rep.table(
                ReportTable(
                    f"{_source_label(src, res)}: content drift of quotes/comments (1 - similarity to the source)",
                    ["condition", "seed", "source veracity", "retellings", "drift", "similarity by depth"],
                    drows[:60],
                )
            )
    return dirs
