"""The default world passes its own stylized facts (issue 28, build 5).

The quickstart at 10^4 agents failed structural virality, depth, breadth/size and activity heterogeneity
with IC p_repost 0.08 and the narrow per-agent activity factor; these tests hold the fixes: the
heavy-tailed activity option, and the quickstart scored by ``socium validate`` on two seeds.

Across seeds 0-9 (docs/validation.md, "4a. The default world") the facts that describe users, the graph
and cascades of every size pass on every seed; the facts computed on cascades >= 100 nodes (size KS,
virality, breadth/size) and the popularity tail fail on some, most of them with 3-16 such cascades. So
the shipped seed (42) is held to "no fact fails" and the seed with the fewest large cascades (7) to the
facts that pass on all ten seeds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from socium.agents.sources import synthetic_population
from socium.config.loading import load_config
from socium.experiments.validation import stylized as S
from socium.experiments.validation.validate import scorecard
from socium.simulator.simulation import Simulation

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"
N_AGENTS = 10_000
"""The issue's size: the quickstart runs it in ~5 s (24 steps), so the test checks the target itself."""
FIXED = (
    "structural virality, median of cascades >= 100",
    "cascade depth, median of cascades >= 100",
    "max breadth / size, median of cascades >= 100",
    "activity heterogeneity: share of actions by the top 10% of agents",
    "inter-event burstiness B (per-user gaps, pooled)",
)
EVERY_SEED = (
    "cascade size tail exponent (MLE)",
    "cascade depth, median of cascades >= 100",
    "inter-event burstiness B (per-user gaps, pooled)",
    "activity heterogeneity: share of actions by the top 10% of agents",
    "follower (in-degree) tail exponent (MLE)",
    "reciprocity of follows",
    "mean local clustering (undirected follow graph)",
)
"""Facts that passed on all of seeds 0-9 at 10^4 agents (docs/validation.md 4a): none rests on a
handful of large cascades, except depth, whose median of 3-35 cascades stayed in band on all ten."""


def _row_share(activity: np.ndarray) -> float:
    return S.top_share(np.asarray(activity, float).sum(1))


def _card(tmp_path: Path, seed: int) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    cfg = load_config(QUICKSTART, [f"population.n_agents={N_AGENTS}", f"seed={seed}"])
    Simulation(cfg, tmp_path / f"run-{seed}").run()
    card = scorecard(tmp_path / f"run-{seed}")
    return card, {f["name"]: f for f in card["facts"]}


def test_heavy_tailed_activity_keeps_the_mean_and_concentrates_activity() -> None:
    for mean, (lo, hi) in ((0.1, (0.52, 0.62)), (0.15, (0.45, 0.55))):
        heavy = synthetic_population(20000, 3, activity="heavy_tailed", mean_activity=mean).activity
        assert float(np.mean(heavy)) == pytest.approx(mean, rel=0.01)  # rescaled after the clip
        assert float(np.max(heavy)) <= 1.0
        assert lo < _row_share(heavy) < hi  # top 10% of agents: about half the activations
    narrow = synthetic_population(20000, 3, activity="diurnal", mean_activity=0.15).activity
    assert _row_share(narrow) < 0.3


def test_quickstart_passes_every_fact_on_its_seed(tmp_path: Path) -> None:
    """The quickstart itself at 10^4 agents, seed 42 as shipped: the facts it failed, and burstiness
    (which a first retuning lost), pass, and no applicable fact fails."""
    card, facts = _card(tmp_path, 42)
    for name in FIXED:
        assert facts[name]["status"] == "pass", (name, facts[name]["value"], facts[name]["n"])
    assert card["n_cascades_big"] >= 5
    failed = [(f["name"], f["value"]) for f in card["facts"] if f["status"] == "fail"]
    assert not failed, failed


def test_quickstart_keeps_the_seed_robust_facts_on_another_seed(tmp_path: Path) -> None:
    """Seed 7, the seed of 0-9 with the fewest cascades >= 100 (3): the facts that held on every seed
    still pass; none of them is a pass by default (each needs data: n > 0)."""
    _, facts = _card(tmp_path, 7)
    for name in EVERY_SEED:
        assert facts[name]["n"] > 0, name
        assert facts[name]["status"] == "pass", (name, facts[name]["value"], facts[name]["n"])
