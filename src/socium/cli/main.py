"""The ``socium`` command line. Thin: every command calls a function a library user could call."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Literal

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from socium.console_text import SafeConsole, neutralise, plain
from socium.errors import BudgetExceeded, LLMUnavailable, SociumError


def _as_flags(params: list[Any]) -> list[Any]:
    """Boolean options appear in --help as flags (``--resume``), not as options taking a ``<bool>``;
    ``--set`` shows what it takes (``<key.path=value>``), not the Python type ``<list[str]>``."""
    for p in params:
        if getattr(p, "is_flag", False):
            p.metavar = ""
        elif "--set" in getattr(p, "opts", ()):
            p.metavar = "<key.path=value>"
    return params


class _FlagCommand(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _as_flags(super().get_params(ctx))


class _Group(TyperGroup):
    """Every command of the app (whoever added it) renders its flags as flags."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for cmd in self.commands.values():
            if type(cmd) is TyperCommand:
                cmd.__class__ = _FlagCommand

    def get_params(self, ctx: Any) -> list[Any]:
        return _as_flags(super().get_params(ctx))


app = typer.Typer(
    add_completion=False, no_args_is_help=True, cls=_Group, help="socium: simulate societies of LLM agents."
)
# Everything printed may hold data (post text, names, paths): no markup, control characters neutralised.
console = SafeConsole()
err_console = SafeConsole(stderr=True, soft_wrap=True)  # one error, one line


def _duckdb_error() -> type[Exception]:
    import duckdb

    return duckdb.Error


def _version(value: bool) -> None:
    if value:
        import socium

        console.print(f"socium {socium.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """socium: simulate societies of LLM agents."""


def _fail(exc: Exception) -> None:
    err_console.print(plain("error:", "bold red"), plain(exc))
    raise typer.Exit(2)


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
        run_dir = out or Path("runs") / f"{cfg.name}-seed{cfg.seed}"
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


def _result_table(cols: list[str], cells: list[list[str]], title: str | None = None, wider: str = "") -> Table:
    """A table of results that never splits a number: where every column fits at the width of its name
    and of its longest word (24 characters at most), those are its minimum widths (rich cut 'parent_id'
    to 'parent_…' and '[0.280, 0.803]' to '[0.2…'); a wider table keeps rich's layout, whose ellipsis at
    least shows a cut, where folding would print 0.667 as '0.66' over '7', and its caption says where
    the whole table is (``wider``). Names fold rather than cut."""

    def longest_word(i: int) -> int:
        return max((len(w) for row in cells for w in row[i].split()), default=0)

    need = [max(min(len(c), 24), min(longest_word(i), 24)) for i, c in enumerate(cols)]
    fits = sum(n + 3 for n in need) + 1 <= console.width
    caption = (
        None if fits else f"(cut to {console.width} columns where a value shows …; {wider or 'widen the terminal'})"
    )
    table = Table(title=title, caption=caption)
    for c, n in zip(cols, need):
        table.add_column(Text(neutralise(c), overflow="fold"), min_width=n if fits else None)
    for row in cells:
        table.add_row(*row)
    return table


@app.command()
def query(
    run_dir: Path,
    sql: str,
    limit: int = typer.Option(50, "--limit", min=1, help="Rows to print (an --out file gets every row)."),
    fmt: Literal["table", "csv", "json", "parquet"] = typer.Option(
        "table", "--format", help="Output format; parquet needs --out."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write every row to this file instead of printing."),
) -> None:
    """Run read-only SQL over a run's trace (tables and views such as cascade_metrics).

    Prints at most --limit rows and says when more were left out; --out writes all of them (CSV, JSON or Parquet).
    The SQL sees the trace and nothing else: DuckDB's external access is off (no reading or writing
    other files, no ATTACH, no extension installs) and its settings are locked.
    """
    import duckdb

    from socium.simulator.store import open_trace, require_store

    if fmt == "parquet" and out is None:
        _fail(SociumError("--format parquet writes a file: add --out FILE.parquet"))
    try:
        con = open_trace(require_store(run_dir), sandbox=True)
    except SociumError as exc:
        _fail(exc)
        return
    try:
        if out is not None:
            from socium.query_output import write_table

            rel = con.sql(sql)
            if rel is None:
                raise SociumError("--out: the statement returns no rows to write")
            n = write_table(rel.to_arrow_table(), out, "csv" if fmt == "table" else fmt)
            console.print(f"wrote {n} rows to {out}")
            return
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description] if cur.description else []
        rows = cur.fetchmany(limit + 1)
    except SociumError as exc:
        _fail(exc)
        return
    except duckdb.Error as exc:
        _fail(SociumError(f"query failed: {exc}"))
        return
    finally:
        con.close()
    truncated = len(rows) > limit
    rows = rows[:limit]
    if fmt == "table":
        cells = [["NULL" if v is None else str(v) for v in r] for r in rows]
        console.print(_result_table(cols, cells, wider="--format csv prints every value whole"))
    else:
        from socium.query_output import format_rows

        sys.stdout.write(format_rows(cols, rows, fmt))
    if truncated:
        note = f"(output truncated to the first {limit} rows; raise --limit, or --out FILE writes every row)"
        err_console.print(note, highlight=False)


@app.command()
def card(run_dir: Path, as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """Print the run's Simulation Card: perspective, who saw what, model, seeds, totals."""
    from socium.experiments.card import card_value, simulation_card

    try:
        c = simulation_card(run_dir)
    except SociumError as exc:
        _fail(exc)
        return
    except _duckdb_error() as exc:
        _fail(SociumError(f"{run_dir}: unreadable trace: {exc}"))
        return
    if as_json:
        sys.stdout.write(json.dumps(c, indent=2, default=str) + "\n")
        return
    if c.get("smoke_run"):
        console.print(plain(c["smoke_run"], "bold red"))
    table = Table("field", "value", title=f"Simulation Card: {run_dir}")
    for k, v in c.items():
        table.add_row(k, card_value(v))
    console.print(table)


