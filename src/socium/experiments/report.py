"""``socium report RUN_DIR``: an HTML page, PNG plots, ``series.json`` and a terminal summary.

Works on an experiment directory (``results.json`` from propagation / herding / polarisation /
compare) and on a single run directory (``trace.duckdb``), where it recomputes what it can from the
trace: cascades, herding groups (if the run has seeded treatments), stance surveys. Every plotted
series is also written to ``report/series.json``, so a figure can be checked against numbers.
All text that reaches the HTML is escaped: topics, tweet texts and agent output are data.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from socium.errors import RunDirError, SociumError
from socium.experiments import report_plots as P
from socium.experiments.card import card_value, simulation_card
from socium.experiments.spec import RESULTS_FILE, connect, read_results

REPORT_DIR = "report"
MAX_CASCADE_PLOTS = 24
MAX_CARDS = 12


@dataclass
class ReportTable:
    title: str
    columns: list[str]
    rows: list[list[str]]
    summary: bool = False  # also printed in the terminal
    align_numbers: bool = True  # right-align numeric cells (off for field/value tables such as cards)


@dataclass
class Report:
    """What was written and the tables behind it."""

    out_dir: Path
    html: Path
    images: list[Path] = field(default_factory=list)
    series: dict[str, Any] = field(default_factory=dict)
    tables: list[ReportTable] = field(default_factory=list)
    blocks: list[tuple[str, Any]] = field(default_factory=list)
    banners: list[str] = field(default_factory=list)  # smoke-run warnings, shown at the top of the page

    def heading(self, text: str) -> None:
        self.blocks.append(("h2", text))

    def note(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, t: ReportTable) -> None:
        self.tables.append(t)
        self.blocks.append(("table", t))

    def image(self, path: Path, caption: str) -> None:
        self.images.append(path)
        self.blocks.append(("img", (path.name, caption)))


def fmt(x: Any, digits: int = 3) -> str:
    """Numbers for humans: None/NaN as a dash, floats rounded, CIs as [lo, hi]."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    if isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(v, (int, float)) for v in x):
        return f"[{x[0]:.{digits}f}, {x[1]:.{digits}f}]"
    return str(x)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 seed', '3 seeds': a count with its noun in the right number (``plural``: when not noun + 's')."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def short_model(name: str) -> str:
    """'HuggingFaceTB/SmolLM2-135M-Instruct' -> 'SmolLM2-135M-Instruct' (file names lose .gguf)."""
    return name.rsplit("/", 1)[-1].removesuffix(".gguf")


def model_label(run_dir: Path | str) -> str:
    """What a run's agents were, for legends: 'LLM (SmolLM2-135M-Instruct)', 'LLM (random, smoke)', 'IC model'."""
    try:
        card = simulation_card(run_dir)
    except SociumError:
        return "model"
    llm = card.get("llm")
    if not llm:
        return {
            "independent_cascade": "IC model",
            "random": "random-actor model",
            "threshold": "threshold model",
            "bounded_confidence": "bounded-confidence model",
        }.get(card["policy"], f"{card['policy']} model")
    models = llm.get("models_called")
    names = ", ".join(short_model(m) for m in models) if isinstance(models, dict) and models else llm["backend"]
    return f"LLM ({names}{', smoke' if card.get('smoke_run') else ''})"


NULL_LABELS = {"propagation": "IC null", "herding": "random-voting null", "polarisation": "bounded-confidence null"}


def source_labels(kind: str, model_dir: Path | str | None) -> dict[str, str]:
    """Legend names: real data, the model population and the experiment's null, each named for what it is."""
    labels = {"real": "real (Twitter15)", "null": NULL_LABELS.get(kind, "null model"), "run": "this run"}
    if model_dir is not None:
        labels["model"] = model_label(model_dir)
        labels["run"] = labels["model"]
    return labels


