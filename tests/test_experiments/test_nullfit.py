"""Null-model fitting recovers known rates from a rule-based run's trace (and can tell them apart)."""

import numpy as np
import pytest

from conftest import small_config
from socium.experiments.nullfit import fit_independent_cascade, fit_random_voting
from socium.simulator.simulation import Simulation


@pytest.mark.parametrize("p", [0.08, 0.3])
def test_independent_cascade_probability_is_recovered(tmp_path, p):
    cfg = small_config(
        seed=3,
        steps=8,
        population={"n_agents": 400, "activity": "uniform", "mean_activity": 0.5},
        graph={"kind": "barabasi_albert", "params": {"m": 4}},
        policy={"kind": "independent_cascade", "p_repost": p, "p_post": 0.02},
        seed_posts=[{"author": a, "content": f"rumour {a}"} for a in (0, 1, 2, 5, 9)],
    )
    Simulation(cfg, tmp_path / "r").run()
    fit = fit_independent_cascade(tmp_path / "r")
    assert fit.trials > 300 and fit.adoptions > 20
    assert abs(fit.p - p) < 4 * fit.se, (fit, p)
    only = fit_independent_cascade(tmp_path / "r", roots=[0])
    assert 0 < only.trials < fit.trials and abs(only.p - p) < 5 * only.se + 0.02


def test_random_voting_rates_are_recovered(tmp_path):
    items = 30
    cfg = small_config(
        seed=5,
        steps=6,
        platform={"preset": "reddit"},
        population={"n_agents": 300, "activity": "uniform", "mean_activity": 0.6},
        graph={"kind": "empty", "params": {}},
        recsys={"kind": "random", "k": 5},
        policy={"kind": "random", "p_post": 0.0, "p_repost": 0.0, "p_like": 0.2, "p_dislike": 0.25},
        seed_posts=[{"author": 0, "content": f"item {i}"} for i in range(items)],
    )
    Simulation(cfg, tmp_path / "r").run()
    fit = fit_random_voting(tmp_path / "r", range(items))
    se_l = np.sqrt(0.2 * 0.8 / fit.trials)
    assert abs(fit.p_like - 0.2) < 4 * se_l, fit
    assert abs(fit.p_dislike - 0.25) < 4 * np.sqrt(0.25 * 0.75 / (fit.trials * 0.8)), fit
