"""The intervention study's report: reach curves per strategy, effect sizes with CIs, drift tables.

Numbers come from ``results.json`` only (the same series are written to series.json), so a report
can be re-rendered without touching the runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from socium.experiments import report_plots as P
from socium.experiments.report import Report, ReportTable, fmt

EFFECT_KEYS = (
    ("false_reach", "false claims: reach (users)"),
    ("true_reach", "true claims: reach (users)"),
    ("false_t50", "false claims: steps to 50% reach"),
    ("false_depth", "false claims: depth (hops)"),
    ("false_engagement", "false claims: engagement (count)"),
    ("stance_abs_change", "mean |stance change|"),
)
SHORT_KEYS = ("false_reach", "true_reach", "false_t50")
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


def _source_label(src: str, res: dict[str, Any]) -> str:
    if src == "null":
        return "IC null (fitted)"
    return f"LLM ({res.get('model')}), {src.split(':', 1)[1]} perspective"


def _ci(c: dict[str, Any] | None, digits: int = 2) -> str:
    if c is None:
        return "n/a"
    s = f"{fmt(c['mean'], digits)} [{fmt(c['lo'], digits)}, {fmt(c['hi'], digits)}]"
    return s + (f" ({c['relative']:+.0%})" if "relative" in c else "")


def curves_plot(path: Path, res: dict[str, Any]) -> Path:
    plt = P.plt
    srcs = list(res["sources"])
    fig, axes = plt.subplots(len(srcs), 2, figsize=(11, 3.2 * len(srcs)), squeeze=False)
    colors = plt.get_cmap("tab10")
    for i, src in enumerate(srcs):
        for j, ver in enumerate(("false", "true")):
            ax = axes[i][j]
            for k, strat in enumerate(res["order"]):
                y = res["sources"][src]["strategies"][strat]["summary"].get(f"{ver}_curve") or []
                if y:
                    ax.plot(
                        np.arange(len(y)),
                        y,
                        label=strat,
                        color=colors(k % 10),
                        lw=2.2 if strat == res["control"] else 1.4,
                        ls="-" if strat == res["control"] else "--",
                    )
            ax.set_title(f"{ver} claims, {_source_label(src, res)}", fontsize=9)
            ax.set_xlabel("step")
            ax.set_ylabel("users reached (mean count)", fontsize=8)
            P._integer(ax, "x")
    fig.suptitle("Cumulative reach of seeded claims per strategy", fontsize=11)
    return P._save(fig, path, legend_from=list(axes.ravel()))


def effects_plot(path: Path, res: dict[str, Any]) -> Path:
    plt = P.plt
    strats = [s for s in res["order"] if s != res["control"]]
    srcs = list(res["sources"])
    # Three panels a row: six side by side shrink below legibility once the page scales the figure down.
    ncols = 3
    nrows = -(-len(EFFECT_KEYS) // ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(13, nrows * (0.3 * len(strats) * len(srcs) + 1.8)), squeeze=False)
    panels = list(grid.ravel())
    colors = {s: c for s, c in zip(srcs, ("tab:blue", "tab:red", "tab:green", "tab:orange"))}
    if "null" in colors:
        colors["null"] = "tab:orange"
    for i, (ax, (key, title)) in enumerate(zip(panels, EFFECT_KEYS)):
        for si, src in enumerate(srcs):
            for k, strat in enumerate(strats):
                e = res["sources"][src]["strategies"][strat]["summary"]["effects"].get(key)
                y = k + (si - (len(srcs) - 1) / 2) * 0.25
                if e is None:
                    continue
                ax.errorbar(
                    [e["mean"]],
                    [y],
                    xerr=[[e["mean"] - e["lo"]], [e["hi"] - e["mean"]]],
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
                "n/a: no stance changes\nrecorded in any run",
                ha="center",
                va="center",
                transform=ax.transAxes,
                fontsize=10,
                color="dimgray",
            )
        ax.axvline(0, color="gray", lw=1, ls=":", label=f"no effect (= {res['control']})")
        ax.set_yticks(range(len(strats)))
        ax.set_yticklabels(strats if i % ncols == 0 else [""] * len(strats), fontsize=10)
        ax.invert_yaxis()
        ax.set_title(title, fontsize=11)
        ax.set_xlabel(f"difference vs {res['control']}", fontsize=10)
    for ax in panels[len(EFFECT_KEYS) :]:
        ax.set_visible(False)
    fig.suptitle("Effect of each strategy (paired by seed; 95% t intervals over seeds)", fontsize=12)
    return P._save(fig, path, legend_from=panels[: len(EFFECT_KEYS)])


def build(rep: Report, res: dict[str, Any]) -> list[Path]:
    sp = res["spec"]
    rep.heading("Interventions against misinformation")
    rep.note(
        f"{len(sp['seeds'])} seeds x {len(res['order'])} conditions x {len(res['sources'])} populations; "
        f"{res['n_agents']} agents, {res['steps']} steps; {sp['n_false']} false and {sp['n_true']} true seeded "
        f"claims (false ones posted by spreaders). Control: '{res['control']}'. Intervals: 95% t over seeds; "
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
        "Reach of false and true claims over time, per strategy",
    )
    rep.image(effects_plot(rep.out_dir / "intervention_effects.png", res), "Effect sizes vs the control with 95% CIs")
    dirs: list[Path] = []
    for src, body in res["sources"].items():
        rows, erows = [], []
        for strat in res["order"]:
            s = body["strategies"][strat]["summary"]
            rows.append([strat] + [_ci(s["metrics"].get(k)) for k in TABLE_KEYS])
            if strat != res["control"]:
                erows.append([strat] + [_ci(s["effects"].get(k)) for k in TABLE_KEYS])
            dirs += [Path(d) for d in body["strategies"][strat]["dirs"].values()][:1]
            rep.series.setdefault(src, {})[strat] = {k: s.get(k) for k in ("false_curve", "true_curve")}
        short = [
            [strat] + [_ci(body["strategies"][strat]["summary"]["effects"].get(k), 1) for k in SHORT_KEYS]
            for strat in res["order"]
            if strat != res["control"]
        ]
        rep.table(
            ReportTable(
                f"{_source_label(src, res)}: effect vs {res['control']}",
                ["condition", *SHORT_KEYS],
                short,
                summary=True,
            )
        )
        rep.table(ReportTable(f"{_source_label(src, res)}: mean [95% CI] over seeds", ["condition", *TABLE_KEYS], rows))
        rep.table(
            ReportTable(
                f"{_source_label(src, res)}: effect vs {res['control']} [95% CI] (relative)",
                ["condition", *TABLE_KEYS],
                erows,
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
