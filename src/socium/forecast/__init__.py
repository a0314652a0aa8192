"""``socium.forecast``: the public, stable face of fitting, forecasting and scoring real cascades.

Why a package of its own: scripts written against the propagation study's internals broke when those
modules moved (issue 37). This package is what ``socium forecast``, the cross-validation's numbers and the
benchmarks rest on, and its names stay put whatever the layering below does::

    from socium import forecast as fc

    fit = fc.load_fit("oasis-fit.json")                   # self-contained fit file
    cascades = fc.load_cascades("twitter15-not-oasis", limit=100)   # a data set name, or a file / folder
    result = fc.forecast(fit, cascades, observe_minutes=[10])
    result.results["by_observe_minutes"]["10"]["forecast"]["coverage"]["80"]["scale"]
    fc.write_forecast(result, "runs/forecast")

The cascade row format is in docs/data.md; the method and the measures in docs/validation.md (3e).
"""

from __future__ import annotations

from socium.experiments.propagation.data.cascade_format import (
    COLUMNS,
    SCHEMA,
    cascade_info,
    cascade_table,
    cascade_trees,
    read_csv,
    read_jsonl,
    read_parquet,
    table_from_trees,
    write_parquet,
)
from socium.experiments.propagation.data.cascade_sources import load_cascade_table, register_source, source_names
from socium.experiments.propagation.fit.fit_file import FIT_FORMAT_VERSION, Fit, load_fit, write_fit_file
from socium.experiments.propagation.forecast.predictive import LEVELS, QUANTILES, Prediction, predict_cascade, summarise
from socium.experiments.propagation.forecast_run import ForecastResult, ForecastSettings, write_forecast
from socium.forecast.api import Cascades, fit, forecast, load_cascades, load_counterfactual, score

__all__ = [
    "COLUMNS",
    "FIT_FORMAT_VERSION",
    "LEVELS",
    "QUANTILES",
    "SCHEMA",
    "Cascades",
    "Fit",
    "ForecastResult",
    "ForecastSettings",
    "Prediction",
    "cascade_info",
    "cascade_table",
    "cascade_trees",
    "fit",
    "forecast",
    "load_cascade_table",
    "load_cascades",
    "load_counterfactual",
    "load_fit",
    "predict_cascade",
    "read_csv",
    "read_jsonl",
    "read_parquet",
    "register_source",
    "score",
    "source_names",
    "summarise",
    "table_from_trees",
    "write_fit_file",
    "write_forecast",
    "write_parquet",
]
