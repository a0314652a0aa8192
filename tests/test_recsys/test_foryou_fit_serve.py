"""Fit-then-serve for foryou's value model (the study's ``foryou+fitted`` arm): the fit, given inline in
``recsys.params.value_model``, is a valid config and is what scores the served run's exposures; and
``fitting.calibration`` measures a model's probabilities against the actions taken."""

import duckdb
import numpy as np
import pytest

from conftest import small_config
from socium.recsys.foryou.fitting import calibration, fit_run, training_rows
from socium.recsys.foryou.params import ForYouParams
from socium.recsys.foryou.value_model import DEFAULT_COEF, FEATURES, HEADS, ValueModel, weighted_score
from socium.simulator.simulation import Simulation

FAV = HEADS.index("favorite")


def _served_rows(run):
    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    rows = con.execute(
        "SELECT e.features, e.value_score, p.kind = 'repost' FROM exposures e JOIN posts p USING (post_id) "
        "WHERE e.features IS NOT NULL ORDER BY e.step, e.agent_id, e.rank"
    ).fetchall()
    con.close()
    x = np.array([r[0] for r in rows], dtype=np.float64)
    return x, np.array([r[1] for r in rows]), np.array([r[2] for r in rows], dtype=bool)


def test_an_inline_fitted_model_is_a_valid_config_and_scores_the_served_run(tmp_path):
    first = {"kind": "foryou", "params": {"embedder": "hashing"}}
    Simulation(small_config(steps=4, policy={"p_like": 0.6}, recsys=first), tmp_path / "first").run()
    model = fit_run(tmp_path / "first")
    assert model.coef[FAV][0] > DEFAULT_COEF[FAV][0] + 1.0  # likes at 0.6 per shown post, far above the default
    served = {"kind": "foryou", "params": {"embedder": "hashing", "value_model": model.to_json()}}
    cfg = small_config(steps=3, policy={"p_like": 0.6}, recsys=served)
    assert cfg.config_hash() != small_config(steps=3, policy={"p_like": 0.6}, recsys=first).config_hash()
    Simulation(cfg, tmp_path / "served").run()

    x, value, repost = _served_rows(tmp_path / "served")
    assert len(x) > 50
    mutual = (x[:, FEATURES.index("mutual")] > 0) & ~repost
    fitted = weighted_score(model.probabilities(x), mutual, ForYouParams())
    default = weighted_score(ValueModel.load(None).probabilities(x), mutual, ForYouParams())
    np.testing.assert_allclose(value, fitted, rtol=1e-9)  # every shown post was scored by the fit ...
    assert np.abs(value - default).max() > 1e-3  # ... and not by the default model


def test_training_rows_label_each_head_with_the_actions_taken(tmp_path):
    cfg = small_config(
        steps=4, policy={"p_like": 0.6, "p_repost": 0.0}, recsys={"kind": "foryou", "params": {"embedder": "hashing"}}
    )
    Simulation(cfg, tmp_path / "r").run()
    x, y = training_rows(tmp_path / "r")
    assert x.shape == (len(y), len(FEATURES)) and y.shape[1] == len(HEADS)
    # each shown post is liked with p = 0.6 by these random agents: the labels must show that rate
    assert len(y) > 100 and abs(y[:, FAV].mean() - 0.6) < 4 * np.sqrt(0.24 / len(y))
    assert y[:, HEADS.index("retweet")].sum() == 0  # these agents never repost


def _flat(probs):
    """A model whose probability of head h is probs[h] on every row (bias only)."""
    coef = np.zeros((len(HEADS), len(FEATURES)))
    coef[:, 0] = np.log(np.asarray(probs) / (1 - np.asarray(probs)))
    return ValueModel(coef)


def test_calibration_brier_and_reliability_bins_on_hand_built_rows():
    x = np.zeros((10, len(FEATURES)))
    x[:, 0] = 1.0
    y = np.zeros((10, len(HEADS)))
    y[:2, FAV] = 1.0  # 2 likes in 10 rows
    right = calibration(_flat([0.2] * len(HEADS)), x, y)[FAV]
    assert (right.n, right.actions) == (10, 2)
    assert right.brier == pytest.approx(0.8 * 0.2**2 + 0.2 * 0.8**2)  # 0.16
    assert right.brier_base_rate == pytest.approx(0.16)
    (lo, hi, n, k, mean_p), *rest = right.bins
    assert (lo, hi, n, k) == (0.1, 0.3, 10, 2) and mean_p == pytest.approx(0.2) and not rest
    low = calibration(_flat([0.02] * len(HEADS)), x, y)[FAV]
    assert low.brier == pytest.approx(0.8 * 0.02**2 + 0.2 * 0.98**2) and low.brier > right.brier
    assert [b[:2] for b in low.bins] == [(0.01, 0.03)]
    quiet = calibration(_flat([0.2] * len(HEADS)), x, y)[HEADS.index("report")]
    assert quiet.actions == 0 and quiet.brier == pytest.approx(0.04) and quiet.brier_base_rate == 0.0
    with pytest.raises(ValueError):
        calibration(_flat([0.2] * len(HEADS)), x[:0], y[:0])
