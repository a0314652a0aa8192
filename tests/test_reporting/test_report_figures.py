"""Report figures: titled, labelled axes, legends outside the data, zero bars visible; propagation specs."""

import json

import pytest
import yaml
from matplotlib.container import ErrorbarContainer

from conftest import herding_inputs
from socium.errors import ConfigError
from socium.experiments.report import write_report
from socium.reporting import plots as P


@pytest.fixture
def figures(monkeypatch):
    """Every figure a report saves, inspected just before it is written."""
    seen = []
    real_save = P._save

    def spy(fig, path, legend_from=None, ncol=None):
        axes = [ax for ax in fig.axes if ax.has_data()]
        seen.append(
            {
                "name": path.name,
                "suptitle": fig._suptitle.get_text() if fig._suptitle else "",
                "titles": [ax.get_title() for ax in axes],
                "xlabels": [ax.get_xlabel() for ax in axes],
                "ylabels": [ax.get_ylabel() for ax in axes],
                "legends_inside": [ax.get_legend() for ax in axes],
                "lines": {
                    ax.get_title(): [(ln.get_label(), list(ln.get_xdata())) for ln in ax.get_lines()] for ax in axes
                },
                "errorbars": {
                    ax.get_title(): [
                        (float(seg[0][1]), float(seg[1][1]))
                        for c in ax.containers
                        if isinstance(c, ErrorbarContainer) and c.lines[2]
                        for seg in c.lines[2][0].get_segments()
                        if len(seg) == 2
                    ]
                    for ax in axes
                },
            }
        )
        return real_save(fig, path, legend_from, ncol)

    monkeypatch.setattr(P, "_save", spy)
    import socium.reporting.run_report as R

    monkeypatch.setattr(R.P, "_save", spy)
    return seen


def _check_conventions(figs):
    assert figs
    for f in figs:
        assert all(t.strip() for t in f["titles"]) or f["suptitle"], f["name"]
        assert all(x.strip() for x in f["xlabels"]), f["name"]
        assert all(y.strip() for y in f["ylabels"]), f["name"]
        assert all(lg is None for lg in f["legends_inside"]), f"{f['name']}: legend drawn over the axes"


def test_polarisation_report_axes_and_reference_lines(tmp_path, figures):
    from socium.experiments.opinions.polarisation import PolarisationSpec, run_polarisation

    spec = PolarisationSpec(
        population="synthetic",
        n_agents=10,
        activation=0.5,
        survey_every=2,
        base={"seed": 1, "steps": 4, "llm": {"backend": "random"}},
    )
    res = run_polarisation(spec, tmp_path / "pol")
    rep = write_report(tmp_path / "pol")
    _check_conventions(figures)
    points = res["runs"]["model"]["metrics"]["points"]
    assert [p["step"] for p in points] == [-1, 1, 3] and points[0]["kind"] == "assigned"
    survey_steps = [1, 3]  # the group plot shows answers only: the assigned stance (-1) is no survey
    means = next(f for f in figures if f["name"] == "group_means.png")
    assert "survey" in means["xlabels"][0] and "steps completed" not in means["xlabels"][0]
    for label, xs in next(iter(means["lines"].values())):
        if ":" in label:  # a group line, not the labelled 0 reference
            assert [round(x) for x in xs] == survey_steps, label  # the survey's step, not its index
    # an interval bar at every point that has one (n >= 3), from the same numbers as the table
    want = sorted(
        tuple(p["groups"][g]["mean_ci"])
        for r in res["runs"].values()
        for p in r["metrics"]["points"][1:]
        for g in ("conservative", "progressive")
        if p["groups"][g]["mean_ci"] is not None
    )
    got = sorted(next(iter(means["errorbars"].values())))
    assert want and len(got) == len(want) and all(g == pytest.approx(w) for g, w in zip(got, want))
    traj = next(f for f in figures if f["name"] == "stance_trajectories.png")
    bimodal = traj["lines"]["bimodality coefficient"]
    assert any(lbl.startswith("5/9") for lbl, _ in bimodal)  # the reference line says what it is
    page = rep.html.read_text()
    assert "5/9" in page and "uniform distribution" in page