def real_label(res: dict[str, Any]) -> str:
    """'real (Twitter15)', or the user's own tree files when the cascades came from those."""
    own = {Path(f).stem for f in res.get("spec", {}).get("tree_files", [])}
    ids = {c["id"] for c in res.get("cascades", [])}
    if ids and ids <= own:
        return "real (your tree files)"
    if ids & own:
        return "real (Twitter15 and your tree files)"
    return "real (Twitter15)"


def _ci_cell(ci: tuple[float, float, float] | None, digits: int = 3) -> str:
    return "-" if ci is None else f"{ci[0]:.{digits}f} [{ci[1]:.{digits}f}, {ci[2]:.{digits}f}]"


# ---- experiment reports ------------------------------------------------------------------------
def _propagation_cv(rep: Report, res: dict[str, Any]) -> list[Path]:
    """Cross-validated scores: only held-out cascades, mean NRMSE with bootstrap CIs per model."""
    cv = res["spec"]["cv"]
    rep.heading(f"Propagation, {cv['folds']}-fold cross-validation")
    rep.note(
        f"{counted(len(res['cascades']), 'cascade')}; timing fitted on the train folds, every score on the held-out "
        "fold only "
        f"(never on a cascade a parameter was fitted on); NRMSE over {res['minutes']} min; mean over "
        f"{counted(cv['runs'], 'seed')} per cascade; 95% bootstrap CI over cascades."
    )
    s = res["summary"]
    models = [m for m in cv["models"] if m in s]
    rep.table(
        ReportTable(
            "Mean NRMSE on held-out cascades [95% CI]",
            ["model", "n", *P.CURVE_TITLES],
            [
                [m, str(s[m]["n"]), *(f"{fmt(s[m]['nrmse'][k])} {fmt(s[m]['ci95'][k])}" for k in P.CURVE_TITLES)]
                for m in models
            ],
            summary=True,
        )
    )
    rep.series["nrmse"] = {m: s[m]["nrmse"] for m in models}
    labels = {"ic_pooled": "IC pooled p", "calibrated": "calibrated null", "llm": "LLM, fitted timing"}
    rep.image(
        P.nrmse_bars(
            rep.out_dir / "nrmse.png",
            rep.series["nrmse"],
            s["reference"]["oasis_nrmse"],
            ci={m: s[m]["ci95"] for m in models if all(s[m]["ci95"].values())},
            labels=labels,
            n=len(res["cascades"]),
            ci_kind="95% bootstrap CI",
        ),
        "Mean NRMSE per curve on held-out cascades",
    )
    rep.table(
        ReportTable(
            "Fitted timing per fold (95% bootstrap CI over train cascades when cv.fit_bootstrap > 0)",
            ["fold", "train", "held out", "family", "median delay (min)", "b_author", "b_root", "user sd"]
            + ["cascade sd"],
            [
                [
                    str(f["fold"]),
                    str(len(f["train"])),
                    str(len(f["held_out"])),
                    f["family"],
                    *(
                        _with_ci(f, key)
                        for key in ("delay_q50_min", "b_author", "b_root", "user_sigma", "cascade_sigma")
                    ),
                ]
                for f in res["folds"]
            ],
            summary=True,
        )
    )
    return []


def _with_ci(fold: dict[str, Any], key: str) -> str:
    """A fold's fitted value, with its bootstrap CI when the fold was bootstrapped ('-' when absent)."""
    v = fold["estimates"].get(key)
    if v is None:
        return "-"
    ci = (fold.get("ci95") or {}).get(key)
    return fmt(v) if not ci else f"{fmt(v)} [{fmt(ci[0])}, {fmt(ci[1])}]"


