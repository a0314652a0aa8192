"""Per-mode summary of an episodes run, as SQL over its trace, with 95% CIs and plots.

Definitions (also in docs/results.md):

* **goal** of an episode: the mean of the two agents' rule-based goal scores (procedural tasks),
  else the mean of the judge's two ``goal`` scores (SOTOPIA); the mode's value is the mean over
  episodes with a t-based 95% confidence interval (episodes are the independent units).
* **words per turn**: total words of 'speak' turns / number of 'speak' turns, pooled over episodes.
* **turns per episode**: recorded turns (none, invalid and leave included).
* **agreement rate**: share of episodes with agreement (see :mod:`.objective`; SOTOPIA: the judge
  gives both agents goal >= 7). **leave rate**: share of episodes in which someone chose 'leave'.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import duckdb

from socium.core.intervals import MIN_N
from socium.episodes.judge import judge_vs_objective
from socium.reporting.card import smoke_banner
from socium.trace.safe_write import own_folder, replace_file

#: Zhou et al. 2024 (arXiv 2403.05020), goal completion 0-10 on SOTOPIA, judged by GPT-4. Shown only beside
#: a like measurement (:func:`paper_comparable`): SOTOPIA scenarios judged by a GPT-4 model. Beside socium's
#: rule-scored procedural tasks, or a small model's judgement, the same 0-10 scale would invite a comparison
#: of levels that measure different things (issue 29 item 8).
PAPER_GOAL = {
    "GPT-3.5": {"agents": 6.95, "mindreaders": 7.45, "script": 8.44},
    "Mixtral": {"agents": 7.49, "mindreaders": 8.30, "script": 8.40},
}
PAPER_WORDS_PER_TURN = {"agents": 29.8, "script": 16.0}
_MODE_ORDER = "CASE mode WHEN 'agents' THEN 0 WHEN 'mindreaders' THEN 1 WHEN 'script' THEN 2 ELSE 3 END"

SUMMARY_SQL = f"""
WITH e AS (
  SELECT mode, task_kind, valid, n_turns, n_speak, words_per_turn, invalid_turns,
         CASE WHEN goal_0 IS NOT NULL THEN (goal_0 + goal_1) / 2 ELSE (judge_goal_0 + judge_goal_1) / 2 END AS goal,
         (judge_goal_0 + judge_goal_1) / 2 AS judge_goal,
         CAST(agreement AS DOUBLE) AS agreement, CAST(someone_left AS DOUBLE) AS left_
  FROM episodes)
SELECT mode, coalesce(task_kind, 'all') AS task, count(*) AS episodes, count(goal) AS n_goal,
       avg(goal) AS goal_mean, stddev_samp(goal) AS goal_sd, avg(judge_goal) AS judge_goal_mean,
       sum(words_per_turn * n_speak) / nullif(sum(n_speak), 0) AS words_per_turn,
       avg(n_turns) AS turns_per_episode, avg(agreement) AS agreement_rate, avg(left_) AS leave_rate,
       avg(CAST(valid AS DOUBLE)) AS valid_rate, sum(invalid_turns) / nullif(sum(n_turns), 0) AS invalid_turn_rate
