"""``socium run``: run a simulation, or resume / extend one, showing its progress as it goes.

On a terminal a progress bar; in a log or pipe one flushed line per committed step; on SIGTERM or Ctrl-C
the trace is closed and the last line names the last committed step and the command that continues.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from socium.cli.app import _fail, app, console, err_console
from socium.cli.signals import Stopped, stop_on_signals
from socium.errors import BudgetExceeded, LLMUnavailable, SociumError
from socium.reporting.progress import StepProgress
from socium.trace.run_facts import last_committed_step, out_dir_error
from socium.trace.rundir import default_out

if TYPE_CHECKING:  # lazy at run time: importing the simulator costs CLI start-up
    from socium.config.experiment import ExperimentConfig
    from socium.simulator.simulation import Simulation  # lazy: CLI start-up


def _refuse_resume_overrides(set_: list[str]) -> None:
    """A resumed run continues the same world: only ``--steps`` (extend) and ``executor.*`` (where it
    runs; both outside the config hash) can change. Anything else is refused, by name, not ignored."""
    bad = []
    for item in set_:
        key = item.split("=", 1)[0].strip()
        if key != "steps" and not key.startswith("executor."):
            bad.append(f"--set {item}")
    if bad:
        raise SociumError(
            f"--resume cannot honour {', '.join(bad)}: it would change the run's world (only --steps "
            "and --set executor.* can change on resume); start a new run without --resume instead"
        )


def _check_resume_seed(seed: int | None, recorded: int | None, run_dir: Path) -> None:
    """``--resume --seed S`` is accepted when the run was made with seed S (it says the same world);
    only another seed is refused, since another seed is another world."""
    if seed is None or recorded is None or seed == recorded:
        return
    raise SociumError(
        f"--resume cannot honour --seed {seed}: the run in {run_dir} was made with seed {recorded}, and another "
        f"seed is another world; start a new run for seed {seed} (another --out, or --force to replace this one)"
    )


def _recorded_seed(run_dir: Path) -> int | None:
    from socium.errors import TraceError  # lazy: CLI start-up
    from socium.trace.store import read_run_row  # lazy: CLI start-up

    db = run_dir / "trace.duckdb"
    try:
        row = read_run_row(db) if db.is_file() else None
    except TraceError:  # busy (a live run: the lock names its holder) or unreadable: the set-up says which
        return None
    return None if row is None or row.get("seed") is None else int(row["seed"])


def _stopped_line(run_dir: Path, config: Path | None) -> str:
    """What a stopped run says last: the last committed step, read from the trace, and the way on."""
    last = last_committed_step(run_dir)
    out = shlex.quote(str(run_dir))
    if last is None:
        again = f"socium run {shlex.quote(str(config))} --out {out}" if config else f"socium run CONFIG --out {out}"
        return f"stopped before the run's set-up was committed; `{again}` starts it again"
    go_on = f"`socium run --resume --out {out}` continues"
    if last < 0:
        return f"stopped before step 0 was committed; {go_on}"
    return f"stopped after step {last} (steps 0..{last} are committed); {go_on}"


def _kept(next_step: int) -> str:
    """What a stopped run kept: "steps 0..N", or that no step was committed (a budget stop at step 0 said
    "steps 0..-1 are committed")."""
    if next_step <= 0:
        return "no step is committed yet"
    return "step 0 is committed and kept" if next_step == 1 else f"steps 0..{next_step - 1} are committed and kept"


def _say(text: str) -> None:
    """A status line on stdout: whole (never cut at 80 columns in a log) and flushed at once."""
    console.print(text, soft_wrap=True)
    console.file.flush()


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
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar or progress lines."),
    explore: bool = typer.Option(
        False, "--explore", help="Serve `socium explore` from this process while it runs (needs the explore extra)."
    ),
    explore_port: int = typer.Option(8765, "--explore-port", help="Port for --explore (localhost only)."),
) -> None:
    """Run (or resume) a simulation and write RUN_DIR/trace.duckdb."""
    from socium.config.loading import load_config  # lazy: CLI start-up
    from socium.simulator.run_setup import load_run_config  # lazy: CLI start-up
    from socium.simulator.simulation import Simulation

    t0 = time.perf_counter()  # from here: the time printed is the wall time with set-up, as in the card
    try:
        overrides = list(set_)
        if seed is not None:
            overrides.append(f"seed={seed}")
        if steps is not None:
            overrides.append(f"steps={steps}")
        if resume:
            _refuse_resume_overrides(set_)
        if resume and config is None:
            if out is None:
                raise SociumError(
                    "--resume needs the run directory: socium run --resume --out RUN_DIR (or CONFIG --out RUN_DIR)"
                )
            cfg = load_run_config(out)
            _check_resume_seed(seed, cfg.seed, out)
            if overrides:
                from socium.config.loading import config_from_dict  # lazy: CLI start-up

                cfg = config_from_dict(json.loads(cfg.canonical_json()), overrides, source=f"{out} (the run's config)")
        elif config is None:
            raise SociumError("missing CONFIG (a YAML file), or use --resume --out RUN_DIR")
        else:
            cfg = load_config(config, overrides)
        run_dir = Path(out or default_out(cfg.name, f"-seed{cfg.seed}"))
        if resume and config is not None:
            _check_resume_seed(seed, _recorded_seed(run_dir), run_dir)
        explore_sock = None
        if explore:  # the extra and the port are checked, and the server imported, before the run starts
            from socium.explore import prepare_live  # lazy: solara (the explore extra), only with --explore

            explore_sock = prepare_live(explore_port)
    except SociumError as exc:
        _fail(exc)
        return
    sim = None
    try:
        with stop_on_signals():
            try:
                sim = Simulation(cfg, run_dir, resume=resume, force=force)
            except OSError as exc:  # the run directory cannot be made (--out /proc/x): one line, not a traceback
                err = out_dir_error(run_dir, exc)
                if err is None:
                    raise
                _fail(err)
                return
            except SociumError as exc:
                _fail(exc)
                return
            live = None if explore_sock is None else _serve_explorer(sim, run_dir, cfg.steps, explore_sock)
            try:
                todo = _run_steps(sim, cfg, quiet)
            except typer.Exit as ended:  # a budget or breaker stop: the committed steps stay readable
                if live is not None:
                    _linger(live, run_dir, int(ended.exit_code or 0))
                raise
    except Stopped as stop:
        if sim is not None:
            sim.close()  # idempotent: run() closed it unless the signal came before the first step
        _say(_stopped_line(run_dir, config))
        raise typer.Exit(128 + stop.signum) from None
    if todo == 0 and resume:  # a finished run: nothing ran, and the way on is --steps N
        _say(f"already finished: {cfg.steps} of {cfg.steps} steps committed (--steps N extends it to N)")
    else:
        _say(f"ran {todo} steps in {time.perf_counter() - t0:.1f}s (wall time, set-up included)")
    _say(f"trace: {run_dir / 'trace.duckdb'}")
    _say(f"card:  socium card {shlex.quote(str(run_dir))}")
    if live is not None:
        _linger(live, run_dir, 0)


def _serve_explorer(sim: Simulation, run_dir: Path, steps: int, sock: Any) -> Any:
    """``--explore``: the explorer in a daemon thread, reading through the run's own writer connection
    (DuckDB admits one writing process). A missing extra or a busy port stopped the run before its
    folder was made (``prepare_live``); a server that does not start stops it before its first step."""
    from socium.explore import serve_live  # lazy: solara (the explore extra), only with --explore

    try:
        live = serve_live(sim.trace_store, run_dir, steps, sock)
    except SociumError as exc:
        sim.close()
        _fail(exc)
    _say(f"explore: {live.base_url} (live while the run runs, then the finished trace until Ctrl-C)")
    return live


def _linger(live: Any, run_dir: Path, status: int) -> None:
    """After the run: its explorer reads the finished trace and says how the run ended, until the user
    stops it (Ctrl-C or SIGTERM); the process then exits with the run's status."""
    live.finish(f"exit status {status}")
    _say(f"explore: run finished (exit status {status}); still at {live.base_url} until Ctrl-C")
    try:
        with stop_on_signals():
            while live.serving():
                time.sleep(0.5)
    except Stopped:
        pass
    live.stop_serving()


