"""The intervention experiment family: same world and seeds per condition, metrics, CIs, null, report;
content drift by depth and veracity."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from conftest import needs_data
from socium.config.loading import config_from_dict
from socium.core.actions import CreateComment, QuotePost
from socium.core.intervals import nonnegative_interval
from socium.experiments.intervention.drift import drift
from socium.experiments.intervention.study import (
    InterventionSpec,
    condition_config,
    run_intervention,
    run_metrics,
    t_ci,
)
from socium.experiments.report import write_report
from socium.recsys.embeddings import HashingEmbedder
from socium.simulator.simulation import Simulation

ROOT = Path(__file__).resolve().parents[2]
needs_claims = needs_data("oasis-reference/twitter_dataset/all_topics.csv")  # the labelled claims posted


def _spec(tmp_path, **over):
    data = {
        "experiment": "intervention",
        "seeds": [0, 1],
        "n_false": 1,
        "n_true": 1,
        "drift_embedder": "hashing",
        "strategies": {
            "none": {},
            "removal": {"kind": "fact_check", "params": {"delay": 0, "recall": 1.0}, "remove": True},
        },
        "base": {
            "steps": 4,
            "population": {"n_agents": 24, "mean_activity": 0.6, "stance": "bimodal"},
            "llm": {"backend": "fake", "max_tokens": 64},
        },
    }
    data.update(over)
    return InterventionSpec.model_validate(data)


@needs_claims
def test_conditions_share_world_and_seeds_and_differ_only_in_moderation():
    spec = _spec(None)
    a, b = condition_config(spec, "none", 1, "local"), condition_config(spec, "removal", 1, "local")
    da, db = a.model_dump(mode="json"), b.model_dump(mode="json")
    assert da.pop("moderation") != db.pop("moderation")
    da.pop("name"), db.pop("name")
    assert da == db  # same seed, population, graph, roles, claims
    assert [p["veracity"] for p in da["seed_posts"]] == ["false", "true"]
    assert da["roles"]["agents"]["spreader"] == [0]  # the false claim's author is a spreader
    omni = condition_config(spec, "none", 1, "omniscient").model_dump(mode="json")
    assert {k for k in da if da[k] != omni.get(k)} == {"perspective"}  # the perspective angle: one key


@needs_claims
def test_intervention_experiment_runs_measures_and_reports(tmp_path):
    spec = _spec(tmp_path)
    res = run_intervention(spec, tmp_path / "iv")
    assert set(res["sources"]) == {"model:local", "null"}
    for src in res["sources"].values():
        none, rem = src["strategies"]["none"], src["strategies"]["removal"]
        assert set(rem["per_seed"]) == {0, 1}
        # removal at step 0 stops the false claim: its reach never grows after the removal step
        for m in rem["per_seed"].values():
            false = [c for c in m["claims"] if c["veracity"] == "false"]
            assert false and false[0]["curve"][-1] == false[0]["curve"][0]
        eff = rem["summary"]["effects"]["false_reach"]
        # two seeds: an estimate, no interval (a 1-degree-of-freedom t says nothing; socium.core.intervals)
        assert eff["n"] == 2 and eff["mean"] is not None and eff["lo"] is None and "n too small" in eff["note"]
        assert none["summary"]["metrics"]["false_reach"]["mean"] >= rem["summary"]["metrics"]["false_reach"]["mean"]
    assert res["null_fit"]["trials"] > 0
    rep = write_report(tmp_path / "iv")
    names = {p.name for p in rep.images}
    assert {"intervention_curves.png", "intervention_effects.png"} <= names
    assert all(p.stat().st_size > 10_000 for p in rep.images)
    tables = {t.title for t in rep.tables}
    assert "LLM (fake, smoke), local perspective: effect vs none" in tables, tables  # a smoke backend named so
    again = run_intervention(spec, tmp_path / "iv")  # finished runs are reused, numbers identical
    assert (
        again["sources"]["null"]["strategies"]["removal"]["summary"]
        == res["sources"]["null"]["strategies"]["removal"]["summary"]
    )


def test_reach_and_speed_are_measured_from_exposures(tmp_path):
    cfg = config_from_dict(
        {
            "seed": 2,
            "steps": 5,
            "population": {"n_agents": 30, "mean_activity": 0.7, "activity": "uniform"},
            "graph": {"kind": "empty"},
            "recsys": {"kind": "global", "k": 3},
            "policy": {"kind": "independent_cascade", "p_repost": 0.0, "p_post": 0.0},
            "seed_posts": [{"author": 0, "content": "x", "veracity": "false"}],
        }
    )
    Simulation(cfg, tmp_path).run()
    m = run_metrics(tmp_path, 5)
    con = duckdb.connect(str(tmp_path / "trace.duckdb"), read_only=True)
    seen = con.execute("SELECT count(DISTINCT agent_id) FROM exposures WHERE post_id = 0").fetchone()[0]
    first = sorted(
        r[0] for r in con.execute("SELECT min(step) FROM exposures WHERE post_id = 0 GROUP BY agent_id").fetchall()
    )
    con.close()
    assert m["false_reach"] == seen > 0 and m["true_reach"] is None
    assert m["false_t50"] == first[(len(first) + 1) // 2 - 1]  # first step by which half the final reach was seen
    assert m["false_depth"] == 0 and m["false_shares"] == 0


def test_t_ci_is_a_t_interval():
    ci = t_ci([1.0, 2.0, 3.0])
    assert ci["mean"] == 2.0 and ci["lo"] == pytest.approx(2 - 4.302653 / 3**0.5, rel=1e-5)
    assert t_ci([None]) is None
    one = t_ci([5.0])  # no zero-width "CI" from one seed
    assert one["mean"] == 5.0 and one["lo"] is None and one["hi"] is None and one["n"] == 1
    reach = t_ci([0.0, 0.0, 12.0], nonnegative=True)  # a level that cannot be negative stays >= 0
    assert reach["method"] == "bootstrap" and 0.0 <= reach["lo"] <= reach["mean"] <= reach["hi"] <= 12.0
    assert t_ci([0.0, 0.0, 12.0])["lo"] < 0  # what a t interval would have printed


def test_report_prints_true_claim_levels_with_their_interval(tmp_path):
    """The terminal's level table gives true claims' steps to 50% (and reach, depth) a 95% interval over
    seeds that cannot go below 0 (these levels cannot), with n, and says when a seed had no value."""
    import json

    from scipy import stats

    from socium.experiments.intervention.report import LEVEL_KEYS
    from socium.experiments.intervention.study import summarise

    t50 = {0: 0.0, 1: 1.0, 2: 0.5, 3: None}  # seed 3: its true claims reached nobody, t50 undefined
    reach = {0: 4.0, 1: 6.0, 2: 9.0, 3: 0.0}
    ctl = {s: {"true_t50": t50[s], "true_reach": reach[s], "true_depth": 1.0, "false_reach": 3.0} for s in t50}
    other = {s: dict(m, true_reach=m["true_reach"] - 1) for s, m in ctl.items()}
    body = {
        "strategies": {
            "none": {"summary": summarise(ctl, None), "per_seed": ctl, "dirs": {}, "usage": []},
            "label": {"summary": summarise(other, ctl), "per_seed": other, "dirs": {}, "usage": []},
        }
    }
    res = {
        "experiment": "intervention",
        "spec": {"seeds": [0, 1, 2, 3], "n_false": 1, "n_true": 1, "base": {}},
        "control": "none",
        "order": ["none", "label"],
        "sources": {"null": body},
        "null_fit": None,
        "steps": 3,
        "model": "fake",
        "n_agents": 5,
    }
    (tmp_path / "results.json").write_text(json.dumps(res), encoding="utf-8")
    rep = write_report(tmp_path)

    def expected(vals):
        # levels cannot be negative: a bootstrap interval inside the values, with n and method beside it
        iv = nonnegative_interval(vals)
        assert min(vals) <= iv.low <= iv.estimate <= iv.high <= max(vals)
        assert iv.estimate == pytest.approx(stats.tmean(vals))
        return f"{iv.estimate:.2f} [{iv.low:.2f}, {iv.high:.2f}] (n={len(vals)}, bootstrap)"

    (level,) = [t for t in rep.tables if t.summary and "level under none" in t.title]
    rows = {r[0]: r[1:] for r in level.rows}
    assert len(rows) == len(LEVEL_KEYS)
    assert rows["true claims: steps to 50% reach"] == [expected([0.0, 1.0, 0.5]), "3 of 4"]
    assert rows["true claims: reach (users)"] == [expected([4.0, 6.0, 9.0, 0.0]), "4 of 4"]
    assert rows["true claims: depth (hops)"] == ["1.00 [1.00, 1.00] (n=4, bootstrap)", "4 of 4"]
    assert rows["false claims: steps to 50% reach"] == ["n/a", "0 of 4"]
    # the full HTML table marks the cell measured on fewer seeds than the study ran
    page = rep.html.read_text(encoding="utf-8")
    assert f"{expected([0.0, 1.0, 0.5])} (n = 3 of 4 seeds)" in page


def test_drift_by_depth_and_veracity(tmp_path):
    cfg = config_from_dict(
        {
            "seed": 1,
            "steps": 3,
            "population": {"n_agents": 6, "mean_activity": 0.01},
            "graph": {"kind": "empty"},
            "policy": {"kind": "random", "p_post": 0, "p_like": 0, "p_repost": 0},
            "seed_posts": [
                {"author": 0, "content": "the vaccine trial enrolled ten thousand adults", "veracity": "true"},
                {"author": 1, "content": "the vaccine trial enrolled ten thousand adults", "veracity": "false"},
            ],
        }
    )
    sim = Simulation(cfg, tmp_path)
    with sim:
        sim.step(active=[])
        sim.step(
            actions={
                2: [QuotePost(post_id=0, content="the vaccine trial enrolled ten thousand adults indeed")],
                3: [QuotePost(post_id=1, content="secret microchips hidden in every dose they lie")],
            },
            active=[],
        )
        sim.step(
            actions={
                4: [CreateComment(post_id=2, content="the vaccine trial enrolled adults")],
                5: [QuotePost(post_id=3, content="chemtrails and microchips and lizard people")],
            },
            active=[],
        )
    d = drift(tmp_path, HashingEmbedder())
    assert d["n_retellings"] == 4
    assert d["by_veracity"]["false"]["drift"] > d["by_veracity"]["true"]["drift"]
    assert set(d["by_depth"]) == {1, 2}
    per = {c["source"]: c for c in d["cascades"]}
    assert per[0]["max_depth"] == 2 and per[1]["veracity"] == "false" and per[1]["drift"] > per[0]["drift"]


@needs_claims
def test_example_runs_on_the_fake_backend(tmp_path):
    from typer.testing import CliRunner

    from socium.cli.main import app

    r = CliRunner().invoke(
        app,
        [
            "experiment",
            "intervention",
            str(ROOT / "examples" / "intervention.yaml"),
            "--out",
            str(tmp_path / "ex"),
            "--quiet",
            "--set",
            "seeds=[0]",
        ],
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "ex" / "report" / "intervention_effects.png").is_file()
    page = (tmp_path / "ex" / "report" / "index.html").read_text(encoding="utf-8")
    assert "1 seed x " in page and "1 seeds" not in page and "No intervals: 1 seed (n too small" in page


@needs_claims
def test_embedded_study_spec_builds_every_condition():
    """The docs/results.md study's spec: every (strategy, perspective, seed) config is the embedded model,
    and the perspectives differ only in the one `perspective` key."""
    from socium.experiments.phenomena import load_experiment

    spec = load_experiment(ROOT / "examples" / "intervention-embedded.yaml")
    assert isinstance(spec, InterventionSpec) and spec.perspectives == ["local", "omniscient"]
    assert len(spec.seeds) >= 3 and {"none", "fact_check", "removal+suspension", "prebunk"} <= set(spec.strategies)
    for strat in spec.strategies:
        loc = condition_config(spec, strat, spec.seeds[0], "local").model_dump(mode="json")
        omni = condition_config(spec, strat, spec.seeds[0], "omniscient").model_dump(mode="json")
        assert loc["llm"]["backend"] == "embedded"
        loc.pop("name"), omni.pop("name")
        assert {k for k in loc if loc[k] != omni[k]} == {"perspective"}


@pytest.mark.parametrize("steps", [1, 3])
def test_reach_curves_stay_visible_with_whole_step_ticks(tmp_path, monkeypatch, steps):
    """A 1-step study's curves are single points: they must still be drawn (markers) on an axis of
    whole steps, not on matplotlib's fractional fallback ticks."""
    from socium.experiments.intervention import report as R

    curve = [float(t + 1) for t in range(steps)]
    body = {"summary": {"false_curve": curve, "true_curve": curve}, "per_seed": {0: {"false_curve": curve}}}
    res = {
        "sources": {"model:local": {"strategies": {"none": body, "removal": body}}},
        "order": ["none", "removal"],
        "control": "none",
        "model": "fake",
        "spec": {"seeds": [0], "base": {"step_minutes": 60}},
    }
    figs = []
    monkeypatch.setattr(R.P, "_save", lambda fig, path, **kw: figs.append(fig) or path)
    R.curves_plot(tmp_path / "c.png", res)
    (fig,) = figs
    assert "1 seed, no interval" in fig._suptitle.get_text()
    for ax in fig.axes:
        assert len(ax.lines) == 2 and all(line.get_marker() not in (None, "None", "") for line in ax.lines)
        assert list(ax.get_xticks()) == list(range(steps))
        lo, hi = ax.get_xlim()
        assert lo < 0 and hi > steps - 1


