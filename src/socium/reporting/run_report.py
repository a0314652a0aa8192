"""What a single run's report shows of the run itself, as SQL over its trace plus one figure each.

Activity and actions over time by type, the invalid rate over time, the mix of feed sources, the
stance distribution over time (when stances exist) and the LLM's tokens and latency per step. Each
function returns the series it plotted, which the report also writes to ``series.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from socium.reporting import plots as P
from socium.reporting.plots import plt
from socium.trace.queries import calls, exposures, population, runs


def _steps_axis(ax: Any, step_minutes: float) -> None:
    ax.set_xlabel(f"step ({step_minutes:g} simulated minutes each)")
    P._integer(ax, "x")


def activity(con: duckdb.DuckDBPyConnection, path: Path, step_minutes: float) -> dict[str, Any]:
    """Active agents and actions per step, by action type (seed actions apart)."""
    per_step = runs.active_per_step(con)
    steps = [s for s, _ in per_step]
    active = [n for _, n in per_step]
    rows = runs.actions_by_type(con)
    idx = {s: i for i, s in enumerate(steps)}
    by_type: dict[str, list[int]] = {}
    for typ, step, n in rows:
        by_type.setdefault(typ, [0] * len(steps))[idx[step]] = int(n)
    top = sorted(by_type, key=lambda t: -sum(by_type[t]))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 3.8))
    a1.plot(steps, active, color="black", marker="o", ms=3, label="active agents")
    a1.set_title("Active agents per step", fontsize=10)
    a1.set_ylabel("agents (count)")
    a1.set_ylim(bottom=0)
    P._integer(a1)
    _steps_axis(a1, step_minutes)
    bottom = np.zeros(len(steps))
    shown = top[:8]
    for typ in shown:
        a2.bar(steps, by_type[typ], bottom=bottom, label=typ, width=0.8)
        bottom += np.asarray(by_type[typ])
    rest = [t for t in top if t not in shown]
    if rest:
        other = np.sum([by_type[t] for t in rest], axis=0)
        a2.bar(steps, other, bottom=bottom, label=f"other ({len(rest)} types)", width=0.8, color="lightgray")
        bottom = bottom + other
    a2.set_ylim(0, max(float(bottom.max()) if len(bottom) else 0.0, 1.0) * 1.08)
    a2.set_title("Successful actions per step, by type (seed actions excluded)", fontsize=10)
    a2.set_ylabel("actions (count)")
    P._integer(a2)
    _steps_axis(a2, step_minutes)
    P._save(fig, path, a2)
    return {"steps": steps, "active": active, "actions_by_type": by_type}


def invalid_rate(con: duckdb.DuckDBPyConnection, path: Path, step_minutes: float) -> dict[str, Any]:
    """Share of the policy's actions per step that were not applied (rule violations, invalid LLM output)."""
    rows = runs.outcomes_per_step(con)
    steps = [r[0] for r in rows]
    rate = [r[2] / r[1] if r[1] else None for r in rows]
    llm = [r[3] / r[1] if r[1] else None for r in rows]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(steps, [np.nan if v is None else v for v in rate], marker="o", ms=3, label="not applied (any reason)")
    if any(llm):
        ax.plot(steps, [np.nan if v is None else v for v in llm], marker="s", ms=3, ls="--", label="invalid LLM output")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("share of the step's actions (0 to 1)")
    ax.set_title("Invalid rate per step", fontsize=10)
    _steps_axis(ax, step_minutes)
    P._save(fig, path, ax)
    return {"steps": steps, "invalid_rate": rate, "invalid_llm_rate": llm, "actions": [r[1] for r in rows]}


def feed_sources(con: duckdb.DuckDBPyConnection, path: Path, step_minutes: float) -> dict[str, Any]:
    """Where the posts agents saw came from (in-network, out-of-network, search, trend, global...)."""
    rows = exposures.by_source(con)
    steps = sorted({r[0] for r in rows})
    idx = {s: i for i, s in enumerate(steps)}
    by_src: dict[str, list[int]] = {}
    for step, src, n in rows:
        by_src.setdefault(src, [0] * len(steps))[idx[step]] = int(n)
    totals = {k: sum(v) for k, v in by_src.items()}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 3.8), gridspec_kw={"width_ratios": [2, 1]})
    bottom = np.zeros(len(steps))
    per_step = np.maximum(np.sum(list(by_src.values()), axis=0), 1) if by_src else np.ones(len(steps))
    for src, counts in sorted(by_src.items(), key=lambda kv: -totals[kv[0]]):
        share = np.asarray(counts) / per_step
        a1.bar(steps, share, bottom=bottom, label=src, width=0.8)
        bottom += share
    a1.set_ylim(0, 1.02)
    a1.set_ylabel("share of feed items (0 to 1)")
    a1.set_title("Feed source mix per step", fontsize=10)
    _steps_axis(a1, step_minutes)
    names = sorted(totals, key=lambda k: -totals[k])
    bars = a2.bar(names, [totals[k] for k in names], color="tab:gray")
    P._bar_values(a2, bars, [totals[k] for k in names], "{:,.0f}")
    a2.set_ylabel("feed items shown (count)")
    a2.set_xlabel("feed source")
    a2.set_title("Feed items by source, whole run", fontsize=10)
    P._integer(a2)
    P._save(fig, path, a1)
    return {"steps": steps, "by_source": by_src, "totals": totals}


