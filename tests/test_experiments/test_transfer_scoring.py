"""Transfer scoring: a saved `socium fit propagation` file scored on other trees with replicas, never refitted."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from socium.cli.main import app
from socium.errors import ConfigError
from socium.experiments.propagation.cv import cv as cv_mod
from socium.experiments.propagation.cv.transfer import TRANSFER_RUNS
from socium.experiments.propagation.fit import fit as fit_mod
from socium.experiments.propagation.spec import PropagationSpec
from socium.experiments.propagation.study import run_propagation
from socium.experiments.report import write_report


def _write_trees(folder, ids, seed, speed=2.0):
    """Random trees (about 15 users) with log-normal delays of median e^speed minutes."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for t in ids:
        lines = [f"['ROOT', 'ROOT', '0.0']->['u{t}_0', '{t}', '0.0']"]
        times = [0.0]
        for i in range(1, 15):
            p = int(rng.integers(0, i)) if rng.random() < 0.3 else 0
            times.append(times[p] + float(np.exp(rng.normal(speed, 1.0))))
            lines.append(f"['u{t}_{p}', '{t}', '{times[p]:.2f}']->['u{t}_{i}', '{t}', '{times[i]:.2f}']")
        (folder / f"{t}.txt").write_text("\n".join(lines) + "\n")
    return sorted(folder.glob("*.txt"))


@pytest.fixture
def saved_fit(tmp_path):
    _write_trees(tmp_path / "train", range(100, 106), seed=0)
    out = tmp_path / "timing.json"
    res = CliRunner().invoke(
        app, ["fit", "propagation", "--train", str(tmp_path / "train"), "--out", str(out), "--bootstrap", "0"]
    )
    assert res.exit_code == 0, res.output
    return out


def _spec(files, tmp_path, **over):
    kw = dict(
        tree_files=[str(f) for f in files],
        minutes=60,
        follows="tree",
        topics_csv=str(tmp_path / "none.csv"),
        base={"seed": 0},
    )
    kw.update(over)
    return PropagationSpec(**kw)


def test_fit_file_records_its_training_population(saved_fit):
    training = json.loads(saved_fit.read_text())["timing"]["meta"]["training"]
    assert training["kind"] == "tree files" and training["n_trees"] == 6
    assert sorted(training["ids"]) == [str(i) for i in range(100, 106)] and training["users_median"] == 15


def test_saved_fit_is_scored_with_replicas_and_never_refitted(tmp_path, saved_fit, monkeypatch):
    before = saved_fit.read_bytes()

    def no_fit(*a, **k):
        raise AssertionError("transfer scoring must not fit")

    monkeypatch.setattr(fit_mod, "fit_timing", no_fit)
    monkeypatch.setattr(cv_mod, "fit_timing", no_fit)
    files = _write_trees(tmp_path / "other", range(200, 204), seed=1)
    spec = _spec(files, tmp_path, timing_file=str(saved_fit), cv={"runs": 3, "models": ["calibrated"]})
    res = run_propagation(spec, tmp_path / "out")
    assert saved_fit.read_bytes() == before
    assert res["mode"] == "transfer" and [c["id"] for c in res["cascades"]] == ["200", "201", "202", "203"]
    assert res["fit"]["training"]["n_trees"] == 6 and res["in_training"] == [] and res["population_warning"] is None
    s = res["summary"]["calibrated"]
    assert s["n"] == 4 and s["ci95"]["scale"][0] <= s["nrmse"]["scale"] <= s["ci95"]["scale"][1]
    # three replicas in one run, with the saved parameters inline (the config hash sees the fit)
    cfg = json.loads((tmp_path / "out" / "transfer" / "calibrated" / "200" / "config.json").read_text())
    assert len(cfg["seed_posts"]) == 3 and cfg["timing"]["params"]["meta"]["training"]["n_trees"] == 6
    html = write_report(tmp_path / "out").html.read_text()
    assert "no refit" in html and "tree files (6 trees" in html and "WARNING" not in html


