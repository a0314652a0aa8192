"""Commands for dyadic and group episodes: episodes, export-sft, group-episodes."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from socium.cli.app import _fail, _result_table, app, console, err_console
from socium.core.console_text import plain
from socium.errors import BudgetExceeded, LLMUnavailable, SociumError
from socium.reporting.progress import RichProgress, reporting


def _stopped_or_fail(exc: SociumError) -> None:
    """The run-level guards of ``socium run``: a failing server or unusable model output stops the run with exit
    4 (a spent budget 3), naming the cause; the episodes written before are kept and a rerun continues."""
    if isinstance(exc, (LLMUnavailable, BudgetExceeded)):
        err_console.print(plain("stopped:", "bold red"), plain(f"{exc}; the episodes written before are kept"))
        raise typer.Exit(4 if isinstance(exc, LLMUnavailable) else 3)
    _fail(exc)


@app.command()
def episodes(
    config: Path = typer.Argument(..., help="Episodes YAML (see examples/episodes.yaml)."),
    out: Path | None = typer.Option(
        None, "--out", help="Run directory (default: the file's 'out' or runs/<name>-seed<seed>)."
    ),
    set_: list[str] = typer.Option([], "--set", help="Override a config field: key.path=value (repeatable)."),
    force: bool = typer.Option(False, "--force", help="Discard episodes already in the run directory."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Run dyadic episodes (scenarios x modes x repeats), then print a table per mode and write plots."""
    from socium.episodes.config import load_episodes_config  # lazy: CLI start-up
    from socium.episodes.health import invalid_turn_rate  # lazy: CLI start-up
    from socium.episodes.report import TABLE_HEADER, table_rows  # lazy: CLI start-up
    from socium.episodes.runner import run_episodes  # lazy: CLI start-up

    try:
        cfg = load_episodes_config(config, list(set_))
        if out is not None:
            cfg = cfg.model_copy(update={"out": str(out)})
    except SociumError as exc:
        _fail(exc)
        return

    try:
        with RichProgress(f"episodes {cfg.name}", "episodes", console, disable=quiet) as prog, reporting(prog):
            rep = run_episodes(cfg, force=force)
    except SociumError as exc:
        _stopped_or_fail(exc)
        return
    from socium.reporting.card import smoke_banner  # lazy: CLI start-up

    banner = smoke_banner(cfg.llm.backend)
    if banner:
        console.print(plain(banner, "bold red"))
    cells = [list(row) for row in table_rows(rep.summary, paper=False)]
    console.print(
        _result_table(list(TABLE_HEADER), cells, f"episodes: {rep.out}", wider=f"{rep.out}/summary.md has it whole")
    )
    console.print(
        "paper (Zhou et al. 2024, SOTOPIA, GPT-4 judge): goal agents / mindreaders / script = "
        "GPT-3.5 6.95 / 7.45 / 8.44, Mixtral 7.49 / 8.30 / 8.40; words per turn agents 29.8, script 16.0"
    )
    bad = invalid_turn_rate(rep.summary["rows"])
    if bad is not None:
        console.print(f"invalid turns: {bad:.1%} of all turns (unparseable or off-schema answers)", highlight=False)
    rate = rep.summary["this_invocation"]["episodes_per_min"]
    console.print(
        f"ran {rep.ran} episodes ({rep.skipped} already done) in {rep.wall_s:.1f}s"
        + (f", {rate:.2f} episodes/min" if rate else "")
    )
    from socium.experiments.report import write_report  # lazy: CLI start-up

    page = write_report(rep.out).html if rep.summary["episodes"] else None
    console.print(
        f"trace: {rep.out / 'episodes.duckdb'}  summary: {rep.out / 'summary.md'}  plots: {rep.out / 'plots'}"
        + (f"  report: {page}" if page else "")
    )


