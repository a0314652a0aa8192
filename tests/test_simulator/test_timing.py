"""Exposure-driven timing layer, its fit to retweet trees, and cross-validated propagation scoring."""

from __future__ import annotations

import json
import math

import duckdb
import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.errors import ConfigError
from socium.experiments.propagation.data.folds import fold_split, train_and_held
from socium.experiments.propagation.data.realcascades import parse_tree
from socium.experiments.propagation.data.training import load_training_trees
from socium.experiments.propagation.fit.fit import (
    EdgeData,
    cascade_sigma,
    fit_family,
    fit_timing,
    root_effects,
    user_sigma,
)
from socium.experiments.propagation.spec import PropagationSpec
from socium.experiments.propagation.study import run_propagation
from socium.experiments.report import write_report
from socium.reporting.page import fmt
from socium.simulator.simulation import Simulation
from socium.simulator.timing import DelayDistribution, TimingParams

LOGNORMAL_10MIN = {"delay": {"family": "lognormal", "mu": math.log(10.0), "sigma": 0.05}}


def _star_config(timing=None, **over):
    """Agent 0 is followed by everyone; it posts at step 0; reshares are certain (IC p = 1)."""
    following = {"kind": "random_out", "params": {"k": 1}}
    cfg = dict(
        steps=30,
        step_minutes=1.0,
        population={"n_agents": 40, "mean_activity": 0.01, "activity": "uniform"},
        graph=following,
        policy={"kind": "independent_cascade", "p_repost": 1.0, "p_post": 0.0},
        recsys={"kind": "chronological", "k": 5, "window_steps": 100},
    )
    if timing is not None:
        cfg["timing"] = timing
    cfg.update(over)
    return small_config(**cfg)


def _star_edges(tmp_path, n=40):
    p = tmp_path / "star.txt"
    p.write_text("".join(f"{i} 0\n" for i in range(1, n)))
    return {"kind": "edgelist", "path": str(p), "directed": True}


def _reshare_steps(run_dir):
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT step FROM posts WHERE kind = 'repost' ORDER BY step").fetchall()]
    finally:
        con.close()


def test_exposure_timing_wakes_followers_after_the_fitted_delay(tmp_path):
    graph = _star_edges(tmp_path)
    timed = _star_config({"kind": "exposure", "params": LOGNORMAL_10MIN, "background": False}, graph=graph)
    Simulation(timed, tmp_path / "timed").run()
    steps = _reshare_steps(tmp_path / "timed")
    # 39 followers, each reacts once, about 10 minutes (sd 5%) after the post at step 0.
    assert len(steps) == 39 and set(steps) <= {9, 10, 11, 12}
    # The old clock (flat activation 0.01 per step) reshares at random steps, mostly not at all.
    flat = _star_config(graph=graph)
    Simulation(flat, tmp_path / "flat").run()
    assert len(_reshare_steps(tmp_path / "flat")) < 20


def test_influence_slope_and_user_factor_shift_delays(tmp_path):
    graph = _star_edges(tmp_path)
    slow = {
        "delay": LOGNORMAL_10MIN["delay"],
        "b_author": math.log(2) / math.log1p(39),
    }  # doubles delay at 39 followers
    Simulation(
        _star_config({"kind": "exposure", "params": slow, "background": False}, graph=graph, steps=40),
        tmp_path / "slow",
    ).run()
    assert set(_reshare_steps(tmp_path / "slow")) <= set(range(18, 24))  # 20 minutes +- 10%
    spread = {"delay": {"family": "lognormal", "mu": math.log(10.0), "sigma": 1.0}, "user_sigma": 0.9}
    Simulation(
        _star_config(
            {"kind": "exposure", "params": spread, "background": False},
            graph=graph,
            steps=200,
            recsys={"kind": "chronological", "k": 5, "window_steps": 300},
        ),
        tmp_path / "spread",
    ).run()
    assert len(set(_reshare_steps(tmp_path / "spread"))) > 10  # heavy-tailed: reactions spread over many minutes


