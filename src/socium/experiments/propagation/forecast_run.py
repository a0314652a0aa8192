"""``socium forecast``: a saved fit applied, unchanged, to anyone's cascades; results.json and Parquet tables.

Why a tool of its own: the cross-validation refits on the cascades it scores, and a propagation spec with a
saved fit scores no forecast, so "forecast these cascades with this fit" needed code against socium's
internals. Here the fit file (:mod:`~socium.experiments.propagation.fit.fit_file`) is read once, every cascade
of the table (:mod:`~socium.experiments.propagation.data.cascade_format`) is forecast from its first ``m``
minutes for each requested ``m`` with :func:`~socium.experiments.propagation.forecast.predictive.predict_cascade`
(the cross-validation's own function), scored with the literature's measures, and nothing is fitted.

What the model can and cannot forecast: it is the calibrated null of the cross-validation conditioned on a
prefix, a model of *when* the members of a known tree population reshare (every member eventually does;
``p_repost = 1``). The tree of each cascade is therefore part of the input; what is forecast is the curves
of size, depth and breadth over ``0 .. H`` minutes. A cascade whose later reshares are not in the data
cannot be forecast by this model (docs/validation.md, 3e).

Outputs under ``--out``: ``results.json`` (settings, the fit's summary, the transfer check, per observe
minute the measures with intervals), ``cascades.parquet`` (one row per cascade, observe minute and model)
and ``curves.parquet`` (per minute: the mean and the 5/25/50/75/95% predictive quantiles beside the real
curve; with ``--counterfactual`` also each arm's scale curve, model ``arm:<strategy>@<minute>``). Everything
is computed before anything is written, and the three files are written to temporary names and renamed, so a
failure leaves no half result.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import socium
from socium.core.rng import component_rng
from socium.errors import ConfigError, RunDirError
from socium.experiments.propagation.counterfactual import counterfactual_cascade, counterfactual_summary
from socium.experiments.propagation.data.realcascades import CascadeTree, earliest_users, subtree_curves
from socium.experiments.propagation.fit.fit_file import Fit, cascades_digest
from socium.experiments.propagation.fit.transfer_check import compare_populations
from socium.experiments.propagation.forecast.forecast import cascade_arrays
from socium.experiments.propagation.forecast.predictive import (
    POINT,
    QUANTILES,
    SAMPLED,
    TOOL_BASELINES,
    bias_note,
    calibration_curve,
    final_bias,
    predict_cascade,
    score_cascade,
    summarise,
    widen,
)
from socium.experiments.propagation.spec import CounterfactualSpec
from socium.experiments.spec import write_results
from socium.trace.queries.curves import CURVE_NAMES

FORECAST_TOOL_PURPOSE = 45
"""socium.core.rng stream of ``socium forecast``'s replicas, per (observe minute, cascade)."""
PIT_PURPOSE = 46
"""Stream of the randomised PIT's uniforms (apart, so adding a baseline never moves them)."""
COUNTERFACTUAL_TOOL_PURPOSE = 48
"""Stream of the counterfactual arms' replicas in ``socium forecast`` (apart: arms never move the forecast)."""
KNOWN_BASELINES = tuple(b for b in (*SAMPLED, *POINT) if b != "forecast")


@dataclass(frozen=True)
class ForecastSettings:
    """What ``socium forecast`` was asked for."""

    observe_minutes: tuple[int, ...] = (10,)
    horizon_minutes: int = 150
    replicas: int = 40
    seed: int = 0
    baselines: tuple[str, ...] = TOOL_BASELINES
    counterfactual: CounterfactualSpec | None = None
    """Intervention arms run on the same replicas' path (``counterfactual.py``), per observe minute."""
    workers: int = 1
    """Processes the cascades are forecast in; results do not depend on it (per-cascade streams)."""

    def check(self) -> None:
        """One :class:`ConfigError` naming the option for a setting that cannot be run."""
        if not self.observe_minutes:
            raise ConfigError("--observe-minutes: give at least one minute")
        if self.horizon_minutes < 2:
            raise ConfigError(f"--horizon-minutes: {self.horizon_minutes} leaves no window; at least 2")
        for m in self.observe_minutes:
            if not 0 <= m < self.horizon_minutes:
                raise ConfigError(f"--observe-minutes: {m} must lie in [0, --horizon-minutes={self.horizon_minutes})")
        if self.workers < 1:
            raise ConfigError(f"--workers: {self.workers}; at least 1")
        if self.replicas < 2:
            raise ConfigError(f"--replicas: {self.replicas}; a predictive distribution needs at least 2")
        if self.counterfactual is not None:
            for m in self.observe_minutes:
                bad = [a for a in self.counterfactual.minutes_for(m) if not m <= a < self.horizon_minutes]
                if bad:
                    raise ConfigError(
                        f"counterfactual.act_minutes: {bad[0]} must lie in [observe minute {m}, horizon "
                        f"{self.horizon_minutes})"
                    )
        unknown = [b for b in self.baselines if b not in KNOWN_BASELINES]
        if unknown:
            raise ConfigError(f"--baselines: {unknown[0]!r} is not one of {', '.join(KNOWN_BASELINES)}")