FROM e GROUP BY GROUPING SETS ((mode, task_kind), (mode))
ORDER BY {_MODE_ORDER}, task_kind NULLS LAST
"""


def t_ci95(
    mean: float | None, sd: float | None, n: int, lo: float = 0.0, hi: float = 10.0
) -> tuple[float | None, float | None]:
    """Two-sided 95% t interval for a mean, clipped to the goal scale [lo, hi]; None below 3 observations
    (the one interval policy, socium.core.intervals: a 1-degree-of-freedom t interval says nothing)."""
    if mean is None or sd is None or n < MIN_N or math.isnan(sd):
        return None, None
    from scipy.special import stdtrit  # the t quantile; scipy.stats takes seconds to import

    half = float(stdtrit(n - 1, 0.975)) * sd / math.sqrt(n)
    return max(lo, mean - half), min(hi, mean + half)


def summarize(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Rows per (mode, task) and per mode ('all'), plus the judge-vs-rule comparison."""
    cur = con.execute(SUMMARY_SQL)
    names = [d[0] for d in cur.description]
    rows = []
    for rec in cur.fetchall():
        row = dict(zip(names, rec))
        row["goal_ci_low"], row["goal_ci_high"] = t_ci95(row["goal_mean"], row["goal_sd"], row["n_goal"])
        rows.append(row)
    pairs: list[tuple[float, float]] = []
    for jg0, g0, jg1, g1 in con.execute(
        "SELECT judge_goal_0, goal_0, judge_goal_1, goal_1 FROM episodes "
        "WHERE judge_goal_0 IS NOT NULL AND goal_0 IS NOT NULL ORDER BY idx"
    ).fetchall():
        pairs += [(jg0, g0), (jg1, g1)]
    ended = con.execute(
        f"SELECT mode, ended_by, count(*) FROM episodes GROUP BY mode, ended_by ORDER BY {_MODE_ORDER}, ended_by"
    ).fetchall()
    totals = con.execute(
        "SELECT count(*), sum(wall_s), sum(n_calls), sum(prompt_tokens), sum(completion_tokens), "
        "any_value(model), any_value(judge_model) FROM episodes"
    ).fetchall()[0]
    return {
        "rows": rows,
        "judge_vs_objective": judge_vs_objective(pairs),
        "ended_by": [{"mode": m, "ended_by": e, "episodes": n} for m, e, n in ended],
        "episodes": totals[0],
        "episode_wall_s_total": totals[1],
        "llm_calls": totals[2],
        "prompt_tokens": totals[3],
        "completion_tokens": totals[4],
        "model": totals[5],
        "judge_model": totals[6],
        "paper": {"goal": PAPER_GOAL, "words_per_turn": PAPER_WORDS_PER_TURN},
    }


def _f(v: Any, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


TABLE_HEADER = (
    "mode",
    "task",
    "n",
    "goal [95% CI]",
    "judge",
    "words/turn",
    "turns",
    "agree",
    "leave",
    "valid",
    "invalid turns",  # a model answering junk shows here (an episode stays "valid" with every turn invalid)
)
PAPER_HEADER = ("paper goal GPT-3.5 / Mixtral (SOTOPIA, GPT-4 judge)", "paper words/turn")


def paper_comparable(summary: dict[str, Any], row: dict[str, Any]) -> bool:
    """Whether a row is measured as the paper measured its goal: SOTOPIA scenarios, judged by a GPT-4 model."""
    return row.get("task") == "sotopia" and "gpt-4" in str(summary.get("judge_model") or "").lower()


def shows_paper(summary: dict[str, Any]) -> bool:
    """Whether any row of the table gets the paper's figures beside it (else the columns are left out)."""
    return any(paper_comparable(summary, r) for r in summary["rows"])


def paper_note(summary: dict[str, Any]) -> str:
    """Where the paper's figures are, or why none is shown beside these rows."""
    ref = (
        "Zhou et al. 2024 report SOTOPIA goal 0-10 judged by GPT-4 (agents / mindreaders / script: 6.95 / 7.45 / "
        "8.44 with GPT-3.5, 7.49 / 8.30 / 8.40 with Mixtral; 29.8 vs 16.0 words per turn, agents vs script)"
    )
    if shows_paper(summary):
        return f"{ref}; shown beside the SOTOPIA rows only, the ones measured the same way."
    return (
        f"{ref}. Not shown beside these rows: they are not measured the same way (rule-scored procedural tasks, "
        f"or SOTOPIA judged by {summary.get('judge_model') or 'no judge'}, not GPT-4), so levels are not comparable."
    )


def _goal_cell(r: dict[str, Any]) -> str:
    if r["goal_ci_low"] is not None:
        return f"{_f(r['goal_mean'])} [{_f(r['goal_ci_low'])}, {_f(r['goal_ci_high'])}]"
    if r["goal_mean"] is None:
        return _f(r["goal_mean"])
    return f"{_f(r['goal_mean'])} (n={r.get('n_goal', r['episodes'])}: n too small for an interval)"


def table_rows(summary: dict[str, Any], paper: bool = True) -> list[list[str]]:
    """The report table as strings; with ``paper`` (and a row measured as the paper did, see
    :func:`paper_comparable`) the paper's figures sit beside the SOTOPIA rows, and nowhere else."""
    out = []
    paper = paper and shows_paper(summary)
    for r in summary["rows"]:
        ci = _goal_cell(r)
        paper_goal = words = ""
        if paper_comparable(summary, r):
            paper_goal = " / ".join(_f(PAPER_GOAL[m].get(r["mode"])) for m in PAPER_GOAL)
            words = _f(PAPER_WORDS_PER_TURN.get(r["mode"]), 1)
        row = [
            r["mode"],
            r["task"],
            str(r["episodes"]),
            ci,
            _f(r["judge_goal_mean"]),
            _f(r["words_per_turn"], 1),
            _f(r["turns_per_episode"], 1),
            _f(r["agreement_rate"]),
            _f(r["leave_rate"]),
            _f(r["valid_rate"]),
            "–" if r.get("invalid_turn_rate") is None else f"{r['invalid_turn_rate']:.0%}",
        ]
        out.append(row + ([paper_goal, words] if paper else []))
    return out


def markdown_table(summary: dict[str, Any]) -> str:
    header = TABLE_HEADER + (PAPER_HEADER if shows_paper(summary) else ())
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(summary)]
    return "\n".join(lines) + "\n\n" + paper_note(summary)


