"""The study registry: one entry per experiment kind, from which the CLI, the reports and the explorer derive.

A study is what ``results.json``'s ``experiment`` names: its spec (what ``socium experiment NAME SPEC`` reads),
its runner, its report, how the seeds design pools its replicates, which runs and numbers the compare design
reads, its null run's legend name, and one line saying what it is. Adding a
study is one entry here; ``socium experiment``'s choices, ``socium report``'s dispatch, the seeds and compare
designs and the explorer's note on a folder without runs all read this table (they kept parallel tables before: the spec
and runner maps of ``phenomena``, the report builders, the CLI's literal choices).

Why the parts are named as ``module:attribute`` text, imported on first use: the CLI reads the study names at
start-up, and importing every study to list them took seconds (numpy, scipy, pyarrow, every runner); the
data-set readers of :mod:`~socium.experiments.propagation.data.cascade_sources` are named the same way.
``tests/test_experiments/test_studies.py`` resolves every name, so a moved module fails there, not in use.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socium.errors import ConfigError

if TYPE_CHECKING:  # types only: importing them is what the registry avoids at start-up
    from socium.experiments.spec import ExperimentSpec
    from socium.reporting.page import Report

RESULTS_FILE = "results.json"  # as socium.experiments.spec.RESULTS_FILE (a test holds them equal)


def _load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Study:
    """One experiment kind. ``spec``, ``run``, ``report``, ``seed_values``: ``module:attribute`` of its parts."""

    name: str
    """``results.json``'s ``experiment``, the spec's ``experiment:`` and ``socium experiment``'s KIND."""
    about: str
    """One line: what the study measures (the explorer says it of a folder without runs)."""
    report: str
    """``(Report, results) -> run dirs``: ``socium report`` of its folder."""
    spec: str | None = None
    """The spec model ``socium experiment NAME SPEC`` reads (None: the spec names its own experiment: compare)."""
    run: str | None = None
    """``(spec, out, *, force, log) -> results``; None: not started by ``socium experiment`` (``socium forecast``)."""
    seed_values: str | None = None
    """``results -> {metric: value}`` the seeds design pools over replicates (None: not pooled)."""
    model_runs: str | None = None
    """``results -> [run dir]``: the model (non-null) runs the compare design totals over (None: not compared)."""
    headline: str | None = None
    """``results -> {name: value}``: the study's own key numbers for its model run(s), compare's per-arm headline."""
    null_label: str | None = None
    """The legend name of its rule-based null run (None: it has none); ``reporting.labels.NULL_LABELS`` holds a
    copy (reporting sits below experiments), held equal by ``tests/test_experiments/test_studies.py``."""

    def spec_class(self) -> type[ExperimentSpec]:
        if self.spec is None:
            raise ConfigError(f"experiment {self.name!r} has no spec of its own")
        cls: type[ExperimentSpec] = _load(self.spec)
        return cls

    def runner(self) -> Callable[..., dict[str, Any]]:
        if self.run is None:
            raise ConfigError(f"experiment {self.name!r} is not run by `socium experiment`")
        fn: Callable[..., dict[str, Any]] = _load(self.run)
        return fn

    def build_report(self, rep: Report, results: dict[str, Any]) -> list[Path]:
        build: Callable[[Report, dict[str, Any]], list[Path]] = _load(self.report)
        return build(rep, results)

    def compared(self) -> bool:
        """Whether the compare design can take this study (it names its model runs and headline)."""
        return self.model_runs is not None and self.headline is not None

    def model_dirs(self, results: dict[str, Any]) -> list[Path]:
        if self.model_runs is None:
            raise ConfigError(f"experiment {self.name!r} names no model runs to compare")
        fn: Callable[[dict[str, Any]], list[Path]] = _load(self.model_runs)
        return fn(results)

    def key_numbers(self, results: dict[str, Any]) -> dict[str, Any]:
        if self.headline is None:
            raise ConfigError(f"experiment {self.name!r} names no headline to compare")
        fn: Callable[[dict[str, Any]], dict[str, Any]] = _load(self.headline)
        return fn(results)

    def values(self, results: dict[str, Any]) -> dict[str, float | None]:
        if self.seed_values is None:
            raise ConfigError(f"experiment {self.name!r} is not pooled over seeds")
        fn: Callable[[dict[str, Any]], dict[str, float | None]] = _load(self.seed_values)
        return fn(results)


