"""Herding (votes on seeded items) and polarisation (stance surveys) sections of reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from socium.reporting import plots as P
from socium.reporting.labels import source_labels
from socium.reporting.page import Report, ReportTable, fmt


def herding_tables(rep: Report, runs: dict[str, Any], reference: dict[str, Any] | None, labels: dict[str, str]) -> None:
    rows = []
    for run, r in runs.items():
        m = r["metrics"]
        for g, d in m["groups"].items():
            rows.append(
                [
                    labels.get(run, run),
                    g,
                    str(d["items"]),
                    str(d["items_voted"]),
                    str(d["crowd_votes"]),
                    fmt(d["p_next_positive"]),
                    fmt(d["p_next_positive_ci"]),
                    fmt(d["p_positive"]),
                    fmt(d["final_mean_score"]),
                    fmt(d["final_mean_score_ci"]),
                    fmt(d["crowd_mean_score"]),
                ]
            )
    rep.table(
        ReportTable(
            "Herding by treatment group (intervals: 95% bootstrap over items)",
            [
                "source",
                "group",
                "items",
                "voted",
                "votes",
                "P(next +)",
                "95% CI",
                "P(+)",
                "final mean",
                "95% CI",
                "crowd mean",
            ],
            rows,
            summary=True,
        )
    )
    eff_rows = [
        [
            labels.get(run, run),
            *(
                fmt(r["metrics"]["effects"][k])
                for k in (
                    "up_p_next_positive_lift",
                    "up_final_mean_score_lift",
                    "down_p_next_positive_lift",
                    "down_final_mean_diff",
                )
            ),
        ]
        for run, r in runs.items()
    ]
    if reference:
        eff_rows.append(
            [
                "Muchnik et al. 2013 (reference)",
                fmt(reference["up_next_positive_lift"]),
                fmt(reference["up_final_mean_lift"]),
                "corrected by crowd",
                "-",
            ]
        )
    rep.table(
        ReportTable(
            "Effects relative to control",
            ["source", "up: P(next +) lift", "up: final mean lift", "down: P(next +) lift", "down: final mean diff"],
            eff_rows,
            summary=True,
        )
    )
    rep.note(
        "lift = (group - control) / |control|, a relative change (0.32 = +32%; empty where control is 0); "
        "final mean diff = group - control, in votes."
    )
    first = next(iter(runs.values()))["metrics"]
    xs = first.get("trajectory_steps")
    rep.series["herding_trajectories"] = {
        run: {g: d["trajectory"] for g, d in r["metrics"]["groups"].items()} for run, r in runs.items()
    }
    rep.image(
        P.group_trajectories(
            rep.out_dir / "herding_scores.png",
            rep.series["herding_trajectories"],
            "mean item score (votes)",
            "Mean item score (up-votes minus down-votes) per treatment group",
            xs=xs,
            xlabel="after step (-1 = the treatment vote alone)",
            labels=labels,
            reference=(0.0, "0 = no net votes"),
            end_ci={
                run: {g: d.get("final_mean_score_ci") for g, d in r["metrics"]["groups"].items()}
                for run, r in runs.items()
            },
        ),
        "Group score trajectories"
        + (" (solid: model, dashed: null)" if len(runs) > 1 else "")
        + "; bars at the last step: the table's 95% bootstrap interval of the final mean score over items",
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
        "P(next vote positive) per group with the table's 95% bootstrap intervals; n/a: no item was voted on",
    )


def herding(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading("Herd effect (Reddit preset)")
    ref = res["reference"]
    rep.note(
        f"Reference: {ref['source']}: up-treatment +{ref['up_next_positive_lift']:.0%} next vote positive, "
        f"+{ref['up_final_mean_lift']:.0%} final mean rating; {ref['down']}."
    )
    herding_tables(rep, res["runs"], ref, source_labels("herding", res["runs"]["model"]["dir"]))
    return [Path(r["dir"]) for r in res["runs"].values()]


def stance_section(rep: Report, runs: dict[str, dict[str, Any]], labels: dict[str, str]) -> None:
    rows = []
    for run, m in runs.items():
        for p in m["points"]:
            g = p["groups"]
            rows.append(
                [
                    labels.get(run, run),
                    str(p["step"]),
                    f"{p['answered']}/{p['asked']}",
                    fmt(p["mean"]),
                    fmt(p["mean_abs"]),
                    fmt(p["variance"]),
                    fmt(p["bimodality"]),
                    fmt(g["conservative"]["mean"]),
                    fmt(g["progressive"]["mean"]),
                    fmt(p.get("text_extremity")),
                ]
            )
    rep.table(
        ReportTable(
            "Stance by survey step (step -1 = assigned stances)",
            [
                "source",
                "step",
                "answered",
                "mean",
                "mean |x|",
                "variance",
                "bimodality",
                "conservative mean",
                "progressive mean",
                "text extremity",
            ],
            rows,
            summary=True,
        )
    )
    rep.series["stance_distributions"] = {
        run: {str(p["step"]): p["values"] for p in m["points"]} for run, m in runs.items()
    }
    rep.series["stance_trajectories"] = {
        run: {
            "steps": [p["step"] for p in m["points"]],
            **{k: [p[k] for p in m["points"]] for k in ("mean_abs", "variance", "bimodality")},
        }
        for run, m in runs.items()
    }
    rep.series["group_means"] = {
        run: {g: [p["groups"][g]["mean"] for p in m["points"]] for g in ("conservative", "progressive")}
        for run, m in runs.items()
    }
    survey_steps = [p["step"] for p in next(iter(runs.values()))["points"]]
    rep.series["group_means_steps"] = survey_steps
    rep.image(
        P.stance_distributions(rep.out_dir / "stance_distributions.png", rep.series["stance_distributions"], labels),
        "Stance distributions per survey (violins; the middle bar marks the mean, the end bars the extremes; "
        "dotted line: 0 = neutral)",
    )
    rep.image(
        P.stance_trajectories(rep.out_dir / "stance_trajectories.png", rep.series["stance_trajectories"], labels),
        "Extremity, variance and bimodality over time; dotted line at 5/9: the bimodality coefficient of a "
        "uniform distribution (higher suggests two camps)",
    )
    rep.image(
        P.group_trajectories(
            rep.out_dir / "group_means.png",
            rep.series["group_means"],
            "group mean stance (-1 to 1)",
            "Group mean stance per survey",
            xs=survey_steps,
            xlabel="simulation step of the survey (-1 = assigned)",
            labels=labels,
            reference=(0.0, "0 = neutral"),
        ),
        "Group stance trajectories" + (" (solid: model, dashed: null)" if len(runs) > 1 else ""),
    )


def polarisation(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading("Group polarisation")
    labels = source_labels("polarisation", res["runs"]["model"]["dir"])
    rep.note(f"Reference: {res['reference']}. Null: bounded confidence on the same graph, stances and seed.")
    stance_section(rep, {run: r["metrics"] for run, r in res["runs"].items()}, labels)
    shift = [
        [
            labels.get(run, run),
            *(fmt(r["metrics"]["group_extremity_shift"][g]) for g in ("conservative", "progressive")),
            fmt(r["metrics"]["mean_abs_shift"]),
        ]
        for run, r in res["runs"].items()
    ]
    rep.table(
        ReportTable(
            "Change from assigned to last survey",
            ["source", "conservative extremity shift", "progressive extremity shift", "mean |x| shift"],
            shift,
            summary=True,
        )
    )
    return [Path(r["dir"]) for r in res["runs"].values()]
