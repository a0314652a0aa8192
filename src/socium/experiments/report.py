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
from socium.experiments.card import simulation_card
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


@dataclass
class Report:
    """What was written and the tables behind it."""

    out_dir: Path
    html: Path
    images: list[Path] = field(default_factory=list)
    series: dict[str, Any] = field(default_factory=dict)
    tables: list[ReportTable] = field(default_factory=list)
    blocks: list[tuple[str, Any]] = field(default_factory=list)

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


# ---- experiment reports ------------------------------------------------------------------------
def _propagation_cv(rep: Report, res: dict[str, Any]) -> list[Path]:
    """Cross-validated scores: only held-out cascades, mean NRMSE with bootstrap CIs per model."""
    cv = res["spec"]["cv"]
    rep.heading(f"Propagation, {cv['folds']}-fold cross-validation")
    rep.note(f"{len(res['cascades'])} cascades; timing fitted on the train folds, every score on the held-out fold only "
             f"(never on a cascade a parameter was fitted on); NRMSE over {res['minutes']} min; mean over "
             f"{cv['runs']} seed(s) per cascade; 95% bootstrap CI over cascades.")  # fmt: skip
    s = res["summary"]
    models = [m for m in cv["models"] if m in s]
    rep.table(ReportTable("Mean NRMSE on held-out cascades [95% CI]", ["model", "n", *P.CURVE_TITLES],
                          [[m, str(s[m]["n"]), *(f"{fmt(s[m]['nrmse'][k])} {fmt(s[m]['ci95'][k])}" for k in P.CURVE_TITLES)]
                           for m in models], summary=True))  # fmt: skip
    rep.series["nrmse"] = {m: s[m]["nrmse"] for m in models}
    rep.image(P.nrmse_bars(rep.out_dir / "nrmse.png", rep.series["nrmse"], s["reference"]["oasis_nrmse"]), "Mean NRMSE per curve")
    rep.table(ReportTable("Fitted timing per fold", ["fold", "train", "held out", "family", "median delay (min)", "b_author", "b_root", "user sd"],
                          [[str(f["fold"]), str(len(f["train"])), str(len(f["held_out"])), f["family"],
                            fmt(f["estimates"]["delay_q50_min"]), fmt(f["estimates"]["b_author"]), fmt(f["estimates"]["b_root"]),
                            fmt(f["estimates"]["user_sigma"])] for f in res["folds"]], summary=True))  # fmt: skip
    return []


def _propagation(rep: Report, res: dict[str, Any]) -> list[Path]:
    if res.get("mode") == "cv":
        return _propagation_cv(rep, res)
    rep.heading("Propagation against real cascades")
    rep.note(f"{len(res['cascades'])} cascades, {res['step_minutes']} min per step, NRMSE over the first {res['minutes']} minutes "
             "(RMSE / max of the real curve), each cascade weighted equally; reference: OASIS reports ~30%.")  # fmt: skip
    s = res["summary"]
    models = [m for m in ("model", "null") if m in s]
    rep.table(ReportTable("Mean NRMSE (vs the real cascade among the simulated users; 'full' = vs the whole real tree)",
                          ["model", "n", "scale", "depth", "max_breadth", "scale full", "depth full", "breadth full", "LLM calls", "tokens"],
                          [[m, str(s[m]["n"]), *(fmt(s[m]["nrmse"][k]) for k in P.CURVE_TITLES),
                            *(fmt(s[m]["nrmse_full"][k]) for k in P.CURVE_TITLES), str(s[m]["llm_calls"]), str(s[m]["tokens"])]
                           for m in models], summary=True))  # fmt: skip
    rep.series["nrmse"] = {m: s[m]["nrmse"] for m in models}
    rep.image(P.nrmse_bars(rep.out_dir / "nrmse.png", rep.series["nrmse"], s["reference"]["oasis_nrmse"]), "Mean NRMSE per curve")
    rows, dirs = [], []
    for c in res["cascades"]:
        runs = c["runs"]
        rows.append([c["id"], str(c.get("topic") or "-"), str(c.get("label") or "-"), f"{c['agents']}/{c['real_users']}",
                     fmt(runs["model"]["reshare_fit"]["p"], 4), *(fmt(runs[m]["nrmse"]["scale"]) if m in runs else "-" for m in ("model", "null")),
                     " ".join(f"{k}={v}" for k, v in c["real_final"].items()),
                     " ".join(f"{k}={v}" for k, v in runs["model"]["final"].items())])  # fmt: skip
        series = {"real": c["real"], **{m: r["curves"] for m, r in runs.items()}}
        rep.series[f"cascade:{c['id']}"] = series
        dirs += [Path(r["dir"]) for r in runs.values()]
        if len(rows) > MAX_CASCADE_PLOTS:
            continue
        rep.image(P.cascade_curves(rep.out_dir / f"cascade_{c['id']}.png", f"cascade {c['id']} ({c.get('topic') or 'own tree'})", series),
                  f"Cascade {c['id']}: real vs simulated")  # fmt: skip
    if len(rows) > MAX_CASCADE_PLOTS:
        rep.note(f"Curves plotted for the first {MAX_CASCADE_PLOTS} of {len(rows)} cascades; all are in series.json.")
    rep.table(ReportTable("Per cascade", ["id", "topic", "label", "agents/real users", "fitted p", "NRMSE scale model",
                                          "NRMSE scale null", "real final (150 min)", "model final"], rows))  # fmt: skip
    d = res["defects"]
    rep.table(ReportTable(f"Data defects over the sampled trees (balanced: {res['defects_balanced']})", ["defect", "count"],
                          [[k, str(v)] for k, v in d.items()], summary=True))  # fmt: skip
    return dirs


