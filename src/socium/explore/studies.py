"""Emulator-only studies read for the explorer: a ``socium forecast`` folder and a propagation experiment
with counterfactual arms, one cascade at a time.

Why here and not through :mod:`socium.forecast`: the explorer sits beside ``forecast`` in the layers (neither
imports the other), and what it needs is the files' documented columns, not the models. A forecast folder
(``results.json`` with ``experiment: forecast``, ``cascades.parquet``, ``curves.parquet``) holds per cascade
and observe minute the real curve, the forecast's mean and 5/25/50/75/95% quantiles per minute, the
baselines' means, and (``--counterfactual``) every arm's curve (model ``arm:<strategy>@<minute>``). A
propagation experiment run with ``counterfactual:`` (cross-validation) holds per cascade each arm's reach
per replica, the oracle's and the real final size, no curves. Reads are filtered in Parquet (one cascade's
rows), so a page costs the same for 20 cascades or 1,490.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from socium.errors import RunDirError

QCOLS = ("q05", "q25", "q50", "q75", "q95")
"""curves.parquet's quantile columns (5, 25, 50, 75, 95%)."""
ARM = "arm:"
"""curves.parquet's model prefix of a counterfactual arm (``socium.experiments.propagation.forecast_run``)."""


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path}: unreadable: {exc}") from None
    return data if isinstance(data, dict) else {}


def _parquet(path: Path, filters: Any = None) -> pa.Table:
    try:
        return pq.read_table(path, filters=filters)
    except (OSError, pa.ArrowInvalid) as exc:
        raise RunDirError(f"{path}: unreadable: {exc}") from None


@dataclass(frozen=True)
class StudyCascade:
    """One cascade of a study, as its list shows it."""

    cascade_id: str
    label: str | None
    nodes: int | None
    observed: dict[int, int]
    """Observed size at each observe minute (forecast folders) or at the one observe minute (counterfactual)."""
    real_final: int | None
    forecast_median: dict[int, float | None] = field(default_factory=dict)
    """The forecast's median final size, per observe minute (forecast folders)."""


@dataclass(frozen=True)
class Fan:
    """One model's curve of one cascade from one observe minute: per minute its mean and quantiles."""

    model: str
    minute: np.ndarray
    mean: np.ndarray
    q: dict[str, np.ndarray]
    """``q05`` .. ``q95`` (NaN where the model gives no distribution: point baselines)."""


@dataclass(frozen=True)
class ForecastCurves:
    """Everything drawn for one cascade and observe minute: the real curve and every model's and arm's fan."""

    cascade_id: str
    observe_minute: int
    real: np.ndarray
    forecast: Fan | None
    baselines: list[Fan]
    arms: list[Fan]


@dataclass(frozen=True)
class ArmReach:
    """One counterfactual arm of one cascade: its reach over replicas (quantiles) and the oracle's."""

    arm: str
    reach: dict[str, float]
    """``q05`` .. ``q95`` and ``mean`` of the reach at the horizon over replicas."""
    oracle_mean: float | None