@app.command()
def interview(
    run_dir: Path,
    question: str,
    agent: int = typer.Option(..., "--agent", help="Agent id to ask."),
    backend: str | None = typer.Option(None, "--backend", help="Override the run's llm.backend (e.g. embedded)."),
    record: bool = typer.Option(
        False, "--record", help="Store the answer in the run's `interviews` table (with its LLM call)."
    ),
) -> None:
    """Ask one agent of a finished run a question (its persona and memory at the end of the run)."""
    from socium.experiments.card import smoke_banner
    from socium.experiments.interview import interview as ask
    from socium.simulator.simulation import load_run_config

    try:
        answer = ask(run_dir, agent, question, {"backend": backend} if backend else None, record=record)
        run_llm = load_run_config(run_dir).llm
    except SociumError as exc:
        _fail(exc)
        return
    banner = smoke_banner(backend or (run_llm.backend if run_llm else None))
    if banner:  # on stderr: stdout stays the answer alone, for scripts
        err_console.print(plain(banner, "bold red"))
    console.print(answer, markup=False, highlight=False)


@app.command("config-schema")
def config_schema(
    markdown: bool = typer.Option(
        False, "--markdown", help="A readable reference: every section and key with default and meaning."
    ),
) -> None:
    """Print the experiment config's JSON schema (or, with --markdown, a reference of every key)."""
    from socium.config import ExperimentConfig

    if markdown:
        from socium.config_doc import config_markdown

        sys.stdout.write(config_markdown(ExperimentConfig) + "\n")
        return
    sys.stdout.write(json.dumps(ExperimentConfig.model_json_schema(), indent=2) + "\n")


@app.command()
def data() -> None:
    """Where socium looks for the research data sets ($SOCIUM_DATA_DIR or ../shared/data) and what it finds."""
    from socium.datadir import ENV_VAR, describe

    tried, used, entries = describe()
    console.print(f"data folder: {used}  ({'found' if used.is_dir() else 'MISSING'})", highlight=False)
    console.print(f"looked in (set {ENV_VAR} to choose): " + ", ".join(str(t) for t in tried), highlight=False)
    table = Table("data set", "used for", "found")
    table.columns[0].overflow = "fold"  # the whole path, folded, never cut with an ellipsis
    for e in entries:
        table.add_row(e.relpath, e.purpose, "yes" if e.found else "no")
    console.print(table)


