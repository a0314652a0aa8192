"""Polarisation: bimodality coefficient, population groups, and stance metrics read back from the trace."""

import csv

import numpy as np
import pytest

from socium.experiments.opinions.polarisation import (
    PolarisationSpec,
    _persona,
    bimodality_coefficient,
    polarisation_metrics,
    polarisation_population,
    run_polarisation,
)


def test_bimodality_coefficient_known_distributions():
    rng = np.random.default_rng(0)
    assert bimodality_coefficient(rng.normal(size=20000)) == pytest.approx(1 / 3, abs=0.02)
    assert bimodality_coefficient(rng.uniform(size=20000)) == pytest.approx(5 / 9, abs=0.02)
    two = np.r_[rng.normal(-1, 0.05, 5000), rng.normal(1, 0.05, 5000)]
    assert bimodality_coefficient(two) > 0.95
    assert np.isnan(bimodality_coefficient([1.0, 2.0, 3.0])) and np.isnan(bimodality_coefficient([0.5] * 10))


def test_persona_drops_the_description_and_repeats():
    d = "Tech news."
    assert _persona(d + "I avoid risk. I avoid risk. I avoid risk.", d) == "I avoid risk."


def test_core_population_groups(shared_data):
    spec = PolarisationSpec(n_agents=40, split_seed=3, stance0=0.5, stance_sd=0.1)
    rows = polarisation_population(spec)
    st = np.array([r.stance for r in rows])
    assert len(rows) == 40 and (st < 0).sum() == 20 and (st > 0).sum() == 20
    cons = [r for r in rows if r.stance < 0]
    assert all("not a risk-taker" in r.description for r in cons)
    assert all("open-minded" in r.description for r in rows if r.stance > 0)
    assert all(0 <= j < 40 and j != i for i, r in enumerate(rows) for j in r.following)
    # the subset's follows are exactly the original edges among the kept users
    with (shared_data / "oasis-reference/twitter_dataset/group_polarization/197_baoshou.csv").open() as fh:
        src = {r["user_id"]: r for r in csv.DictReader(fh)}
    assert sum(len(r.following) for r in rows) > 0 and all(r.user_id in src for r in rows)


def test_bounded_confidence_run_metrics(tmp_path):
    spec = PolarisationSpec(
        population="synthetic",
        n_agents=40,
        activation=1.0,
        survey_every=2,
        epsilon=2.0,
        mu=0.5,
        base={"seed": 1, "steps": 4, "policy": {"kind": "bounded_confidence", "epsilon": 2.0, "mu": 0.5}},
        run_null=False,
    )
    res = run_polarisation(spec, tmp_path / "exp")
    pts = res["runs"]["model"]["metrics"]["points"]
    assert [p["step"] for p in pts] == [-1, 1, 3] and all(p["answered"] == 40 for p in pts)
    assert pts[0]["groups"]["conservative"]["extremity"] == pytest.approx(0.4, abs=0.06)
    # a huge confidence bound lets everyone converge: variance and extremity fall, groups meet
    assert pts[-1]["variance"] < 0.25 * pts[0]["variance"]
    m = res["runs"]["model"]["metrics"]
    assert m["shift_from_assigned"]["conservative"] < -0.2  # design -> last answers
    # between the two surveys (answers with answers) the conservative camp still moves toward the middle
    cs = m["camp_shift"]["conservative"]
    assert cs["shift_ci"][0] > 0 and cs["n_first"] == cs["n_last"] == 20
    assert m["group_extremity_shift"]["conservative"] == pytest.approx(-cs["shift"])
    assert all(p["outcomes"] == {"ok": 40} for p in pts[1:])
    assert pts[0]["bimodality"] > 5 / 9 > pts[-1]["bimodality"] or pts[-1]["variance"] < 1e-3
    # survey values are the agents' stances as recorded
    m = polarisation_metrics(tmp_path / "exp" / "runs" / "model")
    assert m["points"][1]["values"] == pts[1]["values"]