def _propagation(rep: Report, res: dict[str, Any]) -> list[Path]:
    if res.get("mode") == "cv":
        return _propagation_cv(rep, res)
    rep.heading("Propagation against real cascades")
    cascades = res["cascades"]
    first_model = cascades[0]["runs"]["model"]["dir"] if cascades else None
    labels = source_labels("propagation", first_model)
    labels["real"] = real_label(res)
    rep.note(
        f"{counted(len(cascades), 'cascade')}, {res['step_minutes']} min per step, NRMSE over the first "
        f"{res['minutes']} minutes "
        "(RMSE / max of the real curve), each cascade weighted equally; intervals are 95% t intervals over "
        "cascades. Reference line: OASIS reports ~30% NRMSE for scale."
    )
    s = res["summary"]
    models = [m for m in ("model", "null") if m in s]
    ci = {
        m: {
            k: P.t_interval([c["runs"][m]["nrmse"][k] for c in cascades if m in c["runs"]], lo=0.0)
            for k in P.CURVE_TITLES
        }
        for m in models
    }
    rep.table(
        ReportTable(
            "Mean NRMSE [95% CI over cascades] (vs the real cascade among the simulated users; 'full' = vs the whole "
            "tree)",
            [
                "source",
                "n",
                *(f"{k} [95% CI]" for k in P.CURVE_TITLES),
                "scale full",
                "depth full",
                "breadth full",
                "LLM calls",
                "tokens",
            ],
            [
                [
                    labels[m],
                    str(s[m]["n"]),
                    *(_ci_cell(ci[m][k]) for k in P.CURVE_TITLES),
                    *(fmt(s[m]["nrmse_full"][k]) for k in P.CURVE_TITLES),
                    f"{s[m]['llm_calls']:,}",
                    f"{s[m]['tokens']:,}",
                ]
                for m in models
            ],
            summary=True,
        )
    )
    rep.series["nrmse"] = {m: s[m]["nrmse"] for m in models}
    rep.series["nrmse_ci"] = {m: {k: None if v is None else [v[1], v[2]] for k, v in ci[m].items()} for m in models}
    rep.image(
        P.nrmse_bars(
            rep.out_dir / "nrmse.png",
            rep.series["nrmse"],
            s["reference"]["oasis_nrmse"],
            {m: {k: v for k, v in rep.series["nrmse_ci"][m].items() if v} for m in models},
            labels,
            len(cascades),
        ),
        "Mean NRMSE per curve with 95% t intervals over cascades (the table's intervals); dotted line: "
        "OASIS's reported ~30%",
    )
    if len(cascades) > 1:
        per_source = {
            "real": [c["real"] for c in cascades],
            **{m: [c["runs"][m]["curves"] for c in cascades if m in c["runs"]] for m in models},
        }
        rep.image(
            P.mean_cascade_curves(
                rep.out_dir / "cascades_mean.png",
                f"Mean cascade over {counted(len(cascades), 'cascade')} (bands: 95% t interval)",
                per_source,
                labels,
            ),
            "Mean real vs simulated cascade curves",
        )
    rows, dirs, missing = [], [], []
    for c in cascades:
        runs = c["runs"]
        m = runs["model"]
        if "configured_p" in m:
            p_cell = f"{m['configured_p']:.4f} (configured)"
        else:
            p_cell = f"{m['reshare_fit']['p']:.4f} (fitted)"
        if c.get("source_text") == "missing":
            missing.append(c["id"])
        rows.append(
            [
                c["id"],
                str(c.get("topic") or "-"),
                str(c.get("label") or "-"),
                f"{c['agents']}/{c['real_users']}",
                p_cell,
                *(fmt(runs[k]["nrmse"]["scale"]) if k in runs else "-" for k in ("model", "null")),
                str(c.get("source_text") or "-"),
                " ".join(f"{k}={v}" for k, v in c["real_final"].items()),
                " ".join(f"{k}={v}" for k, v in m["final"].items()),
            ]
        )
        series = {"real": c["real"], **{k: r["curves"] for k, r in runs.items()}}
        rep.series[f"cascade:{c['id']}"] = series
        dirs += [Path(r["dir"]) for r in runs.values()]
        if len(rows) > MAX_CASCADE_PLOTS:
            continue
        rep.image(
            P.cascade_curves(
                rep.out_dir / f"cascade_{c['id']}.png",
                f"Cascade {c['id']} ({c.get('topic') or 'own tree'}): real vs simulated",
                series,
                labels,
            ),
            f"Cascade {c['id']}: real vs simulated",
        )
    if missing:
        rep.note(
            f"NO SOURCE TEXT for cascade(s) {', '.join(missing)}: agents were shown a placeholder post; "
            "add source_texts to the spec."
        )
    if len(rows) > MAX_CASCADE_PLOTS:
        rep.note(f"Curves plotted for the first {MAX_CASCADE_PLOTS} of {len(rows)} cascades; all are in series.json.")
    rep.table(
        ReportTable(
            "Per cascade (IC p: fitted to the model run's reshares, or configured when the model is IC)",
            [
                "id",
                "topic",
                "label",
                "agents / real users",
                "IC p",
                "NRMSE scale model",
                "NRMSE scale null",
                "source text",
                f"real final ({res['minutes']} min)",
                "model final",
            ],
            rows,
        )
    )
    d = res["defects"]
    rep.table(
        ReportTable(
            f"Data defects over the sampled trees (balanced: {res['defects_balanced']})",
            ["defect", "count"],
            [[k, str(v)] for k, v in d.items()],
            summary=True,
        )
    )
    return dirs


