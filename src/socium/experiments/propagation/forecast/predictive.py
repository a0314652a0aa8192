"""The forecast as a predictive distribution, and the measures the cascade-prediction literature reports.

Why: the forecast draws ``R`` replicas per cascade and used to keep only their mean curve (scored by
NRMSE). The spread of those replicas is a predictive distribution; whether its intervals cover the real
outcome as often as they claim is what a user deciding from it needs, and no peer reports it. So here one
call (:func:`predict_cascade`) returns every model's replicas (the forecast, the unconditioned null) or
point curve (SEISMIC, Hawkes), and :func:`score_cascade` scores them:

* NRMSE of the mean curve over minutes ``m .. H-1`` per curve, as the cross-validation always has;
* final size at the horizon ``H``: the point forecast is the replicas' mean (the curve NRMSE scores);
  squared log error of the size *increment* after ``m`` (``log2(1 + size(H) - size(m))``, the MSLE of
  DeepHawkes / CasFlow), absolute percentage error of the final size (SEISMIC's APE);
* calibration: whether the central 50 / 80 / 90% interval of the replicas' final scale, depth and max
  breadth holds the real value (inclusive bounds), and the randomised PIT of the final scale (uniform when
  calibrated; the calibration plot);
* CRPS of the final scale, in nodes and on ``log2(1 + size)``: for replicas the sample CRPS
  ``E|X - y| - E|X - X'| / 2``; a point forecast's CRPS is its absolute error, so the point baselines are
  compared on the same scale.

:func:`summarise` aggregates over cascades with ``socium.core.intervals``: bootstrap intervals for
non-negative means, Wilson for coverages, t for the forecast's paired differences to each baseline, and
distribution-free order-statistic intervals for the APE quantiles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from socium.core.intervals import MIN_N, mean_interval, nonnegative_interval, proportion_interval
from socium.experiments.propagation.forecast.bias import calibrate_curves
from socium.experiments.propagation.forecast.forecast import (
    CascadeArrays,
    curves_from_times,
    replica_times,
    seismic_infectiousness,
    seismic_scale,
    window_nrmse,
)
from socium.experiments.propagation.forecast.hawkes import hawkes_scale, kernel_scale, powerlaw_scale
from socium.simulator.timing import TimingParams
from socium.trace.queries.curves import CURVE_NAMES

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
"""Predictive quantiles reported per minute and of the final values."""
LEVELS = (0.5, 0.8, 0.9)
"""Central interval levels whose coverage is reported."""
SAMPLED = ("forecast", "null")
"""Models with replicas (a predictive distribution); the others give one expected curve."""
POINT = ("seismic", "seismic_direct", "hawkes", "hawkes_powerlaw", "hawkes_cv_kernel")
TOOL_BASELINES = ("null", "seismic", "seismic_direct", "hawkes", "hawkes_powerlaw")
"""Baselines ``socium forecast`` runs by default (``hawkes_cv_kernel`` needs the fit's kernel: on request)."""
APE_QUANTILES = (0.5, 0.75, 0.9)


@dataclass
class Prediction:
    """Every model's forecast of one cascade from its first ``m`` minutes, minutes ``0 .. minutes-1``."""

    m: int
    minutes: int
    samples: dict[str, dict[str, NDArray[np.float64]]] = field(default_factory=dict)
    """Sampled models: curve -> (replicas x minutes)."""
    points: dict[str, dict[str, NDArray[np.float64]]] = field(default_factory=dict)
    """Every model: curve -> expected curve (replicas' mean; point models: scale only)."""
    info: dict[str, dict[str, float]] = field(default_factory=dict)
    """Fitted quantities of the baselines (Hawkes kappa, SEISMIC p n*)."""


def predict_cascade(
    c: CascadeArrays,
    tp: TimingParams,
    casc_sd: float,
    m: int,
    runs: int,
    minutes: int,
    rng: np.random.Generator,
    baselines: Sequence[str] = POINT + ("null",),
) -> Prediction:
    """The forecast (conditioned on the first ``m`` minutes) and each of ``baselines`` on one cascade.

    The forecast and the null use the same uniforms (common random numbers: the generator's state is
    restored between them), so their difference is the conditioning, not Monte-Carlo noise. The order of
    draws is the cross-validation's since issue 28, so its published numbers are reproduced exactly.
    """
    pred = Prediction(m, minutes)
    state = rng.bit_generator.state
    for name, cond in (("forecast", True), ("null", False)):
        if name != "forecast" and name not in baselines:
            continue
        rng.bit_generator.state = state
        sims = curves_from_times(c.parent, replica_times(c, tp, casc_sd, m, runs, rng, cond), minutes)
        pred.samples[name] = sims
        pred.points[name] = {k: v.mean(0) for k, v in sims.items()}
    cap = len(c.parent)
    if "seismic" in baselines:
        pred.points["seismic"] = {"scale": seismic_scale(c, m, minutes, cap=cap)}
        p, n_star = seismic_infectiousness(c, m)
        pred.info["seismic"] = {"p_n_star": p * n_star}
    if "seismic_direct" in baselines:
        pred.points["seismic_direct"] = {"scale": seismic_scale(c, m, minutes, cap=cap, self_exciting=False)}
    if "hawkes" in baselines:
        hz, fit = hawkes_scale(c.delay, m, minutes, cap=cap)
        pred.points["hawkes"] = {"scale": hz}
        pred.info["hawkes"] = {"kappa": fit.kappa, "beta": fit.beta}
    if "hawkes_powerlaw" in baselines:
        hp, pl = powerlaw_scale(c.delay, m, minutes, cap=cap)
        pred.points["hawkes_powerlaw"] = {"scale": hp}
        pred.info["hawkes_powerlaw"] = {"kappa": pl.kappa, "c": pl.c, "theta": pl.theta}
    if "hawkes_cv_kernel" in baselines:
        hk, kappa = kernel_scale(c.delay, m, minutes, tp.delay.cdf, cap=cap)
        pred.points["hawkes_cv_kernel"] = {"scale": hk}
        pred.info["hawkes_cv_kernel"] = {"kappa": kappa}
    return pred


def forecast_cascade(
    c: CascadeArrays,
    tp: TimingParams,
    casc_sd: float,
    m: int,
    runs: int,
    minutes: int,
    real: dict[str, NDArray],
    rng: np.random.Generator,
    bias: Mapping[str, float] | None = None,
    caps: Mapping[str, float] | None = None,
) -> dict[str, dict[str, float | None]]:
    """The cross-validation's row for one held-out cascade (since issue 28): NRMSE over minutes ``m..`` of
    the forecast and every baseline (SEISMIC and Hawkes: scale only), the mean final scale, and the
    baselines' fitted quantities. The same :func:`predict_cascade` ``socium forecast`` runs.

    ``bias`` (per curve, learnt on the fold's training cascades: :mod:`~socium.experiments.propagation.
    forecast.bias`) adds ``forecast_bc``: the forecast's own mean curves with their growth after ``m``
    calibrated (``caps``: the tree's size, depth and breadth), so forecast and forecast_bc differ by the
    calibration alone. Without it the row is as before."""
    pred = predict_cascade(c, tp, casc_sd, m, runs, minutes, rng)
    if bias is not None:
        pred.points["forecast_bc"] = calibrate_curves(pred.points["forecast"], real, m, bias, caps or {})
    out: dict[str, dict[str, float | None]] = {}
    for model, curves in pred.points.items():
        row: dict[str, float | None] = {
            k: window_nrmse(curves[k], real[k], m, minutes) if k in curves else None for k in CURVE_NAMES
        }
        row["final_scale"] = float(curves["scale"][-1])
        row.update(pred.info.get(model, {}))
        out[model] = row
    return out


def prefix_sd(observed: float, sd: tuple[float, float]) -> float:
    """The added log-growth sd for a cascade with ``observed`` nodes at minute ``m``: ``sqrt(floor^2 +
    per_node^2 / n)`` with ``sd = (floor, per_node)``.

    Why ``1 / n``: the growth after ``m`` is carried by the ``n`` observed nodes' subtrees, so the relative
    variance of the real future around the forecast falls like ``1 / n`` (as a branching process's does);
    the floor is the drift of the cascade's speed that no prefix reveals. Measured on the held-out Twitter15
    trees: the spread of log(real / forecast growth) falls from 5-95% [-2.85, 0.95] at fewer than 25
    observed nodes to [-0.39, 0.17] at 200 or more (docs/results.md)."""
    floor, per_node = sd
    return math.sqrt(floor * floor + per_node * per_node / max(observed, 1.0))


def widen(
    samples: dict[str, NDArray[np.float64]],
    real: dict[str, NDArray],
    m: int,
    k: float,
    caps: dict[str, float],
    sd: tuple[float, float] = (0.0, 0.0),
) -> dict[str, NDArray[np.float64]]:
    """Replica curves with their spread after minute ``m`` widened on the log scale (the dispersion).

    Why: with the tree population fixed and the speed read off the prefix, the replicas agree more than
    real cascades do (a cascade's speed drifts after minute ``m``; measured coverage of the 80% interval
    far below 80%, docs/results.md). Per minute ``t >= m`` and curve, with ``z = log(1 + x_t - x_m)`` (the
    growth after the observed value ``x_m``), each replica moves to ``median(z) + k (z - median(z)) +
    s * Phi^-1((rank + 1/2) / R)``, capped at what the tree can reach: ``k`` scales the replicas' own
    spread, ``s`` (:func:`prefix_sd` of the observed size; 0 by default) adds the spread the replicas
    cannot have (it widens even replicas that all agree, as on a small tree every replica completes) in
    the replicas' own rank order, so it needs no random draws. ``k = 1, s = 0`` returns the replicas
    untouched; the point forecast (the replicas' mean) is always taken before widening, so NRMSE, MSLE and
    APE do not depend on the dispersion.
    """
    s = prefix_sd(float(real["scale"][min(m, len(real["scale"]) - 1)]), sd) if any(sd) else 0.0
    if k == 1.0 and s == 0.0:
        return samples
    out = {}
    for name, x in samples.items():
        base = float(real[name][min(m, x.shape[1] - 1)])
        z = np.log1p(np.maximum(x[:, m:] - base, 0.0))
        med = np.median(z, axis=0, keepdims=True)
        w = med + k * (z - med)
        if s > 0.0:
            r = x.shape[0]
            rank = np.argsort(np.argsort(z, axis=0, kind="stable"), axis=0, kind="stable")
            w = w + s * stats.norm.ppf((rank + 0.5) / r)
        inc = np.clip(np.expm1(w), 0.0, max(caps.get(name, np.inf) - base, 0.0))
        y = x.copy()
        y[:, m:] = base + inc
        out[name] = y
    return out


def sample_crps(x: NDArray[np.float64], y: float) -> float:
    """CRPS of the empirical distribution of ``x`` at ``y``: ``E|X - y| - E|X - X'| / 2`` (exact, O(R log R))."""
    s = np.sort(np.asarray(x, float))
    r = len(s)
    spread = 2.0 * float(np.sum((2 * np.arange(r) - r + 1) * s)) / (r * r)
    return float(np.mean(np.abs(s - y))) - 0.5 * spread


def randomised_pit(x: NDArray[np.float64], y: float, u: float) -> float:
    """``P(X < y) + u P(X = y)``: uniform on [0, 1] for a calibrated forecast even of counts (Czado et al. 2009)."""
    x = np.asarray(x, float)
    return float(np.mean(x < y) + u * np.mean(x == y))


def _log2p(v: float) -> float:
    return math.log2(1.0 + max(v, 0.0))


def score_cascade(
    pred: Prediction,
    real: dict[str, NDArray],
    u: float = 0.5,
    dispersion: float = 1.0,
    caps: dict[str, float] | None = None,
    dispersion_sd: tuple[float, float] = (0.0, 0.0),
) -> dict[str, dict[str, Any]]:
    """Per model: NRMSE per curve over minutes ``m..`` and the final-value measures (module docstring).

    ``u``: the uniform of the randomised PIT (drawn by the caller from its own stream). ``dispersion``:
    the intervals' widening (:func:`widen`, with ``dispersion_sd`` its added log-growth sd; ``caps``: the
    tree's size, depth and breadth), applied to the
    sampled models' quantiles, coverage, CRPS and PIT, never to the point forecast."""
    m, minutes = pred.m, pred.minutes
    y = float(real["scale"][-1])
    y_m = float(real["scale"][min(m, minutes - 1)])
    out: dict[str, dict[str, Any]] = {}
    for model, curves in pred.points.items():
        row: dict[str, Any] = {
            "nrmse": {k: window_nrmse(curves[k], real[k], m, minutes) if k in curves else None for k in CURVE_NAMES}
        }
        yhat = float(curves["scale"][-1])
        row["final_mean"] = yhat
        row["sle"] = (_log2p(yhat - y_m) - _log2p(y - y_m)) ** 2
        row["ape"] = abs(yhat - y) / y if y > 0 else None
        if model in pred.samples:
            sims = widen(pred.samples[model], real, m, dispersion, caps or {}, dispersion_sd)
            fin = {k: sims[k][:, -1] for k in CURVE_NAMES}
            row["final_quantiles"] = {k: np.quantile(fin[k], QUANTILES).tolist() for k in CURVE_NAMES}
            row["covered"] = {
                f"{int(lv * 100)}": {
                    k: bool(
                        np.quantile(fin[k], 0.5 - lv / 2) <= float(real[k][-1]) <= np.quantile(fin[k], 0.5 + lv / 2)
                    )
                    for k in CURVE_NAMES
                }
                for lv in LEVELS
            }
            if dispersion != 1.0 or any(dispersion_sd):  # what the replicas alone cover, beside the widened intervals
                raw = pred.samples[model]["scale"][:, -1]
                row["covered_raw"] = {
                    f"{int(lv * 100)}": bool(np.quantile(raw, 0.5 - lv / 2) <= y <= np.quantile(raw, 0.5 + lv / 2))
                    for lv in LEVELS
                }
            row["crps"] = sample_crps(fin["scale"], y)
            row["crps_log"] = sample_crps(np.log2(1.0 + fin["scale"]), _log2p(y))
            row["pit"] = randomised_pit(fin["scale"], y, u)
        else:
            row["crps"] = abs(yhat - y)
            row["crps_log"] = abs(_log2p(yhat) - _log2p(y))
        row.update(pred.info.get(model, {}))
        out[model] = row
    return out


def quantile_interval(values: Sequence[float], q: float, level: float = 0.95) -> dict[str, Any]:
    """The ``q`` quantile of ``values`` with a distribution-free order-statistic interval (binomial ranks).

    Exact coverage >= ``level`` for any continuous distribution; a bound the ranks cannot reach at this n
    is None (never invented)."""
    v = np.sort(np.asarray([x for x in values if x is not None and math.isfinite(x)], float))
    n = len(v)
    if n == 0:
        return {"estimate": None, "low": None, "high": None, "n": 0, "method": "none"}
    est = float(np.quantile(v, q))
    if n < MIN_N:
        return {"estimate": est, "low": None, "high": None, "n": n, "method": "none", "note": "n too small"}
    a = (1 - level) / 2
    lo_rank = int(stats.binom.ppf(a, n, q))  # P(B < lo_rank + 1) >= a  ->  X_(lo_rank) is a lower bound
    hi_rank = int(stats.binom.ppf(1 - a, n, q)) + 1
    return {
        "estimate": est,
        "low": float(v[lo_rank - 1]) if lo_rank >= 1 else None,
        "high": float(v[hi_rank - 1]) if hi_rank <= n else None,
        "n": n,
        "method": "order statistics",
    }


def summarise(rows: Sequence[dict[str, dict[str, Any]]], seed: int = 0) -> dict[str, Any]:
    """Mean measures over cascades per model with intervals, coverage per level, and paired differences
    of the forecast to each baseline (forecast minus baseline: negative is better for the forecast)."""
    out: dict[str, Any] = {"n": len(rows)}
    models = [k for k in rows[0]] if rows else []
    for model in models:
        got = [r[model] for r in rows]
        entry: dict[str, Any] = {
            "nrmse": {
                k: nonnegative_interval([g["nrmse"][k] for g in got], seed=seed).as_dict()
                if got[0]["nrmse"][k] is not None
                else None
                for k in CURVE_NAMES
            },
            "msle": nonnegative_interval([g["sle"] for g in got], seed=seed).as_dict(),
            "ape": {f"q{int(q * 100)}": quantile_interval([g["ape"] for g in got], q) for q in APE_QUANTILES},
            "crps": nonnegative_interval([g["crps"] for g in got], seed=seed).as_dict(),
            "crps_log": nonnegative_interval([g["crps_log"] for g in got], seed=seed).as_dict(),
            "final_mean": float(np.mean([g["final_mean"] for g in got])),
        }
        if "covered" in got[0]:
            entry["coverage"] = {
                lv: {
                    k: proportion_interval(sum(g["covered"][lv][k] for g in got), len(got)).as_dict()
                    for k in CURVE_NAMES
                }
                for lv in got[0]["covered"]
            }
            if "covered_raw" in got[0]:
                entry["coverage_undispersed"] = {
                    lv: proportion_interval(sum(g["covered_raw"][lv] for g in got), len(got)).as_dict()
                    for lv in got[0]["covered_raw"]
                }
            pits = np.array([g["pit"] for g in got])
            entry["pit_histogram"] = np.histogram(pits, bins=10, range=(0.0, 1.0))[0].tolist()
        out[model] = entry
    for base in models[1:]:
        pairs = [(r["forecast"], r[base]) for r in rows]
        out[f"forecast_minus_{base}"] = {
            **{
                f"nrmse_{k}": mean_interval([f["nrmse"][k] - b["nrmse"][k] for f, b in pairs]).as_dict()
                for k in CURVE_NAMES
                if pairs and pairs[0][1]["nrmse"][k] is not None
            },
            "sle": mean_interval([f["sle"] - b["sle"] for f, b in pairs]).as_dict(),
            "crps": mean_interval([f["crps"] - b["crps"] for f, b in pairs]).as_dict(),
            "crps_log": mean_interval([f["crps_log"] - b["crps_log"] for f, b in pairs]).as_dict(),
        }
    return out


def calibration_curve(rows: Sequence[dict[str, dict[str, Any]]], model: str = "forecast") -> list[tuple[float, float]]:
    """(nominal, observed) coverage of central intervals of the final scale from the randomised PITs:
    the share of cascades with ``|PIT - 1/2| <= level / 2`` at levels 0.1 .. 0.9 (the calibration plot)."""
    pits = np.array([r[model]["pit"] for r in rows if "pit" in r.get(model, {})])
    if not len(pits):
        return []
    levels = np.round(np.arange(1, 10) / 10, 2)
    return [(float(lv), float(np.mean(np.abs(pits - 0.5) <= lv / 2))) for lv in levels]


def final_bias(forecast_final: Sequence[float], real_final: Sequence[float]) -> dict[str, Any]:
    """The point forecast's signed error of the final size: the median of ``log(forecast / real)`` (forecast
    floored at 1) with its order-statistic interval, and the share forecast low (Wilson). Why the median of
    logs: one cascade that restarts late moves a mean, not this (docs/results.md, the Weibo bias)."""
    e = [math.log(max(f, 1.0) / max(r, 1.0)) for f, r in zip(forecast_final, real_final, strict=True)]
    low = proportion_interval(sum(x < 0 for x in e), len(e)) if e else None
    return {"median_log_ratio": quantile_interval(e, 0.5), "share_low": low.as_dict() if low else None, "n": len(e)}


def bias_note(bias: Mapping[str, Any], what: str = "the forecast") -> str | None:
    """A warning line when :func:`final_bias`'s interval excludes 0 (None otherwise, or when n is too small)."""
    med = bias["median_log_ratio"]
    if med.get("low") is None or med.get("high") is None or med["low"] <= 0.0 <= med["high"]:
        return None
    side = "low" if med["estimate"] < 0 else "high"
    share = bias["share_low"]["estimate"]
    return (
        f"{what} is biased {side} on these cascades: median log(forecast / real final size) {med['estimate']:+.3f} "
        f"[{med['low']:+.3f}, {med['high']:+.3f}], forecast low on {100 * share:.0f}% of {bias['n']}; its intervals "
        "then cover by width, not by centring (docs/results.md, 'Weibo: why the forecast is low')"
    )
