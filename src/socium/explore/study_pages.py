"""Pages of an emulator-only study: its cascades (``/study``) and one cascade (``/study/cascade/I``).

A forecast folder's cascade page draws, from one observe minute (a choice), the observed prefix (the real
curve up to that minute), the forecast fan (5-95% and 25-75% bands and the median over the replicas), the
real future (the real curve after it) and each counterfactual arm's median, and lists each model's and
arm's size at the horizon (mean and quantiles) beside the real one. A counterfactual experiment keeps no
curves per cascade, only each arm's reach per replica: its cascade page draws each arm's reach (quantiles
over replicas), the oracle's mean (the arm applied to the real future) and the real final size.
The cascade is addressed by its place in the study's list (ids may hold any character).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import solara
from matplotlib.figure import Figure
from solara import v as vue

from socium.explore.studies import ARM, QCOLS, ForecastCurves, Study, StudyCascade
from socium.explore.widgets import ROWS, Go, Pager, Plain, Say, attrs

GREY = "color: #666"
ARM_COLOURS = ("tab:orange", "tab:green", "tab:purple", "tab:pink", "tab:brown", "tab:olive", "tab:cyan", "tab:red")


def _num(x: Any, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    r = round(float(x), digits)
    return f"{int(r):,}" if r.is_integer() else f"{r:,.{digits}f}"


def arm_name(model: str) -> str:
    """``arm:remove@10`` -> ``remove at minute 10``; ``arm:none`` -> ``no intervention``."""
    key = model.removeprefix(ARM)
    if key == "none":
        return "no intervention"
    name, _, act = key.partition("@")
    return f"{name} at minute {act}" if act else name


def fan_figure(c: ForecastCurves) -> Figure:
    """The observed prefix, the forecast fan, the real future and each arm's median, against minutes."""
    fig = Figure(figsize=(10.0, 3.8), dpi=90, layout="constrained")
    ax = fig.add_subplot()
    m = c.observe_minute
    x = np.arange(len(c.real))
    if c.forecast is not None:
        f, after = c.forecast, c.forecast.minute >= m
        ax.fill_between(f.minute[after], f.q["q05"][after], f.q["q95"][after], color="tab:blue", alpha=0.18, lw=0,
                        label="forecast 5–95%")  # fmt: skip
        ax.fill_between(f.minute[after], f.q["q25"][after], f.q["q75"][after], color="tab:blue", alpha=0.35, lw=0,
                        label="forecast 25–75%")  # fmt: skip
        ax.plot(f.minute[after], f.q["q50"][after], color="tab:blue", lw=1.4, label="forecast median")
    i = 0
    for a in c.arms:
        after = a.minute >= m
        none = a.model == ARM + "none"
        colour = "0.45" if none else ARM_COLOURS[i % len(ARM_COLOURS)]
        i += 0 if none else 1
        ax.plot(a.minute[after], a.q["q50"][after], color=colour, lw=1.1, ls=":" if none else "-.",
                label=f"{arm_name(a.model)} (arms' median)" if none else f"{arm_name(a.model)} (median)")  # fmt: skip
    ax.plot(x[x <= m], c.real[x <= m], color="black", lw=2.2, label="observed prefix")
    ax.plot(x[x >= m], c.real[x >= m], color="black", lw=1.2, ls="--", label="real future")
    ax.axvline(m, color="tab:red", lw=0.8, ls=":")
    title = f"{c.cascade_id}: forecast from minute {m}"
    ax.set(xlabel="minutes after the source", ylabel="reshares (size)", title=title)
    fig.legend(fontsize=7, loc="outside right upper")
    return fig


def reach_figure(arms: list[Any], real_final: int | None, observed: int | None) -> Figure:
    """Each arm's reach at the horizon over replicas (5–95% line, 25–75% bar, median dot), oracle and real."""
    fig = Figure(figsize=(10.0, 1.0 + 0.45 * max(len(arms), 1)), dpi=90, layout="constrained")
    ax = fig.add_subplot()
    for i, a in enumerate(arms):
        y = len(arms) - 1 - i
        ax.plot([a.reach["q05"], a.reach["q95"]], [y, y], color="tab:blue", lw=1)
        ax.plot([a.reach["q25"], a.reach["q75"]], [y, y], color="tab:blue", lw=6, alpha=0.5)
        ax.plot([a.reach["q50"]], [y], "o", color="tab:blue", ms=5)
        if a.oracle_mean is not None:
            ax.plot([a.oracle_mean], [y], "x", color="tab:red", ms=6)
    ax.set_yticks(range(len(arms)), [arm_name(a.arm) for a in reversed(arms)], fontsize=8)
    if real_final is not None:
        ax.axvline(real_final, color="black", lw=1.2, ls="--", label=f"real final size {real_final}")
    if observed is not None:
        ax.axvline(observed, color="0.5", lw=1, ls=":", label=f"observed {observed}")
    ax.plot([], [], "x", color="tab:red", label="oracle (the arm on the real future), mean")
    ax.set(xlabel="reach at the horizon (replicas: 5–95%, 25–75%, median)")
    fig.legend(fontsize=7, loc="outside right upper")
    return fig


