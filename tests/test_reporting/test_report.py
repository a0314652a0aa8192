"""Reports: files are written, plotted series equal the experiment's numbers, hostile text is escaped."""

import json

import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app
from socium.experiments.report import write_report

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def _herding_files(tmp_path):
    items = [{"text": f"claim {i}", "group": ("up", "control", "down")[i % 3]} for i in range(9)]
    people = [{"realname": f"P {i}", "username": f"p{i}", "bio": "b", "persona": "p"} for i in range(8)]
    (tmp_path / "items.json").write_text(json.dumps(items))
    (tmp_path / "people.json").write_text(json.dumps(people))
    return str(tmp_path / "items.json"), str(tmp_path / "people.json")


def test_cli_experiment_and_report_for_herding(tmp_path):
    items, people = _herding_files(tmp_path)
    spec = {
        "experiment": "herding",
        "name": "h<script>alert(1)</script>",
        "items": items,
        "personas": people,
        "n_items": 9,
        "activation": 0.6,
        "bootstrap": 20,
        "base": {"seed": 2, "steps": 3, "llm": {"backend": "random"}},
    }
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "exp"
    r = runner.invoke(
        app, ["experiment", "herding", str(tmp_path / "h.yaml"), "--out", str(out), "--set", "base.seed=3"]
    )
    assert r.exit_code == 0, r.output
    assert "Herding by treatment group" in r.output and "Muchnik" in r.output
    res = json.loads((out / "results.json").read_text())
    assert res["spec"]["base"]["seed"] == 3
    rep = out / "report"
    for name in ("index.html", "herding_scores.png", "herding_next_positive.png", "series.json"):
        assert (rep / name).is_file(), name
    assert (rep / "herding_scores.png").read_bytes()[:8] == PNG
    series = json.loads((rep / "series.json").read_text())
    for run in ("model", "null"):
        for g in ("up", "control", "down"):
            assert series["herding_trajectories"][run][g] == res["runs"][run]["metrics"]["groups"][g]["trajectory"]
    page = (rep / "index.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;" in page and "Simulation Card" in page
    # a single run directory gets its own report, recomputed from the trace
    r = runner.invoke(app, ["report", str(out / "runs" / "model")])
    assert r.exit_code == 0, r.output
    single = json.loads((out / "runs" / "model" / "report" / "series.json").read_text())
    assert single["herding_trajectories"]["run"] == series["herding_trajectories"]["model"]
    # wrong kind / missing dir are clean errors
    r = runner.invoke(app, ["experiment", "polarisation", str(tmp_path / "h.yaml")])
    assert r.exit_code == 2 and "herding" in r.output
    r = runner.invoke(app, ["report", str(tmp_path / "nothing")])
    assert r.exit_code == 2


def test_propagation_report_series_match_results(tmp_path):
    from socium.experiments.propagation.spec import PropagationSpec
    from socium.experiments.propagation.study import run_propagation

    tree = tmp_path / "7.txt"
    tree.write_text(
        "['ROOT', 'ROOT', '0.0']->['1', '7', '0.0']\n"
        + "".join(f"['1', '7', '0.0']->['{u}', '7', '{u}.0']\n" for u in range(2, 9))
    )
    spec = PropagationSpec(
        tree_files=[str(tree)],
        minutes=20,
        activation=1.0,
        topics_csv=str(tmp_path / "none.csv"),
        base={"seed": 1, "step_minutes": 5, "llm": {"backend": "random"}},
    )
    res = run_propagation(spec, tmp_path / "exp")
    rep = write_report(tmp_path / "exp")
    names = {p.name for p in rep.images}
    assert {"nrmse.png", "cascade_7.png"} <= names and all(p.read_bytes()[:8] == PNG for p in rep.images)
    series = json.loads((tmp_path / "exp" / "report" / "series.json").read_text())
    c = res["cascades"][0]
    assert series["cascade:7"]["real"] == c["real"] and series["cascade:7"]["real"]["scale"][19] == 8
    assert series["cascade:7"]["model"] == c["runs"]["model"]["curves"]
    assert series["nrmse"]["null"] == pytest.approx(res["summary"]["null"]["nrmse"])
    assert any(t.summary and "NRMSE" in t.title for t in rep.tables)


def test_polarisation_report_has_distributions(tmp_path):
    from socium.experiments.opinions.polarisation import PolarisationSpec, run_polarisation

    spec = PolarisationSpec(
        population="synthetic",
        n_agents=12,
        activation=0.5,
        survey_every=1,
        base={"seed": 1, "steps": 2, "llm": {"backend": "random"}},
    )
    res = run_polarisation(spec, tmp_path / "exp")
    rep = write_report(tmp_path / "exp")
    assert {"stance_distributions.png", "stance_trajectories.png", "group_means.png"} <= {p.name for p in rep.images}
    series = json.loads((tmp_path / "exp" / "report" / "series.json").read_text())
    for run in ("model", "null"):
        pts = [p for p in res["runs"][run]["metrics"]["points"] if p["kind"] == "survey"]  # answers, not the design
        assert [p["step"] for p in pts] == [0, 1]
        assert series["stance_distributions"][run] == {str(p["step"]): p["values"] for p in pts}
        assert series["stance_trajectories"][run]["variance"] == [p["variance"] for p in pts]
        assert series["group_means_n"][run]["conservative"] == [p["groups"]["conservative"]["n"] for p in pts]


def test_counts_in_report_text_take_the_noun_in_the_right_number():
    from socium.reporting.page import counted

    assert [counted(n, "seed") for n in (0, 1, 2)] == ["0 seeds", "1 seed", "2 seeds"]
    assert counted(1, "replicate") == "1 replicate" and counted(3, "child", "children") == "3 children"
