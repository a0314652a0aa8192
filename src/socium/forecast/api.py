"""The four verbs of :mod:`socium.forecast`: load cascades, fit, forecast, score.

Thin on purpose: each calls the propagation study's own function (the one the CLI and the
cross-validation call), so the public API cannot drift from what socium reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray
from pydantic import ValidationError

from socium.config.loading import read_yaml_mapping
from socium.errors import ConfigError
from socium.experiments.propagation.data.cascade_format import cascade_info, cascade_trees
from socium.experiments.propagation.data.cascade_sources import load_cascade_table
from socium.experiments.propagation.data.realcascades import CascadeTree
from socium.experiments.propagation.fit.fit_file import Fit, fit_cascades
from socium.experiments.propagation.forecast.predictive import TOOL_BASELINES, Prediction, score_cascade
from socium.experiments.propagation.forecast_run import ForecastResult, ForecastSettings, forecast_cascades
from socium.experiments.propagation.spec import CounterfactualSpec
from socium.simulator.timing import FAMILIES


@dataclass(frozen=True)
class Cascades:
    """Cascades in the documented row format (``table``), as trees, with their per-cascade columns."""

    source: str
    table: pa.Table
    trees: dict[str, CascadeTree]
    info: dict[str, dict[str, Any]]

    def __len__(self) -> int:
        return len(self.trees)

    def subset(self, ids: Sequence[str]) -> Cascades:
        """The cascades ``ids`` (in that order); an unknown id raises KeyError."""
        keep = set(ids)
        mask = pa.array([c in keep for c in self.table.column("cascade_id").to_pylist()])
        return Cascades(
            self.source, self.table.filter(mask), {i: self.trees[i] for i in ids}, {i: self.info[i] for i in ids}
        )


def load_cascades(source: str | Path, limit: int | None = None) -> Cascades:
    """A registered data set name (``twitter15``, ``oasis``, ...), a CSV / Parquet / JSONL / tree file, or a
    folder of them; every row checked first (one ``InputFileError`` naming file, line and column)."""
    table = load_cascade_table(source, limit)
    return Cascades(str(source), table, cascade_trees(table, source=str(source)), cascade_info(table))


def fit(
    cascades: Cascades,
    *,
    bootstrap: int = 0,
    seed: int = 0,
    families: Sequence[str] = FAMILIES,
    root_effects: bool = True,
) -> dict[str, Any]:
    """Fit the timing layer on ``cascades``: the self-contained fit file's dict (write with ``write_fit_file``)."""
    return fit_cascades(
        cascades.trees,
        data=[cascades.source],
        bootstrap=bootstrap,
        seed=seed,
        families=families,
        root_effects=root_effects,
    )


def forecast(
    fit: Fit,
    cascades: Cascades,
    *,
    observe_minutes: Sequence[int] = (10,),
    horizon_minutes: int = 150,
    replicas: int = 40,
    seed: int = 0,
    baselines: Sequence[str] = TOOL_BASELINES,
    counterfactual: CounterfactualSpec | None = None,
    workers: int = 1,
    log: Callable[[str], None] = lambda s: None,
) -> ForecastResult:
    """Forecast every cascade from each observe minute with ``fit`` (never refitted), scored against the data;
    ``counterfactual``: intervention arms on the same path (:func:`load_counterfactual` reads them from YAML);
    ``workers``: processes to forecast the cascades in (every cascade has its own seeded streams, so the
    results are the same for any number)."""
    settings = ForecastSettings(
        tuple(dict.fromkeys(observe_minutes)),
        horizon_minutes,
        replicas,
        seed,
        tuple(baselines),
        counterfactual,
        workers,
    )
    return forecast_cascades(fit, cascades.trees, settings, source=cascades.source, info=cascades.info, log=log)


def load_counterfactual(path: str | Path) -> CounterfactualSpec:
    """Intervention arms from a YAML file: the ``counterfactual:`` block of a propagation spec, bare or under
    that key (docs/validation.md 3c); a bad key is one error naming the file."""
    data = read_yaml_mapping(path)
    data = data.get("counterfactual", data)
    try:
        return CounterfactualSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "counterfactual"
        raise ConfigError(f"{path}: counterfactual.{where}: {err['msg']}") from None


def score(prediction: Prediction, real: Mapping[str, NDArray[np.float64]], u: float = 0.5) -> dict[str, dict[str, Any]]:
    """Every model's measures for one cascade's :class:`Prediction` against its real curves."""
    return score_cascade(prediction, dict(real), u)
