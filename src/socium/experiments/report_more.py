"""Report pages for the result folders that are not phenomenon experiments: a dyadic-episodes run
(``episodes.duckdb`` + ``summary.json``), a group-episodes run (``group_episodes.duckdb`` + ``summary.json``)
and a sensitivity study (``sensitivity.json``).

They use the same page as every other report (``socium report DIR``), so they carry the smoke-run
banner, their figures sit beside the tables they plot, and the browser check covers them too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from socium.episodes.report import PAPER_HEADER, TABLE_HEADER, paper_note, shows_paper, table_rows, write_plots
from socium.episodes.runner import load_summary
from socium.reporting import plots as P
from socium.reporting.card import smoke_banner
from socium.reporting.guardrails import model_support
from socium.reporting.page import Report, ReportTable, counted, fmt
from socium.trace.run_facts import read_json_file

EPISODES_FILE = "episodes.duckdb"
GROUP_EPISODES_FILE = "group_episodes.duckdb"
SENSITIVITY_FILE = "sensitivity.json"


# ---- episodes ------------------------------------------------------------------------------------
def episodes(rep: Report, path: Path) -> list[Path]:
    """The episodes table with the paper's figures, goal bars with the table's CIs, words per turn."""

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


# ---- group episodes ------------------------------------------------------------------------------
GROUP_COLUMNS = ["mode", "episodes", "deal rate [95% Wilson]", "goal 0-10 [95% interval]", "goal n"]
GROUP_COLUMNS += ["words/turn", "turns/episode", "invalid turns", "calls/episode", "tokens/episode"]


def _ci(mean: float | None, ci: list[float | None] | None, digits: int = 2) -> str:
    if mean is None:
        return "-"
    ok = ci is not None and ci[0] is not None and ci[1] is not None
    return f"{mean:.{digits}f}" + (f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ok else "")  # type: ignore[index]


def _group_bars(path: Path, modes: dict[str, dict[str, Any]]) -> Path:
    """Deal rate and goal per mode, each with the table's interval."""
    fig, axes = P.plt.subplots(1, 2, figsize=(10, 3.8))
    names = list(modes)
    for ax, (key, ci_key, label, top) in zip(
        axes,
        (("deal_rate", "deal_ci95", "deal rate (0 to 1)", 1.0), ("goal_mean", "goal_ci95", "goal (0 to 10)", 10.0)),
    ):
        ys = [modes[m].get(key) for m in names]
        err = [
            [max(y - c[0], 0.0), max(c[1] - y, 0.0)] if y is not None and c and c[0] is not None else [0.0, 0.0]
            for y, c in zip(ys, (modes[m].get(ci_key) for m in names))
        ]
        bars = ax.bar(names, [0.0 if y is None else y for y in ys], yerr=np.array(err).T, capsize=3, color="tab:blue")
        P._bar_values(ax, bars, ys)
        ax.set_ylim(0, top * 1.08)
        ax.set_xlabel("mode")
        ax.set_ylabel(label)
        ax.set_title(f"{label.split(' (')[0].capitalize()} per mode (bars: the table's 95% interval)", fontsize=10)
    return P._save(fig, path)


def group_episodes(rep: Report, path: Path) -> list[Path]:
    """N-party deal episodes: per mode the deal rate, goal, words, invalid turns and cost, as in the CLI table
    but whole, with a figure, what each mode's agents could see, and the smoke banner of a test backend."""
    summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    cfg = json.loads((path / "config.json").read_text(encoding="utf-8")) if (path / "config.json").is_file() else {}
    llm = cfg.get("llm") or {}
    banner = smoke_banner(llm.get("backend"))
    if banner:
        rep.banners.append(banner)
    modes: dict[str, dict[str, Any]] = summary.get("modes") or {}
    rep.heading("Group episodes")
    rep.note(
        f"{counted(int(summary.get('episodes') or 0), 'episode')}, {cfg.get('parties', '?')} parties, turn taking "
        f"{cfg.get('turn_taking', '?')}, at most {cfg.get('max_turns', '?')} turns; backend {llm.get('backend')}, "
        f"model {llm.get('model') or '-'}. Deal rate: Wilson interval over episodes; goal: 95% interval over "
        "parties' scores (none below 3)."
    )
    rows = [
        [
            mode,
            str(m.get("episodes")),
            _ci(m.get("deal_rate"), m.get("deal_ci95")),
            _ci(m.get("goal_mean"), m.get("goal_ci95")),
            str(m.get("goal_n", "-")),
            fmt(m.get("words_per_turn"), 1),
            fmt(m.get("turns_per_episode"), 2),
            "-" if m.get("invalid_turn_rate") is None else f"{m['invalid_turn_rate']:.0%}",
            fmt(m.get("calls_per_episode"), 1),
            fmt(m.get("tokens_per_episode"), 0),
        ]
        for mode, m in modes.items()
    ]
    rep.table(ReportTable("Per mode", GROUP_COLUMNS, rows, summary=True))
    rep.series["group_modes"] = modes
    if modes:
        rep.image(_group_bars(rep.out_dir / "group_modes.png", modes), "Deal rate and goal per mode")
    access: dict[str, dict[str, Any]] = summary.get("access") or {}
    if access:
        fields = list(dict.fromkeys(k for a in access.values() for k in a if k != "mode"))
        rep.table(
            ReportTable(
                "What each mode's agents see",
                ["", *access],
                [[f, *(str(access[m].get(f, "-")) for m in access)] for f in fields],
                align_numbers=False,
            )
        )
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