def stance_over_time(con: duckdb.DuckDBPyConnection, path: Path, step_minutes: float) -> dict[str, Any] | None:
    """Mean stance with its 10-90% band and the share of agents on each side, per step (None without stances)."""
    initial = population.initial_stances(con)
    if np.isnan(initial).all():
        return None
    steps = [s for s, _ in runs.active_per_step(con)]
    changes = population.stance_changes(con)
    cur = initial.copy()
    k = 0
    xs, mean, lo, hi, pos = [-1], [], [], [], []

    def record(v: np.ndarray) -> None:
        v = v[~np.isnan(v)]
        mean.append(float(v.mean()))
        lo.append(float(np.quantile(v, 0.1)))
        hi.append(float(np.quantile(v, 0.9)))
        pos.append(float((v > 0).mean()))

    record(cur)
    for s in steps:
        while k < len(changes) and changes[k][0] <= s:
            cur[changes[k][1]] = changes[k][2]
            k += 1
        xs.append(s)
        record(cur)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 3.8))
    a1.plot(xs, mean, color="tab:purple", marker="o", ms=3, label="mean stance")
    a1.fill_between(xs, lo, hi, color="tab:purple", alpha=0.15, lw=0, label="10th-90th percentile of agents")
    a1.axhline(0, color="gray", lw=0.6, ls=":", label="0 = neutral")
    a1.set_ylim(-1.05, 1.05)
    a1.set_ylabel("stance (-1 to 1)")
    title = "Stance over time (-1 = assigned before step 0)"
    if not changes:  # e.g. LLM agents: their stance is what surveys measure, not a state the policy moves
        title = "Stance over time: no agent's stance changed in this run"
    a1.set_title(title, fontsize=10)
    _steps_axis(a1, step_minutes)
    a2.plot(xs, pos, color="tab:cyan", marker="o", ms=3, label="share with stance > 0")
    a2.set_ylim(-0.02, 1.02)
    a2.set_ylabel("share of agents (0 to 1)")
    a2.set_title("Share of agents on the positive side", fontsize=10)
    _steps_axis(a2, step_minutes)
    P._save(fig, path, [a1, a2])
    return {"steps": xs, "mean": mean, "p10": lo, "p90": hi, "share_positive": pos, "changes": len(changes)}


def llm_usage(con: duckdb.DuckDBPyConnection, path: Path, step_minutes: float) -> dict[str, Any] | None:
    """Prompt and completion tokens per step, and call latency (median and 90th percentile) per step."""
    if not calls.has_calls(con):
        return None
    rows = calls.usage_per_step(con)
    steps = [int(r[0]) for r in rows]
    pt = [int(r[2]) for r in rows]
    ct = [int(r[3]) for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 3.8))
    a1.bar(steps, pt, label="prompt tokens", color="tab:blue", width=0.8)
    a1.bar(steps, ct, bottom=pt, label="completion tokens", color="tab:orange", width=0.8)
    a1.set_ylabel("tokens (count)")
    a1.set_title("LLM tokens per step", fontsize=10)
    P._integer(a1)
    _steps_axis(a1, step_minutes)
    # black and gray: the shared legend must not pair a latency line with a token bar's colour
    a2.plot(steps, [r[4] for r in rows], color="black", marker="o", ms=3, label="median latency")
    a2.plot(steps, [r[5] for r in rows], color="gray", marker="s", ms=3, ls="--", label="90th percentile latency")
    a2.set_ylim(bottom=0)
    a2.set_ylabel("seconds per call")
    a2.set_title("LLM call latency per step", fontsize=10)
    _steps_axis(a2, step_minutes)
    P._save(fig, path, [a1, a2])
    return {
        "steps": steps,
        "calls": [int(r[1]) for r in rows],
        "prompt_tokens": pt,
        "completion_tokens": ct,
        "latency_p50_s": [r[4] for r in rows],
        "latency_p90_s": [r[5] for r in rows],
    }


#: Examples of each memory kind shown on a run's page, and the characters kept of each (memory text is
#: agent output: bounded so one long reflection cannot take over the page).
MEMORY_EXAMPLES = 3
MEMORY_CHARS = 240


def memories(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, Any] | None:
    """Memories per agent by kind (observation, action, reflection) as stacked bars, and the most
    important few of each kind (None when the run kept no memory stream)."""
    if "memories" not in runs.table_names(con):
        return None
    rows = population.memory_counts(con)
    if not rows:
        return None
    agents = sorted({a for a, _k, _n in rows})
    kinds = sorted({k for _a, k, _n in rows})
    idx = {a: i for i, a in enumerate(agents)}
    per_kind = {k: [0] * len(agents) for k in kinds}
    for a, k, n in rows:
        per_kind[k][idx[a]] = n
    fig, ax = plt.subplots(figsize=(max(7.0, min(0.25 * len(agents) + 2, 14.0)), 3.8))
    bottom = np.zeros(len(agents))
    for k in kinds:
        ax.bar(range(len(agents)), per_kind[k], bottom=bottom, label=k, width=0.8)
        bottom += np.asarray(per_kind[k])
    step = max(1, len(agents) // 20)
    ax.set_xticks(range(0, len(agents), step), [str(a) for a in agents[::step]])
    ax.set_xlabel("agent id")
    ax.set_ylabel("memories (count)")
    ax.set_title("Memory stream per agent, by kind", fontsize=10)
    P._integer(ax)
    P._save(fig, path, ax)
    examples = {
        k: [
            {"step": int(s), "agent": int(a), "text": str(t or ""), "importance": imp}
            for s, a, t, imp in population.memory_examples(con, k, MEMORY_EXAMPLES, MEMORY_CHARS)
        ]
        for k in kinds
    }
    return {"agents": agents, "per_kind": per_kind, "examples": examples}