def test_single_run_report_shows_the_run(tmp_path, figures):
    from socium.config.loading import config_from_dict
    from socium.simulator.simulation import Simulation

    cfg = config_from_dict(
        {
            "name": "llm",
            "seed": 3,
            "steps": 3,
            "policy": {"kind": "llm"},
            "llm": {"backend": "random"},
            "population": {"n_agents": 20, "mean_activity": 0.5, "stance": "uniform"},
            "seed_posts": [{"author": i, "content": f"post {i}"} for i in range(4)],
        }
    )
    Simulation(cfg, tmp_path / "r").run()
    rep = write_report(tmp_path / "r")
    _check_conventions(figures)
    names = {p.name for p in rep.images}
    assert {"activity.png", "invalid_rate.png", "feed_sources.png", "stance_over_time.png", "llm_usage.png"} <= names
    series = json.loads((rep.out_dir / "series.json").read_text())
    assert sum(sum(v) for v in series["activity"]["actions_by_type"].values()) > 0
    assert sum(series["llm_usage"]["prompt_tokens"]) > 0 and len(series["llm_usage"]["latency_p50_s"]) == 3
    assert set(series["feed_sources"]["totals"]) == {"in_network"}
    assert series["stance_over_time"]["steps"] == [-1, 0, 1, 2]
    assert "SMOKE RUN" in rep.html.read_text()
    # LLM agents' stances never move in the trace (surveys measure them): the figure and caption say so
    import duckdb

    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM stances").fetchone()[0] == series["stance_over_time"]["changes"] == 0
    con.close()
    stance = next(f for f in figures if f["name"] == "stance_over_time.png")
    assert "no agent's stance changed" in stance["titles"][0]
    assert "no agent&#x27;s stance changed during the run" in rep.html.read_text()


def test_zero_and_missing_bars_are_shown():
    fig, ax = P.plt.subplots()
    bars = ax.bar([0, 1, 2], [0.0, 0.5, 0.0])
    P._bar_values(ax, bars, [0.0, 0.5, None])
    assert [t.get_text() for t in ax.texts] == ["0.00", "0.50", "n/a"]
    zero_marks = [ln for ln in ax.get_lines() if list(ln.get_ydata()) == [0, 0]]
    assert len(zero_marks) == 1  # the zero bar gets a visible mark; the missing one does not
    assert ax.get_ylim()[1] >= 0.5 * 1.1  # room above the tallest bar for its number
    P.plt.close(fig)


