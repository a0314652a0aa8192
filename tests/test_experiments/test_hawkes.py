"""The Hawkes baseline of the prefix forecast: the fit recovers known parameters, the prediction is exact."""

from __future__ import annotations

import numpy as np
import pytest

from socium.core.rng import component_rng
from socium.errors import SociumError
from socium.experiments.propagation import hawkes as H


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