@needs_claims
def test_removing_every_reshare_after_step_k_lowers_reach(tmp_path):
    """A strategy that stops a false claim from spreading after step k (removal, delay 1: in force from
    step 2) lowers its reach measurably: the paired effect's 95% interval over 3 seeds lies below 0, and
    every removal curve is flat from step 2. Reshares come from independent-cascade agents (p = 0.4)."""
    spec = InterventionSpec.model_validate(
        {
            "experiment": "intervention",
            "seeds": [0, 1, 2],
            "n_false": 1,
            "n_true": 1,
            "drift_embedder": "hashing",
            "run_null": False,
            "strategies": {
                "none": {},
                "removal": {"kind": "fact_check", "params": {"delay": 1, "recall": 1.0}, "remove": True},
            },
            "base": {
                "steps": 5,
                "population": {"n_agents": 40, "mean_activity": 0.6, "stance": "bimodal"},
                "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
                "policy": {"kind": "independent_cascade", "p_repost": 0.4, "p_post": 0.0},
            },
        }
    )
    res = run_intervention(spec, tmp_path / "iv")
    body = res["sources"]["model:local"]["strategies"]
    eff = body["removal"]["summary"]["effects"]["false_reach"]
    assert eff["n"] == 3 and eff["method"] == "t" and eff["hi"] < 0, eff
    for seed in spec.seeds:
        (none,) = [c["curve"] for c in body["none"]["per_seed"][seed]["claims"] if c["veracity"] == "false"]
        (rem,) = [c["curve"] for c in body["removal"]["per_seed"][seed]["claims"] if c["veracity"] == "false"]
        assert rem[:2] == none[:2]  # the same world until the removal is in force
        assert rem[2:] == [rem[1]] * 3 and none[-1] > rem[-1]