def _herding_tables(rep: Report, runs: dict[str, Any], reference: dict[str, Any] | None) -> None:
    rows = []
    for run, r in runs.items():
        m = r["metrics"]
        for g, d in m["groups"].items():
            rows.append([run, g, str(d["items"]), str(d["items_voted"]), str(d["crowd_votes"]), fmt(d["p_next_positive"]),
                         fmt(d["p_next_positive_ci"]), fmt(d["p_positive"]), fmt(d["final_mean_score"]), fmt(d["final_mean_score_ci"]),
                         fmt(d["crowd_mean_score"])])  # fmt: skip
    rep.table(ReportTable("Herding by treatment group", ["run", "group", "items", "voted", "votes", "P(next +)", "95% CI",
                                                         "P(+)", "final mean", "95% CI", "crowd mean"], rows, summary=True))  # fmt: skip
    eff_rows = [[run, *(fmt(r["metrics"]["effects"][k]) for k in ("up_p_next_positive_lift", "up_final_mean_score_lift",
                                                                   "down_p_next_positive_lift", "down_final_mean_diff"))]
                for run, r in runs.items()]  # fmt: skip
    if reference:
        eff_rows.append(["Muchnik et al. 2013", fmt(reference["up_next_positive_lift"]), fmt(reference["up_final_mean_lift"]),
                         "corrected by crowd", "-"])  # fmt: skip
    rep.table(ReportTable("Effects relative to control", ["run", "up: P(next +) lift", "up: final mean lift",
                                                          "down: P(next +) lift", "down: final mean diff"], eff_rows, summary=True))  # fmt: skip
    rep.series["herding_trajectories"] = {run: {g: d["trajectory"] for g, d in r["metrics"]["groups"].items()} for run, r in runs.items()}
    rep.image(P.group_trajectories(rep.out_dir / "herding_scores.png", rep.series["herding_trajectories"], "mean score",
                                   "Mean item score per treatment group"), "Group score trajectories")  # fmt: skip
    vals = {run: {g: d["p_next_positive"] for g, d in r["metrics"]["groups"].items()} for run, r in runs.items()}
    cis = {run: {g: d["p_next_positive_ci"] for g, d in r["metrics"]["groups"].items()} for run, r in runs.items()}
    rep.series["herding_next_positive"] = vals
    rep.image(P.group_bars(rep.out_dir / "herding_next_positive.png", vals, cis, "P(first crowd vote positive)",
                           "Next vote after the treatment"), "P(next vote positive) per group, 95% bootstrap CI")  # fmt: skip