def test_a_saved_fit_without_a_cv_block_is_scored_with_the_default_replicas(tmp_path, saved_fit):
    # the simulator config read the spec's cv: block, which a spec naming only timing_file lacks (AttributeError);
    # transfer scoring's own settings (calibrated, TRANSFER_RUNS replicas) now reach every run it builds
    files = _write_trees(tmp_path / "other", [400], seed=3)
    res = run_propagation(_spec(files, tmp_path, timing_file=str(saved_fit), minutes=20), tmp_path / "out")
    assert res["mode"] == "transfer" and list(res["summary"]) == ["note", "calibrated"]
    cfg = json.loads((tmp_path / "out" / "transfer" / "calibrated" / "400" / "config.json").read_text())
    assert len(cfg["seed_posts"]) == TRANSFER_RUNS


def test_population_differences_and_in_sample_scoring_are_warned(tmp_path, saved_fit):
    data = json.loads(saved_fit.read_text())
    data["timing"]["meta"]["training"]["kind"] = "twitter15"
    other = tmp_path / "t15fit.json"
    other.write_text(json.dumps(data))
    files = _write_trees(tmp_path / "other", range(300, 303), seed=2)
    # a format-2 file: the cascades are compared (KS), so another label on a matched population is no warning
    res = run_propagation(_spec(files, tmp_path, timing_file=str(other), cv={"runs": 2}), tmp_path / "o0")
    assert res["population_warning"] is None and res["population_ks"]["size"]["n_train"] == 6
    data.pop("training")  # a file from before format 2: only the recorded kinds can be compared
    other.write_text(json.dumps(data))
    res = run_propagation(_spec(files, tmp_path, timing_file=str(other), cv={"runs": 2}), tmp_path / "o1")
    assert "trained on twitter15 trees" in res["population_warning"]
    assert "WARNING" in write_report(tmp_path / "o1").html.read_text()
    own = sorted((tmp_path / "train").glob("*.txt"))[:3]  # the fit's own trees: in-sample, said so
    res = run_propagation(_spec(own, tmp_path, timing_file=str(saved_fit), cv={"runs": 2}), tmp_path / "o2")
    assert len(res["in_training"]) == 3 and "in-sample" in res["population_warning"]


def test_refit_keys_with_a_saved_fit_are_refused(tmp_path, saved_fit):
    files = _write_trees(tmp_path / "other", range(400, 403), seed=3)
    timing = {"kind": "exposure", "params_file": str(saved_fit)}
    spec = _spec(files, tmp_path, cv={"folds": 3}, base={"seed": 0, "timing": timing})
    with pytest.raises(ConfigError, match="never refitted"):
        run_propagation(spec, tmp_path / "o")


def test_cli_scores_a_spec_naming_a_fit_relative_to_the_spec(tmp_path, saved_fit):
    files = _write_trees(tmp_path / "exp" / "trees", range(500, 503), seed=4)
    (tmp_path / "exp" / "fits").mkdir()
    (tmp_path / "exp" / "fits" / "t.json").write_bytes(saved_fit.read_bytes())
    spec = tmp_path / "exp" / "spec.yaml"
    spec.write_text(
        "experiment: propagation\nfollows: tree\nminutes: 30\ntiming_file: fits/t.json\n"
        f"topics_csv: none.csv\ntree_files: [{', '.join('trees/' + f.name for f in files)}]\n"
        "cv: {runs: 2}\nbase: {seed: 0}\n"
    )
    res = CliRunner().invoke(app, ["experiment", "propagation", str(spec), "--out", str(tmp_path / "o"), "--quiet"])
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "o" / "results.json").read_text())
    assert out["mode"] == "transfer" and out["fit"]["file"] == str((tmp_path / "exp" / "fits" / "t.json").resolve())
    assert len(out["cascades"]) == 3 and "no refit" in res.output
