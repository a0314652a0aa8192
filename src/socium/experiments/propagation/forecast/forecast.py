"""Forecasting a real cascade from its first minutes (``observe_minutes: m`` in a propagation spec).

Why: a content-free model fitted on other cascades gives every cascade nearly the same speed (held-out
scale NRMSE 0.15, simulated and real speed correlate only 0.25-0.31; with each cascade's true speed the
error halves). Pre-cascade features carry little of that speed; the cascade's own first minutes carry a
lot. So here the first ``m`` minutes of a held-out cascade are taken as observed, its speed is inferred
from them, and only the rest is simulated.

The model is the calibrated null of the cross-validation (tree population, every member eventually
reshares, the fold's fitted delay law), with the between-cascade log-delay shift ``g ~ N(0,
cascade_sigma^2)`` that the fit estimates but the unconditioned null does not draw:

* observed: every real node with delay <= m keeps its real parent and time (what a platform has seen);
* speed: the posterior of ``g`` on a grid, from the prefix's edges -- the density of each observed
  delay, and for each observed parent's child not yet seen by minute m the probability that its delay
  exceeds ``m - t_parent`` (right-censored; without it only the fast edges would be seen and every
  cascade would look fast). Per-edge law: the fitted family narrowed by ``cascade_sigma`` (so with
  ``g`` drawn from its prior the per-edge law is the fitted one), shifted by the influence slopes and
  the source account's effect;
* the rest: ``R`` replicas, each with its own ``g`` drawn from that posterior; a child of an observed
  parent draws its delay from the law truncated to "not before minute m", every other node follows its
  parent; times are continuous minutes (no step grid); the prediction is the mean curve.

Baselines on the same cascades and window: ``null`` (the same code with nothing observed and ``g = 0``:
the unconditioned calibrated null), SEISMIC (:func:`seismic_scale`) and a Hawkes process fitted to the
prefix's reshare times (:mod:`~socium.experiments.propagation.forecast.hawkes`: ``hawkes`` with an exponential
kernel, ``hawkes_powerlaw`` with the power-law (Omori) kernel of cascade studies; ``hawkes_cv_kernel``: its
kernel is the fold's fitted delay law and only the branching ratio comes from the prefix). Scores are NRMSE over minutes
``m .. minutes-1`` only (:func:`window_nrmse`), normalised by the real curve's maximum in that window.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from socium.core.intervals import mean_interval, nonnegative_interval, proportion_interval
from socium.experiments.propagation.data.curves import nrmse
from socium.experiments.propagation.data.realcascades import CascadeTree
from socium.simulator.timing import MIN_DELAY_MIN, DelayDistribution, TimingParams
from socium.trace.queries.curves import CURVE_NAMES, node_depths

GRID_SD = 6.0
"""The posterior of ``g`` is evaluated on +- this many prior sds (it cannot reach further in practice)."""
GRID_POINTS = 241
_LOG_LO, _LOG_HI, _LOG_N = math.log(MIN_DELAY_MIN) - 8.0, math.log(1e7), 6000

# SEISMIC's memory kernel (Zhao, Erdogdu, He, Rajaraman & Leskovec 2015, KDD), as in the authors' R package
# `seismic` 1.1 (CRAN): constant density c up to s0 seconds, then a power law of exponent 1 + theta.
SEISMIC_THETA = 0.2314843
SEISMIC_S0 = 300.0
SEISMIC_C = 0.0006265725
BASELINES = (
    "forecast",
    "null",
    "seismic",
    "seismic_direct",
    "hawkes",
    "hawkes_powerlaw",
    "hawkes_cv_kernel",
    "forecast_sim",
    "forecast_bc",
)
"""The forecast first, then what it is compared with on the same cascades and window."""


@dataclass(frozen=True)
class CascadeArrays:
    """One cascade as arrays in ``tree.events()`` order: parent index (-1 root), real delay (minutes)."""

    parent: NDArray[np.int64]
    delay: NDArray[np.float64]
    root_user: str = ""

    @property
    def children(self) -> NDArray[np.int64]:
        return np.bincount(self.parent[self.parent >= 0], minlength=len(self.parent))


def cascade_arrays(tree: CascadeTree, users: list[str]) -> CascadeArrays:
    """The cascade restricted to ``users`` (an earliest-users prefix, source first) as arrays."""
    idx = {u: i for i, u in enumerate(users)}
    parent = [-1 if (p := tree.nodes[u].parent) is None else idx[p] for u in users]
    delay = [tree.nodes[u].delay for u in users]
    return CascadeArrays(np.array(parent, np.int64), np.array(delay, float), tree.root_user)


def edge_shift(c: CascadeArrays, tp: TimingParams) -> NDArray[np.float64]:
    """Log-delay shift of each node's incoming edge: influence slopes (followers = tree children) + source effect."""
    ch = c.children.astype(float)
    xa = np.log1p(ch[np.maximum(c.parent, 0)])
    return tp.b_author * xa + tp.b_root * math.log1p(ch[0]) + tp.root_effects.get(c.root_user, 0.0)


