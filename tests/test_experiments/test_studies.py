"""The study registry: one entry per experiment kind, and everything that switches on the kind reads it."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from socium.config import loading
from socium.errors import ConfigError
from socium.experiments import spec as spec_module
from socium.experiments.spec import ExperimentSpec
from socium.experiments.studies import EXPERIMENT_KINDS, RESULTS_FILE, SPEC_KINDS, STUDIES, study, study_in


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
    if s.seed_values is not None:
        assert callable(__import__(s.seed_values.split(":")[0], fromlist=["_"]).__dict__[s.seed_values.split(":")[1]])


def test_the_kinds_derive_from_the_entries() -> None:
    assert EXPERIMENT_KINDS == ("propagation", "herding", "polarisation", "intervention", "compare")
    assert SPEC_KINDS == ("propagation", "herding", "polarisation", "intervention")
    assert "forecast" in STUDIES and "forecast" not in EXPERIMENT_KINDS  # started by `socium forecast`
    # config sits below experiments, so it keeps its own copy for `socium run`'s message; held equal here
    assert loading._EXPERIMENT_KINDS == EXPERIMENT_KINDS
    assert RESULTS_FILE == spec_module.RESULTS_FILE


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