_P = "socium.experiments.propagation"
_O = "socium.experiments.opinions"
_C = "socium.experiments.designs.compare"  # the compare design's readers of each study's results
STUDIES: dict[str, Study] = {
    s.name: s
    for s in (
        Study(
            "propagation",
            "simulated cascades against real retweet trees; cross-validation, transfer of a saved fit, forecasts",
            report=f"{_P}.report.report:propagation",
            spec=f"{_P}.spec:PropagationSpec",
            run=f"{_P}.study:run_propagation",
            seed_values="socium.experiments.designs.seeds:propagation_values",
            model_runs=f"{_C}:propagation_model_dirs",
            headline=f"{_C}:propagation_headline",
            null_label="IC null",
        ),
        Study(
            "herding",
            "does a visible first vote move the next votes (Muchnik et al. 2013)",
            report=f"{_O}.report:herding",
            spec=f"{_O}.herding:HerdingSpec",
            run=f"{_O}.herding:run_herding",
            seed_values="socium.experiments.designs.seeds:herding_values",
            model_runs=f"{_C}:model_dir",
            headline=f"{_C}:herding_headline",
            null_label="random-voting null",
        ),
        Study(
            "polarisation",
            "do stances drift apart under the feed",
            report=f"{_O}.report:polarisation",
            spec=f"{_O}.polarisation:PolarisationSpec",
            run=f"{_O}.polarisation:run_polarisation",
            seed_values="socium.experiments.designs.seeds:polarisation_values",
            model_runs=f"{_C}:model_dir",
            headline=f"{_C}:polarisation_headline",
            null_label="bounded-confidence null",
        ),
        Study(
            "intervention",
            "moderation strategies against a false post, condition by condition",
            report="socium.experiments.intervention.report:build",
            spec="socium.experiments.intervention.study:InterventionSpec",
            run="socium.experiments.intervention.study:run_intervention",
        ),
        Study(
            "compare",
            "the spec's own experiment under every registered perspective",
            report="socium.experiments.designs.compare_report:compare",
            run="socium.experiments.designs.compare:run_compare",
        ),
        Study(
            "forecast",
            "a saved fit applied to cascades by `socium forecast` (an emulator study: forecasts and counterfactuals)",
            report=f"{_P}.report.forecast_report:forecast_report",
        ),
    )
}

EXPERIMENT_KINDS: tuple[str, ...] = tuple(name for name, s in STUDIES.items() if s.run is not None)
"""``socium experiment``'s KIND choices: every study it starts (compare runs the spec's own experiment)."""
SPEC_KINDS: tuple[str, ...] = tuple(name for name, s in STUDIES.items() if s.spec is not None)
"""The studies a spec file may name as ``experiment:``."""


def study(name: object, where: str | Path = "") -> Study:
    """The study called ``name``; else a ConfigError naming ``where`` and the known names."""
    if isinstance(name, str) and name in STUDIES:
        return STUDIES[name]
    at = f"{where}: " if where else ""
    raise ConfigError(f"{at}experiment: {name!r} is not one of {', '.join(STUDIES)}")


def study_in(folder: Path) -> Study | None:
    """The study whose ``results.json`` is in ``folder`` (None: none there, unreadable, or not a known study)."""
    try:
        name = json.loads((folder / RESULTS_FILE).read_text(encoding="utf-8")).get("experiment")
    except (OSError, ValueError, AttributeError):
        return None
    return STUDIES.get(name) if isinstance(name, str) else None
