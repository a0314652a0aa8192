"""The counterfactual section of a propagation report: each strategy's effect on reach, with its assumptions.

Why a module of its own: the propagation report (:mod:`~socium.experiments.propagation.report.report`) already
holds the NRMSE and forecast tables; the counterfactual adds a table, a per-veracity table and a figure.
"""

from __future__ import annotations

from typing import Any

from socium.core.intervals import interval_from_dict
from socium.reporting.effect_plots import counterfactual_figure
from socium.reporting.page import Report, ReportTable, counted, fmt


def _pct(d: dict[str, Any] | None, signed: bool = True) -> str:
    """A share as a percentage with its interval (``+`` signs for a change, none for a share of reach)."""
    iv = interval_from_dict(d)
    if iv is None or iv.estimate is None:
        return "-"
    f = "{:+.1f}" if signed else "{:.1f}"
    if iv.low is None or iv.high is None:
        return f"{f.format(100 * iv.estimate)}% (n={iv.n}: {iv.note})"
    return f"{f.format(100 * iv.estimate)}% [{f.format(100 * iv.low)}, {f.format(100 * iv.high)}]"


def counterfactual_section(rep: Report, cf: dict[str, Any], minutes: int) -> None:
    """Table of every arm (strategy x action minute) against the no-intervention forecast, then the figure."""
    m, n = cf["observe_minutes"], cf["n"]
    a = cf["assumptions"]
    rep.heading(f"Had the platform acted: counterfactual interventions after observing {m} minutes")
    rep.note(
        f"{counted(n, 'held-out cascade')}. Arm 'none' is the forecast from the first {m} minutes (reach by minute "
        f"{minutes - 1}: {fmt(cf['forecast_reach'].get('mean'), 1)}; real: {fmt(cf.get('real_reach'), 1)}; observed by "
        f"minute {m}: {fmt(cf.get('observed'), 1)}). Every strategy acts on the same replicas from its action minute: "
        "each later reshare happens with chance downrank x (1 - label effect if labelled) x (1 - prebunk effect if the "
        "user was inoculated), none under removal, and a reshare that does not happen takes its subtree with it. "
        f"Assumed effects: label {a['label_effect']:.3f} (Martel & Rand 2024: sharing of labelled false headlines "
        f"-24.7%), prebunk {a['prebunk_effect']:.3f} per inoculated user (Lu et al. 2023: d = 0.24); down-ranking "
        "keeps its rank factor's share. These are the model's assumptions, not measurements on these cascades: "
        "the estimate is what they imply given each cascade's observed start. Intervals: 95% bootstrap over "
        "cascades, then replicas within each."
    )
    rows = []
    for arm in cf["arms"].values():
        rows.append(
            [
                arm["strategy"],
                str(arm["act_minute"]),
                fmt(arm["reach"].get("mean"), 1),
                _pct(arm["relative"]),
                _pct(arm["averted_share"], signed=False),
                _pct(arm["eventual_relative"]),
            ]
        )
    rep.table(
        ReportTable(
            f"Change in reach vs no intervention (n = {n} cascades)",
            [
                "strategy",
                "acts at minute",
                f"reach by minute {minutes - 1}",
                "change in reach [95% CI]",
                "share of the reach still to come that is averted",
                "change in eventual reach",
            ],
            rows,
            summary=True,
        )
    )
    if all("oracle_relative" in arm for arm in cf["arms"].values()):
        rep.note(
            "How much of each estimate is forecast error: the same mechanism, with the same draws, applied to each "
            "real cascade's actual future (what the estimate would be had the forecast been perfect). This checks "
            f"the forecast from {m} minutes, not the assumed effect sizes: those no cascade here can test."
        )
        rep.table(
            ReportTable(
                f"Estimated change in reach vs the same intervention on the real future (n = {n} cascades)",
                ["strategy", "acts at minute", "estimated", "on the real future", "error: bias", "error: MAE", "r"],
                [
                    [
                        arm["strategy"],
                        str(arm["act_minute"]),
                        _pct(arm["relative"]),
                        _pct(arm["oracle_relative"]),
                        _pct(arm["effect_error"]["bias"]),
                        _pct(arm["effect_error"]["mae"], signed=False),
                        fmt(arm["effect_error"]["r"], 2),
                    ]
                    for arm in cf["arms"].values()
                ],
                summary=True,
            )
        )
    if cf.get("by_label"):
        labels = cf["by_label"]
        rep.table(
            ReportTable(
                "Change in reach by the claim's veracity label (Twitter15) [95% CI]",
                ["strategy", "acts at minute", *(f"{lab} (n={v['n']})" for lab, v in labels.items())],
                [
                    [arm["strategy"], str(arm["act_minute"]), *(_pct(v.get(key)) for v in labels.values())]
                    for key, arm in cf["arms"].items()
                ],
            )
        )
    if cf.get("curves"):
        arms = [
            {
                "strategy": v["strategy"],
                "act_minute": v["act_minute"],
                "estimate": v["relative"]["estimate"],
                "low": v["relative"]["low"],
                "high": v["relative"]["high"],
                "real_future": (v.get("oracle_relative") or {}).get("estimate"),
            }
            for v in cf["arms"].values()
        ]
        rep.image(
            counterfactual_figure(rep.out_dir / "counterfactual.png", arms, cf["curves"], cf.get("real_curve"), m, n),
            "Change in reach per strategy and action minute; mean reach curves",
        )
