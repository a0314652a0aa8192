"""The Hawkes baseline of the prefix forecast: the fit recovers known parameters, the prediction is exact."""

from __future__ import annotations

import numpy as np
import pytest

from socium.core.rng import component_rng
from socium.errors import SociumError
from socium.experiments.propagation.forecast import hawkes as H


@pytest.mark.parametrize(("kappa", "beta"), [(0.7, 0.5), (0.9, 0.1)])
def test_fit_recovers_known_parameters(kappa: float, beta: float) -> None:
    rng = component_rng(0, 28, 1)
    seqs = [H.simulate_exp_hawkes(kappa, beta, 200.0, rng) for _ in range(300)]
    fit = H.fit_exp_hawkes(seqs, 200.0)
    assert fit.n_events > 300
    assert fit.kappa == pytest.approx(kappa, rel=0.1)
    assert fit.beta == pytest.approx(beta, rel=0.15)


def test_fit_is_the_likelihood_maximum() -> None:
    rng = component_rng(0, 28, 2)
    seqs = [H.simulate_exp_hawkes(0.8, 0.3, 100.0, rng) for _ in range(100)]
    fit = H.fit_exp_hawkes(seqs, 100.0)
    for b in (fit.beta * 0.8, fit.beta * 1.25):
        assert H.profile_loglik(seqs, 100.0, b)[0] < fit.loglik


def test_expected_count_matches_simulation() -> None:
    """From the source alone the expected count by T is the mean of simulated cascades (sub- and supercritical)."""
    rng = component_rng(0, 28, 3)
    at = np.array([5.0, 20.0, 60.0])
    for kappa, beta in ((0.8, 0.2), (1.2, 0.1)):
        sims = [H.simulate_exp_hawkes(kappa, beta, 60.0, rng) for _ in range(4000)]
        mc = np.array([[np.sum(s <= t) for t in at] for s in sims]).mean(0)
        exact = H.expected_count(H.HawkesFit(kappa, beta, 0, 0.0), np.array([0.0]), 0.0, at)
        assert exact == pytest.approx(mc, rel=0.06)


def test_hawkes_scale_keeps_the_prefix_and_caps() -> None:
    delays = np.array([0.0, 1.0, 1.5, 2.0, 3.0, 4.5, 6.0, 8.0, 9.5, 30.0, 80.0])
    curve, fit = H.hawkes_scale(delays, 10.0, 150, cap=len(delays))
    assert fit.n_events == 8 and fit.kappa > 0
    assert np.array_equal(curve[:11], np.searchsorted(delays, np.arange(11.0), side="right"))
    assert np.all(np.diff(curve) >= 0) and curve[-1] <= len(delays)
    quiet, fit0 = H.hawkes_scale(np.array([0.0, 50.0]), 10.0, 150)
    assert fit0.kappa == 0.0 and np.all(quiet == 1.0)


def test_sequence_without_source_refused() -> None:
    with pytest.raises(SociumError, match="t = 0"):
        H.fit_exp_hawkes(np.array([1.0, 2.0]), 10.0)


@pytest.mark.parametrize(("kappa", "beta"), [(0.8, 0.2), (0.5, 1.0)])
def test_kernel_scale_solves_the_renewal_equation(kappa: float, beta: float) -> None:
    """With an exponential kernel the grid solution equals the exact expected count (1% at dt = 0.5)."""
    obs = np.array([0.0, 1.0, 2.0, 4.0, 7.0, 9.5])
    curve, k = H.kernel_scale(obs, 10.0, 150, lambda x: -np.expm1(-beta * np.asarray(x)))
    assert k == pytest.approx(5 / np.sum(-np.expm1(-beta * (10.0 - obs))))
    exact = H.expected_count(H.HawkesFit(k, beta, 5, 0.0), obs, 10.0, np.arange(150.0))
    assert curve[11:] == pytest.approx(exact[11:], rel=0.01)
    assert np.array_equal(curve[:11], np.searchsorted(obs, np.arange(11.0), side="right"))


# --- power-law (Omori) kernel ---


@pytest.mark.parametrize(
    ("kappa", "c", "theta", "tol"), [(0.8, 0.5, 1.5, (0.15, 0.4, 0.3)), (0.9, 2.0, 0.8, (0.12, 0.5, 0.25))]
)
def test_powerlaw_fit_recovers_known_parameters(kappa: float, c: float, theta: float, tol: tuple[float, ...]) -> None:
    """300 simulated cascades observed for 500 (300) minutes. Tolerances are ~3.5 standard deviations of
    the estimates, measured over 12 seeds of this design: relative sd 0.048 / 0.105 / 0.072 for (kappa, c,
    theta) in the first case and 0.034 / 0.126 / 0.065 in the second (means within 1% of the truth)."""
    rng = component_rng(0, 28, 4)
    horizon = 500.0 if kappa < 0.85 else 300.0
    seqs = [H.simulate_powerlaw_hawkes(kappa, c, theta, horizon, rng) for _ in range(300)]
    fit = H.fit_powerlaw_hawkes(seqs, horizon)
    assert fit.n_events > 600
    assert fit.kappa == pytest.approx(kappa, rel=tol[0])
    assert fit.c == pytest.approx(c, rel=tol[1])
    assert fit.theta == pytest.approx(theta, rel=tol[2])


