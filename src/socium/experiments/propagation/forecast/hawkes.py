"""Hawkes-process baselines for forecasting a cascade from its first minutes (issue 28).

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

Power-law kernel (:func:`fit_powerlaw_hawkes`, baseline ``hawkes_powerlaw``): retweet delays are
heavy-tailed, so cascade studies use the Omori kernel ``phi(s) = theta c^theta / (s + c)^(1 + theta)``
(Helmstetter & Sornette 2002; Mishra, Rizoiu & Xie 2016; Rizoiu et al. 2017). Its CDF is closed-form, so
the compensator is too; ``kappa`` is profiled out as above and ``(c, theta)`` searched in 2-D. No closed
form for the expected count, so :func:`renewal_count` solves the renewal equation on a grid. No library
fits it as needed (checked 2026-12 against the PyPI list): ``tick`` has a power-law kernel for simulation
only, its learners fit exponential, sum-of-exponential or non-parametric kernels beside a stationary
baseline; ``hawkes`` (1.0.0, 2021) has a power-law kernel but always with a background rate, and no
release since 2021; ``HawkesPyLib`` approximates the power law by sums of exponentials beside a constant
background; ``evently`` on PyPI is an unrelated event bus (Rizoiu's evently is an R package), and R's
``hawkesbow`` also assumes a background rate. None is installed here.

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


def renewal_count(
    kappa: float,
    kernel_cdf: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    observed: NDArray[np.float64],
    m: float,
    at: NDArray[np.float64],
    dt: float = 0.5,
) -> NDArray[np.float64]:
    """Expected number of events by each time in ``at`` given the events ``observed`` by ``m``, for any
    kernel (its CDF) and branching ratio ``kappa``.

    Why a grid: only the exponential kernel has a closed form (:func:`expected_count`). The expected
    count after ``m`` solves the renewal equation on a ``dt``-minute grid: each bin's expected new events
    are the observed events' offspring falling in it (exact CDF differences) plus the offspring of
    earlier bins' events, placed at their bin's midpoint; offspring in the same bin are solved
    self-consistently. Times in ``at`` before ``m`` get ``len(observed)``.
    """
    obs = np.asarray(observed, float)
    horizon = float(np.max(at, initial=m))
    edges = m + dt * np.arange(int(math.ceil(max(horizon - m, 0.0) / dt)) + 1)
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
    more = np.interp(np.asarray(at, float), edges, np.concatenate([[0.0], np.cumsum(new)]))
    return len(obs) + more


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
    from what it can (how many reshares each reshare brings). The expected count after ``m`` is
    :func:`renewal_count` on a ``dt``-minute grid. Returns the curve and ``kappa``.
    """
    d = np.sort(np.asarray(delays, float))
    obs = d[d <= m]
    denom = float(np.sum(kernel_cdf(np.maximum(m - obs, 0.0))))
    kappa = (len(obs) - 1) / denom if denom > 0 else 0.0
    T = np.arange(minutes, dtype=float)
    real = np.searchsorted(d, T, side="right").astype(float)
    pred = np.where(T <= m, real, renewal_count(kappa, kernel_cdf, obs, m, T, dt))
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


# --- power-law (Omori) kernel -------------------------------------------------------------------------

PL_C_BOUNDS = (1.0 / 60.0, 1e4)
"""Kernel time scales ``c`` searched (minutes): from one second to about a week."""
PL_THETA_BOUNDS = (0.05, 50.0)
"""Tail exponents ``theta`` searched: from a tail too heavy to have a mean (``theta <= 1``) to one so
light that the kernel is nearly exponential (``(1 + t/c)^-(1+theta) ~ exp(-theta t / c)``)."""
_PL_GRID = (9, 9)  # starting grid over (log c, log theta) before the local search


@dataclass(frozen=True)
class PowerLawFit:
    """A power-law-kernel Hawkes fit: branching ratio, kernel scale ``c`` (min), tail exponent
    ``theta``, reshares and log-likelihood."""

    kappa: float
    c: float
    theta: float
    n_events: int
    loglik: float

    def kernel_cdf(self, t: NDArray[np.float64]) -> NDArray[np.float64]:
        """Share of an event's offspring expected by ``t`` minutes after it."""
        return powerlaw_cdf(t, self.c, self.theta)


