"""Entry points for the phenomenon experiments: parse a spec file, run it, return its results.

The study registry (:mod:`socium.experiments.studies`) maps an experiment name to its spec model and runner,
so the CLI, notebooks and the perspective comparison all start experiments the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from socium.config.loading import read_yaml_mapping
from socium.errors import ConfigError
from socium.experiments.designs.compare import run_compare
from socium.experiments.spec import ExperimentSpec, load_spec_data, parse_spec
from socium.experiments.studies import EXPERIMENT_KINDS, SPEC_KINDS, STUDIES, study
from socium.trace.rundir import check_out_path, default_out


def load_experiment(path: str | Path, overrides: Sequence[str] = (), kind: str | None = None) -> ExperimentSpec:
    """The typed spec in ``path``; ``kind`` (if given) must match its ``experiment`` key (or fills it in)."""
    raw = read_yaml_mapping(path)
    name = raw.get("experiment") or (kind if kind in SPEC_KINDS else None)
    if name is None:  # only `compare` reaches here: it runs the spec's own experiment, which must be named
        raise ConfigError(
            f"{path}: experiment: missing; `socium experiment compare` runs the spec's own experiment, "
            f"so the spec needs experiment: one of {', '.join(SPEC_KINDS)}"
        )
    if name not in SPEC_KINDS:
        raise ConfigError(f"{path}: experiment: {name!r} is not one of {', '.join(SPEC_KINDS)}")
    if kind in SPEC_KINDS and kind != name:
        raise ConfigError(f"{path}: the spec is a {name!r} experiment, not {kind!r}")
    spec_class = STUDIES[name].spec_class()
    data = load_spec_data(path, overrides, spec_class)
    data["experiment"] = name
    return parse_spec(spec_class, data, str(path))


def prepare_experiment(
    kind: str, path: str | Path, out: Path | None = None, overrides: Sequence[str] = ()
) -> tuple[ExperimentSpec, Path]:
    """The validated spec and its experiment directory, before anything runs (the CLI shows a bad spec
    as an error alone, not after an empty progress display)."""
    if kind not in EXPERIMENT_KINDS:
        raise ConfigError(f"experiment kind {kind!r} is not one of {', '.join(EXPERIMENT_KINDS)}")
    spec = load_experiment(path, overrides, kind)
    suffix = "-compare" if kind == "compare" else ""
    target = Path(out) if out is not None else Path(spec.out + suffix) if spec.out else default_out(spec.name, suffix)
    check_out_path(target)  # a file there was NotADirectoryError's traceback, after the progress display
    return spec, target


def run_prepared(
    kind: str, spec: ExperimentSpec, target: Path, *, force: bool = False, log: Callable[[str], None] = lambda s: None
) -> dict[str, Any]:
    """Run a spec from :func:`prepare_experiment` into ``target``."""
    if kind == "compare":
        return run_compare(spec, target, study(spec.experiment).runner(), force=force, log=log)
    return study(kind).runner()(spec, target, force=force, log=log)


def run_experiment(
    kind: str,
    path: str | Path,
    out: Path | None = None,
    overrides: Sequence[str] = (),
    *,
    force: bool = False,
    log: Callable[[str], None] = lambda s: None,
) -> tuple[Path, dict[str, Any]]:
    """Run ``kind`` (propagation, herding, polarisation, or compare of the spec's experiment)."""
    spec, target = prepare_experiment(kind, path, out, overrides)
    return target, run_prepared(kind, spec, target, force=force, log=log)
