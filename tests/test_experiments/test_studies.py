"""The study registry: one entry per experiment kind, and everything that switches on the kind reads it."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from socium.config import loading
from socium.errors import ConfigError
from socium.experiments import spec as spec_module
from socium.experiments.spec import ExperimentSpec
from socium.experiments.studies import EXPERIMENT_KINDS, RESULTS_FILE, SPEC_KINDS, STUDIES, study, study_in
from socium.reporting import labels


@pytest.mark.parametrize("name", list(STUDIES))
def test_every_part_a_study_names_resolves(name: str) -> None:
    s = STUDIES[name]
    assert s.name == name and s.about
    assert list(inspect.signature(s.build_report).parameters) == ["rep", "results"]
    build = __import__(s.report.split(":")[0], fromlist=["_"]).__dict__[s.report.split(":")[1]]
    assert len(inspect.signature(build).parameters) == 2  # (Report, results)
    if s.spec is not None:
        cls = s.spec_class()
        assert issubclass(cls, ExperimentSpec) and cls.model_fields["experiment"].default == name
    if s.run is not None:
        params = inspect.signature(s.runner()).parameters
        assert "force" in params and "log" in params
    for ref in (s.seed_values, s.model_runs, s.headline):
        if ref is not None:
            assert callable(__import__(ref.split(":")[0], fromlist=["_"]).__dict__[ref.split(":")[1]])


def test_the_kinds_derive_from_the_entries() -> None:
    assert EXPERIMENT_KINDS == ("propagation", "herding", "polarisation", "intervention", "compare")
    assert SPEC_KINDS == ("propagation", "herding", "polarisation", "intervention")
    assert "forecast" in STUDIES and "forecast" not in EXPERIMENT_KINDS  # started by `socium forecast`
    # config sits below experiments, so it keeps its own copy for `socium run`'s message; held equal here
    assert loading._EXPERIMENT_KINDS == EXPERIMENT_KINDS
    assert RESULTS_FILE == spec_module.RESULTS_FILE
    # reporting sits below experiments too: its null legend names are a copy of the entries', held equal here
    assert labels.NULL_LABELS == {n: s.null_label for n, s in STUDIES.items() if s.null_label is not None}
    assert set(labels.NULL_LABELS) == {"propagation", "herding", "polarisation"}


def test_compare_reads_each_studys_runs_and_headline_from_its_entry(tmp_path) -> None:
    """compare switched on the experiment kind in two helpers; now each study's entry names its readers."""
    from socium.experiments.designs import compare

    assert [n for n, s in STUDIES.items() if s.compared()] == ["propagation", "herding", "polarisation"]
    herding = {
        "experiment": "herding",
        "runs": {
            "model": {
                "dir": "h/m",
                "metrics": {"effects": {"up": 0.2}, "groups": {"up": {"p_next_positive": 0.7, "n": 3}}},
            }
        },
    }
    assert compare.model_dirs(herding) == [Path("h/m")]
    assert compare.headline(herding) == {"effects": {"up": 0.2}, "p_next_positive": {"up": 0.7}}
    prop = {
        "experiment": "propagation",
        "cascades": [{"runs": {"model": {"dir": f"c{i}"}}} for i in range(2)],
        "summary": {"model": {"nrmse": {"scale": 0.3}}},
    }
    assert compare.model_dirs(prop) == [Path("c0"), Path("c1")] and compare.headline(prop) == {"nrmse": {"scale": 0.3}}
    with pytest.raises(ConfigError, match="'intervention' names no model runs"):
        compare.model_dirs({"experiment": "intervention"})
    # a study compare cannot read is refused before any arm runs (it failed after all of them had run)
    spec = STUDIES["intervention"].spec_class().model_construct(experiment="intervention", base={})
    ran = []
    with pytest.raises(ConfigError, match="compare: experiment 'intervention' cannot be compared"):
        compare.run_compare(spec, tmp_path / "x", lambda *a, **k: ran.append(a) or {})
    assert ran == [] and not (tmp_path / "x").exists()


def test_a_part_a_study_lacks_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="'forecast' is not run by `socium experiment`"):
        STUDIES["forecast"].runner()
    with pytest.raises(ConfigError, match="'compare' has no spec of its own"):
        STUDIES["compare"].spec_class()
    with pytest.raises(ConfigError, match=r"x\.yaml: experiment: 'bogus' is not one of propagation, herding"):
        study("bogus", "x.yaml")


def test_the_study_of_a_folder_is_read_from_its_results(tmp_path) -> None:
    assert study_in(tmp_path) is None  # no results.json
    (tmp_path / RESULTS_FILE).write_text(json.dumps({"experiment": "forecast"}))
    found = study_in(tmp_path)
    assert found is not None and found.name == "forecast"
    for bad in (
        "{not json",
        json.dumps(["a list"]),
        json.dumps({"experiment": "bogus"}),
        json.dumps({"experiment": 3}),
    ):
        (tmp_path / RESULTS_FILE).write_text(bad)
        assert study_in(tmp_path) is None


def test_listing_the_studies_imports_none_of_them() -> None:
    # the CLI lists the kinds at start-up: the registry must not pull in numpy, pydantic or any study
    code = (
        "import sys, socium.experiments.studies as s; s.EXPERIMENT_KINDS; "
        "heavy = [m for m in ('numpy', 'pydantic', 'socium.experiments.propagation', 'socium.experiments.opinions') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