def powerlaw_cdf(t: NDArray[np.float64], c: float, theta: float) -> NDArray[np.float64]:
    """CDF of the kernel ``theta c^theta / (t + c)^(1 + theta)`` (a Lomax law): ``1 - (c / (t + c))^theta``."""
    t = np.maximum(np.asarray(t, float), 0.0)
    return -np.expm1(theta * (math.log(c) - np.log(t + c)))


@dataclass(frozen=True)
class _Pairs:
    """One cascade's pairwise lags ``t_i - t_j`` (``j < i``), grouped by ``i``, for the excitation sums."""

    lags: NDArray[np.float64]
    starts: NDArray[np.int64]
    to_horizon: NDArray[np.float64]  # horizon - t_j for every event (the compensator's arguments)

    @classmethod
    def of(cls, s: NDArray[np.float64], horizon: float) -> _Pairs:
        i, j = np.tril_indices(len(s), -1)  # row-major: row i holds j = 0 .. i-1, rows 1 .. len-1
        starts = (np.arange(1, len(s)) * np.arange(len(s) - 1) // 2).astype(np.int64)
        return cls(s[i] - s[j], starts, np.maximum(horizon - s, 0.0))


def _powerlaw_profile(pairs: list[_Pairs], c: float, theta: float) -> tuple[float, float]:
    """Log-likelihood maximised over ``kappa`` at this kernel, and that ``kappa`` (``N / compensator``)."""
    n = sum(len(p.starts) for p in pairs)
    if n == 0:
        return 0.0, 0.0
    comp = sum(float(powerlaw_cdf(p.to_horizon, c, theta).sum()) for p in pairs)
    kappa = n / comp
    excite = 0.0
    for p in pairs:
        if not len(p.starts):
            continue
        logf = math.log(theta) + theta * math.log(c) - (1.0 + theta) * np.log(p.lags + c)
        top = np.maximum.reduceat(logf, p.starts)
        counts = np.diff(np.append(p.starts, len(logf)))
        excite += float((top + np.log(np.add.reduceat(np.exp(logf - np.repeat(top, counts)), p.starts))).sum())
    return n * math.log(kappa) - n + excite, kappa


def powerlaw_loglik(
    times: NDArray[np.float64] | list[NDArray[np.float64]], horizon: float, c: float, theta: float
) -> tuple[float, float]:
    """Profile log-likelihood of the kernel ``(c, theta)`` on ``[0, horizon]`` and its ``kappa`` (for tests
    and diagnostics; :func:`fit_powerlaw_hawkes` maximises it)."""
    seqs = [s[s <= horizon] for s in _as_sequences(times)]
    return _powerlaw_profile([_Pairs.of(s, horizon) for s in seqs], c, theta)


def fit_powerlaw_hawkes(times: NDArray[np.float64] | list[NDArray[np.float64]], horizon: float) -> PowerLawFit:
    """Maximum-likelihood ``kappa``, ``c`` and ``theta`` from event times observed on ``[0, horizon]``.

    Model: the source at ``t = 0`` is the only immigrant and every event triggers reshares at rate
    ``kappa theta c^theta / (t - t_j + c)^(1 + theta)`` (the Omori kernel of Helmstetter & Sornette 2002,
    used for retweet cascades by Mishra, Rizoiu & Xie 2016). Log-likelihood: ``sum_i log sum_{j<i}
    phi(t_i - t_j) - kappa sum_j F(horizon - t_j)`` with the kernel's CDF ``F`` in closed form; ``kappa``
    is profiled out (``N / sum_j F``), and ``(log c, log theta)`` are searched within
    :data:`PL_C_BOUNDS` x :data:`PL_THETA_BOUNDS`: a 9 x 9 grid, then L-BFGS-B from its best point
    (the profile surface has long flat ridges, so one local start can stop on a poor shoulder).

    ``times``: one cascade (source at 0, then its reshares, minutes) or a list of independent cascades
    sharing the parameters. No reshare observed: ``kappa = 0``, the kernel undefined (nan).
    """
    seqs = [s[s <= horizon] for s in _as_sequences(times)]
    pairs = [_Pairs.of(s, horizon) for s in seqs]
    n = sum(len(p.starts) for p in pairs)
    if n == 0:
        return PowerLawFit(0.0, math.nan, math.nan, 0, 0.0)
    bounds = [
        (math.log(PL_C_BOUNDS[0]), math.log(PL_C_BOUNDS[1])),
        (math.log(PL_THETA_BOUNDS[0]), math.log(PL_THETA_BOUNDS[1])),
    ]

    def neg(x: NDArray[np.float64]) -> float:
        return -_powerlaw_profile(pairs, math.exp(float(x[0])), math.exp(float(x[1])))[0]

    grid = [np.linspace(lo, hi, k) for (lo, hi), k in zip(bounds, _PL_GRID, strict=True)]
    start = min(((a, b) for a in grid[0] for b in grid[1]), key=lambda x: neg(np.array(x)))
    res = optimize.minimize(neg, np.array(start), method="L-BFGS-B", bounds=bounds)
    c, theta = math.exp(float(res.x[0])), math.exp(float(res.x[1]))
    ll, kappa = _powerlaw_profile(pairs, c, theta)
    return PowerLawFit(kappa, c, theta, n, ll)


def powerlaw_scale(
    delays: NDArray[np.float64], m: float, minutes: int, cap: int | None = None, dt: float = 0.5
) -> tuple[NDArray[np.float64], PowerLawFit]:
    """Power-law-kernel Hawkes forecast of the scale curve over minutes ``0 .. minutes-1`` from the first
    ``m`` minutes: :func:`fit_powerlaw_hawkes` on the prefix, then :func:`renewal_count` (the fitted
    ``kappa`` is the fixed-kernel MLE that :func:`kernel_scale` uses, so the curve is that function's with
    this kernel). Before ``m`` the observed curve; ``cap``: the tree's size, as for the other baselines."""
    d = np.sort(np.asarray(delays, float))
    obs = d[d <= m]
    fit = fit_powerlaw_hawkes(obs, m)
    T = np.arange(minutes, dtype=float)
    real = np.searchsorted(d, T, side="right").astype(float)
    more = renewal_count(fit.kappa, fit.kernel_cdf, obs, m, T, dt) if fit.n_events else np.full(minutes, len(obs))
    pred = np.where(T <= m, real, more)
    return (np.minimum(pred, float(cap)) if cap is not None else pred), fit


def simulate_powerlaw_hawkes(
    kappa: float,
    c: float,
    theta: float,
    horizon: float,
    rng: np.random.Generator,
    history: NDArray[np.float64] | None = None,
    m: float = 0.0,
) -> NDArray[np.float64]:
    """One cascade of the power-law model on ``[0, horizon]``, by its branching structure. For tests.

    Without ``history``: the source at 0, each event with ``Poisson(kappa)`` children after Lomax
    delays ``c (U^(-1/theta) - 1)``. With ``history`` (events seen by ``m``): the continuation given them --
    each seen event's children after ``m`` are ``Poisson(kappa (1 - F(m - t_j)))`` (a Poisson process's
    points after ``m`` do not depend on those before), with delays from the law truncated there.
    """
    hist = np.array([0.0]) if history is None else np.sort(np.asarray(history, float))
    s = np.maximum(m - hist, 0.0)
    k = rng.poisson(kappa * (c / (s + c)) ** theta)
    lag = np.repeat(s + c, k) * rng.random(int(k.sum())) ** (-1.0 / theta) - c
    frontier = np.repeat(hist, k) + lag
    frontier = frontier[frontier <= horizon]
    out = [hist, frontier]
    total = len(hist) + len(frontier)
    while len(frontier) and total < 10**6:
        k = rng.poisson(kappa, size=len(frontier))
        lag = c * (rng.random(int(k.sum())) ** (-1.0 / theta) - 1.0)
        frontier = np.repeat(frontier, k) + lag
        frontier = frontier[frontier <= horizon]
        out.append(frontier)
        total += len(frontier)
    return np.sort(np.concatenate(out))
