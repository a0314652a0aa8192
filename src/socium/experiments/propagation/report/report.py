"""Propagation reports: simulated against real cascades (NRMSE tables, curves), plain and cross-validated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from socium.core.intervals import interval_from_dict, nonnegative_interval
from socium.experiments.propagation.forecast.forecast import BASELINES
from socium.experiments.propagation.report.counterfactual_report import counterfactual_section
from socium.reporting import plots as P
from socium.reporting.labels import real_label, source_labels
from socium.reporting.page import Report, ReportTable, counted, fmt

MAX_CASCADE_PLOTS = 24


def propagation_cv(rep: Report, res: dict[str, Any]) -> list[Path]:
    """Cross-validated scores: only held-out cascades, mean NRMSE with bootstrap CIs per model."""
    cv = res["spec"]["cv"]
    if cv.get("split") == "chronological":  # the key is in the dumped spec only when not the default
        rep.heading(f"Propagation, chronological cross-validation ({cv['folds']} blocks by posting time)")
        rep.note("Each block is scored by a fit on the blocks posted before it; the first block is only trained on.")
    else:
        rep.heading(f"Propagation, {cv['folds']}-fold cross-validation")
    rep.note(
        f"{counted(len(res['cascades']), 'cascade')}; timing fitted on the train folds, every score on the held-out "
        "fold only "
        f"(never on a cascade a parameter was fitted on); NRMSE over {res['minutes']} min; mean over "
        f"{counted(cv['runs'], 'replica')} per cascade; 95% bootstrap CI over cascades."
    )
    s = res["summary"]
    models = [m for m in cv["models"] if m in s]
    if models:  # cv.models: [] runs only the forecast (and its counterfactual): no simulator scores to show
        _nrmse_table(rep, "Mean NRMSE on held-out cascades [95% CI]", s, models)
    rep.series["nrmse"] = {m: s[m]["nrmse"] for m in models}
    if "forecast" in s:
        _forecast_table(rep, s["forecast"], res["minutes"])
    if "counterfactual" in s:
        counterfactual_section(rep, s["counterfactual"], res["minutes"])
    labels = {"ic_pooled": "IC pooled p", "calibrated": "calibrated null", "llm": "LLM, fitted timing"}
    if models:
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


def _forecast_table(rep: Report, f: dict[str, Any], minutes: int) -> None:
    """Forecast from the first m minutes beside its baselines, on the window after the prefix."""
    m = f["observe_minutes"]
    rep.note(
        f"Forecast from the first {m} minutes of each held-out cascade (observed reshares kept, cascade speed "
        f"inferred from them, the rest simulated), scored on minutes {m}-{minutes - 1} only; null: the same "
        "calibrated null with nothing observed; SEISMIC (Zhao et al. 2015): scale only; "
        "seismic_direct: without its descendants factor (finite on tree populations, where SEISMIC is "
        "supercritical); hawkes: exponential-kernel Hawkes process fitted to the prefix's reshare times, "
        "scale only; hawkes_powerlaw: the same with a power-law (Omori) kernel; hawkes_cv_kernel: the fold's "
        "fitted delay law as kernel, only the branching ratio from the prefix. 95% bootstrap intervals over "
        "cascades; differences: paired t intervals."
    )
    rows = []
    for model in BASELINES:
        if model not in f:
            continue
        cells = [interval_from_dict(f[model].get(k)) if f[model].get(k) else None for k in P.CURVE_TITLES]
        rows.append([model, str(f["n"]), *(iv.format(3) if iv else "-" for iv in cells)])
    for base in BASELINES[1:]:
        if f"forecast_minus_{base}" not in f:
            continue
        d = f[f"forecast_minus_{base}"]
        cells = [interval_from_dict(d.get(k)) if d.get(k) else None for k in P.CURVE_TITLES]
        rows.append([f"forecast - {base}", str(f["n"]), *(iv.format(3, signed=True) if iv else "-" for iv in cells)])
    rep.table(
        ReportTable(
            f"NRMSE over minutes {m}-{minutes - 1} after observing {m} minutes",
            ["model", "n", *P.CURVE_TITLES],
            rows,
            summary=True,
        )
    )


def _with_ci(fold: dict[str, Any], key: str) -> str:
    """A fold's fitted value, with its bootstrap CI when the fold was bootstrapped ('-' when absent)."""
    v = fold["estimates"].get(key)
    if v is None:
        return "-"
    ci = (fold.get("ci95") or {}).get(key)
    return fmt(v) if not ci else f"{fmt(v)} [{fmt(ci[0])}, {fmt(ci[1])}]"