@dataclass
class ForecastResult:
    """Everything ``socium forecast`` writes, in memory (the public API returns it)."""

    results: dict[str, Any]
    cascades: pa.Table
    curves: pa.Table
    rows: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Per observe minute, per cascade: model -> measures (what :func:`summarise` aggregated)."""


def _quantile_rows(
    cid: str,
    m: int,
    pred_samples: Mapping[str, Mapping[str, np.ndarray]],
    points: Mapping[str, Mapping[str, np.ndarray]],
    real: Mapping[str, np.ndarray],
    out: dict[str, list[np.ndarray]],
) -> None:
    minutes = len(real["scale"])
    for model, curves in points.items():
        for k, mean in curves.items():
            out["cascade_id"].append(np.full(minutes, cid, dtype=object))
            out["observe_minutes"].append(np.full(minutes, m, np.int32))
            out["model"].append(np.full(minutes, model, dtype=object))
            out["curve"].append(np.full(minutes, k, dtype=object))
            out["minute"].append(np.arange(minutes, dtype=np.int32))
            out["mean"].append(np.asarray(mean, float))
            out["real"].append(np.asarray(real[k], float))
            if model in pred_samples:
                q = np.quantile(pred_samples[model][k], QUANTILES, axis=0)
            else:
                q = np.full((len(QUANTILES), minutes), np.nan)
            for j, qq in enumerate(QUANTILES):
                out[f"q{int(qq * 100):02d}"].append(q[j])


@dataclass(frozen=True)
class _CascadeJob:
    """One cascade's forecast, scores and curve rows at one observe minute: a picklable unit of work.

    Why a unit: every cascade draws from its own ``component_rng`` streams keyed by (seed, minute, cascade
    id), so the cascades can run in any order and in any number of worker processes with identical results.
    """

    tp: Any
    sigma: float
    dispersion: float
    dispersion_sd: tuple[float, float]
    settings: ForecastSettings

    def __call__(
        self, item: tuple[int, str, Any, dict[str, np.ndarray], dict[str, float]]
    ) -> tuple[dict[str, dict[str, Any]], dict[str, list[np.ndarray]], Any]:
        m, cid, arrays, real, caps = item
        st, H = self.settings, self.settings.horizon_minutes
        key = zlib.crc32(cid.encode())
        rng = component_rng(st.seed, FORECAST_TOOL_PURPOSE, m, key)
        pred = predict_cascade(arrays, self.tp, self.sigma, m, st.replicas, H, rng, st.baselines)
        u = float(component_rng(st.seed, PIT_PURPOSE, m, key).random())
        scores = score_cascade(pred, real, u, self.dispersion, caps, self.dispersion_sd)
        wide = {k: widen(v, real, m, self.dispersion, caps, self.dispersion_sd) for k, v in pred.samples.items()}
        cols: dict[str, list[np.ndarray]] = {k: [] for k in _CURVE_COLUMNS}
        _quantile_rows(cid, m, wide, pred.points, real, cols)
        cf = None
        if st.counterfactual is not None:
            cf_rng = component_rng(st.seed, COUNTERFACTUAL_TOOL_PURPOSE, m, key)
            cf = counterfactual_cascade(
                arrays, self.tp, self.sigma, m, st.replicas, H, st.counterfactual, cf_rng, real["scale"], QUANTILES
            )
            _arm_rows(cid, m, cf, real["scale"], cols)
        return scores, cols, cf


ARM_PREFIX = "arm:"
"""curves.parquet's ``model`` of a counterfactual arm's rows: ``arm:none`` (the conditioned replicas, no
intervention) and ``arm:<strategy>@<act minute>``; only the ``scale`` curve, mean and quantiles over replicas."""


def _arm_rows(cid: str, m: int, cf: dict[str, Any], real: np.ndarray, out: dict[str, list[np.ndarray]]) -> None:
    """Each counterfactual arm's scale curve as curves.parquet rows (its per-minute quantiles leave ``cf``:
    results.json keeps the pooled curves only)."""
    minutes = len(real)
    for key, arm in cf["arms"].items():
        q = arm.pop("quantiles")
        out["cascade_id"].append(np.full(minutes, cid, dtype=object))
        out["observe_minutes"].append(np.full(minutes, m, np.int32))
        out["model"].append(np.full(minutes, ARM_PREFIX + key, dtype=object))
        out["curve"].append(np.full(minutes, "scale", dtype=object))
        out["minute"].append(np.arange(minutes, dtype=np.int32))
        out["mean"].append(np.asarray(arm["curve"], float))
        out["real"].append(np.asarray(real, float))
        for j, qq in enumerate(QUANTILES):
            out[f"q{int(qq * 100):02d}"].append(np.asarray(q[j], float))


_CURVE_COLUMNS = (
    "cascade_id",
    "observe_minutes",
    "model",
    "curve",
    "minute",
    "mean",
    *(f"q{int(q * 100):02d}" for q in QUANTILES),
    "real",
)


def _map(job: _CascadeJob, items: list[Any], workers: int) -> Iterator[Any]:
    """``job`` over ``items`` in order, in ``workers`` processes (1: in this one)."""
    if workers <= 1 or len(items) < 2:
        yield from map(job, items)
        return
    chunk = max(1, len(items) // (workers * 8))
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork")) as pool:
        yield from pool.map(job, items, chunksize=chunk)


def forecast_cascades(
    fit: Fit,
    trees: Mapping[str, CascadeTree],
    settings: ForecastSettings = ForecastSettings(),
    *,
    source: str = "",
    info: Mapping[str, Mapping[str, Any]] | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> ForecastResult:
    """Forecast every cascade from each observe minute with ``fit`` (never refitted) and score it."""
    settings.check()
    if not trees:
        raise ConfigError(f"--cascades {source}: no cascades to forecast")
    t0 = time.perf_counter()
    tp = fit.params
    sigma = fit.cascade_sigma
    H = settings.horizon_minutes
    check = compare_populations(fit, trees)
    if check["warning"]:
        log(f"WARNING: {check['warning']}")
    if fit.dispersion == 1.0 and not any(fit.dispersion_sd):
        log(
            "NOTE: the fit's intervals are not calibrated (dispersion 1: the replicas' own spread, which covered "
            "18-39% of held-out Twitter15 final sizes at 50-90%); refit with `socium fit propagation "
            "--calibrate-intervals` before reading coverage as a property of the forecast"
        )
    elif fit.dispersion_window and any(
        fit.dispersion_window != (m, H) for m in settings.observe_minutes
    ):  # an interval width chosen for another window is not a calibration of this one
        log(
            f"NOTE: the fit's intervals were calibrated for observe minute {fit.dispersion_window[0]}, horizon "
            f"{fit.dispersion_window[1]} min; this forecast uses {list(settings.observe_minutes)}, {H}: coverage "
            "here is not calibrated (refit with --calibrate-observe-minutes / --calibrate-horizon-minutes)"
        )
    qcols = [f"q{int(q * 100):02d}" for q in QUANTILES]
    curve_cols: dict[str, list[np.ndarray]] = {k: [] for k in _CURVE_COLUMNS}
    table_rows: list[dict[str, Any]] = []
    rows: dict[int, list[dict[str, Any]]] = {m: [] for m in settings.observe_minutes}
    cf_rows: dict[int, list[dict[str, Any]]] = {m: [] for m in settings.observe_minutes}
    prepared = []
    for cid, tree in trees.items():
        users = earliest_users(tree, None)
        caps = {"scale": float(len(users)), "depth": float(tree.max_depth), "max_breadth": float(tree.max_breadth)}
        prepared.append((cid, cascade_arrays(tree, users), subtree_curves(tree, users, H), caps))
    job = _CascadeJob(tp, sigma, fit.dispersion, fit.dispersion_sd, settings)
    for m in settings.observe_minutes:
        items = [(m, cid, arrays, real, caps) for cid, arrays, real, caps in prepared]
        for (_, cid, arrays, real, _caps), (scores, cols, cf) in zip(items, _map(job, items, settings.workers)):
            rows[m].append(scores)
            for k, v in cols.items():
                curve_cols[k].extend(v)
            meta = (info or {}).get(cid, {})
            if cf is not None:
                cf_rows[m].append(
                    {
                        "id": cid,
                        "label": meta.get("label"),
                        "real_final": {"scale": int(real["scale"][-1])},
                        "counterfactual": cf,
                    }
                )
            for model, sc in scores.items():
                fq = sc.get("final_quantiles", {}).get("scale") or [None] * len(QUANTILES)
                table_rows.append(
                    {
                        "cascade_id": cid,
                        "observe_minutes": m,
                        "model": model,
                        "label": meta.get("label"),
                        "nodes": len(arrays.parent),
                        "observed": int(real["scale"][min(m, H - 1)]),
                        **{f"real_{k}": int(real[k][-1]) for k in CURVE_NAMES},
                        "final_mean": sc["final_mean"],
                        **{f"final_{c}": v for c, v in zip(qcols, fq)},
                        **{f"nrmse_{k}": sc["nrmse"][k] for k in CURVE_NAMES},
                        "sle": sc["sle"],
                        "ape": sc["ape"],
                        "crps": sc["crps"],
                        "crps_log": sc["crps_log"],
                        "pit": sc.get("pit"),
                        **{
                            f"covered{lv}": (sc.get("covered") or {}).get(lv, {}).get("scale")
                            for lv in ("50", "80", "90")
                        },
                    }
                )
        f = rows[m][0]["forecast"]["nrmse"] if rows[m] else {}
        log(f"m = {m}: {len(rows[m])} cascades forecast" + (f" (first: scale NRMSE {f['scale']:.3f})" if f else ""))
    by_m = {}
    for m, rr in rows.items():
        mine = [r for r in table_rows if r["observe_minutes"] == m and r["model"] == "forecast"]
        note = bias_note(final_bias([r["final_mean"] for r in mine], [r["real_scale"] for r in mine]))
        if note:  # said, not stored: results.json stays as it was (its summary has the PIT histogram)
            log(f"WARNING: m = {m}: {note}")
        summ = summarise(rr, settings.seed)
        summ["calibration"] = {mo: calibration_curve(rr, mo) for mo in SAMPLED if rr and mo in rr[0]}
        if settings.counterfactual is not None:
            summ["counterfactual"] = counterfactual_summary(cf_rows[m], settings.counterfactual, m, settings.seed)
        by_m[str(m)] = summ
    results = {
        "experiment": "forecast",
        "tool": "socium forecast",
        "socium_version": socium.__version__,
        "settings": {
            "observe_minutes": list(settings.observe_minutes),
            "horizon_minutes": H,
            "replicas": settings.replicas,
            "seed": settings.seed,
            "baselines": list(settings.baselines),
            "quantiles": list(QUANTILES),
            "counterfactual": None if settings.counterfactual is None else settings.counterfactual.model_dump(),
        },
        "fit": fit.summary(),
        "cascades": {"source": source, "n": len(trees), "digest": cascades_digest(trees)},
        "transfer": check,
        "by_observe_minutes": by_m,
        "note": "a saved fit applied as it is: nothing was fitted on these cascades; the point forecast is the "
        "replicas' mean; MSLE on log2(1 + size increment after m), APE on the final size, coverage of central "
        "predictive intervals (inclusive), CRPS of the final size",
        "wall_s": round(time.perf_counter() - t0, 2),
    }
    cascades = pa.Table.from_pylist(table_rows)
    curves = pa.table({k: np.concatenate(v) if v else np.empty(0) for k, v in curve_cols.items()})
    return ForecastResult(results, cascades, curves, rows)


def write_forecast(result: ForecastResult, out: str | Path, *, force: bool = False) -> Path:
    """Write results.json, cascades.parquet and curves.parquet under ``out`` (temporary names, then renamed).

    An ``out`` that already holds a forecast is refused without ``force``: nothing already written is lost."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunDirError(f"--out {out}: is a file, expected a folder")
    if (out / "results.json").exists() and not force:
        raise RunDirError(f"--out {out}: already holds results.json; choose another folder or pass --force")
    try:
        out.mkdir(parents=True, exist_ok=True)
        tmp = {name: out / f".{name}.tmp" for name in ("cascades.parquet", "curves.parquet")}
        pq.write_table(result.cascades, tmp["cascades.parquet"])
        pq.write_table(result.curves, tmp["curves.parquet"])
        for name, p in tmp.items():
            p.replace(out / name)
    except OSError as exc:
        raise RunDirError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    return write_results(out, result.results)
