"""Herding (votes on seeded items) and polarisation (stance surveys) sections of reports.

What a reader may quote is what these sections print: herding effects count the crowd's votes only
(the experimenter's treatment vote is never part of an effect), every effect and every plotted point
carries its n and an interval valid for that n (or says there is none), stance plots show survey
answers only (the assigned stance is the design, printed in the table, never a point on a survey
line), and the polarisation headline states which way each camp moved instead of assuming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from socium.core.intervals import TOO_SMALL
from socium.reporting import plots as P
from socium.reporting.labels import source_labels
from socium.reporting.page import Report, ReportTable, fmt

CAMPS = ("conservative", "progressive")
#: Survey outcomes shown in their own column: answers counted but kept out of every mean.
REJECTED = ("inconsistent", "degenerate", "invalid", "backend_error")


def with_ci(est: Any, ci: Sequence[float] | None, n: int | Sequence[int] | None = None, digits: int = 3) -> str:
    """``0.120 [0.010, 0.230] (n=50)``; without an interval it says so: ``0.120 (n=2: n too small ...)``."""
    if est is None or (isinstance(est, float) and not np.isfinite(est)):
        return "-" if n is None else f"- (n={_n(n)})"
    ns = "" if n is None else f"n={_n(n)}"
    if ci is None:
        return f"{fmt(est, digits)} ({ns + ': ' if ns else ''}{TOO_SMALL})"
    return f"{fmt(est, digits)} {fmt(list(ci), digits)}" + (f" ({ns})" if ns else "")


def _n(n: int | Sequence[int]) -> str:
    return str(n) if isinstance(n, int) else " vs ".join(str(x) for x in n)


# ---- herding ----------------------------------------------------------------------------------
def herding_tables(rep: Report, runs: dict[str, Any], reference: dict[str, Any] | None, labels: dict[str, str]) -> None:
    rows = []
    for run, r in runs.items():
        for g, d in r["metrics"]["groups"].items():
            rows.append(
                [
                    labels.get(run, run),
                    g,
                    str(d["items"]),
                    str(d["crowd_votes"]),
                    with_ci(
                        d["p_next_positive"], d["p_next_positive_ci"], d.get("p_next_positive_n", d["items_voted"])
                    ),
                    with_ci(d["p_positive"], d["p_positive_ci"], d["items_voted"]),
                    with_ci(d["crowd_mean_score"], d["crowd_mean_score_ci"], d["items"]),
                    fmt(d["final_mean_score"]),
                ]
            )
    rep.table(
        ReportTable(
            "Herding by treatment group, crowd votes only (P(next +): Wilson 95% interval over voted items; "
            "others: 95% bootstrap over items)",
            [
                "source",
                "group",
                "items",
                "crowd votes",
                "P(next vote +)",
                "crowd P(+)",
                "crowd mean score",
                "score incl. treatment vote",
            ],
            rows,
            summary=True,
        )
    )
    eff_rows = []
    for run, r in runs.items():
        e = r["metrics"]["effects"]
        eff_rows.append(
            [
                labels.get(run, run),
                *(
                    cell
                    for g in ("up", "down")
                    for cell in (
                        with_ci(
                            e[f"{g}_p_next_positive_diff"],
                            e[f"{g}_p_next_positive_diff_ci"],
                            e[f"{g}_p_next_positive_n"],
                        ),
                        with_ci(e[f"{g}_crowd_mean_diff"], e[f"{g}_crowd_mean_diff_ci"], e[f"{g}_crowd_mean_n"]),
                        with_ci(e[f"{g}_crowd_mean_lift"], e[f"{g}_crowd_mean_lift_ci"]),
                    )
                ),
            ]
        )
    if reference:  # only in the column measured the same way (a relative lift of the crowd's mean score)
        eff_rows.append(
            ["Muchnik et al. 2013 (reference)", "-", "-", f"+{reference['up_final_mean_lift']:.0%}", "-", "-", "-"]
        )
    rep.table(
        ReportTable(
            "Herding effects: treated group minus control, crowd votes only (the treatment vote excluded)",
            [
                "source",
                "up: P(next +) diff",
                "up: crowd mean diff",
                "up: crowd mean lift",
                "down: P(next +) diff",
                "down: crowd mean diff",
                "down: crowd mean lift",
            ],
            eff_rows,
            summary=True,
        )
    )
    rep.note(
        "Effects count only the crowd's votes, as Muchnik et al. measure them: the experimenter's own up- or "
        "down-vote is excluded (counted, it makes a herding-free crowd look herded). diff = group - control "
        "(P(next +): Newcombe interval; crowd mean score: votes per item, bootstrap over items); lift = diff / "
        "|control|, a relative change (0.25 = +25%; empty where control is 0). An interval that includes 0 shows "
        "no herding at this n; '" + TOO_SMALL + "' below 3 items."
    )
    if reference:
        rep.note(
            f"Reference row: Muchnik et al.'s +{reference['up_final_mean_lift']:.0%} is a relative lift of the mean "
            "final rating, set beside the crowd mean lift only. Their "
            f"+{reference['up_next_positive_lift']:.0%} is a relative lift in P(next vote positive), while the "
            "P(next +) columns here are differences, so it is not set beside them; and their down-treatment "
            "effect (corrected by the crowd) has no single number to set beside the down columns."
        )
    xs = next(iter(runs.values()))["metrics"].get("trajectory_steps")
    rep.series["herding_trajectories"] = {
        run: {g: d["trajectory"] for g, d in r["metrics"]["groups"].items()} for run, r in runs.items()
    }
    rep.image(
        P.group_trajectories(
            rep.out_dir / "herding_scores.png",
            rep.series["herding_trajectories"],
            "mean crowd score per item (votes)",
            "Crowd's net votes per item (up minus down, treatment vote excluded) per treatment group",
            xs=xs,
            xlabel="after step",
            labels=labels,
            reference=(0.0, "0 = no net crowd votes"),
            end_ci={
                run: {g: d.get("crowd_mean_score_ci") for g, d in r["metrics"]["groups"].items()}
                for run, r in runs.items()
            },
        ),
        "Crowd score trajectories"
        + (" (solid: model, dashed: null)" if len(runs) > 1 else "")
        + "; bars at the last step: the table's 95% bootstrap interval of the crowd mean score over items "
        "(none below 3 items)",
    )
    vals = {run: {g: d["p_next_positive"] for g, d in r["metrics"]["groups"].items()} for run, r in runs.items()}
    cis = {run: {g: d["p_next_positive_ci"] for g, d in r["metrics"]["groups"].items()} for run, r in runs.items()}
    rep.series["herding_next_positive"] = vals
    rep.series["herding_next_positive_ci"] = cis
    rep.image(
        P.group_bars(
            rep.out_dir / "herding_next_positive.png",
            vals,
            cis,
            "P(first crowd vote is an up-vote) (0 to 1)",
            "First crowd vote after the treatment, per group",
            labels=labels,
            reference=(0.5, "0.5 = a fair coin"),
        ),
        "P(next vote positive) per group with the table's Wilson 95% intervals (n: the table); "
        "n/a: no item was voted on",
    )


def herding(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading("Herd effect (Reddit preset)")
    ref = res["reference"]
    rep.note(
        f"Reference: {ref['source']}: up-treatment +{ref['up_next_positive_lift']:.0%} next vote positive, "
        f"+{ref['up_final_mean_lift']:.0%} final mean rating (crowd votes, treatment excluded); {ref['down']}."
    )
    herding_tables(rep, res["runs"], ref, source_labels("herding", res["runs"]["model"]["dir"]))
    return [Path(r["dir"]) for r in res["runs"].values()]


# ---- stance -----------------------------------------------------------------------------------
def _outcomes(p: dict[str, Any]) -> str:
    o = p.get("outcomes") or {}
    bad = [f"{k} {o[k]}" for k in REJECTED if o.get(k)]
    bad += [f"{k} {v}" for k, v in o.items() if k not in REJECTED and k != "ok" and v]
    return ", ".join(bad) or "-"


def group_points(
    path: Path,
    series: Mapping[str, Mapping[str, Sequence[float | None]]],
    cis: Mapping[str, Mapping[str, Sequence[Sequence[float] | None]]],
    ns: Mapping[str, Mapping[str, Sequence[int]]],
    xs: Sequence[int],
    labels: Mapping[str, str],
) -> Path:
    """Each camp's mean survey answer per survey step, a 95% interval bar at every point that has one
    and its n printed beside it (solid: model, dashed: null; runs side by side so no bar hides another)."""
    fig, ax = P.plt.subplots(figsize=(7, 4))
    k = 0
    for run, groups in series.items():
        for g, y in groups.items():
            off = 0.06 * (k - 1.5)
            k += 1
            yy = np.array([np.nan if v is None else v for v in y], dtype=float)
            x = np.asarray(xs[: len(yy)], dtype=float) + off
            ls: Literal["--", "-"] = "--" if run == "null" else "-"
            ax.plot(x, yy, color=P.GROUP_COLORS.get(g), ls=ls, marker="o", ms=3, label=f"{P._label(labels, run)}: {g}")
            for xi, yi, ci, n in zip(x, yy, cis[run][g], ns[run][g]):
                if ci is not None and np.isfinite(yi):
                    err = [[max(yi - ci[0], 0.0)], [max(ci[1] - yi, 0.0)]]
                    eb = ax.errorbar([xi], [yi], yerr=err, color=P.GROUP_COLORS.get(g), capsize=2, lw=1, fmt="none")
                    eb.lines[2][0].set_linestyle(ls)
                if np.isfinite(yi):
                    ax.annotate(f"n={n}", (xi, yi), textcoords="offset points", xytext=(3, 3), fontsize=6)
    ax.axhline(0.0, color="black", ls=":", lw=1, label="0 = neutral")
    ax.set_ylim(-1.1, 1.1)
    ax.set_xlabel("simulation step of the survey")
    ax.set_ylabel("mean survey answer (-1 to 1)")
    ax.set_title("Each camp's mean survey answer (answers whose words agree with their number)", fontsize=10)
    P._integer(ax, "x")
    return P._save(fig, path, ax, ncol=3)


def stance_section(rep: Report, runs: dict[str, dict[str, Any]], labels: dict[str, str]) -> None:
    rows = []
    for run, m in runs.items():
        for p in m["points"]:
            g = p["groups"]
            assigned = p.get("kind") == "assigned" or p["step"] == -1
            rows.append(
                [
                    labels.get(run, run),
                    "assigned (design)" if assigned else str(p["step"]),
                    "-" if assigned else f"{p['answered']}/{p['asked']}",
                    "-" if assigned else _outcomes(p),
                    with_ci(p["mean"], p.get("mean_ci"), p.get("n")),
                    fmt(p["mean_abs"]),
                    fmt(p["variance"]),
                    fmt(p["bimodality"]),
                    *(with_ci(g[c]["mean"], g[c].get("mean_ci"), g[c].get("n")) for c in CAMPS),
                    with_ci(p.get("camp_gap"), p.get("camp_gap_ci")),
                    fmt(p.get("text_extremity")),
                ]
            )
    rep.table(
        ReportTable(
            "Stance per survey: answers whose words agree with their number (95% bootstrap over agents); "
            "the first row is the assigned stance, the design, not an answer",
            [
                "source",
                "survey step",
                "ok answers / asked",
                "not counted",
                "mean",
                "mean |x|",
                "variance",
                "bimodality",
                "conservative mean",
                "progressive mean",
                "camp gap (prog - cons)",
                "text extremity",
            ],
            rows,
            summary=True,
        )
    )
    rep.note(
        "'not counted': answers whose number contradicts their words (inconsistent), with no words or number "
        "(degenerate), or unusable (invalid, backend error); they are counted here and left out of every mean."
    )
    surveys = {
        run: [p for p in m["points"] if p.get("kind", "survey") == "survey" and p["step"] >= 0]
        for run, m in runs.items()
    }
    rep.series["stance_distributions"] = {
        run: {str(p["step"]): p["values"] for p in pts} for run, pts in surveys.items()
    }
    rep.series["stance_trajectories"] = {
        run: {
            "steps": [p["step"] for p in pts],
            **{k: [p[k] for p in pts] for k in ("mean_abs", "variance", "bimodality")},
        }
        for run, pts in surveys.items()
    }
    rep.series["group_means"] = {
        run: {g: [p["groups"][g]["mean"] for p in pts] for g in CAMPS} for run, pts in surveys.items()
    }
    rep.series["group_means_ci"] = {
        run: {g: [p["groups"][g].get("mean_ci") for p in pts] for g in CAMPS} for run, pts in surveys.items()
    }
    rep.series["group_means_n"] = {
        run: {g: [p["groups"][g]["n"] for p in pts] for g in CAMPS} for run, pts in surveys.items()
    }
    survey_steps = [p["step"] for p in next(iter(surveys.values()))]
    rep.series["group_means_steps"] = survey_steps
    if not survey_steps:
        rep.note("No survey was answered: no stance plot.")
        return
    rep.image(
        P.stance_distributions(rep.out_dir / "stance_distributions.png", rep.series["stance_distributions"], labels),
        "Survey answers per survey (violins; the middle bar marks the mean, the end bars the extremes; "
        "dotted line: 0 = neutral)",
    )
    rep.image(
        P.stance_trajectories(rep.out_dir / "stance_trajectories.png", rep.series["stance_trajectories"], labels),
        "Extremity, variance and bimodality of the survey answers over time; dotted line at 5/9: the bimodality "
        "coefficient of a uniform distribution (higher suggests two camps)",
    )
    rep.image(
        group_points(
            rep.out_dir / "group_means.png",
            rep.series["group_means"],
            rep.series["group_means_ci"],
            rep.series["group_means_n"],
            survey_steps,
            labels,
        ),
        "Camp mean survey answers"
        + (" (solid: model, dashed: null)" if len(runs) > 1 else "")
        + "; bars: 95% bootstrap interval over the camp's answers (none below 3), n beside each point",
    )


def camp_headline(m: dict[str, Any], label: str) -> str:
    """What the data show about each camp, in words: which way it moved between the first and last
    survey (with interval and n), whether that is away from the middle (polarisation) or toward the
    other side, and whether the camps answer alike (a drift that ignores the persona)."""
    parts = []
    for c, s in zip(CAMPS, (-1, 1)):
        d = m.get("camp_shift", {}).get(c) or {}
        if d.get("shift") is None:
            parts.append(f"{c}: fewer than two surveys with answers, no shift measurable")
            continue
        shift, ci = d["shift"], d.get("shift_ci")
        sure = ci is not None and (ci[0] > 0 or ci[1] < 0)
        way = "away from the middle (more extreme)" if s * shift > 0 else "toward the other side"
        last_mean = d.get("last_mean")
        txt = f"{c} camp moved {shift:+.2f}"
        txt += f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else f" ({TOO_SMALL})"
        txt += f" (n={d['n_first']} then {d['n_last']} answers, survey steps {d['first_step']} to {d['last_step']}), "
        txt += way if sure else "an interval that includes 0: no shift between the surveys"
        if last_mean is not None and s * last_mean < 0:
            txt += f"; its last answers average {last_mean:+.2f}, on the other side of neutral from its persona"
        parts.append(txt)
    last = next((p for p in reversed(m["points"]) if p.get("kind") == "survey" and p["answered"]), None)
    out = f"{label}: " + "; ".join(parts) + "."
    if last is not None:
        gap, ci = last.get("camp_gap"), last.get("camp_gap_ci")
        if gap is not None and ci is not None and ci[0] <= 0 <= ci[1]:
            out += (
                f" At the last survey the camps answer alike (progressive minus conservative {gap:+.2f} "
                f"[{ci[0]:+.2f}, {ci[1]:+.2f}]): the answers do not follow the persona, so any drift is the "
                "model's own, not a group's polarisation"
                + (" (a 135M model's drift is persona-blind)." if "135M" in label else ".")
            )
        elif gap is not None:
            out += f" At the last survey progressive minus conservative is {with_ci(gap, ci)}."
    return out


def polarisation(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading("Group polarisation")
    labels = source_labels("polarisation", res["runs"]["model"]["dir"])
    for run, r in res["runs"].items():
        if "camp_shift" in r["metrics"]:
            rep.note(camp_headline(r["metrics"], labels.get(run, run)))
    rep.note(
        f"Reference: {res['reference']}; polarisation would show as each camp moving away from the middle in "
        "its own direction. Null: bounded confidence on the same graph, stances and seed."
    )
    stance_section(rep, {run: r["metrics"] for run, r in res["runs"].items()}, labels)
    shift = []
    for run, r in res["runs"].items():
        m = r["metrics"]
        cs = m.get("camp_shift", {})
        shift.append(
            [
                labels.get(run, run),
                *(
                    with_ci(
                        cs.get(c, {}).get("shift"),
                        cs.get(c, {}).get("shift_ci"),
                        [cs.get(c, {}).get("n_first", 0), cs.get(c, {}).get("n_last", 0)],
                    )
                    for c in CAMPS
                ),
                *(fmt(m["group_extremity_shift"].get(c)) for c in CAMPS),
                fmt(m["mean_abs_shift"]),
                ", ".join(f"{k} {v}" for k, v in m.get("answer_outcomes", {}).items()) or "-",
            ]
        )
    rep.table(
        ReportTable(
            "Change from the first to the last survey (answers only; 95% bootstrap over agents; n: first vs last)",
            [
                "source",
                "conservative mean shift",
                "progressive mean shift",
                "conservative extremity shift",
                "progressive extremity shift",
                "mean |x| shift",
                "answers by outcome",
            ],
            shift,
            summary=True,
        )
    )
    rep.note(
        "Extremity shift: the mean shift in the camp's own direction (positive = more extreme, negative = "
        "toward the other side). The assigned stances are the design and are not compared with answers here."
    )
    return [Path(r["dir"]) for r in res["runs"].values()]