def test_exposure_timing_resume_equals_uninterrupted_run(tmp_path):
    graph = {"kind": "barabasi_albert", "params": {"m": 2}}
    timing = {
        "kind": "exposure",
        "params": {
            "delay": {"family": "lognormal_mixture", "weights": [0.6, 0.4], "mus": [0.5, 2.5], "sigmas": [0.8, 1.2]},
            "user_sigma": 0.5,
        },
    }
    cfg = _star_config(
        timing,
        graph=graph,
        population={"n_agents": 150, "mean_activity": 0.05, "activity": "uniform"},
        policy={"kind": "independent_cascade", "p_repost": 0.5, "p_post": 0.1},
        steps=24,
    )
    Simulation(cfg, tmp_path / "full").run()
    Simulation(cfg, tmp_path / "cut").run(steps=11)
    Simulation(cfg, tmp_path / "cut", resume=True).run()
    q = "SELECT step, author, kind, parent_id FROM posts ORDER BY post_id"
    rows = []
    for d in ("full", "cut"):
        con = duckdb.connect(str(tmp_path / d / "trace.duckdb"), read_only=True)
        rows.append(con.execute(q).fetchall())
        con.close()
    assert rows[0] == rows[1] and sum(r[2] == "repost" for r in rows[0]) > 5


def test_exposure_timing_needs_parameters():
    with pytest.raises(ConfigError, match="timing"):
        _star_config({"kind": "exposure"})
    with pytest.raises(ConfigError, match="weights"):
        TimingParams.from_dict(
            {"delay": {"family": "lognormal_mixture", "weights": [0.5, 0.6], "mus": [0, 1], "sigmas": [1, 1]}}
        )
    with pytest.raises(ConfigError, match="family"):
        TimingParams.from_dict({"delay": {"family": "gamma", "k": 1}})


