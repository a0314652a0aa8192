"""``socium report`` of a ``socium forecast`` folder: measure tables, calibration plot, fan charts.

Why these three: the table says how good the point forecast is against each baseline (with the paired
differences a reader can trust), the calibration plot says whether the intervals mean what they claim,
and the fan charts show what a user actually gets per cascade: the predictive band around the real curve.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from socium.core.intervals import interval_from_dict
from socium.errors import RunDirError
from socium.experiments.propagation.report.counterfactual_report import counterfactual_section
from socium.reporting import plots as P
from socium.reporting.page import Report, ReportTable, counted

MAX_FANS = 12
CURVE_WORDS = {"scale": "size", "depth": "depth", "max_breadth": "max breadth"}


def _iv(d: dict[str, Any] | None, digits: int = 3, signed: bool = False) -> str:
    iv = interval_from_dict(d)
    if iv is None or iv.estimate is None:
        return "-"
    est = f"{iv.estimate:{'+' if signed else ''}.{digits}f}"
    return f"{est} {iv.bounds(digits, signed)}" if iv.has_bounds else f"{est} (n={iv.n})"


def _q(d: dict[str, Any]) -> str:
    if d.get("estimate") is None:
        return "-"
    lo, hi = d.get("low"), d.get("high")
    bounds = f" [{'-' if lo is None else f'{lo:.2f}'}, {'-' if hi is None else f'{hi:.2f}'}]"
    return f"{d['estimate']:.2f}" + (bounds if d.get("method") == "order statistics" else "")


def forecast_report(rep: Report, res: dict[str, Any]) -> list[Path]:
    """Tables, calibration plot and fan charts of a forecast results.json (the folder is ``rep``'s parent)."""
    root = rep.out_dir.parent
    st, fit, casc = res["settings"], res["fit"], res["cascades"]
    rep.heading("Forecast: a saved fit applied to cascades, never refitted")
    rep.note(
        f"{counted(casc['n'], 'cascade')} from {casc['source']} ({casc['digest'][:19]}...); fit {fit['file']} "
        f"({fit['family']}, cascade_sigma {fit['cascade_sigma']:.3f} x dispersion {fit['dispersion']:g}, trained on "
        f"{fit['training']['n']} {fit['training']['kind'] or ''} cascades); {counted(st['replicas'], 'replica')} per "
        f"cascade; horizon {st['horizon_minutes']} min; point forecast = replicas' mean; intervals: bootstrap (means), "
        "Wilson (coverage), t (paired differences), order statistics (APE quantiles)."
    )
    if fit.get("note"):
        rep.note(f"Fit file: {fit['note']}.")
    tr = res["transfer"]
    rep.note(
        f"Transfer check: {tr['warning'] or 'the cascades match the fit training cascades (KS, no large difference)'}."
    )
    if tr["ks"]:
        rep.table(
            ReportTable(
                "Scored vs training cascades (two-sample KS)",
                ["statistic", "D", "p", "median trained", "median scored"],
                [
                    [k, f"{v['D']:.3f}", f"{v['p']:.2g}", f"{v['median_train']:.3g}", f"{v['median_scored']:.3g}"]
                    for k, v in tr["ks"].items()
                    if v.get("D") is not None
                ],
            )
        )
    for m, s in res["by_observe_minutes"].items():
        models = [k for k, v in s.items() if isinstance(v, dict) and "msle" in v]
        rows = []
        for mo in models:
            e = s[mo]
            cov = e.get("coverage")
            rows.append(
                [
                    mo,
                    *(_iv(e["nrmse"][k]) if e["nrmse"][k] else "-" for k in CURVE_WORDS),
                    _iv(e["msle"]),
                    f"{_q(e['ape']['q50'])} / {_q(e['ape']['q90'])}",
                    _iv(e["crps_log"]),
                    " / ".join(_iv(cov[lv]["scale"], 2) for lv in ("50", "80", "90")) if cov else "-",
                ]
            )
        rep.note(
            f"Observed {m} min, {counted(s['n'], 'cascade')}: intervals are 95% (n and method above); MSLE on "
            "log2(1 + size increment after m); APE of the final size (quantiles over cascades)."
        )
        rep.table(
            ReportTable(
                f"Observed {m} min: measures over {counted(s['n'], 'cascade')} "
                f"(minutes {m}-{st['horizon_minutes'] - 1})",
                [
                    "model",
                    "NRMSE size",
                    "NRMSE depth",
                    "NRMSE breadth",
                    "MSLE",
                    "APE q50 / q90",
                    "CRPS log2",
                    "coverage 50 / 80 / 90% (size)",
                ],
                rows,
                summary=True,
            )
        )
        diffs = [k for k in s if k.startswith("forecast_minus_")]
        rep.table(
            ReportTable(
                f"Observed {m} min: forecast minus baseline, paired over cascades (negative: the forecast is better)",
                ["baseline", "NRMSE size", "squared log error", "CRPS", "CRPS log2"],
                [
                    [
                        k.removeprefix("forecast_minus_"),
                        _iv(s[k].get("nrmse_scale"), 3, True),
                        _iv(s[k]["sle"], 3, True),
                        _iv(s[k]["crps"], 1, True),
                        _iv(s[k]["crps_log"], 3, True),
                    ]
                    for k in diffs
                ],
            )
        )
    for m, s in res["by_observe_minutes"].items():
        if s.get("counterfactual"):
            rep.heading(f"Had the platform acted (observed {m} min)")
            counterfactual_section(rep, s["counterfactual"], st["horizon_minutes"])
    rep.image(calibration_plot(rep.out_dir / "calibration.png", res), "Calibration of the final size's intervals")
    curves = root / "curves.parquet"
    if curves.is_file():
        first = str(st["observe_minutes"][0])
        rep.image(
            fan_charts(rep.out_dir / "fans.png", curves, int(first), MAX_FANS),
            f"Forecast from the first {first} min (median, 50% and 90% bands) against the real curve",
        )
    rep.series["forecast"] = {
        m: {k: v for k, v in s.items() if k != "calibration"} for m, s in res["by_observe_minutes"].items()
    }
    return []


def calibration_plot(path: Path, res: dict[str, Any]) -> Path:
    """Observed against nominal coverage of central intervals (from randomised PITs), per model and m."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="calibrated")
    for m, s in res["by_observe_minutes"].items():
        for mo, pts in (s.get("calibration") or {}).items():
            if pts:
                x, y = zip(*pts)
                ax.plot(x, y, marker="o", ms=3, label=f"{mo}, m = {m} (n = {s['n']})")
    ax.set_xlabel("nominal coverage of the central interval")
    ax.set_ylabel("share of cascades whose final size is inside")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title("Calibration of the final size")
    return P.save_figure(fig, path, legend_from=ax, ncol=2)


def fan_charts(path: Path, curves_file: Path, m: int, limit: int) -> Path:
    """A fan chart per cascade (first ``limit``): the forecast's 5-95% and 25-75% bands, median, real curve."""
    import matplotlib.pyplot as plt

    try:
        t = pq.read_table(curves_file, filters=[("model", "=", "forecast"), ("curve", "=", "scale")])
    except OSError as exc:
        raise RunDirError(f"{curves_file}: unreadable: {exc}") from None
    t = t.filter(pc.equal(t.column("observe_minutes"), m))
    ids = list(dict.fromkeys(t.column("cascade_id").to_pylist()))[:limit]
    cols = min(4, max(len(ids), 1))
    rows = max(math.ceil(len(ids) / cols), 1)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.5 * rows), squeeze=False)
    data = t.to_pydict()
    by: dict[str, list[int]] = {}
    for i, c in enumerate(data["cascade_id"]):
        by.setdefault(c, []).append(i)
    for ax, cid in zip(axes.ravel(), ids):
        idx = by[cid]
        x = np.array([data["minute"][i] for i in idx])
        g = {k: np.array([data[k][i] for i in idx], float) for k in ("q05", "q25", "q50", "q75", "q95", "real")}
        ax.fill_between(x, g["q05"], g["q95"], color="tab:blue", alpha=0.18, lw=0, label="90% band")
        ax.fill_between(x, g["q25"], g["q75"], color="tab:blue", alpha=0.35, lw=0, label="50% band")
        ax.plot(x, g["q50"], color="tab:blue", lw=1.2, label="median")
        ax.plot(x, g["real"], color="black", lw=1.2, label="real")
        ax.axvline(m, color="tab:red", lw=0.8, ls=":", label=f"minute {m}")
        ax.set_title(cid if len(cid) <= 22 else cid[:20] + "..", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(ids) :]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("minutes after the source", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("reshares (size)", fontsize=8)
    return P.save_figure(fig, path, legend_from=axes.ravel()[0], ncol=5)
