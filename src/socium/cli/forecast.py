"""``socium forecast``: apply a saved fit to anyone's cascades (calls :mod:`socium.forecast`, nothing else)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from socium.cli.app import _fail, app, console, err_console
from socium.errors import SociumError


@app.command()
def forecast(
    fit: Path = typer.Option(..., "--fit", help="Fit file from `socium fit propagation` (self-contained, format 2)."),
    cascades: str = typer.Option(
        ...,
        "--cascades",
        help="A data set name (twitter15, oasis, twitter15-not-oasis, ...) or a CSV / Parquet / JSONL / tree file "
        "or folder in the cascade format (docs/data.md).",
    ),
    observe_minutes: list[int] = typer.Option(
        [10], "--observe-minutes", help="Minutes observed before forecasting; repeat for several (5, 10, 30...)."
    ),
    horizon_minutes: int = typer.Option(150, "--horizon-minutes", help="Forecast (and scoring) horizon H."),
    out: Path = typer.Option(Path("runs/forecast"), "--out", help="Folder for results.json and the Parquet tables."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N cascades (a quick look)."),
    replicas: int = typer.Option(40, "--replicas", help="Replicas per cascade (the predictive distribution)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Root seed of the replicas."),
    baselines: list[str] = typer.Option(
        ["null", "seismic", "seismic_direct", "hawkes", "hawkes_powerlaw"],
        "--baseline",
        help="Baselines to run beside the forecast (repeatable; also hawkes_cv_kernel).",
    ),
    cascade_sigma: float | None = typer.Option(
        None, "--cascade-sigma", help="State the speed prior's sd for a fit file that lacks it (0: no conditioning)."
    ),
    counterfactual: Path | None = typer.Option(
        None, "--counterfactual", help="YAML of intervention arms (a propagation spec's counterfactual: block)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace a forecast already in --out."),
    workers: int = typer.Option(
        1, "--workers", min=1, help="Processes to forecast the cascades in (results do not depend on it)."
    ),
) -> None:
    """Forecast size, depth and breadth of each cascade from its first minutes with a saved fit; score it."""
    from socium import forecast as fc  # lazy: CLI start-up

    def log(msg: str) -> None:
        err_console.print(msg, highlight=False)

    try:
        if (out / "results.json").exists() and not force:  # before any work: nothing already written is lost
            raise SociumError(f"--out {out}: already holds results.json; choose another folder or pass --force")
        arms = None if counterfactual is None else fc.load_counterfactual(counterfactual)
        f = fc.load_fit(fit, cascade_sigma=cascade_sigma)
        if f.note:
            log(f"note: {f.note}")
        data = fc.load_cascades(cascades, limit)
        log(f"forecast: {len(data)} cascades from {cascades}, fit {fit} (never refitted), {replicas} replicas")
        result = fc.forecast(
            f,
            data,
            observe_minutes=observe_minutes,
            horizon_minutes=horizon_minutes,
            replicas=replicas,
            seed=seed,
            baselines=baselines,
            counterfactual=arms,
            workers=workers,
            log=log,
        )
        path = fc.write_forecast(result, out, force=force)
    except SociumError as exc:
        _fail(exc)
        return
    for m, summ in result.results["by_observe_minutes"].items():
        t = Table(
            "model",
            "NRMSE scale",
            "MSLE",
            "APE median",
            "CRPS (log2)",
            "cover 50/80/90",
            title=f"observed {m} min, horizon {horizon_minutes} (n = {summ['n']})",
        )
        for model in ["forecast", *baselines]:
            e = summ.get(model)
            if e is None:
                continue
            cov = e.get("coverage")
            t.add_row(
                model,
                f"{e['nrmse']['scale']['estimate']:.3f}",
                f"{e['msle']['estimate']:.3f}",
                f"{e['ape']['q50']['estimate']:.3f}",
                f"{e['crps_log']['estimate']:.3f}",
                "/".join(f"{cov[lv]['scale']['estimate']:.2f}" for lv in ("50", "80", "90")) if cov else "-",
            )
        console.print(t)
    console.print(f"wrote {path} (and cascades.parquet, curves.parquet); `socium report {out}` draws it")