class _LogLaw:
    """CDF, inverse CDF and log density of ``log D`` on a fine grid (every family, truncation included).

    Built through :func:`log_law`, which keeps the last few: one fit's law is the same for every cascade,
    and building it (6,000 CDF evaluations) cost more than the replicas of a typical cascade."""

    def __init__(self, dist: DelayDistribution) -> None:
        self.y = np.linspace(_LOG_LO, _LOG_HI, _LOG_N)
        cdf = np.clip(np.asarray(dist.cdf(np.exp(self.y)), float), 0.0, 1.0)
        self.F = np.maximum.accumulate(cdf + np.linspace(0, 1e-12, _LOG_N))  # strictly increasing for inversion
        self.logf = np.asarray(dist.logpdf(np.exp(self.y)), float) + self.y

    def cdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.interp(y, self.y, self.F, left=0.0, right=1.0)

    def logpdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.interp(y, self.y, self.logf, left=-1e3, right=-1e3)

    def quantile(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.interp(u, self.F, self.y)


_LAWS: dict[str, _LogLaw] = {}
_LAWS_MAX = 8


def log_law(dist: DelayDistribution) -> _LogLaw:
    """The grid law of ``dist``, cached by its family and parameters (identical inputs, identical grid)."""
    key = json.dumps([dist.family, dist.params], sort_keys=True, default=lambda o: repr(np.asarray(o).tolist()))
    law = _LAWS.get(key)
    if law is None:
        if len(_LAWS) >= _LAWS_MAX:
            _LAWS.pop(next(iter(_LAWS)))
        law = _LAWS[key] = _LogLaw(dist)
    return law


def observed_mask(c: CascadeArrays, m: float) -> NDArray[np.bool_]:
    """Nodes seen by minute ``m`` (the source always); delays are clamped to parents, so this is a subtree."""
    return (c.delay <= m) | (c.parent < 0)


def speed_posterior(
    c: CascadeArrays, tp: TimingParams, casc_sd: float, m: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Grid and posterior weights of the cascade's log-delay shift ``g`` given its first ``m`` minutes.

    Prior ``N(0, casc_sd^2)``; likelihood: observed edges' densities and the survival of the edges from
    observed parents whose child has not reshared by ``m`` (right-censored).
    """
    if casc_sd <= 0:
        return np.zeros(1), np.ones(1)
    law = log_law(tp.delay.narrowed(casc_sd))
    g = np.linspace(-GRID_SD * casc_sd, GRID_SD * casc_sd, GRID_POINTS)
    obs = observed_mask(c, m)
    shift = edge_shift(c, tp)
    edge = c.parent >= 0
    par = np.maximum(c.parent, 0)
    seen = edge & obs
    cens = edge & ~obs & obs[par]
    y_obs = np.log(np.maximum(c.delay[seen] - c.delay[par[seen]], MIN_DELAY_MIN)) - shift[seen]
    y_cen = np.log(np.maximum(m - c.delay[par[cens]], MIN_DELAY_MIN)) - shift[cens]
    logp = -0.5 * (g / casc_sd) ** 2
    logp = logp + law.logpdf(y_obs[None, :] - g[:, None]).sum(1)
    logp = logp + np.log(np.maximum(1.0 - law.cdf(y_cen[None, :] - g[:, None]), 1e-300)).sum(1)
    w = np.exp(logp - special.logsumexp(logp))
    return g, w / w.sum()


def replica_times(
    c: CascadeArrays,
    tp: TimingParams,
    casc_sd: float,
    m: float,
    runs: int,
    rng: np.random.Generator,
    condition: bool = True,
    future_shift: float = 0.0,
) -> NDArray[np.float64]:
    """Node times (runs x n, minutes): observed nodes at their real times, the rest simulated.

    ``condition=False`` is the unconditioned calibrated null: nothing observed but the source, ``g = 0``
    and the fitted (not narrowed) law, as the simulator draws it. ``future_shift``: a log-delay shift
    added to every drawn ``g`` of the conditioned forecast (the bias calibration learnt on training
    cascades, :mod:`~socium.experiments.propagation.forecast.bias`; 0 leaves the draws untouched).
    """
    n = len(c.parent)
    mm = m if condition else 0.0
    obs = observed_mask(c, m) if condition else c.parent < 0
    u = rng.random((runs, n))  # drawn first: the null and the forecast share them (common random numbers)
    if condition:
        grid, w = speed_posterior(c, tp, casc_sd, m)
        g = rng.choice(grid, size=runs, p=w) + future_shift
        law = log_law(tp.delay.narrowed(casc_sd) if casc_sd > 0 else tp.delay)
    else:
        g = np.zeros(runs)
        law = log_law(tp.delay)
    shift = edge_shift(c, tp)
    t = np.zeros((runs, n))
    t[:, obs] = c.delay[obs]
    depth = node_depths(c.parent)
    for d in range(1, int(depth.max(initial=0)) + 1):
        idx = np.flatnonzero((depth == d) & ~obs)
        if not len(idx):
            continue
        par = c.parent[idx]
        base = t[:, par]
        lo = np.zeros((runs, len(idx)))  # truncation: a child of an observed parent did not reshare by m
        from_obs = obs[par]
        if condition and from_obs.any():
            cut = np.log(np.maximum(mm - base[:, from_obs], MIN_DELAY_MIN)) - shift[idx[from_obs]][None, :]
            lo[:, from_obs] = law.cdf(cut - g[:, None])
        y = law.quantile(lo + u[:, idx] * (1.0 - lo))
        delay = np.exp(np.minimum(y + shift[idx][None, :] + g[:, None], 50.0))
        t[:, idx] = base + np.maximum(delay, MIN_DELAY_MIN)
    return t


def curves_from_times(parent: NDArray[np.int64], times: NDArray[np.float64], minutes: int) -> dict[str, np.ndarray]:
    """Per-minute curves (runs x minutes) of many realisations of one tree, as
    :func:`~socium.trace.queries.curves.cascade_curves_from_events` counts them (a node counts from the
    first minute ``t >= its time``), vectorised over realisations."""
    depth = node_depths(parent)
    R, n = times.shape
    L = int(depth.max(initial=0)) + 1
    first = np.minimum(np.ceil(times - 1e-9), minutes).astype(np.int64)
    first = np.maximum(first, 0)
    key = (np.arange(R)[:, None] * L + depth[None, :]) * (minutes + 1) + first
    cnt = np.bincount(key.ravel(), minlength=R * L * (minutes + 1)).reshape(R, L, minutes + 1)
    per_level = np.cumsum(cnt[:, :, :minutes], axis=2)
    scale = per_level.sum(1)
    dep = np.where(per_level > 0, np.arange(L)[None, :, None], 0).max(1)
    breadth = per_level[:, 1:, :].max(1) if L > 1 else np.zeros((R, minutes), np.int64)
    return {"scale": scale.astype(float), "depth": dep.astype(float), "max_breadth": breadth.astype(float)}


def _seismic_ccdf(s_sec: NDArray[np.float64]) -> NDArray[np.float64]:
    """Share of a post's views still to come ``s`` seconds after it was shared (SEISMIC's kernel)."""
    s = np.maximum(s_sec, 0.0)
    tail = SEISMIC_C * SEISMIC_S0 ** (1 + SEISMIC_THETA) / SEISMIC_THETA * np.power(np.maximum(s, 1e-9), -SEISMIC_THETA)
    return np.where(s <= SEISMIC_S0, 1.0 - SEISMIC_C * s, tail)


def seismic_infectiousness(c: CascadeArrays, m: float) -> tuple[float, float]:
    """SEISMIC's plain infectiousness estimate at minute ``m`` and ``n*`` (mean audience of observed sharers)."""
    obs = observed_mask(c, m)
    n_i = c.children[obs].astype(float)
    seen = float(np.sum(n_i * (1.0 - _seismic_ccdf(m * 60.0 - c.delay[obs] * 60.0))))
    p = float(obs.sum() - 1) / seen if seen > 0 else 0.0
    return p, float(n_i.mean()) if len(n_i) else 0.0


def seismic_scale(
    c: CascadeArrays, m: float, minutes: int, cap: int | None = None, self_exciting: bool = True
) -> NDArray[np.float64]:
    """SEISMIC's expected scale curve over minutes ``0 .. minutes-1`` from the first ``m`` minutes.

    Zhao et al. 2015, with the authors' package's kernel constants and its prediction without the
    fitted alpha/gamma corrections: infectiousness ``p = R_m / sum_i n_i (1 - ccdf(m - t_i))`` (the
    paper's plain estimator: reshares over the views their sharers' audiences have had), and by time ``T``
    ``R_m + p sum_i n_i (ccdf(m - t_i) - ccdf(T - t_i)) / (1 - p n*)`` more reshares (``T -> inf`` gives the
    paper's final-size formula). ``n_i``: followers = tree children, the counts the simulated tree
    population has (the calibrated null sees the same), ``n*`` their mean over observed sharers. Before ``m``
    the curve is the observed one. ``cap``: the tree's size (the null's population), so both predict
    within one population; a supercritical estimate (``p n* >= 1``) predicts the cap.

    In a tree population every follower eventually reshares, so ``p ~ 1`` and ``n* >= 1``: the estimate is
    supercritical for nearly every cascade (measured: all 134 of OASIS's at m = 10). ``self_exciting=False``
    drops the ``1 / (1 - p n*)`` descendants factor (only the observed sharers' audiences react): the
    kernel-and-infectiousness part of SEISMIC, which stays finite there.
    """
    obs = observed_mask(c, m)
    n_i = c.children[obs].astype(float)
    t_i = c.delay[obs] * 60.0
    reshares = float(obs.sum() - 1)
    p, n_star = seismic_infectiousness(c, m)
    T = np.arange(minutes, dtype=float)
    real = np.searchsorted(np.sort(c.delay), T, side="right").astype(float)
    left = _seismic_ccdf(m * 60.0 - t_i)[None, :] - _seismic_ccdf(T[:, None] * 60.0 - t_i[None, :])
    direct = p * (np.maximum(left, 0.0) @ n_i)
    if not self_exciting:
        more = direct
    elif p * n_star >= 1.0:
        more = np.full(minutes, np.inf)
    else:
        more = direct / (1.0 - p * n_star)
    pred = np.where(T <= m, real, 1.0 + reshares + more)
    return np.minimum(pred, float(cap)) if cap is not None else pred


def window_nrmse(sim: NDArray[np.float64], real: NDArray[np.float64], start: int, minutes: int) -> float:
    """NRMSE over minutes ``start .. minutes-1`` only, normalised by the real curve's maximum there."""
    return nrmse(np.asarray(sim, float)[start:minutes], np.asarray(real, float)[start:minutes], minutes - start)


def forecast_summary(rows: list[dict[str, Any]], m: int, seed: int = 0) -> dict[str, Any]:
    """Mean NRMSE over the remaining window per model with bootstrap intervals over cascades, and the
    forecast's paired differences to each baseline (t intervals: a difference is signed). ``forecast_sim``
    (the same forecast run in the simulator, ``cv.models: [forecast_sim]``) is summarised when every row has it."""
    out: dict[str, Any] = {"observe_minutes": m, "n": len(rows)}
    have = [b for b in BASELINES if rows and all(b in r["forecast"] for r in rows)]  # forecast_sim: when run
    for model in have:
        entry: dict[str, Any] = {}
        for k in CURVE_NAMES:
            vals = [r["forecast"][model][k] for r in rows if r["forecast"][model][k] is not None]
            entry[k] = nonnegative_interval(vals, seed=seed).as_dict() if vals else None
        out[model] = entry
    for base in have[1:]:
        out[f"forecast_minus_{base}"] = {
            k: mean_interval([r["forecast"]["forecast"][k] - r["forecast"][base][k] for r in rows]).as_dict()
            if rows and rows[0]["forecast"].get(base, {}).get(k) is not None
            else None
            for k in CURVE_NAMES
        }
    sc = [r["forecast"]["seismic"]["p_n_star"] >= 1.0 for r in rows]
    out["seismic_supercritical"] = proportion_interval(int(sum(sc)), len(sc)).as_dict()
    return out
