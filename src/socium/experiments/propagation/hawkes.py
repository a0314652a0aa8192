"""A Hawkes-process baseline for forecasting a cascade from its first minutes (issue 28).

Model: the classic self-exciting point process of cascade studies (e.g. Mishra, Rizoiu & Xie 2016,
without marks): the source post at ``t = 0`` is the only immigrant, and every event ``j`` (the source and
each reshare) triggers further reshares at rate ``kappa * phi(t - t_j)`` with the exponential kernel
``phi(s) = beta * exp(-beta * s)``. ``kappa`` is the branching ratio (expected direct offspring of one
event), ``1 / beta`` the mean reaction delay in minutes.

Fit: maximum likelihood from the reshare times observed by minute ``m`` (the prefix only). For a given
``beta`` the likelihood's maximum in ``kappa`` is closed-form (``kappa = N / C(beta)``: reshares over the
compensator), so only the profile likelihood in ``beta`` is optimised, by a bounded 1-D search
(:func:`scipy.optimize.minimize_scalar`) on ``log beta``.

Prediction: with an exponential kernel the expected intensity after ``m`` solves
``lambda' = -beta (1 - kappa) lambda``, so the expected count by ``T`` is exact:
``N(m) + lambda(m) (1 - exp(-beta (1 - kappa) (T - m))) / (beta (1 - kappa))`` (``T -> inf`` with
``kappa < 1``: observed + ``kappa sum_j exp(-beta (m - t_j)) / (1 - kappa)`` expected descendants).

Why written here rather than taken from a library: ``tick`` (0.8, installs on Python 3.11) fits a
baseline rate and the excitation matrix with the decay *fixed* by the user, and assumes a stationary
background rate; a cascade has no background (one immigrant at ``t = 0``) and its decay is what must be
estimated. The other PyPI packages (``hawkeslib`` 2019, ``hawkes`` 2021, several 2026 one-author
packages) are unmaintained or unproven. The whole model is a two-parameter likelihood of ~20 lines.

Unmarked on purpose: a marked (follower-weighted) fit would need each sharer's follower count, which
in a tree population is its number of children in the *whole* tree -- information from after minute
``m``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize

from socium.errors import ConfigError

BETA_BOUNDS = (1e-3, 60.0)
"""Decay rates searched (per minute): mean reaction delays from 1 second to ~17 hours."""


@dataclass(frozen=True)
class HawkesFit:
    """An exponential-kernel Hawkes fit: branching ratio, decay rate (1/min), reshares and log-likelihood."""

    kappa: float
    beta: float
    n_events: int
    loglik: float


def _as_sequences(times: NDArray[np.float64] | list[NDArray[np.float64]]) -> list[NDArray[np.float64]]:
    seqs = (
        [np.sort(np.asarray(times, float))]
        if isinstance(times, np.ndarray)
        else [np.sort(np.asarray(t, float)) for t in times]
    )
    for s in seqs:
        if not len(s) or s[0] != 0.0 or not np.all(np.isfinite(s)):
            raise ConfigError("hawkes: every sequence needs the source event at t = 0 and finite times >= 0")
    return seqs


def _log_excitation(t: NDArray[np.float64], beta: float) -> NDArray[np.float64]:
    """``log sum_{j < i} exp(-beta (t_i - t_j))`` for every event ``i >= 1`` (recursive, underflow-safe)."""
    out = np.empty(len(t) - 1)
    prev = -math.inf
    for i in range(1, len(t)):
        prev = -beta * (t[i] - t[i - 1]) + float(np.logaddexp(0.0, prev))
        out[i - 1] = prev
    return out


def _compensator_unit(seqs: list[NDArray[np.float64]], horizon: float, beta: float) -> float:
    """``sum_j (1 - exp(-beta (horizon - t_j)))``: the expected reshares per unit branching ratio."""
    return float(sum(-np.expm1(-beta * np.maximum(horizon - s, 0.0)).sum() for s in seqs))


def profile_loglik(seqs: list[NDArray[np.float64]], horizon: float, beta: float) -> tuple[float, float]:
    """Log-likelihood maximised over ``kappa`` at this ``beta``, and that ``kappa``."""
    n = sum(len(s) - 1 for s in seqs)
    if n == 0:
        return 0.0, 0.0
    c = _compensator_unit(seqs, horizon, beta)
    kappa = n / c
    excite = sum(float(_log_excitation(s, beta).sum()) for s in seqs)
    return n * (math.log(kappa) + math.log(beta)) + excite - n, kappa


def fit_exp_hawkes(times: NDArray[np.float64] | list[NDArray[np.float64]], horizon: float) -> HawkesFit:
    """Maximum-likelihood ``kappa`` and ``beta`` from event times observed on ``[0, horizon]``.

    ``times``: one cascade (source at 0, then its reshares, minutes) or a list of independent cascades
    sharing the parameters. No reshare observed: ``kappa = 0`` (nothing to excite), ``beta`` undefined (nan).
    """
    seqs = _as_sequences(times)
    seqs = [s[s <= horizon] for s in seqs]
    n = sum(len(s) - 1 for s in seqs)
    if n == 0:
        return HawkesFit(0.0, math.nan, 0, 0.0)
    res = optimize.minimize_scalar(
        lambda lb: -profile_loglik(seqs, horizon, math.exp(lb))[0],
        bounds=(math.log(BETA_BOUNDS[0]), math.log(BETA_BOUNDS[1])),
        method="bounded",
        options={"xatol": 1e-4},
    )
    beta = math.exp(float(res.x))
    ll, kappa = profile_loglik(seqs, horizon, beta)
    return HawkesFit(kappa, beta, n, ll)


def expected_count(
    fit: HawkesFit, observed: NDArray[np.float64], m: float, at: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Expected number of events by each time in ``at`` (>= m) given the events ``observed`` by ``m``."""
    obs = np.asarray(observed, float)
    tau = np.maximum(np.asarray(at, float) - m, 0.0)
    if fit.kappa <= 0 or not math.isfinite(fit.beta):
        return np.full(tau.shape, float(len(obs)))
    lam_m = fit.kappa * fit.beta * float(np.exp(-fit.beta * (m - obs)).sum())
    r = fit.beta * (1.0 - fit.kappa)
    if abs(r) < 1e-12:
        more = lam_m * tau
    else:
        more = lam_m * -np.expm1(np.minimum(-r * tau, 700.0)) / r
    return len(obs) + more