def _herding_tables(
    rep: Report, runs: dict[str, Any], reference: dict[str, Any] | None, labels: dict[str, str]
) -> None:
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


def _herding(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading("Herd effect (Reddit preset)")
    ref = res["reference"]
    rep.note(
        f"Reference: {ref['source']}: up-treatment +{ref['up_next_positive_lift']:.0%} next vote positive, "
        f"+{ref['up_final_mean_lift']:.0%} final mean rating; {ref['down']}."
    )
    _herding_tables(rep, res["runs"], ref, source_labels("herding", res["runs"]["model"]["dir"]))
    return [Path(r["dir"]) for r in res["runs"].values()]


def _stance_section(rep: Report, runs: dict[str, dict[str, Any]], labels: dict[str, str]) -> None:
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


def _polarisation(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading("Group polarisation")
    labels = source_labels("polarisation", res["runs"]["model"]["dir"])
    rep.note(f"Reference: {res['reference']}. Null: bounded confidence on the same graph, stances and seed.")
    _stance_section(rep, {run: r["metrics"] for run, r in res["runs"].items()}, labels)
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


def _compare(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading(f"Perspective comparison ({res['of']})")
    persp = res["perspectives"]
    names = list(persp)
    rep.note("The same experiment run unchanged except for the agents' perspective (model runs only; nulls have none).")

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


# ---- single-run report -------------------------------------------------------------------------
def _single_run(rep: Report, run_dir: Path) -> list[Path]:
    from socium.experiments import report_run as R
    from socium.experiments.herding import herding_metrics
    from socium.experiments.polarisation import polarisation_metrics
    from socium.experiments.propagation import simulated_curves

    labels = source_labels("run", run_dir)
    con = connect(run_dir)
    try:
        cfg = json.loads(con.execute("SELECT config FROM runs").fetchall()[0][0])
        dt = float(cfg["step_minutes"])
        rep.heading(f"Run {cfg['name']}")
        rep.note(f"Agents: {labels['run']}. {counted(cfg['steps'], 'step')} of {dt:g} simulated minutes.")
        rep.series["activity"] = R.activity(con, rep.out_dir / "activity.png", dt)
        rep.image(rep.out_dir / "activity.png", "Activity and actions over time, by type")
        rep.series["invalid_rate"] = R.invalid_rate(con, rep.out_dir / "invalid_rate.png", dt)
        rep.image(rep.out_dir / "invalid_rate.png", "Share of the policy's actions not applied, per step")
        rep.series["feed_sources"] = R.feed_sources(con, rep.out_dir / "feed_sources.png", dt)
        rep.image(rep.out_dir / "feed_sources.png", "Where the posts agents saw came from")
        stance = R.stance_over_time(con, rep.out_dir / "stance_over_time.png", dt)
        if stance is not None:
            rep.series["stance_over_time"] = stance
            caption = "Stances over time (every agent's current stance)"
            if not stance["changes"]:
                caption += (
                    ": no agent's stance changed during the run (the policy does not move stances); "
                    "survey answers, where asked, are below"
                )
            rep.image(rep.out_dir / "stance_over_time.png", caption)
        usage = R.llm_usage(con, rep.out_dir / "llm_usage.png", dt)
        if usage is not None:
            rep.series["llm_usage"] = usage
            rep.image(rep.out_dir / "llm_usage.png", "LLM tokens and latency per step")
        top = con.execute(
            "SELECT root_id, count(*) FROM cascade_nodes GROUP BY root_id HAVING count(*) > 1 "
            "ORDER BY count(*) DESC, root_id LIMIT 3"
        ).fetchall()
        seeded = con.execute(
            "SELECT count(*) FROM actions WHERE origin = 'seed' AND type IN ('like_post', 'dislike_post')"
        ).fetchall()[0][0]
        surveyed = con.execute("SELECT count(*) FROM surveys WHERE value IS NOT NULL").fetchall()[0][0]
        last = con.execute("SELECT max(step) FROM steps").fetchall()[0][0]
    finally:
        con.close()
    minutes = max(1, int(((last or 0) + 1) * dt))
    if top:
        rows = []
        for root, _n in top:
            c = simulated_curves(run_dir, root, minutes)
            rep.series[f"cascade:{root}"] = {"run": {k: v.tolist() for k, v in c.items()}}
            rep.image(
                P.cascade_curves(
                    rep.out_dir / f"cascade_{root}.png",
                    f"Cascade rooted at post {root}",
                    rep.series[f"cascade:{root}"],
                    labels,
                ),
                f"Cascade {root}",
            )
            rows.append([str(root), *(str(int(c[k][-1])) for k in P.CURVE_TITLES)])
        rep.table(ReportTable("Largest cascades", ["root post", "scale", "depth", "max_breadth"], rows, summary=True))
    else:
        rep.note("No cascades: no post was reshared.")
    if seeded:
        _herding_tables(rep, {"run": {"metrics": herding_metrics(run_dir)}}, None, labels)
    if surveyed:
        _stance_section(rep, {"run": polarisation_metrics(run_dir)}, labels)
    return [run_dir]


def _cards(rep: Report, dirs: list[Path], show: int = MAX_CARDS) -> None:
    rep.heading("Simulation Cards")
    if len(dirs) > show:
        rep.note(f"Cards of the first {show} of {len(dirs)} runs; `socium card RUN_DIR` prints any other.")
    for i, d in enumerate(dirs):
        try:
            card = simulation_card(d)
        except SociumError as exc:
            rep.note(f"{d}: no card ({exc})")
            continue
        banner = card.get("smoke_run")
        if banner and banner not in rep.banners:
            rep.banners.append(banner)  # every run is checked, also those whose card is not shown
        if i < show:
            rep.table(
                ReportTable(
                    f"Simulation Card: {d}",
                    ["field", "value"],
                    [[k, card_value(v)] for k, v in card.items()],
                    align_numbers=False,
                )
            )


CSS = (
    "body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:1em 0;font-size:13px;max-width:100%}"
    "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:break-word}"
    "td.n{text-align:right;white-space:nowrap}img{max-width:100%}figure{margin:1em 0}"
    ".kv td{overflow-wrap:anywhere}.kv td:first-child{white-space:nowrap;overflow-wrap:normal}"
    ".banner{background:#b00020;color:#fff;font-weight:bold;padding:.8em 1em;margin:1em 0;border-radius:4px}"
)


def _cell(v: Any) -> str:
    """Escaped text that may wrap after '_' and '/' (metric names, ids, paths), never inside a word.
    (Not for a card's field names: Chromium breaks at <wbr> even under white-space: nowrap.)"""
    return html.escape(str(v)).replace("_", "_<wbr>").replace("/", "/<wbr>")


def _is_number(v: str) -> bool:
    try:
        float(v.replace(",", ""))
    except ValueError:
        return False
    return True


def _render(rep: Report, title: str) -> str:
    e = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    parts += [f"<div class='banner' role='alert'>{e(b)}</div>" for b in rep.banners]
    for kind, b in rep.blocks:
        if kind in ("h2", "p"):
            parts.append(f"<{kind}>{e(b)}</{kind}>")
        elif kind == "img":
            parts.append(f"<figure><img src='{e(b[0])}' alt='{e(b[1])}'><figcaption>{e(b[1])}</figcaption></figure>")
        else:
            head = "".join(f"<th>{_cell(c)}</th>" for c in b.columns)
            body = "".join(
                "<tr>"
                + "".join(
                    f"<td class='n'>{e(str(v))}</td>"
                    if b.align_numbers and _is_number(str(v))
                    else f"<td>{e(str(v)) if i == 0 and not b.align_numbers else _cell(v)}</td>"
                    for i, v in enumerate(row)
                )
                + "</tr>"
                for row in b.rows
            )
            cls = "" if b.align_numbers else " class='kv'"
            parts.append(f"<h3>{e(b.title)}</h3><table{cls}><tr>{head}</tr>{body}</table>")
    parts += [f"<div class='banner' role='alert'>{e(b)}</div>" for b in rep.banners]
    return "\n".join(parts + ["</body></html>"])


def write_report(path: str | Path) -> Report:
    """Write ``PATH/report/{index.html, *.png, series.json}`` for an experiment or a single run."""
    path = Path(path)
    out = path / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    rep = Report(out, out / "index.html")
    from socium.experiments import report_more as M

    show = MAX_CARDS
    if (path / RESULTS_FILE).is_file():
        res = read_results(path)
        from socium.experiments.report_intervention import build as _intervention

        builders = {
            "propagation": _propagation,
            "herding": _herding,
            "polarisation": _polarisation,
            "compare": _compare,
            "intervention": _intervention,
        }
        if res.get("experiment") not in builders:
            raise RunDirError(f"{path}: unknown experiment {res.get('experiment')!r} in {RESULTS_FILE}")
        dirs = builders[res["experiment"]](rep, res)
        title = f"socium {res['experiment']} report: {path.name}"
    elif (path / "trace.duckdb").is_file():
        dirs = _single_run(rep, path)
        title = f"socium run report: {path.name}"
    elif (path / M.EPISODES_FILE).is_file() and (path / "summary.json").is_file():
        dirs = M.episodes(rep, path)
        title = f"socium episodes report: {path.name}"
    elif (path / M.SENSITIVITY_FILE).is_file():
        dirs = M.sensitivity(rep, path)
        title = f"socium sensitivity report: {path.name}"
        show = 2  # every design point is the same world but for the parameters: two cards show the pattern
    else:
        raise RunDirError(
            f"{path}: not an experiment ({RESULTS_FILE}), run (trace.duckdb), episodes ({M.EPISODES_FILE}) "
            f"or sensitivity ({M.SENSITIVITY_FILE}) directory"
        )
    if dirs:
        _cards(rep, dirs, show)
    (out / "series.json").write_text(
        json.dumps(rep.series, default=lambda x: x.tolist() if hasattr(x, "tolist") else str(x)), encoding="utf-8"
    )
    rep.html.write_text(_render(rep, title), encoding="utf-8")
    return rep
