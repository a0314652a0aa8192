"""Report pages for the two result folders that are not phenomenon experiments: a dyadic-episodes run
(``episodes.duckdb`` + ``summary.json``) and a sensitivity study (``sensitivity.json``).

They use the same page as every other report (``socium report DIR``), so they carry the smoke-run
banner, their figures sit beside the tables they plot, and the browser check covers them too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from socium.reporting import plots as P
from socium.reporting.card import smoke_banner
from socium.reporting.guardrails import model_support
from socium.reporting.page import Report, ReportTable, counted, fmt

EPISODES_FILE = "episodes.duckdb"
SENSITIVITY_FILE = "sensitivity.json"


# ---- episodes ------------------------------------------------------------------------------------
def episodes(rep: Report, path: Path) -> list[Path]:
    """The episodes table with the paper's figures, goal bars with the table's CIs, words per turn."""
    from socium.episodes.report import PAPER_HEADER, TABLE_HEADER, paper_note, shows_paper, table_rows, write_plots
    from socium.episodes.runner import load_summary

    summary = load_summary(path)
    cfg = json.loads((path / "config.json").read_text(encoding="utf-8")) if (path / "config.json").is_file() else {}
    banner = smoke_banner(summary.get("llm_backend"))
    if banner:
        rep.banners.append(banner)
    rep.heading("Dyadic episodes")
    model = summary.get("model") or "unknown model"
    if not banner:  # a real model: say which ran and what its output can support (reporting.guardrails)
        rep.banners.append(f"MODEL: {model}: {model_support([model])}")
    rep.note(
        f"{counted(summary['episodes'], 'episode')}; model: {model} (backend {summary.get('llm_backend')}). "
        "Goal: 0 to 10, "
        "rule-scored for procedural tasks, judged for SOTOPIA; intervals: 95% t over episodes, clipped to 0..10, "
        "none below 3 episodes. "
    )
    rep.note(paper_note(summary))
    header = [*TABLE_HEADER, *(PAPER_HEADER if shows_paper(summary) else ())]
    rep.table(ReportTable("Per mode and task", header, table_rows(summary), summary=True))
    rep.series["episodes_rows"] = summary["rows"]
    for p in write_plots(summary, rep.out_dir):
        caption = {
            "goal_by_mode.png": "Goal completion by mode and task, bars: the table's 95% t interval",
            "words_per_turn.png": "Words per 'speak' turn by mode and task (n/a: no spoken turn, e.g. script mode)",
        }.get(p.name, p.stem)
        rep.image(p, caption)
    ended = summary.get("ended_by") or []
    if ended:
        rep.table(
            ReportTable(
                "How episodes ended",
                ["mode", "ended by", "episodes"],
                [[e["mode"], e["ended_by"], str(e["episodes"])] for e in ended],
            )
        )
    jv = summary.get("judge_vs_objective") or {}
    card = [
        ["name", str(cfg.get("name", path.name))],
        ["seed", str(cfg.get("seed", "-"))],
        ["llm backend", str(summary.get("llm_backend"))],
        ["model called", model],
        ["judge model", str(summary.get("judge_model") or "none (rule-scored tasks only)")],
        ["modes", ", ".join(cfg.get("modes", []))],
        ["max turns", str(cfg.get("max_turns", "-"))],
        ["episodes", str(summary["episodes"])],
        ["LLM calls", f"{summary.get('llm_calls') or 0:,}"],
        [
            "tokens (prompt / completion)",
            f"{summary.get('prompt_tokens') or 0:,} / {summary.get('completion_tokens') or 0:,}",
        ],
        ["episode wall time, summed (s)", fmt(summary.get("episode_wall_s_total"), 2)],
        ["judge vs rule score", f"n {jv.get('n', 0)}, MAE {fmt(jv.get('mae'))}, r {fmt(jv.get('pearson_r'))}"],
    ]
    if banner:
        card.insert(0, ["smoke_run", banner])
    rep.heading("Episodes card")
    rep.table(ReportTable(f"Episodes run: {path}", ["field", "value"], card, align_numbers=False))
    return []


# ---- sensitivity ---------------------------------------------------------------------------------
def _sensitivity_bars(path: Path, name: str, o: dict[str, Any], method: str) -> Path:
    plt = P.plt
    rows = o["indices"]
    params = [r["parameter"] for r in rows][::-1]  # largest at the top
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(params) + 1.8))
    ys = np.arange(len(params))
    if method == "morris":
        vals = [r["mu_star"] for r in rows][::-1]
        err = [r["mu_star_ci95"] for r in rows][::-1]
        bars = ax.barh(ys, vals, xerr=err, capsize=3, color="tab:blue", label="mu* (mean |elementary effect|)")
        ax.set_xlabel("mu* (change in the outcome, its units, per full parameter range)")
    else:
        vals = [r["ST"] for r in rows][::-1]
        err = [r["ST_ci95"] for r in rows][::-1]
        s1 = [r["S1"] for r in rows][::-1]
        bars = ax.barh(ys + 0.2, vals, 0.4, xerr=err, capsize=3, color="tab:blue", label="ST (total effect)")
        ax.barh(
            ys - 0.2,
            s1,
            0.4,
            xerr=[r["S1_ci95"] for r in rows][::-1],
            capsize=3,
            color="tab:orange",
            label="S1 (first order)",
        )
        ax.set_xlabel("Sobol index (share of the outcome's variance, 0 to 1)")
    # the table's number, right of the interval's end: inside a short bar white text ran onto the white
    # background, and '6' beside '6.5' read as a different precision
    ends = [v + (e or 0.0) for v, e in zip(vals, err)]
    for rect, v, end in zip(bars, vals, ends):
        ax.annotate(
            fmt(v),
            (end, rect.get_y() + rect.get_height() / 2),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    ax.set_yticks(ys, params)
    ax.set_ylabel("parameter")
    ax.set_xlim(0, max(ax.get_xlim()[1], max(ends, default=0.0) * 1.15) or 1.0)
    ax.set_title(f"{name}: {o['description']}\n(bars: 95% bootstrap interval, as in the table)", fontsize=10)
    return P._save(fig, path, ax)


def sensitivity(rep: Report, path: Path) -> list[Path]:
    """Per outcome: the ranking of parameters as bars with SALib's intervals, and the same numbers as a table."""
    from socium.experiments.spec import read_json_file

    res = read_json_file(path / SENSITIVITY_FILE, "spec")
    spec = res["spec"]
    banner = smoke_banner((spec.get("base", {}).get("llm") or {}).get("backend"))
    if banner and spec.get("base", {}).get("policy", {}).get("kind") == "llm":
        rep.banners.append(banner)
    method = res["method"]
    rep.heading(f"Sensitivity analysis ({method})")
    ranges = "; ".join(
        f"{k} in [{v['low']:g}, {v['high']:g}]" + "".join(f" ({f})" for f in ("integer", "log") if v.get(f))
        for k, v in spec["parameters"].items()
    )
    rep.note(
        f"{counted(res['n_runs'], 'run')} ({counted(len(res['points']), 'design point')} x "
        f"{counted(spec.get('replicates', 1), 'replicate')}), "
        f"executor {res['executor']}, {res['wall_s']:.1f} s. Parameters: {ranges}."
    )
    for name, o in res["outcomes"].items():
        summary = f"mean {fmt(o['mean'])}, range {fmt(o['min'])} to {fmt(o['max'])}"
        if not o.get("indices"):
            rep.note(f"{name} ({o['description']}; {summary}): {o.get('note', 'no ranking')}")
            continue
        if method == "morris":
            cols = ["parameter", "mu*", "mu* 95% CI (+-)", "sigma", "mu"]
            rows = [
                [r["parameter"], fmt(r["mu_star"]), fmt(r["mu_star_ci95"]), fmt(r["sigma"]), fmt(r["mu"])]
                for r in o["indices"]
            ]
        else:
            cols = ["parameter", "S1", "S1 95% CI (+-)", "ST", "ST 95% CI (+-)"]
            rows = [
                [r["parameter"], fmt(r["S1"]), fmt(r["S1_ci95"]), fmt(r["ST"]), fmt(r["ST_ci95"])] for r in o["indices"]
            ]
        rep.table(ReportTable(f"{name}: {o['description']} ({summary})", cols, rows, summary=True))
        rep.series[f"sensitivity:{name}"] = o["indices"]
        rep.image(
            _sensitivity_bars(rep.out_dir / f"sensitivity_{name}.png", name, o, method),
            f"{name}: parameters ranked by {'mu*' if method == 'morris' else 'ST'}",
        )
    return sorted(p for p in path.glob("run-*") if (p / "trace.duckdb").is_file())