def _synthetic_edges(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    xa = np.log1p(rng.integers(0, 200, n)).astype(float)
    xr = np.log1p(rng.integers(50, 500, n)).astype(float)
    comp = rng.random(n) < 0.3
    logd = np.where(comp, -1.0 + 0.5 * rng.standard_normal(n), 2.0 + 0.8 * rng.standard_normal(n)) + 0.2 * xa + 0.4 * xr
    return EdgeData(np.exp(logd), xa, xr, rng.integers(0, 100, n), [str(u) for u in rng.integers(0, 5000, n)])


def test_mixture_mle_recovers_known_parameters():
    fit = fit_family("lognormal_mixture", _synthetic_edges())
    p = fit.params.delay.params
    assert p["weights"][0] == pytest.approx(0.3, abs=0.03)
    assert p["mus"] == pytest.approx([-1.0, 2.0], abs=0.15) and p["sigmas"] == pytest.approx([0.5, 0.8], abs=0.08)
    assert fit.params.b_author == pytest.approx(0.2, abs=0.03) and fit.params.b_root == pytest.approx(0.4, abs=0.06)
    single = fit_family("lognormal", _synthetic_edges())
    assert fit.aic < single.aic  # the mixture is the better description, and AIC says so


def test_weibull_and_lomax_mle_recover_known_parameters():
    rng = np.random.default_rng(1)
    n = 20000
    z = np.zeros(n)
    for family, draw, key, true in (
        ("weibull", rng.weibull(0.6, n) * 30, "shape", 0.6),
        ("lomax", (rng.pareto(1.5, n)) * 20, "alpha", 1.5),
    ):
        e = EdgeData(np.maximum(draw, 1e-3), z, z, np.zeros(n, np.int64), ["u"] * n)
        fit = fit_family(family, e, covariates=False)
        assert fit.params.delay.params[key] == pytest.approx(true, rel=0.05)


def test_quantiles_and_density_agree():
    d = DelayDistribution("lognormal_mixture", {"weights": [0.3, 0.7], "mus": [0.0, 3.0], "sigmas": [0.5, 1.0]})
    rng = np.random.default_rng(0)
    x = np.exp(d.log_quantile(rng.random(200000), rng.random(200000)))
    assert np.mean(x <= 10.0) == pytest.approx(float(d.cdf(np.array([10.0]))[0]), abs=0.005)
    grid = np.exp(np.linspace(-5, 10, 20001))
    assert np.trapezoid(np.exp(d.logpdf(grid)), grid) == pytest.approx(1.0, abs=1e-3)


def _write_trees(folder, n_trees=8, seed=0, stretch=None, authors=None):
    """Random retweet trees in the Ma et al. format with log-normal delays (about 20 users each).

    ``stretch`` maps a tree index to a factor on all its delays (same structure, slower cascade);
    ``authors`` maps a tree index to its source account's id (default: its own ``u{t}_0``).
    """
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for t in range(n_trees):
        lines = [f"['ROOT', 'ROOT', '0.0']->['u{t}_0', '{t}', '0.0']"]
        times = [0.0]
        f = (stretch or {}).get(t, 1.0)
        for i in range(1, 15 + t):
            p = int(rng.integers(0, i)) if rng.random() < 0.3 else 0
            times.append(times[p] + f * float(np.exp(rng.normal(2.0, 1.0))))
            lines.append(f"['u{t}_{p}', '{t}', '{times[p]:.2f}']->['u{t}_{i}', '{t}', '{times[i]:.2f}']")
        if authors and t in authors:
            lines = [ln.replace(f"'u{t}_0'", f"'{authors[t]}'") for ln in lines]
        (folder / f"{1000 + t}.txt").write_text("\n".join(lines) + "\n")
    return sorted(folder.glob("*.txt"))


def test_fit_cli_writes_a_parameter_file_runs_can_load(tmp_path):
    _write_trees(tmp_path / "trees")
    out = tmp_path / "timing.json"
    res = CliRunner().invoke(
        app, ["fit", "propagation", "--train", str(tmp_path / "trees"), "--out", str(out), "--bootstrap", "20"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    tp = TimingParams.load(out)
    assert data["timing"]["meta"]["n_cascades"] == 8 and tp.delay.family in (
        "lognormal",
        "lognormal_mixture",
        "weibull",
        "lomax",
    )
    for key in ("delay_q50_min", "b_author", "cascade_sigma"):  # every reported parameter carries its CI
        lo, hi = data["ci95"][key]
        assert lo <= data["estimates"][key] <= hi
    assert 3.0 < data["estimates"]["delay_q50_min"] < 15.0  # the trees were drawn with median e^2 = 7.4 minutes
    bad = CliRunner().invoke(app, ["fit", "propagation", "--train", str(tmp_path / "nope"), "--out", str(out)])
    assert bad.exit_code == 2 and "nope" in bad.output


def test_fold_split_partitions_ids():
    ids = [str(i) for i in range(23)]
    folds = fold_split(ids, 5, 3)
    assert sorted(sum(folds, [])) == sorted(ids) and all(4 <= len(f) <= 5 for f in folds)
    assert folds == fold_split(ids, 5, 3) != fold_split(ids, 5, 4)
    with pytest.raises(ConfigError, match="folds"):
        fold_split(ids[:3], 5, 0)
    pairs = train_and_held(ids, 5, 3)
    assert [h for _, h in pairs] == folds
    for train, held in pairs:  # train is every other fold, in the ids' order, and never meets held
        assert not set(train) & set(held) and sorted(train + held) == sorted(ids)
        assert train == [c for c in ids if c not in held]


def test_cv_scores_only_held_out_cascades(tmp_path):
    files = _write_trees(tmp_path / "trees", n_trees=6)
    spec = PropagationSpec(
        tree_files=[str(f) for f in files],
        minutes=60,
        follows="tree",
        activation=0.5,
        topics_csv=str(tmp_path / "none.csv"),
        bootstrap=200,
        cv={"folds": 3, "seed": 0, "families": ["lognormal"], "runs": 2, "fit_bootstrap": 10},
        base={"seed": 0, "step_minutes": 5},
    )
    res = run_propagation(spec, tmp_path / "out")
    assert res["mode"] == "cv" and len(res["cascades"]) == 6
    for fold in res["folds"]:
        assert not set(fold["train"]) & set(fold["held_out"]) and len(fold["train"]) == 4
        for cid in fold["held_out"]:
            assert next(c for c in res["cascades"] if c["id"] == cid)["fold"] == fold["fold"]
    for model in ("ic_pooled", "calibrated"):
        s = res["summary"][model]
        assert s["n"] == 6 and set(s["nrmse"]) == {"scale", "depth", "max_breadth"}
        lo, hi = s["ci95"]["scale"]
        assert lo <= s["nrmse"]["scale"] <= hi
    # the calibrated model ran on 1-minute steps with exposure timing, the baseline on the 5-minute clock
    held = res["folds"][0]["held_out"][0]
    run = tmp_path / "out" / "cv" / "fold0" / "calibrated" / held
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["timing"]["kind"] == "exposure" and cfg["step_minutes"] == 1.0
    # two replicas in one run: two disjoint copies of the tree's users, each copy's root posts the source
    n = next(c for c in res["cascades"] if c["id"] == held)["agents"]
    assert [p["author"] for p in cfg["seed_posts"]] == [0, n]
    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    cross = con.execute("SELECT count(*) FROM follows WHERE (src < ?) != (dst < ?)", [n, n]).fetchone()[0]
    roots = con.execute("SELECT root_id, count(*) FROM posts GROUP BY root_id ORDER BY root_id").fetchall()
    con.close()
    assert cross == 0 and [r[0] for r in roots] == [0, 1] and all(r[1] > 1 for r in roots)
    assert (tmp_path / "out" / "cv" / "fold0" / "timing.json").is_file()
    rep = write_report(tmp_path / "out")
    html = rep.html.read_text()
    assert "held-out" in html and (rep.out_dir / "nrmse.png").is_file()
    lo, hi = res["folds"][0]["ci95"]["cascade_sigma"]  # per-fold fits carry bootstrap CIs into the report
    assert "cascade sd" in html and f"[{fmt(lo)}, {fmt(hi)}]" in html


def test_training_trees_from_files_and_folders(tmp_path):
    files = _write_trees(tmp_path / "t", n_trees=3)
    assert len(load_training_trees([str(tmp_path / "t")])) == 3
    assert list(load_training_trees([str(files[0])])) == [files[0].stem]
    with pytest.raises(ConfigError):
        load_training_trees([str(tmp_path / "missing")])
    tree = parse_tree(files[0])
    res = fit_timing([tree, parse_tree(files[1])], families=["lognormal"], bootstrap=0)
    assert res["timing"]["delay"]["family"] == "lognormal" and res["ci95"] == {}


def _cascade_edges(n_casc, per, casc_sd, seed=0):
    """Log-normal delays (median e^2 min, sd 1.2) with a whole-cascade shift of sd ``casc_sd``; users unique."""
    rng = np.random.default_rng(seed)
    casc = np.repeat(np.arange(n_casc), per)
    logd = 2.0 + casc_sd * rng.standard_normal(n_casc)[casc] + 1.2 * rng.standard_normal(len(casc))
    z = np.zeros(len(casc))
    return EdgeData(np.exp(logd), z, z, casc.astype(np.int64), [f"u{i}" for i in range(len(casc))])


def test_cascade_sigma_recovers_the_between_cascade_spread():
    for true in (0.0, 0.6):
        e = _cascade_edges(200, 150, true)
        fit = fit_family("lognormal", e, covariates=False)
        sd, k = cascade_sigma(e, fit)
        assert k == 200 and sd == pytest.approx(true, abs=0.08)
        assert user_sigma(e, fit) == (0.0, 0)  # no user is seen twice: no user effect to estimate


def test_fit_bootstrap_cis_cover_and_narrow_with_more_cascades(tmp_path):
    """Percentile bootstrap over cascades: CIs bracket the point fit and shrink as trees are added."""
    widths = []
    for n_trees in (6, 30):
        files = _write_trees(tmp_path / f"t{n_trees}", n_trees=n_trees, seed=n_trees)
        res = fit_timing([parse_tree(f) for f in files], families=["lognormal"], bootstrap=60, seed=1)
        ci, est = res["ci95"], res["estimates"]
        assert set(ci) == set(est)
        for key, (lo, hi) in ci.items():
            assert lo - 1e-9 <= est[key] <= hi + 1e-9, key
        assert math.log(ci["delay_q50_min"][0]) < 2.0 + 0.7 and math.log(ci["delay_q50_min"][1]) > 2.0 - 0.7
        widths.append(ci["delay_q50_min"][1] - ci["delay_q50_min"][0])
        assert res["timing"]["meta"]["bootstrap"] == 60
    assert widths[1] < widths[0]


def test_cv_fold_fit_never_sees_its_held_out_cascades(tmp_path):
    """Slowing the held-out cascades of fold 0 ten-fold leaves fold 0's fit unchanged (and moves fold 1's)."""
    spec_kw = dict(
        minutes=60,
        follows="tree",
        topics_csv=str(tmp_path / "none.csv"),
        bootstrap=0,
        cv={"folds": 3, "seed": 0, "families": ["lognormal"], "models": []},
        base={"seed": 0, "step_minutes": 5},
    )
    files = _write_trees(tmp_path / "a", n_trees=6)
    res = run_propagation(PropagationSpec(tree_files=[str(f) for f in files], **spec_kw), tmp_path / "out_a")
    held = res["folds"][0]["held_out"]
    slow = {int(c) - 1000: 10.0 for c in held}
    files_b = _write_trees(tmp_path / "b", n_trees=6, stretch=slow)
    res_b = run_propagation(PropagationSpec(tree_files=[str(f) for f in files_b], **spec_kw), tmp_path / "out_b")
    assert res_b["folds"][0]["held_out"] == held
    assert res_b["folds"][0]["estimates"] == res["folds"][0]["estimates"]
    assert res_b["folds"][1]["estimates"]["delay_q50_min"] > res["folds"][1]["estimates"]["delay_q50_min"] * 1.2


def _author_edges(n_authors, per_author, author_sd, seed=0, within=0.3, edges=80):
    """Cascades whose mean log delay is 2 + g_author + e_cascade; returns the edges and the true g."""
    rng = np.random.default_rng(seed)
    g = author_sd * rng.standard_normal(n_authors)
    n_casc = n_authors * per_author
    author = np.repeat(np.arange(n_authors), per_author)
    shift = g[author] + within * rng.standard_normal(n_casc)
    casc = np.repeat(np.arange(n_casc), edges)
    logd = 2.0 + shift[casc] + 1.0 * rng.standard_normal(len(casc))
    z = np.zeros(len(casc))
    users = [f"u{i}" for i in range(len(casc))]
    return EdgeData(np.exp(logd), z, z, casc.astype(np.int64), users, [f"a{a}" for a in author]), g


def test_root_effects_recover_author_speeds_and_shrink_the_rarely_seen():
    e, g = _author_edges(60, 4, 0.8)
    fit = fit_family("lognormal", e, covariates=False)
    re = root_effects(e, fit)
    assert re.n_authors == 60 and re.sigma == pytest.approx(0.8, abs=0.2)
    assert re.within == pytest.approx(math.sqrt(0.3**2 + 1.0 / 80), abs=0.08)
    est = np.array([re.effects[f"a{a}"] for a in range(60)])
    assert np.corrcoef(est, g)[0, 1] > 0.95
    assert np.abs(est).mean() < np.abs(g - g.mean()).mean() * 1.05  # BLUPs are shrunk, never inflated
    # No author effect at all: sigma ~ 0 and every prediction stays near the pooled law.
    e0, _ = _author_edges(60, 4, 0.0)
    re0 = root_effects(e0, fit_family("lognormal", e0, covariates=False))
    assert re0.sigma < 0.15 and max(abs(v) for v in re0.effects.values()) < 0.15


def test_fit_writes_root_effects_that_specs_load(tmp_path):
    # 4 accounts with 3 cascades each; account A's cascades run 20 times slower.
    authors = {t: "ABCD"[t % 4] for t in range(12)}
    files = _write_trees(tmp_path / "t", n_trees=12, stretch={0: 20.0, 4: 20.0, 8: 20.0}, authors=authors)
    res = fit_timing([parse_tree(f) for f in files], families=["lognormal"], bootstrap=20)
    tp = TimingParams.from_dict(json.loads(json.dumps(res["timing"])))
    assert set(tp.root_effects) == set("ABCD")  # every training source account
    assert tp.root_effects["A"] > 1.0 and max(tp.root_effects[a] for a in "BCD") < 0
    assert "root_sigma" in res["ci95"] and res["estimates"]["root_sigma"] > 0
    shift = tp.root_shift(["A", "A#3", "stranger", None], 4)
    assert shift[0] == shift[1] == tp.root_effects["A"] and shift[2] == shift[3] == 0.0
    with pytest.raises(ConfigError, match="root_effects"):
        TimingParams.from_dict({**res["timing"], "root_effects": {"x": float("nan")}})
    off = fit_timing([parse_tree(f) for f in files], families=["lognormal"], bootstrap=0, with_root_effects=False)
    assert "root_effects" not in off["timing"] and "root_sigma" not in off["estimates"]


def test_root_effect_slows_the_simulated_cascade_of_that_author(tmp_path):
    """A star of 30 followers around source account 'acct': its fitted effect log(3) triples the delays."""
    from socium.config.loading import config_from_dict
    from socium.experiments.spec import PersonRow, write_population_csv

    rows = [
        PersonRow("acct" if i == 0 else f"f{i}", f"n{i}", f"u{i}", "bio", [] if i == 0 else [0], [0.01] * 24)
        for i in range(31)
    ]
    csv_path = write_population_csv(tmp_path / "pop.csv", rows)
    steps = {}
    for name, effects in (("pooled", {}), ("slow", {"acct": math.log(3.0)})):
        cfg = config_from_dict(
            {
                "name": name,
                "seed": 1,
                "steps": 45,
                "step_minutes": 1.0,
                "population": {"source": "oasis_csv", "path": str(csv_path)},
                "graph": {"kind": "profiles"},
                "policy": {"kind": "independent_cascade", "p_repost": 1.0, "p_post": 0.0},
                "recsys": {"kind": "chronological", "k": 5, "window_steps": 100},
                "timing": {
                    "kind": "exposure",
                    "params": {**LOGNORMAL_10MIN, "root_effects": effects},
                    "background": False,
                },
                "seed_posts": [{"author": 0, "content": "source"}],
            }
        )
        Simulation(cfg, tmp_path / name).run()
        steps[name] = _reshare_steps(tmp_path / name)
    assert len(steps["pooled"]) == len(steps["slow"]) == 30
    assert set(steps["pooled"]) <= {9, 10, 11, 12} and set(steps["slow"]) <= set(range(27, 36))