def test_bar_totals_have_room_above_the_tallest_bar(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(P, "_save", lambda fig, path, *a, **k: seen.append(fig.axes[0].get_ylim()) or path)
    P.perspective_bars(tmp_path / "t.png", {"local": (13463, 685), "mindreader": (17379, 693)})
    assert seen[0][1] >= (17379 + 693) * 1.1  # the printed total of the tallest bar stays inside the frame


def test_t_interval_matches_scipy_and_keeps_bounds():
    from scipy import stats

    m, lo, hi = P.t_interval([0.1, 0.4, 0.2, 0.9])
    ref = stats.t.interval(0.95, 3, loc=0.4, scale=stats.sem([0.1, 0.4, 0.2, 0.9]))
    assert (lo, hi) == pytest.approx(ref)
    # a quantity that cannot be negative gets a bootstrap inside its values, not a t clipped at 0
    nn = P.t_interval([0.01, 0.02, 0.5], lo=0.0)
    assert nn is not None and 0.01 <= nn[1] <= nn[0] <= nn[2] <= 0.5
    assert P.t_interval([0.3, 0.9]) is None and P.t_interval([0.99]) is None  # no interval below 3 units


# ---- propagation specs ---------------------------------------------------------------------------
def _tree(path):
    path.write_text(
        "['ROOT', 'ROOT', '0.0']->['1', '7', '0.0']\n"
        + "".join(f"['1', '7', '0.0']->['{u}', '7', '{u}.0']\n" for u in range(2, 6))
    )
    return path


def test_sample_with_tree_files_is_an_error(tmp_path):
    from socium.experiments.phenomena import load_experiment

    _tree(tmp_path / "7.txt")
    spec = {"experiment": "propagation", "tree_files": ["7.txt"], "sample": 3}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(ConfigError, match="sample: sampling applies only when no trees are named"):
        load_experiment(tmp_path / "p.yaml")


def test_relative_spec_paths_resolve_against_the_spec_file(tmp_path, monkeypatch):
    from socium.experiments.phenomena import load_experiment

    d = tmp_path / "specs"
    d.mkdir()
    _tree(d / "7.txt")
    (d / "p.yaml").write_text(
        yaml.safe_dump(
            {
                "experiment": "propagation",
                "tree_files": ["7.txt"],
                "topics_csv": "none.csv",
                "base": {"population": {"path": "x.csv"}},
            }
        )
    )
    monkeypatch.chdir(tmp_path)  # not the spec's folder
    spec = load_experiment("specs/p.yaml")
    assert spec.tree_files == [str(d / "7.txt")] and spec.topics_csv == str(d / "none.csv")
    assert spec.base["population"]["path"] == str(d / "x.csv")
    spec = load_experiment("specs/p.yaml", ["tree_files=[other.txt]"])
    assert spec.tree_files == ["other.txt"]  # a command-line override stays as typed


def test_missing_source_text_is_reported_and_ic_model_shows_configured_p(tmp_path, figures):
    from socium.experiments.propagation.spec import PropagationSpec
    from socium.experiments.propagation.study import run_propagation

    lines = []
    spec = PropagationSpec(
        tree_files=[str(_tree(tmp_path / "7.txt"))],
        minutes=10,
        activation=1.0,
        topics_csv=str(tmp_path / "none.csv"),
        base={"seed": 1, "step_minutes": 5, "llm": None, "policy": {"kind": "independent_cascade", "p_repost": 0.25}},
    )
    res = run_propagation(spec, tmp_path / "exp", log=lines.append)
    assert any("NO SOURCE TEXT" in ln and "7" in ln for ln in lines)
    assert res["cascades"][0]["source_text"] == "missing"
    assert res["cascades"][0]["runs"]["model"]["configured_p"] == 0.25
    rep = write_report(tmp_path / "exp")
    row = next(t for t in rep.tables if t.title.startswith("Per cascade")).rows[0]
    assert "0.2500 (configured)" in row
    assert "NO SOURCE TEXT for cascade(s) 7" in rep.html.read_text()
    _check_conventions(figures)
    nrmse = next(f for f in figures if f["name"] == "nrmse.png")
    ref = [xs for lbl, xs in nrmse["lines"][nrmse["titles"][0]] if "OASIS" in lbl]
    assert ref and max(ref[0]) < 0.9  # the reference line is named, and drawn over the scale bars only


def test_herding_figures_follow_the_conventions(tmp_path, figures):
    from socium.experiments.opinions.herding import HerdingSpec, run_herding

    items, people = herding_inputs(tmp_path, n_items=9)
    run_herding(
        HerdingSpec(
            items=items,
            personas=people,
            n_items=9,
            activation=0.6,
            bootstrap=20,
            base={"seed": 2, "steps": 2, "llm": {"backend": "random"}},
        ),
        tmp_path / "h",
    )
    write_report(tmp_path / "h")
    _check_conventions(figures)
    scores = next(f for f in figures if f["name"] == "herding_scores.png")
    labels = [lbl for lbl, _ in next(iter(scores["lines"].values()))]
    assert any(lbl.startswith("random-voting null") for lbl in labels)  # null named as such
    assert any(lbl.startswith("LLM (random, smoke)") for lbl in labels)  # model named with what it ran
    # the last point of each line carries the table's interval of the crowd mean score (treatment excluded)
    res = json.loads((tmp_path / "h" / "results.json").read_text())
    want = sorted(
        tuple(g["crowd_mean_score_ci"]) for r in res["runs"].values() for g in r["metrics"]["groups"].values()
    )
    got = sorted(next(iter(scores["errorbars"].values())))
    assert len(got) == len(want) == 6 and all(g == pytest.approx(w) for g, w in zip(got, want))


def test_labels_are_normalised():
    from socium.experiments.propagation.data.realcascades import normalise_label

    assert normalise_label("False") == normalise_label(" false ") == "false"
    assert normalise_label("non-rumour") == normalise_label("Non_Rumor") == "non-rumor"
    assert normalise_label("") is None and normalise_label(None) is None


def test_sensitivity_bars_print_the_tables_numbers_beside_the_interval(tmp_path, monkeypatch):
    from socium.experiments.report_more import _sensitivity_bars
    from socium.reporting.page import fmt

    seen = []
    monkeypatch.setattr(P, "_save", lambda fig, path, *a, **k: seen.append(fig.axes[0]) or path)
    rows = [
        {"parameter": "a", "mu_star": 6.5, "mu_star_ci95": 4.1},
        {"parameter": "b", "mu_star": 6.0, "mu_star_ci95": 3.6},
        {"parameter": "c", "mu_star": 0.4, "mu_star_ci95": 0.1},
    ]
    _sensitivity_bars(tmp_path / "s.png", "x", {"indices": rows, "description": "d"}, "morris")
    ax = seen[0]
    texts = sorted((t.xy[0], t.get_text()) for t in ax.texts)
    assert texts == sorted((r["mu_star"] + r["mu_star_ci95"], fmt(r["mu_star"])) for r in rows)  # "6.000", not "6"
    assert ax.get_xlim()[1] > 6.5 + 4.1  # the number beside the longest interval stays inside the frame


def test_mean_cascade_axes_tick_whole_counts(tmp_path, monkeypatch):
    from matplotlib.ticker import MaxNLocator

    seen = []
    monkeypatch.setattr(P, "_save", lambda fig, path, *a, **k: seen.append(fig.axes) or path)
    curves = [
        {"scale": [1, 2, 3], "depth": [0, 1, 1], "max_breadth": [0, 1, 2]},
        {"scale": [1, 1, 4], "depth": [0, 0, 1], "max_breadth": [0, 0, 3]},
    ]
    P.mean_cascade_curves(tmp_path / "m.png", "t", {"model": curves, "real": curves})
    for ax in seen[0]:  # means of 2 cascades are fractional; the ticks of a count axis are not
        loc = ax.yaxis.get_major_locator()
        assert isinstance(loc, MaxNLocator) and all(float(t).is_integer() for t in loc.tick_values(0, 3.5)), (
            ax.get_title()
        )
