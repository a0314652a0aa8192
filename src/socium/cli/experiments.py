"""Commands that run and score experiments: sweep, report, experiment, seeds, fit, validate, sensitivity."""

from __future__ import annotations

import json
import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import typer
from rich.table import Table

from socium.cli.app import (
    _fail,
    _print_report_tables,
    _read_run,
    _result_table,
    app,
    console,
    err_console,
)
from socium.cli.signals import Stopped, stop_on_signals
from socium.core.console_text import plain
from socium.errors import BudgetExceeded, SociumError
from socium.experiments.studies import EXPERIMENT_KINDS
from socium.reporting.progress import RichProgress, reporting
from socium.trace.rundir import default_out, write_out_file

if TYPE_CHECKING:
    ExperimentKind = str
else:  # the choices typer lists and checks: every study `socium experiment` starts, from the study registry
    ExperimentKind = Literal[EXPERIMENT_KINDS]


@app.command()
def sweep(
    sweep_file: Path = typer.Argument(..., help="Sweep YAML: base, grid, seeds, out, parallel, address."),
    out: Path | None = typer.Option(None, "--out", help="Sweep directory (overrides the file's 'out')."),
    parallel: int | None = typer.Option(None, "--parallel", help="Runs in flight at once (overrides the file)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON instead of a table."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Run a grid of config overrides x seeds as parallel runs on Ray, then print a summary."""
    from socium.experiments.designs.sweep import load_sweep, run_sweep  # lazy: CLI start-up

    try:
        spec = load_sweep(sweep_file, out=out, parallel=parallel)
    except SociumError as exc:
        _fail(exc)
        return

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
        console.print(
            f"runs: {spec.out}/run-*/trace.duckdb  (compare with socium.experiments.designs.sweep.attach_runs)"
        )
    if any(r["status"] == "ok" for r in rows):  # every override value whole and the outcomes per combination
        from socium.experiments.report import write_report  # lazy: CLI start-up

        try:
            page = write_report(spec.out).html
            (err_console if as_json else console).print(f"report: {page}", highlight=False)  # stdout: JSON only
        except SociumError as exc:
            _fail(exc)
            return
    if any(r["status"] != "ok" for r in rows):
        raise typer.Exit(1)


def _say_stopped(stop: Stopped, way_on: str) -> NoReturn:
    """The last line of a command stopped by SIGTERM / SIGINT, then exit 128 + the signal (as a shell does)."""
    err_console.print(plain(f"stopped by {signal.Signals(stop.signum).name}: {way_on}"))
    raise typer.Exit(128 + stop.signum)


@app.command()
def report(
    run_dir: Path = typer.Argument(
        ...,
        help="A run (trace.duckdb), experiment (results.json), episodes (episodes.duckdb), group-episodes "
        "(group_episodes.duckdb), sweep (sweep.json), seeds (seeds.json) or sensitivity (sensitivity.json) directory.",
    ),
) -> None:
    """Write RUN_DIR/report/index.html with PNG plots and series.json; print a summary table."""
    from socium.experiments.report import write_report  # lazy: CLI start-up

    try:
        with stop_on_signals():
            rep = _read_run(write_report, run_dir)
    except Stopped as stop:  # was exit -15 with no line
        _say_stopped(stop, f"{run_dir / 'report'} may be incomplete; `socium report {shlex.quote(str(run_dir))}` again")
    _print_report_tables(rep)
    console.print(f"report: {rep.html}  ({len(rep.images)} plots, series in {rep.out_dir / 'series.json'})")


@app.command()
def experiment(
    kind: ExperimentKind = typer.Argument(
        ..., help="The phenomenon, or compare: the spec's experiment under every registered perspective."
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
    from socium.experiments.phenomena import prepare_experiment, run_prepared  # lazy: CLI start-up
    from socium.experiments.report import write_report  # lazy: CLI start-up

    try:
        spec, target = prepare_experiment(kind, spec_file, out, set_)  # a bad spec fails before any display
        with stop_on_signals():
            with RichProgress(f"{kind} experiment", "runs", console, disable=quiet) as prog, reporting(prog):
                run_prepared(kind, spec, target, force=force, log=prog.note)
            console.print(prog.summary(), highlight=False)
            if not no_report:
                rep = write_report(target)
                _print_report_tables(rep)
                console.print(f"report: {rep.html}")
    except Stopped as stop:  # was exit -15 with no line; each run closed its trace on the way out
        _say_stopped(stop, "finished runs and committed steps are kept; rerun the same command to continue")
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
    report_dir: Path | None = typer.Option(
        None,
        "--report-dir",
        help="Folder for seeds.json and report/index.html with the figure (default: seeds-pooled beside the "
        "experiment directories).",
    ),
    no_report: bool = typer.Option(False, "--no-report", help="Print the table only; write no page."),
) -> None:
    """Pool seeded replicates of a herding, polarisation, propagation or compare experiment: mean and
    95% interval over seeds per metric (none below 3 seeds), and paired per-seed contrasts (model - null, X - local)."""
    import os

    from socium.experiments.designs.seeds import markdown, pool_seeds, write_pooled  # lazy: CLI start-up
    from socium.experiments.report import write_report  # lazy: CLI start-up

    try:
        pooled = pool_seeds(exp_dirs)
        if out is not None:
            write_out_file(out, json.dumps(pooled, indent=1))
        page = None
        if not no_report:
            folder = report_dir or Path(os.path.commonpath([d.resolve() for d in exp_dirs])) / "seeds-pooled"
            body = json.loads(write_pooled(pooled, folder, only).read_text(encoding="utf-8"))
            page = write_report(folder).html
            for banner in body["smoke"]:  # stderr: stdout stays the Markdown table
                err_console.print(plain(banner, "bold red"), highlight=False)
    except SociumError as exc:
        _fail(exc)
        return
    sys.stdout.write(markdown(pooled, only))
    if page is not None:
        err_console.print(f"report: {page}", highlight=False)


@app.command()
def fit(
    what: str = typer.Argument(
        ...,
        help="What to fit: 'propagation' (the exposure-timing layer) or 'foryou' (the foryou recommender's "
        "value model, to a finished foryou run given as --train).",
    ),
    train: list[str] = typer.Option(
        ...,
        "--train",
        help="Training cascades: a Ma et al. tree file, a folder of them, a cascade-format file (CSV, Parquet, "
        "JSONL; docs/data.md) or a data set name ('twitter15', 'oasis', 'twitter15-not-oasis', 'ced'). Repeatable. "
        "For 'foryou': one finished foryou run directory.",
    ),
    out: Path = typer.Option(
        Path("timing.json"),
        "--out",
        help="Fit file to write: self-contained (timing, cascade_sigma, training ids and digest); "
        "timing.params_file and `socium forecast --fit` read it.",
    ),
    bootstrap: int = typer.Option(
        100, "--bootstrap", min=0, help="Bootstrap resamples of cascades for the 95% CIs (0: none)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    root_effects: bool = typer.Option(
        True, "--root-effects/--no-root-effects", help="Fit each source author's audience speed (log-delay shift)."
    ),
    calibrate_intervals: bool = typer.Option(
        False,
        "--calibrate-intervals",
        help="Choose the forecast intervals' dispersion by 5-fold CV on the training cascades (five more fits).",
    ),
    calibrate_observe_minutes: int = typer.Option(
        10,
        "--calibrate-observe-minutes",
        min=1,
        help="With --calibrate-intervals: the observe minute the CV forecasts from (use the forecast's own).",
    ),
    calibrate_horizon_minutes: int = typer.Option(
        150,
        "--calibrate-horizon-minutes",
        min=2,
        help="With --calibrate-intervals: the horizon the CV scores the final size at (use the forecast's own).",
    ),
) -> None:
    """Fit response delays, influence slopes and per-user activity to real retweet trees; write a parameter file."""
    from socium.experiments.propagation.data.training import load_training_trees  # lazy: CLI start-up
    from socium.experiments.propagation.fit.fit_file import fit_cascades, write_fit_file  # lazy: CLI start-up

    if what == "foryou":
        _fit_foryou(train, out)
        return
    try:
        if what != "propagation":
            raise SociumError(f"fit: unknown target {what!r}; supported: 'propagation', 'foryou'")
        trees = load_training_trees(train)
        res = fit_cascades(
            trees,
            data=list(train),
            bootstrap=bootstrap,
            seed=seed,
            root_effects=root_effects,
            calibrate=calibrate_intervals,
            calibrate_window=(calibrate_observe_minutes, calibrate_horizon_minutes),
            log=lambda s: err_console.print(s, highlight=False),
        )
        path = write_fit_file(res, out)
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


def _fit_foryou(train: list[str], out: Path) -> None:
    """``socium fit foryou --train RUN --out vm.json``: the value model calibrated to RUN's own agents."""
    import json

    from socium.recsys.foryou.fitting import fit_run  # lazy: CLI start-up
    from socium.recsys.foryou.value_model import FEATURES, HEADS

    try:
        if len(train) != 1:
            raise SociumError("fit foryou: give exactly one finished foryou run directory as --train")
        model = fit_run(train[0])
        out.write_text(json.dumps(model.to_json(), indent=1), encoding="utf-8")
    except (SociumError, OSError) as exc:
        _fail(exc if isinstance(exc, SociumError) else SociumError(f"fit foryou: cannot write {out}: {exc}"))
        return
    table = Table("head", *FEATURES, title=f"foryou value model fitted to {train[0]}")
    for h, row in zip(HEADS, model.coef.tolist()):
        table.add_row(h, *(f"{v:.3g}" for v in row))
    console.print(table)
    console.print(f"wrote {out}  (use it with recsys.params.value_model: {out})")


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
    from socium.experiments.validation.validate import scorecard, write_scorecard  # lazy: CLI start-up

    try:
        card = scorecard(target)
        j, h = write_scorecard(card, out or target / "report", named=out is not None)
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
    for why in sorted({f["detail"] for f in card["facts"] if f["detail"].startswith("does not apply")}):
        console.print(plain(f"n/a: {why}", "dim"))  # a fact that does not apply says why, in the table's stead
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
    from socium.experiments.designs.sensitivity import load_sensitivity, run_sensitivity  # lazy: CLI start-up
    from socium.reporting.page import fmt  # lazy: CLI start-up (html, ~4% of socium --help)

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
    from socium.experiments.report import write_report  # lazy: CLI start-up

    target = Path(out or spec.out or default_out(spec.name))
    page = write_report(target).html
    console.print(
        f"{res['n_runs']} runs ({res['executor']}) in {res['wall_s']:.1f}s; "
        f"results: {target / 'sensitivity.json'}  report: {page}"
    )