@app.command("export-sft")
def export_sft_cmd(
    run_dir: Path = typer.Argument(..., help="An episodes run directory (episodes.duckdb)."),
    mode: Literal["agents", "mindreaders", "script", "all"] = typer.Option(
        "script", "--mode", help="Episodes of this mode ('all' for every mode)."
    ),
    out: Path | None = typer.Option(None, "--out", help="JSONL file (default RUN_DIR/sft-<mode>-<format>.jsonl)."),
    fmt: Literal["turns", "script"] = typer.Option(
        "turns", "--format", help="turns: one agent-view example per turn; script: one per episode."
    ),
    min_goal: float | None = typer.Option(None, "--min-goal", help="Keep only episodes whose goal reaches this."),
    exclude_failed: bool = typer.Option(
        False, "--exclude-failed", help="Leave out failed episodes (goal 0); by default they are exported too."
    ),
) -> None:
    """Write episodes as chat-format JSONL ({"messages": [...]}) for supervised fine-tuning."""
    from socium.episodes.export import export_counts, export_sft  # lazy: CLI start-up

    picked = None if mode == "all" else mode
    try:
        path, n = export_sft(run_dir, out, picked, fmt, min_goal, exclude_failed)
        counts = export_counts(run_dir, picked, min_goal, exclude_failed)
    except SociumError as exc:
        _fail(exc)
        return
    console.print(f"wrote {n} examples from {counts['episodes']} episodes to {path}")
    if counts["failed"]:
        console.print(
            f"included {counts['failed']} failed episodes (goal 0) of {counts['episodes']}: every valid episode "
            "is exported unless asked otherwise; --exclude-failed (or --min-goal) leaves them out",
            highlight=False,
        )
    elif exclude_failed:
        console.print("failed episodes (goal 0) left out (--exclude-failed)", highlight=False)


@app.command("group-episodes")
def group_episodes(
    config: Path = typer.Argument(..., help="Group-episodes YAML (see examples/group-episodes.yaml)."),
    out: Path | None = typer.Option(None, "--out", help="Run directory (default runs/<name>-seed<seed>)."),
    force: bool = typer.Option(False, "--force", help="Discard episodes already in the run directory."),
    set_: list[str] = typer.Option([], "--set", help="Override a config field: key.path=value (repeatable)."),
) -> None:
    """N-party deal episodes (3+ characters) under agents / mindreaders / script; rule-scored, optionally judged."""
    from socium.episodes.multiparty_runner import load_group_config, run_group_episodes  # lazy: CLI start-up

    try:
        cfg = load_group_config(config, list(set_) + ([f"out={out}"] if out else []))
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeRemainingColumn(),
            console=console,
        ) as prog:
            task = prog.add_task("group episodes", total=None)

            def on_done(res, k: int, n: int) -> None:
                prog.update(task, completed=k, total=n)

            summary = run_group_episodes(cfg, force=force, on_done=on_done)
    except SociumError as exc:
        _stopped_or_fail(exc)
        return
    table = Table(title=f"{summary['episodes']} group episodes ({cfg.parties} parties, {cfg.turn_taking})")
    table.add_column("mode", no_wrap=True)
    for col in ("n", "deal rate [95% CI]", "goal 0-10 [95% CI]", "words/turn", "invalid turns", "calls/ep"):
        table.add_column(col)
    for mode, m in summary["modes"].items():
        ci = m["goal_ci95"]
        goal = (
            "-"
            if m["goal_mean"] is None
            else f"{m['goal_mean']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci[0] is not None else "")
        )
        table.add_row(
            mode,
            str(m["episodes"]),
            f"{m['deal_rate']:.2f} [{m['deal_ci95'][0]:.2f}, {m['deal_ci95'][1]:.2f}]",
            goal,
            "-" if m["words_per_turn"] is None else f"{m['words_per_turn']:.1f}",
            f"{m['invalid_turn_rate']:.0%}",
            f"{m['calls_per_episode']:.1f}",
        )
    console.print(table)
    from socium.experiments.report import write_report  # lazy: CLI start-up

    page = write_report(cfg.out_dir()).html if summary["episodes"] else None
    console.print(f"trace: {cfg.out_dir() / 'group_episodes.duckdb'}  summary: {cfg.out_dir() / 'summary.json'}")
    if page is not None:
        console.print(f"report: {page}", highlight=False)