def write_plots(summary: dict[str, Any], out_dir: Path) -> list[Path]:
    """Goal with the table's 95% CI, and words per turn, by mode and task; PNGs under ``out_dir``.

    The goal error bars are exactly the table's interval (asymmetric where it is clipped to 0..10).
    """
    import numpy as np

    from socium.reporting import plots as P  # lazy: matplotlib, for figures only

    plt = P.plt
    own_folder(out_dir)  # `plots` is never a link socium writes through
    rows = [r for r in summary["rows"] if r["task"] != "all"]
    tasks = sorted({r["task"] for r in rows})
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    model = summary.get("model") or "model"
    if summary.get("llm_backend") in ("fake", "random", "scripted"):
        model = f"SMOKE RUN ({summary['llm_backend']} backend, not a model)"
    paths = []
    for metric, label, title, fname in (
        (
            "goal_mean",
            "goal completion (0 to 10)",
            f"Goal by mode and task, {model} (bars: 95% t interval)",
            "goal_by_mode.png",
        ),
        (
            "words_per_turn",
            "words per 'speak' turn (count)",
            f"Words per spoken turn by mode and task, {model}",
            "words_per_turn.png",
        ),
    ):
        fig, ax = plt.subplots(figsize=(7, 4))
        width = 0.8 / max(1, len(tasks))
        for k, task in enumerate(tasks):
            xs, ys, lo_hi = [], [], []
            for i, mode in enumerate(modes):
                r = next((r for r in rows if r["mode"] == mode and r["task"] == task), None)
                if r is None:
                    continue
                xs.append(i + k * width)
                ys.append(r[metric])  # None (e.g. no spoken turn in script mode): an empty bar marked n/a
                if r[metric] is not None and metric == "goal_mean" and r["goal_ci_low"] is not None:
                    lo_hi.append([r[metric] - r["goal_ci_low"], r["goal_ci_high"] - r[metric]])
                else:
                    lo_hi.append([0.0, 0.0])
            bars = ax.bar(
                xs,
                [0.0 if y is None else y for y in ys],
                width,
                yerr=np.array(lo_hi).T if metric == "goal_mean" and lo_hi else None,
                capsize=3,
                label=task,
            )
            P._bar_values(ax, bars, ys, "{:.2f}" if metric == "goal_mean" else "{:.1f}")
        ax.set_xticks([i + width * (len(tasks) - 1) / 2 for i in range(len(modes))], modes)
        ax.set_xlim(-0.5, len(modes) - 0.5 + width * (len(tasks) - 1))
        ax.set_xlabel("mode")
        ax.set_ylabel(label)
        if metric == "goal_mean":
            ax.set_ylim(0, 10.5)
        ax.set_title(title, fontsize=10)
        path = P._save(fig, out_dir / fname, ax)
        paths.append(path)
    return paths


def write_summary(summary: dict[str, Any], out_dir: Path) -> None:
    banner = smoke_banner(summary.get("llm_backend"))
    replace_file(out_dir / "summary.json", json.dumps(summary, indent=2, default=str))
    head = f"**{banner}**\n\n" if banner else ""
    replace_file(out_dir / "summary.md", head + markdown_table(summary) + "\n")