@app.command()
def sweep(
    sweep_file: Path = typer.Argument(..., help="Sweep YAML: base, grid, seeds, out, parallel, address."),
    out: Path | None = typer.Option(None, "--out", help="Sweep directory (overrides the file's 'out')."),
    parallel: int | None = typer.Option(None, "--parallel", help="Runs in flight at once (overrides the file)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON instead of a table."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Run a grid of config overrides x seeds as parallel runs on Ray, then print a summary."""
    from socium.experiments.sweep import load_sweep, run_sweep

    try:
        spec = load_sweep(sweep_file, out=out, parallel=parallel)
    except SociumError as exc:
        _fail(exc)
        return
    from socium.experiments.progress import RichProgress

    with RichProgress(f"sweep {spec.out.name}", "runs", console, disable=quiet) as prog:
        prog.expect(len(spec.runs))

        def on_done(r: Any, res: dict[str, Any]) -> None:
            if not res.get("ok"):
                prog.note(f"{r.run} FAILED: {res.get('error')}")
            prog.finish_item(
                r.run,
                reused=bool(res.get("reused")),
                llm_calls=int(res.get("llm_calls") or 0),
                tokens=int(res.get("tokens") or 0),
            )

        rows = run_sweep(spec, on_done=on_done, on_poll=prog.inflight)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
    else:
        cols = ["run", "overrides", "seed", "steps", "posts", "actions", "wall s", "status"]
        cells = [
            [
                r["run"],
                " ".join(f"{k}={v}" for k, v in r["overrides"].items()),
                str(r["seed"]),
                str(r["steps"]),
                str(r["posts"]),
                str(r["actions"]),
                "" if r["wall_s"] is None else f"{r['wall_s']:.2f}",
                r["status"],
            ]
            for r in rows
        ]
        console.print(_result_table(cols, cells, f"sweep: {spec.out}", wider="--json prints every value whole"))
        console.print(f"runs: {spec.out}/run-*/trace.duckdb  (compare with socium.experiments.sweep.attach_runs)")
    if any(r["status"] != "ok" for r in rows):
        raise typer.Exit(1)


def _print_report_tables(rep: Any) -> None:
    for b in rep.banners:
        console.print(plain(b, "bold red"))
    for t in rep.tables:
        if t.summary:
            cells = [list(r) for r in t.rows]
            console.print(_result_table(list(t.columns), cells, t.title, wider=f"the whole table is in {rep.html}"))


@app.command()
def report(
    run_dir: Path = typer.Argument(
        ...,
        help="A run (trace.duckdb), experiment (results.json), episodes (episodes.duckdb) or sensitivity "
        "(sensitivity.json) directory.",
    ),
) -> None:
    """Write RUN_DIR/report/index.html with PNG plots and series.json; print a summary table."""
    from socium.experiments.report import write_report

    try:
        rep = write_report(run_dir)
    except SociumError as exc:
        _fail(exc)
        return
    except _duckdb_error() as exc:
        _fail(SociumError(f"{run_dir}: unreadable trace: {exc}"))
        return
    _print_report_tables(rep)
    console.print(f"report: {rep.html}  ({len(rep.images)} plots, series in {rep.out_dir / 'series.json'})")


@app.command()
def experiment(
    kind: Literal["propagation", "herding", "polarisation", "intervention", "compare"] = typer.Argument(
        ..., help="The phenomenon, or compare: the spec's experiment under the 3 perspectives."
    ),
    spec_file: Path = typer.Argument(..., help="Experiment spec YAML (see examples/propagation.yaml)."),
    out: Path | None = typer.Option(
        None, "--out", help="Experiment directory (default: the spec's 'out' or runs/<name>)."
    ),
    set_: list[str] = typer.Option(
        [], "--set", help="Override a spec field: key.path=value (repeatable), e.g. base.seed=3."
    ),
    force: bool = typer.Option(False, "--force", help="Re-run runs whose directories already hold a finished run."),
    no_report: bool = typer.Option(False, "--no-report", help="Skip writing the report."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress display (notes are still printed)."),
) -> None:
    """Run a phenomenon experiment (model population + rule-based null) and report it."""
    from socium.experiments.phenomena import prepare_experiment, run_prepared
    from socium.experiments.progress import RichProgress, reporting
    from socium.experiments.report import write_report

    try:
        spec, target = prepare_experiment(kind, spec_file, out, set_)  # a bad spec fails before any display
        with RichProgress(f"{kind} experiment", "runs", console, disable=quiet) as prog, reporting(prog):
            run_prepared(kind, spec, target, force=force, log=prog.note)
        console.print(prog.summary(), highlight=False)
        if not no_report:
            rep = write_report(target)
            _print_report_tables(rep)
            console.print(f"report: {rep.html}")
    except BudgetExceeded as exc:
        err_console.print(
            f"stopped: {exc}; committed steps are kept; rerun the same command to resume", highlight=False
        )
        raise typer.Exit(3) from None
    except SociumError as exc:
        _fail(exc)
        return
    console.print(f"results: {target / 'results.json'}")


@app.command()
def seeds(
    exp_dirs: list[Path] = typer.Argument(
        ..., help="Experiment directories of one spec run under different seeds (results.json each)."
    ),
    only: list[str] = typer.Option([], "--only", help="Keep metrics whose name contains this text (repeatable)."),
    out: Path | None = typer.Option(None, "--out", help="Also write the pooled numbers as JSON here."),
) -> None:
    """Pool seeded replicates of a herding, polarisation, propagation or compare experiment: mean and
    95% t interval over seeds per metric, and paired per-seed contrasts (model - null, X - local)."""
    from socium.experiments.seeds import markdown, pool_seeds

    try:
        pooled = pool_seeds(exp_dirs)
    except SociumError as exc:
        _fail(exc)
        return
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(pooled, indent=1), encoding="utf-8")
    sys.stdout.write(markdown(pooled, only))


@app.command()
def fit(
    what: str = typer.Argument(..., help="What to fit: 'propagation' (the exposure-timing layer)."),
    train: list[str] = typer.Option(
        ...,
        "--train",
        help="Training trees: a Ma et al. tree file, a folder of them, "
        "'twitter15' (all 1,490 trees) or 'oasis' (OASIS's 134 Twitter15 cascades). Repeatable.",
    ),
    out: Path = typer.Option(
        Path("timing.json"), "--out", help="Parameter file to write (load with timing.params_file)."
    ),
    bootstrap: int = typer.Option(
        100, "--bootstrap", help="Bootstrap resamples of cascades for the 95% CIs (0: none)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    root_effects: bool = typer.Option(
        True, "--root-effects/--no-root-effects", help="Fit each source author's audience speed (log-delay shift)."
    ),
) -> None:
    """Fit response delays, influence slopes and per-user activity to real retweet trees; write a parameter file."""
    from socium.experiments.propfit import fit_timing, load_training_trees, write_fit

    try:
        if what != "propagation":
            raise SociumError(f"fit: unknown target {what!r}; supported: 'propagation'")
        trees = load_training_trees(train)
        res = fit_timing(
            list(trees.values()), bootstrap=bootstrap, seed=seed, sources=list(train), with_root_effects=root_effects
        )
        path = write_fit(res, out)
    except SociumError as exc:
        _fail(exc)
        return
    table = Table("family", "log-likelihood", "AIC", "parameters", title=f"delay families ({len(trees)} trees)")
    for f in res["families"]:
        table.add_row(f["family"], f"{f['loglik']:.1f}", f"{f['aic']:.1f}", str(f["n_params"]))
    console.print(table)
    est = Table("parameter", "estimate", "95% CI", title=f"chosen: {res['timing']['delay']['family']}")
    for k, v in res["estimates"].items():
        ci = res["ci95"].get(k)
        est.add_row(k, f"{v:.4g}", "-" if ci is None else f"[{ci[0]:.4g}, {ci[1]:.4g}]")
    console.print(est)
    console.print(f"wrote {path}  (use it with timing: {{kind: exposure, params_file: {path}}})")


@app.command()
def validate(
    target: Path = typer.Argument(
        ..., help="A run directory (trace.duckdb) or an experiment directory (results.json)."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Folder for stylized_facts.{json,html} (default TARGET/report)."
    ),
) -> None:
    """Score a run against stylized facts of real social networks; print and write an HTML + JSON scorecard."""
    from socium.experiments.validate import scorecard, write_scorecard

    try:
        card = scorecard(target)
        j, h = write_scorecard(card, out or target / "report")
    except SociumError as exc:
        _fail(exc)
        return
    for b in card["smoke_runs"]:
        console.print(plain(b, "bold red"))
    table = Table("fact", "value", "status", "band", "n", "reference", title=f"stylized facts: {target}")
    colour = {"pass": "green", "fail": "red", "n/a": "dim"}
    for f in card["facts"]:
        band = "-" if f["band"] is None else f"[{f['band'][0]:.2f}, {f['band'][1]:.2f}]"
        val = "-" if f["value"] is None else f"{f['value']:.3f}"
        table.add_row(f["name"], val, plain(f["status"], colour[f["status"]]), band, str(f["n"]), f["reference"])
    console.print(table)
    console.print(
        f"{card['passed']} pass, {card['failed']} fail, {card['not_applicable']} n/a in {card['wall_s']:.2f}s"
    )
    console.print(f"html: {h}  json: {j}")


@app.command()
def sensitivity(
    spec_file: Path = typer.Argument(..., help="Sensitivity spec YAML (see examples/sensitivity.yaml)."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default: the spec's 'out' or runs/<name>)."),
    set_: list[str] = typer.Option([], "--set", help="Override a spec field: key.path=value (repeatable)."),
) -> None:
    """Morris or Sobol design over named config parameters (SALib), run on Ray; rank parameters per outcome."""
    from socium.experiments.report import fmt
    from socium.experiments.sensitivity import load_sensitivity, run_sensitivity

    try:
        spec = load_sensitivity(spec_file, list(set_))
        res = run_sensitivity(spec, out, log=lambda m: console.print(m, markup=False, highlight=False))
    except SociumError as exc:
        _fail(exc)
        return
    for name, o in res["outcomes"].items():
        key = o.get("index")
        cols = (
            ["parameter", "mu*", "mu* 95% CI", "sigma"]
            if key == "mu_star"
            else ["parameter", "S1", "S1 95% CI", "ST", "ST 95% CI"]
        )
        title = f"{name}: {o['description']} (mean {fmt(o['mean'])}, range {fmt(o['min'])} to {fmt(o['max'])})"
        cells = [  # the numbers the HTML table and the figures print
            [r["parameter"], fmt(r["mu_star"]), f"+-{fmt(r['mu_star_ci95'])}", fmt(r["sigma"])]
            if key == "mu_star"
            else [r["parameter"], fmt(r["S1"]), f"+-{fmt(r['S1_ci95'])}", fmt(r["ST"]), f"+-{fmt(r['ST_ci95'])}"]
            for r in o.get("indices", [])
        ]
        console.print(_result_table(cols, cells, title, wider="the report has the whole table"))
        if o.get("note"):
            console.print(f"  {name}: {o['note']}")
    from socium.experiments.report import write_report

    target = Path(out or spec.out or f"runs/{spec.name}")
    page = write_report(target).html
    console.print(
        f"{res['n_runs']} runs ({res['executor']}) in {res['wall_s']:.1f}s; "
        f"results: {target / 'sensitivity.json'}  report: {page}"
    )


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
    from socium.experiments.episodes.config import load_episodes_config
    from socium.experiments.episodes.report import TABLE_HEADER, table_rows
    from socium.experiments.episodes.runner import run_episodes

    try:
        cfg = load_episodes_config(config, list(set_))
        if out is not None:
            cfg = cfg.model_copy(update={"out": str(out)})
    except SociumError as exc:
        _fail(exc)
        return
    from socium.experiments.progress import RichProgress, reporting

    try:
        with RichProgress(f"episodes {cfg.name}", "episodes", console, disable=quiet) as prog, reporting(prog):
            rep = run_episodes(cfg, force=force)
    except SociumError as exc:
        _fail(exc)
        return
    from socium.experiments.card import smoke_banner

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
    rate = rep.summary["this_invocation"]["episodes_per_min"]
    console.print(
        f"ran {rep.ran} episodes ({rep.skipped} already done) in {rep.wall_s:.1f}s"
        + (f", {rate:.2f} episodes/min" if rate else "")
    )
    from socium.experiments.report import write_report

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
) -> None:
    """Write episodes as chat-format JSONL ({"messages": [...]}) for supervised fine-tuning."""
    from socium.experiments.episodes.export import export_sft

    try:
        path, n = export_sft(run_dir, out, None if mode == "all" else mode, fmt, min_goal)
    except SociumError as exc:
        _fail(exc)
        return
    console.print(f"wrote {n} examples to {path}")


@app.command("group-episodes")
def group_episodes(
    config: Path = typer.Argument(..., help="Group-episodes YAML (see examples/group-episodes.yaml)."),
    out: Path | None = typer.Option(None, "--out", help="Run directory (default runs/<name>-seed<seed>)."),
    force: bool = typer.Option(False, "--force", help="Discard episodes already in the run directory."),
    set_: list[str] = typer.Option([], "--set", help="Override a config field: key.path=value (repeatable)."),
) -> None:
    """N-party deal episodes (3+ characters) under agents / mindreaders / script; rule-scored, optionally judged."""
    from socium.experiments.episodes.multiparty_runner import load_group_config, run_group_episodes

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
        _fail(exc)
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
    console.print(f"trace: {cfg.out_dir() / 'group_episodes.duckdb'}  summary: {cfg.out_dir() / 'summary.json'}")


population_app = typer.Typer(no_args_is_help=True, cls=_Group, help="Generate agent populations.")
app.add_typer(population_app, name="population")


@population_app.command("generate")
def population_generate(
    description: str = typer.Argument(..., help="The community, in words (e.g. 'cyclists and drivers in Leeds')."),
    n: int = typer.Option(100, "--n", help="Number of people."),
    out: Path = typer.Option(..., "--out", help="CSV to write (loads with population.source: oasis_csv)."),
    seed: int = typer.Option(0, "--seed", help="Root seed for the sampled attributes and the model's sampling."),
    issue: str | None = typer.Option(None, "--issue", help="What stance is about (default: the description)."),
    marginals: Path | None = typer.Option(
        None, "--marginals", help="YAML of demographic marginals (docs/population.md)."
    ),
    backend: str = typer.Option(
        "embedded", "--backend", help="LLM backend writing the prose: embedded, openai, fake, random."
    ),
    model: str | None = typer.Option(None, "--model", help="Model name (openai: the served model)."),
    base_url: str | None = typer.Option(None, "--base-url", help="openai: the server's .../v1 URL."),
) -> None:
    """Sample demographics from marginals, have an LLM write bios and personas, write an OASIS-style CSV."""
    from socium.agents.population_gen import generate_population, load_marginals
    from socium.llm.config import LLMConfig

    try:
        llm = LLMConfig.parse(
            {"backend": backend, "model": model, "base_urls": [base_url] if base_url else [], "seed": seed},
            where="--backend/--model/--base-url",
        )
        summary = generate_population(
            description, n, out, seed=seed, issue=issue, marginals=load_marginals(marginals), llm=llm
        )
    except SociumError as exc:
        _fail(exc)
        return
    console.print(
        f"wrote {summary['n']} people to {summary['out']} ({summary['calls']} model calls, "
        f"{summary['invalid']} invalid, {summary['duplicates']} duplicate bios re-asked, "
        f"{summary['fallback']} template fallbacks)",
        highlight=False,
    )


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
