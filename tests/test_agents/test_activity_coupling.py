"""population.activity_follower_corr: activity rows are handed out by follower count, never changed."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import rankdata

from socium.agents.activity_coupling import couple_activity
from socium.agents.sources import synthetic_population
from socium.config.loading import config_from_dict
from socium.core.rng import component_rng
from socium.errors import ConfigError
from socium.simulator.world import build_follows, build_population, couple_to_followers


def _normal_scores(x: np.ndarray) -> np.ndarray:
    return ndtri((rankdata(x) - 0.5) / len(x))


def _activity(n: int, seed: int = 3) -> np.ndarray:
    return synthetic_population(n, seed, activity="heavy_tailed", mean_activity=0.1).activity


@pytest.mark.parametrize("rho", [0.3, 0.7, -0.5])
def test_rows_are_permuted_and_correlation_is_rho(rho: float) -> None:
    n = 20_000
    act = _activity(n)
    followers = np.random.default_rng(1).lognormal(2.0, 1.5, n)  # continuous: no ties to blur the ranks
    out = couple_activity(act, followers, rho, component_rng(5, 4, 3))
    # the same rows, each intact, only reassigned
    assert np.array_equal(np.unique(out, axis=0), np.unique(act, axis=0))
    assert np.array_equal(np.sort(out.sum(1)), np.sort(act.sum(1)))
    assert not np.array_equal(out, act)
    # copula correlation: normal scores of total activity vs of followers (se ~ (1 - rho^2) / sqrt(n) < 0.01)
    r = np.corrcoef(_normal_scores(out.sum(1)), _normal_scores(followers))[0, 1]
    assert abs(r - rho) < 0.03, r


def test_zero_is_the_identity_and_bounds_are_checked() -> None:
    act = _activity(500)
    followers = np.arange(500)
    out = couple_activity(act, followers, 0.0, component_rng(5, 4, 3))
    assert np.array_equal(out, act)
    with pytest.raises(ConfigError, match="activity_follower_corr"):
        couple_activity(act, followers, 1.5, component_rng(5, 4, 3))
    with pytest.raises(ConfigError, match="same agents"):
        couple_activity(act, followers[:-1], 0.5, component_rng(5, 4, 3))


def test_one_puts_the_most_active_row_on_the_biggest_account() -> None:
    act = _activity(2_000)
    followers = np.random.default_rng(2).permutation(2_000)
    out = couple_activity(act, followers, 1.0, component_rng(5, 4, 3))
    totals_by_audience = out.sum(1)[np.argsort(followers)]
    assert np.all(np.diff(totals_by_audience) >= 0)  # totals rise with followers (clipped rows may tie)


def test_simulation_world_coupling_is_seeded_and_opt_in() -> None:
    sets = ["population.n_agents=3000", "population.activity=heavy_tailed"]
    base = config_from_dict({}, sets + ["graph.kind=twitter_like"])
    pop0, following = build_population(base)
    follows = build_follows(base, 3000, following)
    drawn = pop0.activity.copy()
    couple_to_followers(base, pop0, follows)  # default 0: untouched
    assert np.array_equal(pop0.activity, drawn)

    cfg = config_from_dict({}, sets + ["graph.kind=twitter_like", "population.activity_follower_corr=0.6"])
    runs = []
    for _ in range(2):
        pop, _ = build_population(cfg)
        couple_to_followers(cfg, pop, build_follows(cfg, 3000, following))
        runs.append(pop.activity)
    assert np.array_equal(runs[0], runs[1])  # a pure function of seed + config (what resume relies on)
    assert np.array_equal(np.sort(runs[0].sum(1)), np.sort(drawn.sum(1)))
    indeg = np.bincount(follows.edges()[1], minlength=3000)
    r_before = np.corrcoef(_normal_scores(drawn.sum(1)), _normal_scores(indeg))[0, 1]
    r_after = np.corrcoef(_normal_scores(runs[0].sum(1)), _normal_scores(indeg))[0, 1]
    assert abs(r_before) < 0.1 and r_after > 0.4, (r_before, r_after)


def test_config_key_range() -> None:
    with pytest.raises(ConfigError, match="activity_follower_corr"):
        config_from_dict({}, ["population.activity_follower_corr=1.2"])


def test_the_key_left_at_0_keeps_every_existing_config_hash():
    """A run written before the key existed must still resume: at 0 the key is not in the dumped config."""
    from pathlib import Path

    from socium.config.loading import load_config

    qs = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"
    plain = load_config(qs)
    # the hash is over this dump (config_hash), so at 0 it is the hash the config had before the key existed
    assert "activity_follower_corr" not in plain.model_dump(mode="json")["population"]
    coupled = load_config(qs, ["population.activity_follower_corr=0.2"])
    assert coupled.model_dump()["population"]["activity_follower_corr"] == 0.2
    assert coupled.config_hash() != plain.config_hash()
