"""socium.experiments.designs.scale: its CIs take the seed, not the agent, as the independent unit."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import needs_data
from socium.errors import UsageError
from socium.experiments.designs import scale as study


def _clustered(rng: np.random.Generator, seeds: int, agents: int, between: float) -> list[np.ndarray]:
    """Per seed, agents sharing one seed-level shift (sd ``between``) plus their own noise (sd 1)."""
    return [rng.normal(rng.normal(0.0, between), 1.0, agents) for _ in range(seeds)]


def test_seed_ci_wider_than_agent_pooled_when_seeds_differ():
    rng = np.random.default_rng(3)
    data = _clustered(rng, seeds=5, agents=2000, between=0.5)
    _, a_lo, a_hi = study.agent_pooled_ci(data)
    s = study.seed_ci([float(d.mean()) for d in data])
    assert s["n"] == 5
    assert (s["hi"] - s["lo"]) > 5 * (a_hi - a_lo)


def test_seed_ci_has_nominal_coverage_where_agent_pooled_does_not():
    """Over repeated synthetic studies with true mean 0, the seed-level 95% interval covers 0 about 95%
    of the time; the agent-pooled one, which ignores the shared seed effect, far less often."""
    rng = np.random.default_rng(11)
    seed_cover = agent_cover = 0
    reps = 300
    for _ in range(reps):
        data = _clustered(rng, seeds=5, agents=500, between=0.3)
        _, a_lo, a_hi = study.agent_pooled_ci(data)
        s = study.seed_ci([float(d.mean()) for d in data])
        seed_cover += s["lo"] <= 0 <= s["hi"]
        agent_cover += a_lo <= 0 <= a_hi
    assert seed_cover / reps >= 0.90
    assert agent_cover / reps <= 0.50


def test_seed_ci_needs_three_seeds_and_conclusion_reads_it():
    one = study.seed_ci([0.4, 0.5])  # two seeds: no interval (the one interval policy)
    assert one["lo"] is None and study.conclusion(one) == "?"
    assert study.conclusion(study.seed_ci([1.0, 1.1, 0.9])) == "+"
    assert study.conclusion(study.seed_ci([-1.0, -1.1, -0.9])) == "-"
    assert study.conclusion(study.seed_ci([-1.0, 1.0, 0.1])) == "0"


def test_polarisation_effects_and_fake_backend_prediction():
    # two camps at -0.4 / +0.4 that each move 0.2 outwards
    a = np.array([[-0.4, -0.6], [-0.4, -0.6], [0.4, 0.6], [0.4, 0.6]])
    e = study.polarisation_effects(a)
    assert e["pol_abs"] == pytest.approx(0.2)
    assert e["pol_gap"] == pytest.approx(0.4)
    assert e["pol_abs_fake"] == pytest.approx(0.1)  # E|U(-1, 1)| = 0.5 minus the start's 0.4
    assert e["pol_gap_fake"] == pytest.approx(-0.8)


def test_herding_effects_share_is_scale_free():
    # columns: crowd score, positive crowd votes, all crowd votes, first crowd vote
    small = {
        "up": np.array([[2.0, 3, 4, 1], [2.0, 3, 4, 1]]),
        "control": np.array([[0.0, 2, 4, 1], [0.0, 2, 4, -1]]),
        "down": np.array([[0.0, 2, 4, -1], [0.0, 0, 0, 0]]),  # the second down item got no crowd vote
    }
    big = {k: v * np.array([100, 100, 100, 1]) for k, v in small.items()}
    es, eb = study.herding_effects(small), study.herding_effects(big)
    assert es["herd_up"] == pytest.approx(2.0) and eb["herd_up"] == pytest.approx(200.0)
    assert es["herd_up_share"] == pytest.approx(0.25) == eb["herd_up_share"]
    assert es["herd_first_up"] == pytest.approx(0.5) == eb["herd_first_up"]
    assert es["herd_first_down"] == pytest.approx(-0.5)  # unvoted items are left out, not counted as negative


def test_parse_seeds():
    assert study.parse_seeds(["3"], [100, 1000]) == {100: 3, 1000: 3}
    assert study.parse_seeds(["100:20", "1000:10"], [100, 1000]) == {100: 20, 1000: 10}
    with pytest.raises(UsageError, match="no count for sizes \\[1000\\]"):
        study.parse_seeds(["100:20"], [100, 1000])


@needs_data("oasis-reference/reddit/counterfactual_36.json")
def test_run_cell_end_to_end_small(tmp_path):
    row = study.run_cell(40, "rule", seeds=3, steps=3, out=tmp_path)  # 3: the fewest seeds with an interval
    assert row["seeds"] == 3 and len(row["per_seed"]) == 3
    assert row["pol_agents"]["mean"] == 40
    for k in study.OUTCOMES:
        assert row[k]["n"] == 3 and row[k]["lo"] is not None


@needs_data("oasis-reference/reddit/counterfactual_36.json")
def test_positive_control_shows_herding_the_null_does_not(tmp_path):
    """The design must find herding where the policy has it: 6 seeds of 100 agents; down-treated items
    (score -1) draw fewer likes from the positive control, so their crowd score falls behind control's."""
    herd = study.run_cell(100, "rule-herd", seeds=6, steps=4, out=tmp_path)
    null = study.run_cell(100, "rule", seeds=6, steps=4, out=tmp_path)
    assert herd["herd_down"]["hi"] < 0
    assert null["herd_down"]["lo"] <= 0 <= null["herd_down"]["hi"]
    assert herd["pol_abs"]["n"] == 0  # the positive control runs herding only


def test_table_marks_missing_seed_values(capsys):
    ci = study.seed_ci([0.1, 0.2, float("nan")])
    assert ci["n"] == 2
    assert "n=2" in study.fmt_ci(ci, 2, 3)
    assert study.fmt_ci(study.seed_ci([]), 2, 3) == "n/a"