@solara.component
def StudyPage(study: Study) -> Any:
    """The study's cascades: observed size, real final size and (forecasts) the median forecast; each opens."""
    offset, set_offset = solara.use_state(0)
    rows = study.cascades()
    ms = study.observe_minutes
    with solara.Column(classes=["study"]) as main:
        what = "a forecast (socium forecast)" if study.kind == "forecast" else "a counterfactual experiment"
        Plain(
            f"{len(rows):,} cascades · {what} · observed for {', '.join(map(str, ms)) or '–'} min · "
            f"horizon {study.horizon or '–'} min",
            "font-weight: bold",
        )
        Pager(len(rows), offset, set_offset, ROWS)
        grid = f"display: grid; grid-template-columns: 16em 6em 5em {'6em ' * len(ms)}6em {'7em ' * len(ms)}"
        with vue.Html(tag="div", style_=grid + "; gap: 2px 8px", class_="study-table"):
            heads = ["cascade", "label", "nodes", *(f"size at min {m}" for m in ms), "real final"]
            heads += [f"forecast from min {m}" for m in ms] if study.kind == "forecast" else []
            for h in heads:
                Plain(h, "font-weight: bold; color: #666")
            for i, c in list(enumerate(rows))[offset : offset + ROWS]:
                _row(i, c, ms, study.kind == "forecast")
    return main


def _row(i: int, c: StudyCascade, ms: list[int], forecast: bool) -> None:
    Go(f"/study/cascade/{i}", c.cascade_id, "study-cascade")
    Say(c.label or "–")
    Plain(_num(c.nodes))
    for m in ms:
        Plain(_num(c.observed.get(m)))
    Plain(_num(c.real_final))
    if forecast:
        for m in ms:
            Plain(_num(c.forecast_median.get(m)))


@solara.component
def StudyCascadePage(study: Study, index: int) -> Any:
    """One cascade of the study: its curves (forecasts) or its arms' reach (counterfactual experiments)."""
    rows = study.cascades()
    ms = study.observe_minutes
    minute, set_minute = solara.use_state(str(ms[0]) if ms else "")
    if not 0 <= index < len(rows):
        return solara.Error(f"no cascade {index} in this study: cascades are numbered 0 to {len(rows) - 1}")
    c = rows[index]
    with solara.Column(classes=["study-cascade-page"]) as main:
        with solara.Row(style="gap: 1.5em; align-items: baseline"):
            Go("/study", "all cascades", "study-all")
            if index > 0:
                Go(f"/study/cascade/{index - 1}", "◀ previous cascade", "study-prev")
            if index + 1 < len(rows):
                Go(f"/study/cascade/{index + 1}", "next cascade ▶", "study-next")
        Say(f"cascade {c.cascade_id}", tag="div", classes="study-cascade-id")
        Plain(
            f"label {c.label or '–'} · {_num(c.nodes)} nodes · real final size {_num(c.real_final)}",
            GREY,
        )
        if study.kind == "forecast":
            if len(ms) > 1:
                solara.Select("observed for (minutes)", value=minute, values=[str(m) for m in ms], on_value=set_minute)
            m = int(minute) if minute else ms[0]
            curves = study.curves(c.cascade_id, m)
            if curves is None:
                solara.Info(f"no curves for this cascade from minute {m}")
                return main
            solara.FigureMatplotlib(fan_figure(curves), format="png", dependencies=[index, m])
            _horizon_table(curves)
        else:
            arms = study.arm_reach(c.cascade_id)
            observed = c.observed.get(ms[0]) if ms else None
            if not arms:
                solara.Info("this cascade has no counterfactual arms")
                return main
            solara.FigureMatplotlib(reach_figure(arms, c.real_final, observed), format="png", dependencies=[index])
            Plain(
                "this experiment keeps each arm's reach per replica, not its curve (socium forecast "
                "--counterfactual writes the curves)",
                GREY,
            )
            with vue.Html(tag="div", style_=_GRID, class_="horizon-table"):
                for h in ("arm", "mean", "5%", "25%", "median", "75%", "95%", "oracle mean"):
                    Plain(h, "font-weight: bold; color: #666")
                for a in arms:
                    vals = {"arm": a.arm, **{k: round(v, 3) for k, v in a.reach.items()}}
                    with vue.Html(tag="div", style_="display: contents", class_="arm-row", attributes=attrs(**vals)):
                        Plain(arm_name(a.arm))
                        for k in ("mean", *QCOLS):
                            Plain(_num(a.reach[k]))
                        Plain(_num(a.oracle_mean))
    return main


_GRID = "display: grid; grid-template-columns: 16em repeat(7, 6em); gap: 2px 8px; margin-top: 6px"


def _horizon_table(c: ForecastCurves) -> None:
    """Each model's and arm's size at the last minute (mean and quantiles) beside the real one."""
    last = len(c.real) - 1
    Plain(
        f"size at minute {last} (the horizon): the forecast (widened by the fit's dispersion), the baselines and "
        "the counterfactual arms (the conditioned replicas, not widened: compare each arm with 'no intervention')",
        "font-weight: bold",
    )
    with vue.Html(tag="div", style_=_GRID, class_="horizon-table"):
        for h in ("model or arm", "mean", "5%", "25%", "median", "75%", "95%", "real"):
            Plain(h, "font-weight: bold; color: #666")
        fans = ([c.forecast] if c.forecast is not None else []) + c.baselines + c.arms
        for f in fans:
            vals = {"model": f.model, "mean": round(float(f.mean[last]), 3)}
            vals.update({k: "" if math.isnan(f.q[k][last]) else round(float(f.q[k][last]), 3) for k in QCOLS})
            with vue.Html(tag="div", style_="display: contents", class_="arm-row", attributes=attrs(**vals)):
                Plain(arm_name(f.model) if f.model.startswith(ARM) else f.model)
                Plain(_num(float(f.mean[last])))
                for k in QCOLS:
                    Plain(_num(float(f.q[k][last])))
                Plain(_num(float(c.real[last])))