def hawkes_scale(
    delays: NDArray[np.float64], m: float, minutes: int, cap: int | None = None
) -> tuple[NDArray[np.float64], HawkesFit]:
    """Hawkes forecast of the scale curve over minutes ``0 .. minutes-1`` from the first ``m`` minutes.

    ``delays``: every node's time in the real cascade (minutes, source 0); only those ``<= m`` are used.
    Before ``m`` the curve is the observed one (as for SEISMIC); ``cap``: the tree's size, as for SEISMIC,
    so that a supercritical fit (``kappa >= 1``) predicts within the same population as the null.
    """
    d = np.sort(np.asarray(delays, float))
    obs = d[d <= m]
    fit = fit_exp_hawkes(obs, m)
    T = np.arange(minutes, dtype=float)
    real = np.searchsorted(d, T, side="right").astype(float)
    pred = np.where(T <= m, real, expected_count(fit, obs, m, T))
    return (np.minimum(pred, float(cap)) if cap is not None else pred), fit


def kernel_scale(
    delays: NDArray[np.float64],
    m: float,
    minutes: int,
    kernel_cdf: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    cap: int | None = None,
    dt: float = 0.5,
) -> tuple[NDArray[np.float64], float]:
    """Hawkes forecast with the kernel given (e.g. the CV fold's fitted delay law) and only the
    branching ratio from the prefix: ``kappa = N / sum_j F(m - t_j)`` (the MLE for a fixed kernel).

    Why beside :func:`hawkes_scale`: it separates what the prefix cannot identify (the kernel's shape)
    from what it can (how many reshares each reshare brings). The expected count after ``m`` solves the
    renewal equation on a ``dt``-minute grid (each bin's expected events spread by the kernel's CDF
    differences from the bin's midpoint). Returns the curve and ``kappa``.
    """
    d = np.sort(np.asarray(delays, float))
    obs = d[d <= m]
    denom = float(np.sum(kernel_cdf(np.maximum(m - obs, 0.0))))
    kappa = (len(obs) - 1) / denom if denom > 0 else 0.0
    edges = m + dt * np.arange(int(math.ceil(max(minutes - m, 0.0) / dt)) + 1)
    K = len(edges) - 1
    # direct offspring of the observed events expected in each bin
    cdf_obs = kernel_cdf(np.maximum(edges[:, None] - obs[None, :], 0.0)).sum(1)
    direct = kappa * (np.diff(cdf_obs) if K > 0 else np.zeros(0))
    lag_cdf = kernel_cdf(np.maximum(dt * (np.arange(K + 2) - 0.5), 0.0))
    lag_mass = kappa * np.diff(lag_cdf)  # offspring of a bin's events (at its midpoint) 0, 1, ... bins later
    new = np.zeros(K)
    same = 1.0 - lag_mass[0]  # offspring in the same bin, solved self-consistently
    for k in range(K):
        parents = float(new[:k] @ lag_mass[k:0:-1]) if k else 0.0
        new[k] = (direct[k] + parents) / same if same > 0 else math.inf
        if not np.isfinite(new[k]) or new[k] > 1e9:
            new[k:] = 1e9
            break
    T = np.arange(minutes, dtype=float)
    real = np.searchsorted(d, T, side="right").astype(float)
    more = np.interp(T, edges, np.concatenate([[0.0], np.cumsum(new)]))
    pred = np.where(T <= m, real, len(obs) + more)
    return (np.minimum(pred, float(cap)) if cap is not None else pred), kappa


def simulate_exp_hawkes(kappa: float, beta: float, horizon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """One cascade of the model on ``[0, horizon]`` (source at 0), by its branching structure: each event
    has ``Poisson(kappa)`` children after ``Exponential(1 / beta)`` delays. For tests of the fit."""
    out = [0.0]
    frontier = [0.0]
    while frontier and len(out) < 10**6:
        nxt: list[float] = []
        for t in frontier:
            k = int(rng.poisson(kappa))
            kids = t + rng.exponential(1.0 / beta, size=k)
            nxt.extend(float(x) for x in kids if x <= horizon)
        out.extend(nxt)
        frontier = nxt
    return np.sort(np.array(out))