def _herding(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading("Herd effect (Reddit preset)")
    ref = res["reference"]
    rep.note(f"Reference: {ref['source']}: up-treatment +{ref['up_next_positive_lift']:.0%} next vote positive, "
             f"+{ref['up_final_mean_lift']:.0%} final mean rating; {ref['down']}.")  # fmt: skip
    _herding_tables(rep, res["runs"], ref)
    return [Path(r["dir"]) for r in res["runs"].values()]


def _stance_section(rep: Report, runs: dict[str, dict[str, Any]]) -> None:
    rows = []
    for run, m in runs.items():
        for p in m["points"]:
            g = p["groups"]
            rows.append([run, str(p["step"]), f"{p['answered']}/{p['asked']}", fmt(p["mean"]), fmt(p["mean_abs"]), fmt(p["variance"]),
                         fmt(p["bimodality"]), fmt(g["conservative"]["mean"]), fmt(g["progressive"]["mean"]),
                         fmt(p.get("text_extremity"))])  # fmt: skip
    rep.table(ReportTable("Stance by survey step (step -1 = assigned stances)", ["run", "step", "answered", "mean", "mean |x|",
                          "variance", "bimodality", "conservative mean", "progressive mean", "text extremity"], rows, summary=True))  # fmt: skip
    rep.series["stance_distributions"] = {run: {str(p["step"]): p["values"] for p in m["points"]} for run, m in runs.items()}
    rep.series["stance_trajectories"] = {run: {"steps": [p["step"] for p in m["points"]],
                                               **{k: [p[k] for p in m["points"]] for k in ("mean_abs", "variance", "bimodality")}}
                                         for run, m in runs.items()}  # fmt: skip
    rep.series["group_means"] = {run: {g: [p["groups"][g]["mean"] for p in m["points"]] for g in ("conservative", "progressive")}
                                 for run, m in runs.items()}  # fmt: skip
    rep.image(P.stance_distributions(rep.out_dir / "stance_distributions.png", rep.series["stance_distributions"]),
              "Stance distributions over time")
    rep.image(P.stance_trajectories(rep.out_dir / "stance_trajectories.png", rep.series["stance_trajectories"]),
              "Extremity, variance and bimodality over time")
    rep.image(P.group_trajectories(rep.out_dir / "group_means.png", rep.series["group_means"], "group mean stance",
                                   "Group mean stance per survey (x = survey index; 0 = assigned)"), "Group stance trajectories")  # fmt: skip


def _polarisation(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading("Group polarisation")
    rep.note(f"Reference: {res['reference']}. Null: bounded confidence on the same graph, stances and seed.")
    _stance_section(rep, {run: r["metrics"] for run, r in res["runs"].items()})
    shift = [[run, *(fmt(r["metrics"]["group_extremity_shift"][g]) for g in ("conservative", "progressive")),
              fmt(r["metrics"]["mean_abs_shift"])] for run, r in res["runs"].items()]  # fmt: skip
    rep.table(ReportTable("Change from assigned to last survey", ["run", "conservative extremity shift",
                                                                  "progressive extremity shift", "mean |x| shift"], shift, summary=True))  # fmt: skip
    return [Path(r["dir"]) for r in res["runs"].values()]


def _compare(rep: Report, res: dict[str, Any]) -> list[Path]:
    rep.heading(f"Perspective comparison ({res['of']})")
    keys = ["runs", "llm_calls", "prompt_tokens", "completion_tokens", "tokens_per_agent_step", "invalid_rate", "posts", "reshares",
            "seed_cascade_size", "seed_cascade_depth", "crowd_votes", "p_positive_vote", "final_stance_variance", "final_mean_abs_stance"]  # fmt: skip
    rows = [[p, *(fmt(r["runs"] if k == "runs" else r["totals"][k]) for k in keys)] for p, r in res["perspectives"].items()]
    rep.table(ReportTable("Per perspective (model runs only)", ["perspective", *keys], rows, summary=True))
    rep.table(ReportTable("Headline metric per perspective", ["perspective", "headline"],
                          [[p, json.dumps(r["headline"], default=str)] for p, r in res["perspectives"].items()]))  # fmt: skip
    tokens = {p: (r["totals"]["prompt_tokens"], r["totals"]["completion_tokens"]) for p, r in res["perspectives"].items()}
    rep.series["perspective_tokens"] = tokens
    rep.image(P.perspective_bars(rep.out_dir / "perspective_tokens.png", tokens), "Token cost per perspective")
    dirs = []
    for p, r in res["perspectives"].items():
        sub = read_results(Path(r["dir"]))
        dirs += [Path(c["runs"]["model"]["dir"]) for c in sub["cascades"]] if sub["experiment"] == "propagation" else \
            [Path(sub["runs"]["model"]["dir"])]  # fmt: skip
    return dirs


# ---- single-run report -------------------------------------------------------------------------
def _single_run(rep: Report, run_dir: Path) -> list[Path]:
    from socium.experiments.herding import herding_metrics
    from socium.experiments.polarisation import polarisation_metrics
    from socium.experiments.propagation import simulated_curves

    con = connect(run_dir)
    try:
        cfg = json.loads(con.execute("SELECT config FROM runs").fetchone()[0])
        top = [r[0] for r in con.execute("SELECT root_id FROM cascade_nodes GROUP BY root_id HAVING count(*) > 1 "
                                         "ORDER BY count(*) DESC, root_id LIMIT 3").fetchall()]  # fmt: skip
        seeded = con.execute("SELECT count(*) FROM actions WHERE origin = 'seed' AND type IN ('like_post', 'dislike_post')").fetchone()[0]
        surveyed = con.execute("SELECT count(*) FROM surveys WHERE value IS NOT NULL").fetchone()[0]
        last = con.execute("SELECT max(step) FROM steps").fetchone()[0]
    finally:
        con.close()
    minutes = max(1, int(((last or 0) + 1) * cfg["step_minutes"]))
    rep.heading(f"Run {cfg['name']}")
    if top:
        rows = []
        for root in top:
            c = simulated_curves(run_dir, root, minutes)
            rep.series[f"cascade:{root}"] = {"model": {k: v.tolist() for k, v in c.items()}}
            rep.image(P.cascade_curves(rep.out_dir / f"cascade_{root}.png", f"cascade rooted at post {root}", rep.series[f"cascade:{root}"]),
                      f"Cascade {root}")  # fmt: skip
            rows.append([str(root), *(str(int(c[k][-1])) for k in P.CURVE_TITLES)])
        rep.table(ReportTable("Largest cascades", ["root post", "scale", "depth", "max_breadth"], rows, summary=True))
    if seeded:
        _herding_tables(rep, {"run": {"metrics": herding_metrics(run_dir)}}, None)
    if surveyed:
        _stance_section(rep, {"run": polarisation_metrics(run_dir)})
    return [run_dir]


def _cards(rep: Report, dirs: list[Path]) -> None:
    rep.heading("Simulation Cards")
    if len(dirs) > MAX_CARDS:
        rep.note(f"Cards of the first {MAX_CARDS} of {len(dirs)} runs; `socium card RUN_DIR` prints any other.")
    for d in dirs[:MAX_CARDS]:
        try:
            card = simulation_card(d)
        except SociumError as exc:
            rep.note(f"{d}: no card ({exc})")
            continue
        rep.table(ReportTable(f"Simulation Card: {d}", ["field", "value"],
                              [[k, v if isinstance(v, str) else json.dumps(v, default=str)] for k, v in card.items()]))  # fmt: skip


def _render(rep: Report, title: str) -> str:
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title><style>"
             "body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:collapse;margin:1em 0;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}img{max-width:100%}</style></head><body>",
             f"<h1>{e(title)}</h1>"]  # fmt: skip
    for kind, b in rep.blocks:
        if kind in ("h2", "p"):
            parts.append(f"<{kind}>{e(b)}</{kind}>")
        elif kind == "img":
            parts.append(f"<figure><img src='{e(b[0])}' alt='{e(b[1])}'><figcaption>{e(b[1])}</figcaption></figure>")
        else:
            head = "".join(f"<th>{e(c)}</th>" for c in b.columns)
            body = "".join("<tr>" + "".join(f"<td>{e(str(v))}</td>" for v in row) + "</tr>" for row in b.rows)
            parts.append(f"<h3>{e(b.title)}</h3><table><tr>{head}</tr>{body}</table>")
    return "\n".join(parts + ["</body></html>"])


def write_report(path: str | Path) -> Report:
    """Write ``PATH/report/{index.html, *.png, series.json}`` for an experiment or a single run."""
    path = Path(path)
    out = path / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    rep = Report(out, out / "index.html")
    if (path / RESULTS_FILE).is_file():
        res = read_results(path)
        builders = {"propagation": _propagation, "herding": _herding, "polarisation": _polarisation, "compare": _compare}
        if res.get("experiment") not in builders:
            raise RunDirError(f"{path}: unknown experiment {res.get('experiment')!r} in {RESULTS_FILE}")
        dirs = builders[res["experiment"]](rep, res)
        title = f"socium {res['experiment']} report: {path.name}"
    elif (path / "trace.duckdb").is_file():
        dirs = _single_run(rep, path)
        title = f"socium run report: {path.name}"
    else:
        raise RunDirError(f"{path}: neither an experiment directory ({RESULTS_FILE}) nor a run directory (trace.duckdb)")
    _cards(rep, dirs)
    (out / "series.json").write_text(json.dumps(rep.series, default=lambda x: x.tolist() if hasattr(x, "tolist") else str(x)), encoding="utf-8")
    rep.html.write_text(_render(rep, title), encoding="utf-8")
    return rep
