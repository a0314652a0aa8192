"""Every folder socium writes can be reported (issue 30, items 5 and 6), and the figures are drawn right:
sweep, seeds and group-episodes folders get a page; an intervention page folds its cards instead of
repeating them; a memory-stream run shows its memories; export-sft says how many failed episodes it kept;
legends lie inside the canvas, whiskers inside the axis, cascade events at their recorded time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from typer.testing import CliRunner

from conftest import herding_inputs, needs_data, small_config
from socium.cli.main import app
from socium.config.loading import load_config
from socium.episodes.multiparty_runner import GroupEpisodesConfig, run_group_episodes
from socium.experiments.designs.sweep import expand, load_sweep, run_one
from socium.experiments.opinions.herding import HerdingSpec, run_herding
from socium.experiments.opinions.report import group_points
from socium.experiments.report import write_report
from socium.reporting import plots as P
from socium.reporting.run_report import MEMORY_CHARS
from socium.simulator.simulation import Simulation
from socium.trace.queries import cascades

ROOT = Path(__file__).resolve().parents[2]


def _full_cards(page: str) -> int:
    """Full Simulation Card tables on a page (the diff table of the other runs is not one)."""
    return len(re.findall(r"<summary>Simulation Card: ", page))


def _captured(monkeypatch) -> list:
    """Figures as plots._save closes them, to measure what was drawn."""
    figs: list = []
    monkeypatch.setattr(P.plt, "close", figs.append)
    return figs


def _legend_inside(fig) -> bool:
    renderer = fig.canvas.get_renderer()
    box, canvas = fig.legends[0].get_window_extent(renderer), fig.bbox
    return box.x0 >= canvas.x0 - 0.5 and box.x1 <= canvas.x1 + 0.5 and box.y0 >= -0.5 and box.y1 <= canvas.y1 + 0.5


# ---- folders that were refused -------------------------------------------------------------------
def test_a_sweep_folder_is_reported_with_whole_override_values_and_outcomes(tmp_path):
    long_name = "a-sweep-cell-name-much-longer-than-any-terminal-column-would-keep-whole"
    f = tmp_path / "sweep.yaml"
    base = {
        "name": "t",
        "steps": 2,
        "population": {"n_agents": 30, "mean_activity": 0.5},
        "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
        "policy": {"kind": "independent_cascade", "p_repost": 0.3, "p_post": 0.1},
        "seed_posts": [{"author": 0, "content": "seed post"}],
    }
    grid = {"policy.p_repost": [0.1, 0.5], "name": [long_name]}
    f.write_text(json.dumps({"base": base, "grid": grid, "seeds": [1], "out": str(tmp_path / "sw")}))
    spec = load_sweep(f)
    spec.out.mkdir(parents=True)
    manifest = {"base": spec.base, "grid": spec.grid, "seeds": spec.seeds, "runs": [r.__dict__ for r in expand(spec)]}
    (spec.out / "sweep.json").write_text(json.dumps(manifest))
    status = {r.run: run_one(spec.base, r.override_strings(), r.run_dir) for r in spec.runs}
    (spec.out / "status.json").write_text(json.dumps(status))
    rep = write_report(spec.out)
    per = next(t for t in rep.tables if t.title == "Per combination")
    assert (
        per.columns[:3] == ["#", "policy.p_repost", "name"] and "largest cascade (posts, root included)" in per.columns
    )
    assert [r[1:3] for r in per.rows] == [["0.1", json.dumps(long_name)], ["0.5", json.dumps(long_name)]]
    with duckdb.connect(str(spec.out / "run-001" / "trace.duckdb"), read_only=True) as con:
        posts = con.execute("SELECT count(*) FROM posts").fetchone()[0]
    assert per.rows[1][per.columns.index("posts (all kinds)")] == f"{posts:.1f}"  # one seed: a mean, no interval
    assert (rep.out_dir / "sweep_outcomes.png").stat().st_size > 10_000
    assert _full_cards(rep.html.read_text()) == 1  # the second run's card: only where it differs


def test_a_group_episodes_folder_is_reported(tmp_path):
    cfg = GroupEpisodesConfig(
        out=str(tmp_path / "g"), llm={"backend": "random", "seed": 1}, deals=2, modes=["agents", "script"], max_turns=4
    )
    summary = run_group_episodes(cfg)
    rep = write_report(tmp_path / "g")
    per = next(t for t in rep.tables if t.title == "Per mode")
    assert [r[0] for r in per.rows] == ["agents", "script"]
    assert [r[1] for r in per.rows] == [str(summary["modes"][m]["episodes"]) for m in ("agents", "script")]
    page = rep.html.read_text()
    assert "SMOKE RUN: llm.backend &#x27;random&#x27;" in page and "group_modes.png" in page
    assert "socium group-episodes report" in page


def test_seeds_writes_a_page_a_figure_and_the_smoke_banner(tmp_path):
    items, people = herding_inputs(tmp_path, n_items=8, n_people=8)
    dirs = []
    for seed in (1, 2):
        spec = HerdingSpec(
            items=items,
            personas=people,
            n_items=6,
            item_seed=seed,
            activation=1.0,
            bootstrap=0,
            base={"seed": seed, "steps": 2, "llm": {"backend": "random"}},
        )
        run_herding(spec, tmp_path / f"h{seed}")
        dirs.append(str(tmp_path / f"h{seed}"))
    res = CliRunner().invoke(app, ["seeds", *dirs, "--only", "up-control.crowd_mean_score"])
    assert res.exit_code == 0, res.output
    folder = tmp_path / "seeds-pooled"  # beside the experiment directories
    body = json.loads((folder / "seeds.json").read_text())
    assert body["smoke"] and "SMOKE RUN: llm.backend 'random'" in body["smoke"][0]
    page = (folder / "report" / "index.html").read_text()
    assert "SMOKE RUN" in page and "seeds.png" in page and "n too small" in page  # 2 seeds: no interval
    assert (folder / "report" / "seeds.png").stat().st_size > 10_000
    assert "| model - null: up-control.crowd_mean_score | 2 |" in res.stdout
    again = write_report(folder)  # `socium report` reads the same folder
    assert [t.title for t in again.tables] == ["Pooled over seeds"]


@needs_data("oasis-reference/twitter_dataset/all_topics.csv")
def test_the_intervention_page_folds_its_cards_instead_of_repeating_them(tmp_path):
    from socium.experiments.intervention.study import InterventionSpec, run_intervention

    spec = InterventionSpec.model_validate(
        {
            "experiment": "intervention",
            "seeds": [0],
            "n_false": 1,
            "n_true": 1,
            "drift_embedder": "hashing",
            "strategies": {"none": {}, "removal": {"kind": "fact_check", "params": {"delay": 0}, "remove": True}},
            "base": {"steps": 3, "population": {"n_agents": 16, "mean_activity": 0.6}, "llm": {"backend": "fake"}},
        }
    )
    run_intervention(spec, tmp_path / "iv")
    page = write_report(tmp_path / "iv").html.read_text()
    assert _full_cards(page) == 1 and "<details>" in page
    assert "The other 3 cards: only the fields that differ from the first" in page  # 2 sources x 2 strategies
    assert page.count(">smoke_<wbr>run<") <= 1 and page.count(">smoke_run<") <= 1


def test_a_memory_stream_run_reports_memories_and_reflections(tmp_path):
    cfg = load_config(ROOT / "examples" / "memory-stream.yaml", ["steps=4", "population.n_agents=12"])
    Simulation(cfg, tmp_path / "m").run()
    rep = write_report(tmp_path / "m")
    counts = next(t for t in rep.tables if t.title.startswith("Memory stream"))
    with duckdb.connect(str(tmp_path / "m" / "trace.duckdb"), read_only=True) as con:
        want = dict(con.execute("SELECT kind, count(*) FROM memories GROUP BY kind").fetchall())
    assert {r[0]: int(r[1].replace(",", "")) for r in counts.rows} == want and "reflection" in want
    examples = next(t for t in rep.tables if t.title.startswith("The most important memories"))
    assert {r[0] for r in examples.rows} == set(want)
    assert all(len(r[-1]) <= MEMORY_CHARS for r in examples.rows)
    assert "memories.png" in rep.html.read_text()


def test_export_sft_says_how_many_failed_episodes_it_kept_and_can_leave_them_out(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text("name: x\ntasks: {mutual_friend: 2, bargaining: 2}\nllm: {backend: random}\nmax_turns: 3\n")
    runner = CliRunner()
    assert runner.invoke(app, ["episodes", str(f), "--out", str(tmp_path / "run"), "--quiet"]).exit_code == 0
    with duckdb.connect(str(tmp_path / "run" / "episodes.duckdb"), read_only=True) as con:
        failed = con.execute(
            "SELECT count(*) FROM episodes WHERE valid AND mode = 'script' AND "
            "coalesce((goal_0 + goal_1) / 2, (judge_goal_0 + judge_goal_1) / 2) = 0"
        ).fetchone()[0]
    assert failed > 0  # the random backend fails most tasks
    res = runner.invoke(app, ["export-sft", str(tmp_path / "run"), "--out", str(tmp_path / "a.jsonl")])
    assert res.exit_code == 0 and f"included {failed} failed episodes (goal 0)" in res.output
    res = runner.invoke(
        app, ["export-sft", str(tmp_path / "run"), "--out", str(tmp_path / "b.jsonl"), "--exclude-failed"]
    )
    assert res.exit_code == 0 and "left out" in res.output and "included" not in res.output
    kept = len((tmp_path / "b.jsonl").read_text().splitlines())
    assert kept < len((tmp_path / "a.jsonl").read_text().splitlines())


# ---- figures -------------------------------------------------------------------------------------
def test_legends_lie_inside_the_canvas(tmp_path, monkeypatch):
    figs = _captured(monkeypatch)
    labels = {r: f"LLM (a-very-long-model-name-that-once-ran-off-the-edge-{r}, smoke)" for r in ("model", "null")}
    series = {r: {"conservative": [-0.5, -0.6], "progressive": [0.4, 0.5]} for r in labels}
    cis = {r: {"conservative": [[-0.7, -0.3], None], "progressive": [None, [0.3, 0.7]]} for r in labels}
    ns = {r: {"conservative": [5, 5], "progressive": [5, 5]} for r in labels}
    group_points(tmp_path / "group_means.png", series, cis, ns, [0, 3], labels)
    curves = [{"scale": [1, 2, 3], "depth": [0, 1, 1], "max_breadth": [0, 1, 2]}] * 3
    per = {p: curves for p in ("local", "mindreader", "omniscient", "omniscient_agents", "real")}
    named = {p: f"LLM (another-long-model-name-SmolLM2-135M-Instruct-q4): {p}" for p in per}
    P.mean_cascade_curves(tmp_path / "perspective_cascades.png", "Mean cascade", per, named, bands=False)
    assert len(figs) == 2 and all(_legend_inside(fig) for fig in figs)


def test_whiskers_stay_inside_the_axis(tmp_path, monkeypatch):
    figs = _captured(monkeypatch)
    # the first source has no interval: the room made for its printed values once froze the axis
    nrmse = {"model": {"scale": 0.2, "depth": 0.3, "max_breadth": 0.25}, "null": {k: 0.5 for k in P.CURVE_TITLES}}
    P.nrmse_bars(tmp_path / "nrmse.png", nrmse, 0.3, {"null": {k: [0.2, 1.6] for k in P.CURVE_TITLES}}, n=5)
    values = {"model": {"up": 0.2}, "null": {"up": 0.3}}
    P.group_bars(tmp_path / "g.png", values, {"null": {"up": [-0.9, 1.4]}}, "y", "t")
    (ax_n,), (ax_g,) = (f.axes for f in figs)
    assert ax_n.get_ylim()[1] > 1.6 and ax_g.get_ylim()[0] < -0.9 and ax_g.get_ylim()[1] > 1.4


def test_no_band_where_the_interval_policy_gives_none(tmp_path, monkeypatch):
    figs = _captured(monkeypatch)
    c = {"scale": [1, 2, 4], "depth": [0, 1, 2], "max_breadth": [0, 1, 2]}
    d = {"scale": [1, 3, 3], "depth": [0, 1, 1], "max_breadth": [0, 2, 2]}
    P.mean_cascade_curves(tmp_path / "two.png", "n = 2", {"model": [c, d]})
    P.mean_cascade_curves(tmp_path / "three.png", "n = 3", {"model": [c, d, c]})
    bands = [sum(isinstance(a, PolyCollection) for ax in f.axes for a in ax.collections) for f in figs]
    assert bands == [0, 3]


def test_cascade_events_at_their_recorded_time(tmp_path):
    cfg = small_config(steps=4, step_minutes=60, policy={"kind": "random", "p_post": 0.1, "p_repost": 0.5})
    Simulation(cfg, tmp_path / "r").run()
    with duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True) as con:
        root, _n = cascades.largest_cascades(con, 1)[0]
        _parent, at = cascades.cascade_events(con, root, recorded_time=True)
        _parent, mid = cascades.cascade_events(con, root)
        root_s = con.execute("SELECT time_s FROM posts WHERE post_id = ?", [root]).fetchone()[0]
        first = con.execute(
            "SELECT min(p.time_s) FROM cascade_nodes c JOIN posts p USING (post_id) WHERE c.root_id = ? "
            "AND c.post_id <> ?",
            [root, root],
        ).fetchone()[0]
    assert at.min() == 0.0 and np.sort(at)[1] == pytest.approx((first - root_s) / 60)
    assert np.allclose(mid[1:] - at[1:], 30.0)  # the model's mid-step timing, half a 60-minute step later
    rep = write_report(tmp_path / "r")
    scale = np.asarray(rep.series[f"cascade:{root}"]["run"]["scale"])
    jump = int(np.argmax(scale > 1))  # the curve rises at the first reshare's recorded minute, not 30 later
    assert jump == int(np.sort(at)[1])
