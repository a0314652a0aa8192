"""The one interval policy (issue 29 item 6): the cited bad cases, and coverage on simulated data."""

import math

import numpy as np
import pytest

from socium.core.intervals import (
    MIN_N,
    interval_from_dict,
    mean_interval,
    nonnegative_interval,
    proportion_interval,
)
from socium.errors import UsageError


def test_n_two_gives_no_t_interval():
    # the case: 2 seeds made a t interval with 1 degree of freedom ("negative reach")
    r = mean_interval([3.0, 40.0])
    assert r.estimate == pytest.approx(21.5) and r.n == 2
    assert not r.has_bounds and r.low is None and r.high is None
    assert r.format(1) == "21.5 (n=2: n too small for an interval)"


def test_n_one_gives_no_zero_width_ci():
    r = mean_interval([0.99])
    assert r.format() == "0.99 (n=1: n too small for an interval)"
    assert "[" not in r.format() and "0.99, 0.99" not in r.format()
    # an old result file's zero-width n = 1 "CI" loses its bounds when read back
    old = interval_from_dict({"mean": 0.99, "lo": 0.99, "hi": 0.99, "n": 1})
    assert old is not None and not old.has_bounds


def test_t_interval_from_three_units_matches_scipy():
    from scipy import stats

    v = [0.1, 0.3, 0.5, 0.4, 0.2]
    r = mean_interval(v)
    lo, hi = stats.t.interval(0.95, len(v) - 1, loc=np.mean(v), scale=stats.sem(v))
    assert r.method == "t" and r.n == 5
    assert (r.low, r.high) == (pytest.approx(lo), pytest.approx(hi))
    assert r.format() == "0.30 [0.10, 0.50] (n=5, t)"
    assert mean_interval([1.0, 2.0, 3.0]).has_bounds  # MIN_N units are enough
    assert MIN_N == 3


def test_missing_units_are_not_counted():
    r = mean_interval([1.0, None, float("nan"), 2.0, 4.0])
    assert r.n == 3 and r.estimate == pytest.approx(7 / 3)
    assert mean_interval([None]).format() == "n/a (n=0: no values)"


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (0, 2), (2, 2), (1, 3), (0, 50), (50, 50), (3, 7)])
def test_probabilities_stay_inside_zero_one(k, n):
    # the case: a t interval on a share printed [-0.61, 1.63]
    r = proportion_interval(k, n)
    assert r.method == "wilson" and r.n == n
    assert 0.0 <= r.low <= r.estimate <= r.high <= 1.0
    assert r.high - r.low > 0  # even at k = 0 or k = n: no zero-width interval


def test_nrmse_lower_bound_is_never_negative():
    # the case: NRMSE [0.000, 1.277], a t interval clipped at 0
    v = [0.0, 0.02, 1.277, 0.05]
    assert mean_interval(v).low < 0  # what the t interval would have said
    r = nonnegative_interval(v)
    assert r.method == "bootstrap" and r.n == 4
    assert 0.0 <= r.low <= r.estimate <= r.high <= max(v)
    assert nonnegative_interval(v, seed=7) == nonnegative_interval(v, seed=7)  # reproducible
    assert not nonnegative_interval([0.4, 0.5]).has_bounds
    with pytest.raises(UsageError, match="negative"):
        nonnegative_interval([0.1, -0.2, 0.3])


def test_bad_arguments_name_what_is_wrong():
    with pytest.raises(UsageError, match="k=4, n=3"):
        proportion_interval(4, 3)
    with pytest.raises(UsageError, match="level"):
        mean_interval([1, 2, 3], level=1.5)
    with pytest.raises(UsageError, match="min_n=2"):
        mean_interval([1, 2, 3], min_n=2)


def test_wilson_coverage_on_simulated_draws():
    """95% Wilson covers the true p in 95% +- 2.5 points of 2,000 draws. Tolerance: Wilson's exact coverage
    oscillates with (n, p), 94.3% and 96.2% here at n = 40, and the simulated share has a binomial sd of
    0.5 points at 2,000 draws (3 sd = 1.5 points)."""
    rng = np.random.default_rng(20261205)
    for p in (0.1, 0.5):
        ks = rng.binomial(40, p, size=2000)
        ivs = {k: proportion_interval(k, 40) for k in range(41)}
        cover = np.mean([ivs[int(k)].low <= p <= ivs[int(k)].high for k in ks])
        assert abs(cover - 0.95) < 0.025, (p, cover)


def test_t_coverage_on_simulated_draws():
    """95% t at n = 5 on normal data covers the mean in 95% +- 1.5 points of 2,000 draws."""
    rng = np.random.default_rng(11)
    draws = rng.normal(2.0, 1.5, size=(2000, 5))
    cover = np.mean([(r := mean_interval(d)).low <= 2.0 <= r.high for d in draws])
    assert abs(cover - 0.95) < 0.015, cover


def test_bootstrap_coverage_on_skewed_nonnegative_data():
    """Percentile bootstrap of a mean under-covers skewed data at small n (about 90-91% at n = 20
    exponential, a known property; the interval is printed as 'bootstrap' so a reader can tell). Tolerance:
    88..96% of 1,000 draws (binomial sd of the share ~1 point). Its lower bound is never below 0."""
    rng = np.random.default_rng(5)
    draws = rng.exponential(0.3, size=(1000, 20))
    res = [nonnegative_interval(d, seed=i, n_boot=1000) for i, d in enumerate(draws)]
    cover = np.mean([r.low <= 0.3 <= r.high for r in res])
    assert 0.88 <= cover <= 0.96, cover
    assert min(r.low for r in res) >= 0.0 and not any(math.isnan(r.high) for r in res)


def test_seeds_table_prints_no_interval_below_three_seeds_and_bounded_shares():
    """`socium seeds` follows the policy: 2 seeds give an estimate and 'n too small'; a share pooled over
    3 seeds gets a bootstrap interval inside [0, 1] where a t interval would leave it."""
    from socium.experiments.designs.seeds import _nonnegative, _summary, markdown

    two = _summary([0.2, 0.9])
    share = _summary([0.0, 0.05, 0.9], nonnegative=_nonnegative("model.up.p_next_positive"))
    diff = _summary([-0.2, 0.1, 0.4], nonnegative=_nonnegative("model.up-control.p_next_positive"))
    assert two["lo"] is None and two["n"] == 2
    assert share["method"] == "bootstrap" and 0.0 <= share["lo"] <= share["hi"] <= 1.0
    assert mean_interval([0.0, 0.05, 0.9]).low < 0  # what a t interval would have printed
    assert diff["method"] == "t"  # a difference is signed: t
    table = markdown({"metrics": {"a": two, "model.up.p_next_positive": share}, "paired": {"d": diff}})
    assert "| a | 2 | +0.550 | none (n=2: n too small for an interval) |" in table
    assert "(bootstrap)" in table and "(t)" in table