def test_powerlaw_fit_is_the_likelihood_maximum() -> None:
    rng = component_rng(0, 28, 6)
    seqs = [H.simulate_powerlaw_hawkes(0.85, 1.0, 1.0, 200.0, rng) for _ in range(100)]
    fit = H.fit_powerlaw_hawkes(seqs, 200.0)
    assert H.powerlaw_loglik(seqs, 200.0, fit.c, fit.theta) == pytest.approx((fit.loglik, fit.kappa))
    for c, theta in (
        (fit.c * 0.7, fit.theta),
        (fit.c * 1.4, fit.theta),
        (fit.c, fit.theta * 0.8),
        (fit.c, fit.theta * 1.25),
    ):
        assert H.powerlaw_loglik(seqs, 200.0, c, theta)[0] < fit.loglik


def test_powerlaw_loglik_matches_a_direct_sum() -> None:
    """The grouped log-sum-exp equals the likelihood written out event by event."""
    t = np.array([0.0, 0.3, 0.3, 1.2, 4.0, 7.5])
    c, theta, horizon = 0.7, 1.3, 10.0
    ll, kappa = H.powerlaw_loglik(t, horizon, c, theta)
    comp = np.sum(H.powerlaw_cdf(horizon - t, c, theta))
    assert kappa == pytest.approx(5 / comp)
    phi = lambda s: kappa * theta * c**theta / (s + c) ** (1 + theta)  # noqa: E731
    direct = sum(np.log(sum(phi(t[i] - t[j]) for j in range(i))) for i in range(1, len(t))) - kappa * comp
    assert ll == pytest.approx(direct, rel=1e-10)


@pytest.mark.parametrize(
    ("kappa", "c", "theta", "history", "m"),
    [
        (0.8, 1.0, 1.0, None, 0.0),
        (0.95, 0.3, 0.5, None, 0.0),
        (1.1, 2.0, 1.5, None, 0.0),
        (0.9, 0.5, 0.7, [0.0, 0.2, 0.5, 1.0, 2.0, 3.5, 6.0, 9.0], 10.0),
    ],
)
def test_powerlaw_expected_count_matches_simulation(
    kappa: float, c: float, theta: float, history: list[float] | None, m: float
) -> None:
    """The renewal-grid expected count equals the mean of 4,000 simulated cascades (from the source
    alone, sub- and supercritical, and continuing a seen prefix). Allowed gap: 4 Monte-Carlo standard
    errors plus 2.5% for the 0.5-minute grid (measured against dt = 0.05: at most 2%, supercritical at
    140 minutes; under 0.5% otherwise)."""
    rng = component_rng(0, 28, 5)
    at = np.array([15.0, 20.0, 60.0, 140.0])
    sims = [
        H.simulate_powerlaw_hawkes(kappa, c, theta, 140.0, rng, None if history is None else np.array(history), m)
        for _ in range(4000)
    ]
    counts = np.array([[np.sum(s <= t) for t in at] for s in sims], float)
    mc, se = counts.mean(0), counts.std(0, ddof=1) / np.sqrt(len(counts))
    obs = np.array([0.0] if history is None else history)
    grid = H.renewal_count(kappa, lambda x: H.powerlaw_cdf(x, c, theta), obs, m, at)
    assert np.all(np.abs(grid - mc) <= 4 * se + 0.025 * mc)


def test_powerlaw_scale_keeps_the_prefix_and_caps() -> None:
    delays = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.5, 6.0, 8.0, 9.5, 30.0, 80.0])
    curve, fit = H.powerlaw_scale(delays, 10.0, 150, cap=len(delays))
    assert fit.n_events == 9 and fit.kappa > 0
    assert H.PL_C_BOUNDS[0] <= fit.c <= H.PL_C_BOUNDS[1] and H.PL_THETA_BOUNDS[0] <= fit.theta <= H.PL_THETA_BOUNDS[1]
    assert np.array_equal(curve[:11], np.searchsorted(delays, np.arange(11.0), side="right"))
    assert np.all(np.diff(curve) >= 0) and curve[-1] <= len(delays)
    uncapped, _ = H.powerlaw_scale(delays, 10.0, 150)
    grid = H.renewal_count(fit.kappa, fit.kernel_cdf, delays[:10], 10.0, np.arange(11.0, 150.0))
    assert uncapped[11:] == pytest.approx(grid)
    quiet, fit0 = H.powerlaw_scale(np.array([0.0, 50.0]), 10.0, 150)
    assert fit0.kappa == 0.0 and np.isnan(fit0.c) and np.all(quiet == 1.0)
