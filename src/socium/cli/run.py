"""``socium run``: run a simulation, or resume / extend one, with a progress bar."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from socium.cli.app import _fail, app, console, err_console
from socium.core.console_text import neutralise
from socium.errors import BudgetExceeded, LLMUnavailable, SociumError
from socium.trace.rundir import default_out


def _refuse_resume_overrides(seed: int | None, set_: list[str]) -> None:
    """A resumed run continues the same world: only ``--steps`` (extend) and ``executor.*`` (where it
    runs; both outside the config hash) can change. Anything else is refused, by name, not ignored."""
    bad = [f"--seed {seed}"] if seed is not None else []
    for item in set_:
        key = item.split("=", 1)[0].strip()
        if key != "steps" and not key.startswith("executor."):
            bad.append(f"--set {item}")
    if bad:
        raise SociumError(
            f"--resume cannot honour {', '.join(bad)}: it would change the run's world (only --steps "
            "and --set executor.* can change on resume); start a new run without --resume instead"
        )


@app.command()
def run(
    config: Path | None = typer.Argument(None, help="Experiment YAML (omit with --resume to reuse the run's own)."),
    out: Path | None = typer.Option(None, "--out", help="Run directory (default runs/<name>-seed<seed>)."),
    seed: int | None = typer.Option(None, "--seed", help="Override the root seed."),
    steps: int | None = typer.Option(
        None, "--steps", help="Override the number of steps (with --resume: extend the run to N)."
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue from the last committed step."),
    force: bool = typer.Option(False, "--force", help="Overwrite a run directory that already holds a run."),
    set_: list[str] = typer.Option([], "--set", help="Override a config field: key.path=value (repeatable)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Run (or resume) a simulation and write RUN_DIR/trace.duckdb."""
    from socium.config import load_config
    from socium.simulator.simulation import Simulation, load_run_config

    t0 = time.perf_counter()  # from here: the time printed is the wall time with set-up, as in the card
    try:
        overrides = list(set_)
        if seed is not None:
            overrides.append(f"seed={seed}")
        if steps is not None:
            overrides.append(f"steps={steps}")
        if resume:
            _refuse_resume_overrides(seed, set_)
        if resume and config is None:
            if out is None:
                raise SociumError(
                    "--resume needs the run directory: socium run --resume --out RUN_DIR (or CONFIG --out RUN_DIR)"
                )
            cfg = load_run_config(out)
            if overrides:
                from socium.config import config_from_dict

                cfg = config_from_dict(json.loads(cfg.canonical_json()), overrides, source=f"{out} (the run's config)")
        elif config is None:
            raise SociumError("missing CONFIG (a YAML file), or use --resume --out RUN_DIR")
        else:
            cfg = load_config(config, overrides)
        run_dir = out or default_out(cfg.name, f"-seed{cfg.seed}")
        sim = Simulation(cfg, run_dir, resume=resume, force=force)
    except SociumError as exc:
        _fail(exc)
        return
    for note in sim.notes:
        err_console.print(note)
    todo = cfg.steps - sim.next_step
    t_steps = time.perf_counter()
    totals = {"actions": 0, "calls": 0, "tokens": 0}
    with Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} steps"),
        TextColumn("{task.fields[info]}", markup=False),
        TimeRemainingColumn(),
        console=console,
        disable=quiet,
    ) as prog:
        task = prog.add_task(neutralise(cfg.name), total=cfg.steps, completed=sim.next_step, info="")

        def on_step(s) -> None:
            totals["actions"] += s.n_actions
            totals["calls"] += s.llm_calls
            totals["tokens"] += s.tokens
            rate = totals["actions"] / max(time.perf_counter() - t_steps, 1e-9)
            hours = s.sim_time_s / 3600
            llm = f" LLM calls={totals['calls']:,} tokens={totals['tokens']:,}" if totals["calls"] else ""
            prog.update(task, advance=1, info=f"t={hours:.1f}h active={s.n_active} actions/s={rate:,.1f}{llm}")

        try:
            sim.run(on_step=on_step)
        except BudgetExceeded as exc:
            err_console.print(f"stopped: {exc}; steps 0..{sim.next_step - 1} are committed and kept", highlight=False)
            raise typer.Exit(3) from None
        except LLMUnavailable as exc:
            kept = (
                f"steps 0..{sim.next_step - 1} are committed and kept" if sim.next_step else "no step is committed yet"
            )
            err_console.print(f"stopped: {exc}; {kept}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(4) from None
        except SociumError as exc:
            _fail(exc)
    if todo == 0 and resume:  # a finished run: nothing ran, and the way on is --steps N
        console.print(f"already finished: {cfg.steps} of {cfg.steps} steps committed (--steps N extends it to N)")
    else:
        console.print(f"ran {todo} steps in {time.perf_counter() - t0:.1f}s (wall time, set-up included)")
    console.print(f"trace: {Path(run_dir) / 'trace.duckdb'}")
    console.print(f"card:  socium card {run_dir}")