@dataclass(frozen=True)
class Study:
    """An emulator-only study folder: a forecast or a propagation counterfactual experiment."""

    root: Path
    kind: str
    """``forecast`` or ``counterfactual``."""
    results: dict[str, Any]

    @property
    def observe_minutes(self) -> list[int]:
        if self.kind == "forecast":
            return [int(m) for m in self.results.get("settings", {}).get("observe_minutes", [])]
        m = self.results.get("spec", {}).get("observe_minutes")
        return [int(m)] if m is not None else []

    @property
    def horizon(self) -> int | None:
        h = self.results.get("settings", {}).get("horizon_minutes") or self.results.get("minutes")
        return int(h) if h is not None else None

    def cascades(self) -> list[StudyCascade]:
        """Every cascade of the study in the order the study wrote them."""
        if self.kind == "forecast":
            return _forecast_cascades(self.root / "cascades.parquet")
        m = self.observe_minutes[0] if self.observe_minutes else 0
        out = []
        for row in self.results.get("cascades", []):
            cf = row.get("counterfactual") or {}
            out.append(
                StudyCascade(
                    str(row.get("id")),
                    row.get("label"),
                    row.get("agents"),
                    {m: int(cf["observed"])} if "observed" in cf else {},
                    (row.get("real_final") or {}).get("scale"),
                )
            )
        return out

    def curves(self, cascade_id: str, observe_minute: int) -> ForecastCurves | None:
        """One cascade's curves from one observe minute (forecast folders; None when it has none)."""
        if self.kind != "forecast":
            return None
        t = _parquet(
            self.root / "curves.parquet",
            [("cascade_id", "=", cascade_id), ("observe_minutes", "=", int(observe_minute)), ("curve", "=", "scale")],
        )
        if t.num_rows == 0:
            return None
        fans: dict[str, Fan] = {}
        real = np.empty(0)
        for model in dict.fromkeys(t.column("model").to_pylist()):
            sub = t.filter(pc.equal(t.column("model"), model)).sort_by("minute")
            real = sub.column("real").to_numpy(zero_copy_only=False)
            fans[str(model)] = Fan(
                str(model),
                sub.column("minute").to_numpy(zero_copy_only=False),
                sub.column("mean").to_numpy(zero_copy_only=False),
                {c: sub.column(c).to_numpy(zero_copy_only=False) for c in QCOLS},
            )
        return ForecastCurves(
            cascade_id,
            int(observe_minute),
            real,
            fans.pop("forecast", None),
            [f for k, f in fans.items() if not k.startswith(ARM)],
            [f for k, f in fans.items() if k.startswith(ARM)],
        )

    def arm_reach(self, cascade_id: str) -> list[ArmReach]:
        """Each counterfactual arm's reach for one cascade (counterfactual experiments; arm ``none`` first)."""
        if self.kind != "counterfactual":
            return []
        row = next((r for r in self.results.get("cascades", []) if str(r.get("id")) == cascade_id), None)
        cf = (row or {}).get("counterfactual") or {}
        out = []
        for key, arm in (cf.get("arms") or {}).items():
            reach = np.asarray(arm.get("reach") or [], float)
            if not len(reach):
                continue
            qs = np.quantile(reach, [0.05, 0.25, 0.5, 0.75, 0.95])
            oracle = (cf.get("oracle") or {}).get(key)
            out.append(
                ArmReach(
                    str(key),
                    {**dict(zip(QCOLS, map(float, qs), strict=True)), "mean": float(reach.mean())},
                    float(np.mean(oracle)) if oracle else None,
                )
            )
        return out


def _forecast_cascades(path: Path) -> list[StudyCascade]:
    t = _parquet(path, [("model", "=", "forecast")])
    cols = set(t.column_names)
    by: dict[str, dict[str, Any]] = {}
    for r in t.to_pylist():
        fresh = {"label": r.get("label"), "nodes": r.get("nodes"), "obs": {}, "med": {}}
        c = by.setdefault(str(r["cascade_id"]), fresh)
        m = int(r["observe_minutes"])
        c["obs"][m] = int(r["observed"]) if r.get("observed") is not None else 0
        c["med"][m] = r.get("final_q50") if "final_q50" in cols else None
        c["real"] = r.get("real_scale")
    return [StudyCascade(k, v["label"], v["nodes"], v["obs"], v["real"], v["med"]) for k, v in by.items()]


def open_study(root: Path) -> Study | None:
    """The study at ``root`` (None: not a forecast folder nor a propagation experiment with counterfactual arms)."""
    path = root / "results.json"
    if not path.is_file():
        return None
    res = _json(path)
    if res.get("experiment") == "forecast" and (root / "curves.parquet").is_file():
        if (root / "cascades.parquet").is_file():
            return Study(root, "forecast", res)
    if res.get("experiment") == "propagation" and any(
        isinstance(c, dict) and c.get("counterfactual") for c in res.get("cascades", [])
    ):
        return Study(root, "counterfactual", res)
    return None
