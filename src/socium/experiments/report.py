"""``socium report RUN_DIR``: an HTML page, PNG plots, ``series.json`` and a terminal summary.

Works on an experiment directory (``results.json`` of a study: its report is the study registry's,
:mod:`socium.experiments.studies`) and on a single run directory (``trace.duckdb``), where it
recomputes what it can from the trace: cascades, herding groups (if the run has seeded treatments),
stance surveys. Every plotted series is also written to ``report/series.json``, so a figure can be
checked against numbers.
All text that reaches the HTML is escaped: topics, tweet texts and agent output are data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from socium.errors import RunDirError, SociumError
from socium.experiments import report_more as M
from socium.experiments.designs import seeds as SD
from socium.experiments.designs import sweep as SW
from socium.experiments.opinions.herding import herding_metrics
from socium.experiments.opinions.polarisation import polarisation_metrics
from socium.experiments.opinions.report import herding_tables, stance_section
from socium.experiments.spec import RESULTS_FILE, connect, read_results
from socium.experiments.studies import STUDIES
from socium.reporting import plots as P
from socium.reporting import run_report as R
from socium.reporting.card import card_value, simulation_card
from socium.reporting.labels import source_labels
from socium.reporting.page import Report, ReportTable, counted, fmt, render_html
from socium.reporting.run_report import MEMORY_CHARS
from socium.trace.queries import cascades, population, posts, runs
from socium.trace.safe_write import own_folder, replace_file

# What other modules and users import from here: the page, its formatting and the legend names.
__all__ = [
    "REPORT_DIR",
    "write_report",
]

REPORT_DIR = "report"
MAX_CARDS = 12


# ---- single-run report -------------------------------------------------------------------------
def _single_run(rep: Report, run_dir: Path) -> list[Path]:
    labels = source_labels("run", run_dir)
    con = connect(run_dir)
    try:
        cfg = runs.run_config(con)
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
        mem = R.memories(con, rep.out_dir / "memories.png")
        if mem is not None:
            _memory_section(rep, mem)
        top = cascades.largest_cascades(con, 3)
        seeded = posts.seeded_votes(con)
        surveyed = population.surveyed_answers(con)
        last = runs.last_step(con)
        minutes = max(1, int(((last or 0) + 1) * dt))
        # at each post's recorded time (posts.time_s, what `socium query` shows), not mid-step
        curves = {root: cascades.propagation_curves(con, root, minutes, recorded_time=True) for root, _n in top}
    finally:
        con.close()
    if top:
        rows = []
        for root, _n in top:
            c = curves[root]
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
        herding_tables(rep, {"run": {"metrics": herding_metrics(run_dir)}}, None, labels)
    if surveyed:
        stance_section(rep, {"run": polarisation_metrics(run_dir)}, labels)
    return [run_dir]


def _memory_section(rep: Report, mem: dict[str, Any]) -> None:
    """What the agents' memory streams hold: counts per kind over agents, and the most important few of
    each kind, their text cut (agent output: bounded, and escaped like every cell)."""

    rep.series["memories"] = mem
    rep.heading("Memories and reflections")
    n = len(mem["agents"])
    rows = []
    for kind, counts in mem["per_kind"].items():
        rows.append(
            [kind, f"{sum(counts):,}", str(sum(1 for c in counts if c)), f"{sum(counts) / n:.1f}", str(max(counts))]
        )
    rep.table(
        ReportTable(
            f"Memory stream: {counted(n, 'agent')} with memories",
            ["kind", "memories", "agents with one", "mean per agent", "most of one agent"],
            rows,
            summary=True,
        )
    )
    rep.image(rep.out_dir / "memories.png", "Memories per agent, by kind (stacked)")
    ex = [
        [kind, str(e["step"]), str(e["agent"]), fmt(e["importance"], 2), e["text"]]
        for kind, es in mem["examples"].items()
        for e in es
    ]
    rep.table(
        ReportTable(
            f"The most important memories of each kind (text cut to {MEMORY_CHARS} characters)",
            ["kind", "step", "agent", "importance", "text"],
            ex,
        )
    )


def _model_banners(rep: Report, run_dir: Path, card: dict[str, Any], warned: list[Path]) -> None:
    """Which model ran and what it can support (a real model's runs), and the card's model-output warnings
    (socium.reporting.guardrails) at the top of the page: those of the first 3 runs, then a count."""
    llm = card.get("llm") or {}
    if llm.get("model_supports") and "smoke_run" not in card:
        models = llm.get("models_called")
        named = ", ".join(models) if isinstance(models, dict) else str(llm.get("backend"))
        line = f"MODEL: {named}: {llm['model_supports']}"
        if line not in rep.banners:
            rep.banners.append(line)
    if card.get("quality_warnings"):
        warned.append(run_dir)
        if len(warned) <= 3:
            rep.banners += [f"{run_dir.name}: {w}" for w in card["quality_warnings"]]


def _cards(rep: Report, dirs: list[Path], show: int = MAX_CARDS) -> None:
    """Every run's smoke and model banners; the first run's Simulation Card whole, the others only where
    they differ from it, all folded (``<details>``). Why: a page of 24 nearly identical full cards (11,400 px
    for an intervention study) buried its results; what differs between arms is the part worth reading."""
    rep.heading("Simulation Cards")
    warned: list[Path] = []
    if len(dirs) > show:
        rep.note(f"Cards of the first {show} of {len(dirs)} runs; `socium card RUN_DIR` prints any other.")
    first: dict[str, str] | None = None
    diff_rows: list[list[str]] = []
    for i, d in enumerate(dirs):
        try:
            card = simulation_card(d)
        except SociumError as exc:
            rep.note(f"{d}: no card ({exc})")
            continue
        banner = card.get("smoke_run")
        if banner and banner not in rep.banners:
            rep.banners.append(banner)  # every run is checked, also those whose card is not shown
        _model_banners(rep, d, card, warned)
        if i >= show:
            continue
        values = {k: card_value(v) for k, v in card.items()}
        if first is None:
            first = values
            rep.table(
                ReportTable(
                    f"Simulation Card: {d}",
                    ["field", "value"],
                    [[k, v] for k, v in values.items()],
                    align_numbers=False,
                    folded=True,
                )
            )
            continue
        changed = [[str(d), k, v] for k, v in values.items() if first.get(k) != v]
        diff_rows += changed or [[str(d), "(every field)", "same as the first card"]]
    if diff_rows:
        rep.table(
            ReportTable(
                f"The other {counted(min(len(dirs), show) - 1, 'card')}: only the fields that differ from the first",
                ["run", "field", "value"],
                diff_rows,
                align_numbers=False,
                folded=True,
            )
        )
    if len(warned) > 3:
        rep.banners.append(
            f"... and {len(warned) - 3} more of {len(dirs)} runs with model-output warnings (their cards)"
        )


def write_report(path: str | Path) -> Report:
    """Write ``PATH/report/{index.html, *.png, series.json}`` for an experiment or a single run."""
    path = Path(path)
    if not path.is_dir():
        raise RunDirError(f"{path}: no such folder")
    # never through a `report` symlink (it wrote into the folder it named); a file there is left alone; a
    # read-only folder is one error line
    out = own_folder(path / REPORT_DIR)
    rep = Report(out, out / "index.html")

    show = MAX_CARDS
    if (path / RESULTS_FILE).is_file():
        res = read_results(path)

        name = res.get("experiment")
        known = STUDIES.get(name) if isinstance(name, str) else None
        if known is None:
            raise RunDirError(f"{path}: unknown experiment {res.get('experiment')!r} in {RESULTS_FILE}")
        dirs = known.build_report(rep, res)
        title = f"socium {res['experiment']} report: {path.name}"
    elif (path / "trace.duckdb").is_file():
        dirs = _single_run(rep, path)
        title = f"socium run report: {path.name}"
    elif (path / M.EPISODES_FILE).is_file() and (path / "summary.json").is_file():
        dirs = M.episodes(rep, path)
        title = f"socium episodes report: {path.name}"
    elif (path / M.GROUP_EPISODES_FILE).is_file() and (path / "summary.json").is_file():
        dirs = M.group_episodes(rep, path)
        title = f"socium group-episodes report: {path.name}"
    elif (path / SW.SWEEP_FILE).is_file():
        dirs = SW.report(rep, path)
        title = f"socium sweep report: {path.name}"
    elif (path / SD.SEEDS_FILE).is_file():
        dirs = SD.report(rep, path)
        title = f"socium seeds report: {path.name}"
    elif (path / M.SENSITIVITY_FILE).is_file():
        dirs = M.sensitivity(rep, path)
        title = f"socium sensitivity report: {path.name}"
        show = 2  # every design point is the same world but for the parameters: two cards show the pattern
    else:
        raise RunDirError(
            f"{path}: not an experiment ({RESULTS_FILE}), run (trace.duckdb), episodes ({M.EPISODES_FILE}), "
            f"group-episodes ({M.GROUP_EPISODES_FILE}), sweep ({SW.SWEEP_FILE}), seeds ({SD.SEEDS_FILE}) "
            f"or sensitivity ({M.SENSITIVITY_FILE}) directory"
        )
    if dirs:
        _cards(rep, dirs, show)
    replace_file(
        out / "series.json", json.dumps(rep.series, default=lambda x: x.tolist() if hasattr(x, "tolist") else str(x))
    )
    replace_file(rep.html, render_html(rep, title))
    return rep