def _population(p: dict[str, Any] | None) -> str:
    if not p:
        return "not recorded"
    lo_hi = p.get("users_p10_p90") or []
    spread = f", 10-90%: {fmt(lo_hi[0])}-{fmt(lo_hi[1])}" if len(lo_hi) == 2 else ""
    return (
        f"{p.get('kind')} ({counted(int(p.get('n_trees') or 0), 'tree')}; median {fmt(p.get('users_median'))} users"
        f"{spread}; data: {', '.join(map(str, p.get('data') or [])) or '-'})"
    )


def propagation_transfer(rep: Report, res: dict[str, Any]) -> list[Path]:
    """A saved fit scored on other trees: its training population beside the scored one, then NRMSE."""
    fit, s = res["fit"], res["summary"]
    rep.heading("Propagation: a saved timing fit scored on other cascades (no refit)")
    rep.note(
        f"Fit {fit['file']} (family {fit['family']}, sha256 {fit['sha256'][:12]}). Training population: "
        f"{_population(fit.get('training'))}. Scored population: {_population(res['scored_population'])}. "
        f"NRMSE over {res['minutes']} min; 95% percentile bootstrap over cascades (none below 3)."
    )
    if res.get("population_warning"):
        rep.note(f"WARNING: {res['population_warning']}")
    models = [m for m in s if isinstance(s[m], dict) and "nrmse" in s[m]]
    _nrmse_table(rep, "Mean NRMSE of the saved fit [95% CI over cascades]", s, models)
    rep.series["nrmse"] = {m: s[m]["nrmse"] for m in models}
    return []


def _nrmse_table(rep: Report, title: str, s: dict[str, Any], models: list[str]) -> None:
    """One row per model: n and each curve's mean NRMSE with its interval (the CV's and the saved fit's)."""
    rows = [
        [m, str(s[m]["n"]), *(f"{fmt(s[m]['nrmse'][k])} {fmt(s[m]['ci95'][k])}" for k in P.CURVE_TITLES)]
        for m in models
    ]
    rep.table(ReportTable(title, ["model", "n", *P.CURVE_TITLES], rows, summary=True))


def propagation(rep: Report, res: dict[str, Any]) -> list[Path]:
    if res.get("mode") == "cv":
        return propagation_cv(rep, res)
    if res.get("mode") == "transfer":
        return propagation_transfer(rep, res)
    rep.heading("Propagation against real cascades")
    cascades = res["cascades"]
    first_model = cascades[0]["runs"]["model"]["dir"] if cascades else None
    labels = source_labels("propagation", first_model)
    labels["real"] = real_label(res)
    rep.note(
        f"{counted(len(cascades), 'cascade')}, {res['step_minutes']} min per step, NRMSE over the first "
        f"{res['minutes']} minutes "
        "(RMSE / max of the real curve), each cascade weighted equally; intervals are 95% percentile bootstrap "
        "intervals over cascades (NRMSE cannot be negative; none below 3 cascades). Reference line: OASIS "
        "reports ~30% NRMSE for scale."
    )
    s = res["summary"]
    models = [m for m in ("model", "null") if m in s]
    ci = {
        m: {
            k: nonnegative_interval([c["runs"][m]["nrmse"][k] for c in cascades if m in c["runs"]])
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
                    *(ci[m][k].format(3) for k in P.CURVE_TITLES),
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
    rep.series["nrmse_ci"] = {
        m: {k: [v.low, v.high] if v.has_bounds else None for k, v in ci[m].items()} for m in models
    }
    rep.image(
        P.nrmse_bars(
            rep.out_dir / "nrmse.png",
            rep.series["nrmse"],
            s["reference"]["oasis_nrmse"],
            {m: rep.series["nrmse_ci"][m] for m in models if all(rep.series["nrmse_ci"][m].values())},
            labels,
            len(cascades),
            ci_kind="95% bootstrap interval; none below 3 cascades",
        ),
        "Mean NRMSE per curve with 95% bootstrap intervals over cascades (the table's intervals; no bars below "
        "3 cascades); dotted line: OASIS's reported ~30%",
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