def test_a_design_with_no_room_after_the_earliest_label_is_refused():
    """Issue 29: 3 steps and a delay-1 fact-check put labels in force in the last step, where fewer
    reshares can no longer mean fewer exposures; the spec names the strategy and the fix."""
    from pydantic import ValidationError

    from socium.experiments.intervention.study import design_problems, earliest_effect_step

    assert earliest_effect_step({"kind": "fact_check", "params": {"delay": 1}}) == 2
    assert earliest_effect_step({"kind": "community_notes"}) == 1
    assert earliest_effect_step({"prebunk": {"fraction": 0.5, "step": 1}}) == 1
    assert earliest_effect_step({}) is None
    label = {"kind": "fact_check", "params": {"delay": 1}}
    with pytest.raises(ValidationError, match=r"strategies\.fact_check: .*step 2.*base\.steps >= 4"):
        _spec(None, strategies={"none": {}, "fact_check": label}, base={"steps": 3})
    assert not design_problems(_spec(None, strategies={"none": {}, "fact_check": label}, base={"steps": 4}))
    # removal acts on feeds: its effect on exposures shows in the step it is in force
    assert not design_problems(_spec(None, strategies={"removal": {**label, "remove": True}}, base={"steps": 3}))


@needs_claims
def test_example_designs_leave_room_for_every_strategy():
    from socium.experiments.intervention.study import design_problems
    from socium.experiments.phenomena import load_experiment

    for name in ("intervention.yaml", "intervention-embedded.yaml"):
        spec = load_experiment(ROOT / "examples" / name)
        assert design_problems(spec) == [], name
        assert int(spec.base["steps"]) >= 5, name