def _run_steps(sim: Simulation, cfg: ExperimentConfig, quiet: bool) -> int:
    """Run the simulation to its end with a progress display; returns the steps it had to run."""
    for note in sim.notes:
        err_console.print(note)
    todo = cfg.steps - sim.next_step
    t_steps = time.perf_counter()
    totals = {"actions": 0, "calls": 0, "tokens": 0, "replayed": 0}
    with StepProgress(cfg.name, cfg.steps, sim.next_step, console, disable=quiet) as prog:

        def on_step(s: Any) -> None:
            totals["actions"] += s.n_actions
            totals["calls"] += s.llm_calls
            totals["tokens"] += s.tokens
            totals["replayed"] += s.replayed_calls  # a resumed step's answers read from the stopped run's trace
            rate = totals["actions"] / max(time.perf_counter() - t_steps, 1e-9)
            hours = s.sim_time_s / 3600
            llm = f" LLM calls={totals['calls']:,} tokens={totals['tokens']:,}" if totals["calls"] else ""
            if totals["replayed"]:
                llm += f" (replayed={totals['replayed']:,}: answered before the stop, not asked again)"
            if s.slots is not None:  # an HTTP backend's connection limit: how busy it kept the server this step
                llm += f" {s.slots.describe()}"
            prog.step(s.step, f"t={hours:.1f}h active={s.n_active} actions/s={rate:,.1f}{llm}")

        try:
            sim.run(on_step=on_step)
        except BudgetExceeded as exc:
            err_console.print(f"stopped: {exc}; {_kept(sim.next_step)}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(3) from None
        except LLMUnavailable as exc:
            err_console.print(f"stopped: {exc}; {_kept(sim.next_step)}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(4) from None
        except SociumError as exc:
            _fail(exc)
    return todo
