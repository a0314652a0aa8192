"""Seeded replicates of one experiment pool into a mean and a 95% t interval over seeds."""

import json
import math

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from conftest import herding_inputs
from socium.cli.main import app
from socium.errors import ConfigError
from socium.experiments.designs.seeds import markdown, pool_seeds
from socium.experiments.opinions.herding import HerdingSpec, run_herding
from socium.experiments.opinions.polarisation import PolarisationSpec, run_polarisation


def _t(vals):
    v = np.asarray(vals, float)
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return v.mean(), v.mean() - half, v.mean() + half


def _herding(tmp_path, seed, n_items=9, **kw):
    items, people = herding_inputs(tmp_path, n_items=12, n_people=12)
    spec = HerdingSpec(
        items=items,
        personas=people,
        n_items=n_items,
        item_seed=seed,
        activation=1.0,
        bootstrap=0,
        base={"seed": seed, "steps": 2, "policy": {"kind": "random", "p_like": 0.5, "p_dislike": 0.3}},
        **kw,
    )
    out = tmp_path / f"h{seed}-{n_items}"
    run_herding(spec, out)
    return out


def test_herding_seeds_pool_to_t_intervals_and_paired_contrasts(tmp_path):
    dirs = [_herding(tmp_path, s) for s in (1, 2, 3)]
    per = [json.loads((d / "results.json").read_text())["runs"] for d in dirs]
    pooled = pool_seeds(dirs)
    assert pooled["kind"] == "herding" and [s["base.seed"] for s in pooled["seeds"]] == [1, 2, 3]

    def lift(r, src):
        g = r[src]["metrics"]["groups"]
        return g["up"]["crowd_mean_score"] - g["control"]["crowd_mean_score"]

    model = [lift(r, "model") for r in per]
    null = [lift(r, "null") for r in per]
    got = pooled["metrics"]["model.up-control.crowd_mean_score"]
    assert got["n"] == 3 and got["values"] == pytest.approx(model)
    assert (got["mean"], got["lo"], got["hi"]) == pytest.approx(_t(model))
    # the contrast is the per-seed difference, not the difference of the two means' intervals
    pair = pooled["paired"]["model - null: up-control.crowd_mean_score"]
    d = [a - b for a, b in zip(model, null)]
    assert (pair["mean"], pair["lo"], pair["hi"]) == pytest.approx(_t(d))
    table = markdown(pooled, only=["up-control.crowd_mean_score"])
    assert table.count("\n") == 2 + 3  # header, rule, model, null, model - null
    assert f"{got['mean']:+.3f}" in table


def test_only_replicates_of_one_design_are_pooled(tmp_path):
    a, b = _herding(tmp_path, 1), _herding(tmp_path, 2, n_items=6)
    with pytest.raises(ConfigError, match="n_items"):
        pool_seeds([a, b])
    with pytest.raises(ConfigError, match="same seeds"):
        pool_seeds([a, a])
    with pytest.raises(ConfigError, match="at least 2"):
        pool_seeds([a])


def test_polarisation_camp_gap_and_cli(tmp_path):
    dirs = []
    for s in (5, 6, 7):
        spec = PolarisationSpec(
            population="synthetic",
            n_agents=30,
            split_seed=s,
            activation=1.0,
            survey_every=2,
            base={"seed": s, "steps": 3, "policy": {"kind": "bounded_confidence", "epsilon": 2.0, "mu": 0.5}},
        )
        run_polarisation(spec, tmp_path / f"p{s}")
        dirs.append(tmp_path / f"p{s}")
    pooled = pool_seeds(dirs)
    gaps = []
    for d in dirs:
        pts = json.loads((d / "results.json").read_text())["runs"]["model"]["metrics"]["points"]
        gap = [p["groups"]["progressive"]["mean"] - p["groups"]["conservative"]["mean"] for p in (pts[0], pts[-1])]
        gaps.append(gap[1] - gap[0])
    got = pooled["metrics"]["model.camp_gap_change"]
    assert got["values"] == pytest.approx(gaps) and got["mean"] == pytest.approx(np.mean(gaps))
    # epsilon 2, mu 0.5: everyone averages with everyone, so the camps converge in every seed
    assert got["hi"] < 0
    res = CliRunner().invoke(app, ["seeds", *map(str, dirs), "--only", "camp_gap", "--out", str(tmp_path / "p.json")])
    assert res.exit_code == 0, res.output
    assert "| model.camp_gap_change | 3 |" in res.output
    assert json.loads((tmp_path / "p.json").read_text())["metrics"]["model.camp_gap_change"]["n"] == 3
    bad = CliRunner().invoke(app, ["seeds", str(dirs[0]), str(dirs[0])])
    assert bad.exit_code == 2 and "same seeds" in bad.output
