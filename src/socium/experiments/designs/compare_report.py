"""Perspective-comparison reports: the same experiment under each perspective, outcomes side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from socium.core.perspective import perspective
from socium.experiments.spec import read_results
from socium.reporting import plots as P
from socium.reporting.labels import model_label, real_label
from socium.reporting.page import Report, ReportTable, fmt


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


COMPARE_METRICS = (
    "runs",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "tokens_per_agent_step",
    "invalid_rate",
    "posts",
    "reshares",
    "seed_cascade_size",
    "seed_cascade_depth",
    "crowd_votes",
    "p_positive_vote",
    "final_stance_variance",
    "final_mean_abs_stance",
)


TABLE_COLUMNS = ("others", "global", "environment facts", "calls")


def _row(res: dict[str, Any], p: str) -> dict[str, str]:
    """An arm's perspective-table row as recorded by the run (older results: the table as it is now)."""
    got = res["perspectives"][p].get("table")
    if got is not None:
        return got
    row = perspective(p)
    return {"description": row.description, **row.knowledge()}


def arms_changes(rep: Report, res: dict[str, Any], names: list[str]) -> None:
    """Say exactly what differs between the arms, read from the perspective table: a perspective changes what
    agents see and may change how they are asked (one narrator call per group vs one call per agent)."""
    rows = {p: _row(res, p) for p in names}
    diffs = res.get("differences") or {
        f"{a} vs {b}": {k: [rows[a][k], rows[b][k]] for k in TABLE_COLUMNS if rows[a][k] != rows[b][k]}
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    }
    pairs = "; ".join(f"{pair}: {', '.join(d) if d else 'nothing in the table'}" for pair, d in diffs.items())
    rep.note(
        "Every arm runs the same spec with only `perspective` set (model runs only; nulls have none). What that "
        f"changes, from the perspective table (socium.core.perspective) -- {pairs}."
    )
    rep.table(
        ReportTable(
            "What each arm's perspective sees and how it is asked",
            ["", *names],
            [["description", *(rows[p]["description"] for p in names)]]
            + [[k, *(rows[p][k] for p in names)] for k in TABLE_COLUMNS],
        )
    )


def compare(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading(f"Perspective comparison ({res['of']})")
    persp = res["perspectives"]
    names = list(persp)
    arms_changes(rep, res, names)

    def cell(p: str, k: str) -> str:
        v = persp[p]["runs"] if k == "runs" else persp[p]["totals"][k]
        return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else fmt(v)

    rep.table(
        ReportTable(
            "Per perspective (model runs only)",
            ["metric", *names],
            [[k, *(cell(p, k) for p in names)] for k in COMPARE_METRICS],
            summary=True,
        )
    )
    flat = {p: _flatten(r["headline"]) for p, r in persp.items()}
    keys = list(dict.fromkeys(k for p in names for k in flat[p]))
    rep.table(
        ReportTable(
            "Headline metric per perspective",
            ["metric", *names],
            [[k, *(fmt(flat[p].get(k)) for p in names)] for k in keys],
        )
    )
    tokens = {p: (r["totals"]["prompt_tokens"], r["totals"]["completion_tokens"]) for p, r in persp.items()}
    rep.series["perspective_tokens"] = tokens
    rep.image(P.perspective_bars(rep.out_dir / "perspective_tokens.png", tokens), "Token cost per perspective")
    dirs: list[Path] = []
    subs = {p: read_results(Path(r["dir"])) for p, r in persp.items()}
    for sub in subs.values():
        dirs += (
            [Path(c["runs"]["model"]["dir"]) for c in sub["cascades"]]
            if sub["experiment"] == "propagation"
            else [Path(sub["runs"]["model"]["dir"])]
        )
    # legends name the model with the perspective ('LLM (SmolLM2-135M-Instruct): local'), not the perspective alone
    first_dir = {
        p: sub["cascades"][0]["runs"]["model"]["dir"]
        if sub["experiment"] == "propagation"
        else sub["runs"]["model"]["dir"]
        for p, sub in subs.items()
        if sub["experiment"] != "propagation" or sub["cascades"]
    }
    named = {p: f"{model_label(d)}: {p}" for p, d in first_dir.items()}
    if res["of"] == "propagation":
        per = {p: [c["runs"]["model"]["curves"] for c in sub["cascades"]] for p, sub in subs.items()}
        per["real"] = [c["real"] for c in next(iter(subs.values()))["cascades"]]
        rep.series["perspective_cascades"] = {p: [c["scale"] for c in cs] for p, cs in per.items()}
        real = {"real": real_label(next(iter(subs.values()))), **named}
        rep.image(
            P.mean_cascade_curves(
                rep.out_dir / "perspective_cascades.png",
                "Mean cascade per perspective",
                {**{p: per[p] for p in names}, "real": per["real"]},
                real,
                bands=False,
            ),
            "Cascade curves per perspective, with the real cascades (intervals: one figure per perspective below)",
        )
        for p in names:
            rep.image(
                P.mean_cascade_curves(
                    rep.out_dir / f"perspective_cascades_{p}.png",
                    f"Mean cascade, {p} perspective (bands: 95% t interval over cascades)",
                    {p: per[p], "real": per["real"]},
                    real,
                ),
                f"{p} perspective vs the real cascades",
            )
    elif res["of"] == "polarisation":
        traj = {p: polarisation_series(sub["runs"]["model"]["metrics"]) for p, sub in subs.items()}
        rep.series["perspective_stance"] = traj
        rep.image(
            P.stance_trajectories(rep.out_dir / "perspective_stance.png", traj, named),
            "Stance trajectories per perspective; dotted line at 5/9: a uniform distribution's bimodality",
        )
    elif res["of"] == "herding":
        vals = {
            p: {g: d["p_next_positive"] for g, d in sub["runs"]["model"]["metrics"]["groups"].items()}
            for p, sub in subs.items()
        }
        cis = {
            p: {g: d["p_next_positive_ci"] for g, d in sub["runs"]["model"]["metrics"]["groups"].items()}
            for p, sub in subs.items()
        }
        rep.series["perspective_next_positive"] = vals
        rep.image(
            P.group_bars(
                rep.out_dir / "perspective_next_positive.png",
                vals,
                cis,
                "P(first crowd vote is an up-vote) (0 to 1)",
                "First crowd vote after the treatment, per perspective",
                labels=named,
                reference=(0.5, "0.5 = a fair coin"),
            ),
            "P(next vote positive) per group and perspective, 95% bootstrap intervals",
        )
    return dirs


def polarisation_series(m: dict[str, Any]) -> dict[str, Any]:
    return {
        "steps": [p["step"] for p in m["points"]],
        **{k: [p[k] for p in m["points"]] for k in ("mean_abs", "variance", "bimodality")},
    }
