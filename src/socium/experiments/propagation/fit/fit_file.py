"""The self-contained fit file: everything a forecast needs, and what it was trained on, in one JSON file.

Why: a forecast needs more than the timing law the simulator reads. It needs ``cascade_sigma`` (the prior
sd of a cascade's speed; without it the posterior collapses to ``g = 0`` with weight 1, a forecast with
no speed conditioning), the per-account speeds (``timing.root_effects``), and, to be trusted on other
cascades, the training cascades' ids, a content digest and their size / depth / early-share
distributions (compared with the scored cascades by KS, :mod:`~socium.experiments.propagation.cv.transfer`).

Layout (``format_version`` 2)::

    {"format": "socium-propagation-fit", "format_version": 2, "socium_version": "...",
     "timing": {...},            # what timing.params_file reads (root_effects = per-account speeds)
     "cascade_sigma": 0.65,      # prior sd of a cascade's log-delay shift
     "dispersion": 1.0,          # widening of the predictive intervals (predictive.widen), CV-calibrated
     "dispersion_sd": {"floor": 0.0, "per_node": 0.0},  # added log-growth sd (predictive.prefix_sd); optional
     "training": {"ids": [...], "digest": "sha256:...", "n": 134, "data": [...], "kind": "...",
                  "stats": {"size": [...], "depth": [...], "early_share": [...]}},
     "estimates": {...}, "ci95": {...}, "families": [...]}

Files written before this layout (``format_version`` 1: ``socium fit propagation`` until issue 37) keep
``cascade_sigma`` under ``estimates``; they load with that value and a note saying so. A bare timing dict
(no ``cascade_sigma`` anywhere) is refused unless the caller states one: never a silent 0.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import socium
from socium.errors import ConfigError, InputFileError
from socium.experiments.propagation.data.realcascades import CascadeTree
from socium.experiments.propagation.data.trained_on import training_population
from socium.experiments.propagation.fit.fit import fit_timing, write_fit
from socium.simulator.timing import FAMILIES, TimingParams

FIT_FORMAT = "socium-propagation-fit"
FIT_FORMAT_VERSION = 2
STATS_OBSERVE_MIN = 10.0
"""Early share = nodes by this minute over nodes by :data:`STATS_HORIZON_MIN` (the issue-28 design's m)."""
STATS_HORIZON_MIN = 150.0


def cascades_digest(trees: Mapping[str, CascadeTree]) -> str:
    """sha256 over the cascades' content (ids, nodes, parents, users, times), independent of dict order.

    Why: ids alone do not say which *version* of a data set was fitted (repairs, horizons); two fits with
    equal digests were trained on identical trees.
    """
    h = hashlib.sha256()
    for cid in sorted(trees):
        tree = trees[cid]
        users, _, delay = tree.events()
        h.update(f"{cid}\x1e".encode())
        for (key, node), user, d in zip(tree.nodes.items(), users, delay.tolist()):
            h.update(f"{key}\x1f{node.parent or ''}\x1f{user}\x1f{d!r}\x1e".encode())
    return "sha256:" + h.hexdigest()


def population_stats(
    trees: Mapping[str, CascadeTree] | Sequence[CascadeTree],
    observe_min: float = STATS_OBSERVE_MIN,
    horizon_min: float = STATS_HORIZON_MIN,
) -> dict[str, list[float]]:
    """Per cascade: size and depth by the horizon, and the share of that size reached by ``observe_min``.

    These are what a transfer check compares (KS), because they are what the forecast's error depends on.
    """
    out: dict[str, list[float]] = {"size": [], "depth": [], "early_share": []}
    for tree in trees.values() if isinstance(trees, Mapping) else trees:
        d = np.array([n.delay for n in tree.nodes.values()])
        depth = np.array([n.depth for n in tree.nodes.values()])
        within = d <= horizon_min
        size = int(within.sum())
        out["size"].append(float(size))
        out["depth"].append(float(depth[within].max(initial=0)))
        out["early_share"].append(float((d <= observe_min).sum()) / size)
    return out


def fit_cascades(
    trees: Mapping[str, CascadeTree],
    *,
    data: Sequence[str] = (),
    kind: str | None = None,
    bootstrap: int = 100,
    seed: int = 0,
    families: Sequence[str] = FAMILIES,
    root_effects: bool = True,
    calibrate: bool = False,
    calibrate_window: tuple[int, int] = (10, 150),
    log: Callable[[str], None] = lambda s: None,
) -> dict[str, Any]:
    """Fit the timing layer on ``trees`` and return the self-contained fit file's dict (format 2).

    ``calibrate``: also choose the intervals' dispersion by 5-fold CV on these same training cascades
    (:func:`~socium.experiments.propagation.fit.dispersion.calibrate_dispersion`; five more fits); else 1.
    ``calibrate_window``: (observe minute, horizon minutes) the CV forecasts at; the intervals are calibrated
    for that window only (Twitter15: 10 / 150; Weibo's CED: 60 / 1440, docs/results.md)."""
    res = fit_timing(
        list(trees.values()),
        families=families,
        bootstrap=bootstrap,
        seed=seed,
        sources=list(data),
        with_root_effects=root_effects,
    )
    population = training_population(list(data), trees, kind)
    res["timing"]["meta"]["training"] = population  # read by transfer scoring of propagation specs
    head: dict[str, Any] = {
        "format": FIT_FORMAT,
        "format_version": FIT_FORMAT_VERSION,
        "socium_version": socium.__version__,
        "timing": res["timing"],
        "cascade_sigma": float(res["estimates"]["cascade_sigma"]),
        "dispersion": 1.0,
        "dispersion_cv": None,
        "training": {
            "ids": list(trees),
            "digest": cascades_digest(trees),
            "n": len(trees),
            "data": list(data),
            "kind": population["kind"],
            "stats": population_stats(trees),
        },
    }
    if calibrate:
        from socium.experiments.propagation.fit.dispersion import (
            calibrate_dispersion,
        )  # lazy: imports the CV, only when asked

        m, horizon = calibrate_window
        cal = calibrate_dispersion(
            trees,
            seed=seed,
            observe_minutes=m,
            horizon_minutes=horizon,
            families=families,
            root_effects=root_effects,
            log=log,
        )
        head["dispersion"], head["dispersion_cv"] = cal["dispersion"], cal
        head["dispersion_sd"] = cal["dispersion_sd"]
    return {**head, **{k: v for k, v in res.items() if k != "timing"}}


@dataclass(frozen=True)
class Fit:
    """A loaded fit file: the timing law, the speed prior and the training population."""

    path: str
    timing: dict[str, Any]
    cascade_sigma: float
    dispersion: float = 1.0
    dispersion_sd: tuple[float, float] = (0.0, 0.0)
    """(floor, per_node) of the log-growth sd added to the intervals (:func:`predictive.prefix_sd`)."""
    dispersion_window: tuple[int, int] | None = None
    """(observe minute, horizon) the dispersion was chosen at in CV; None when not calibrated (or unknown)."""
    training_ids: list[str] = field(default_factory=list)
    training_digest: str | None = None
    training_stats: dict[str, list[float]] | None = None
    training_kind: str | None = None
    socium_version: str | None = None
    format_version: int = FIT_FORMAT_VERSION
    sha256: str = ""
    note: str | None = None
    """How an older file was read (e.g. where ``cascade_sigma`` came from); None for a current file."""

    @property
    def params(self) -> TimingParams:
        return TimingParams.from_dict(self.timing, where=self.path)

    def summary(self) -> dict[str, Any]:
        """What results.json records about the fit (no id list)."""
        return {
            "file": self.path,
            "sha256": self.sha256,
            "format_version": self.format_version,
            "socium_version": self.socium_version,
            "family": self.timing["delay"]["family"],
            "cascade_sigma": self.cascade_sigma,
            "dispersion": self.dispersion,
            "dispersion_sd": {"floor": self.dispersion_sd[0], "per_node": self.dispersion_sd[1]},
            "n_root_effects": len(self.timing.get("root_effects") or {}),
            "training": {"n": len(self.training_ids), "kind": self.training_kind, "digest": self.training_digest},
            "note": self.note,
        }


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ConfigError(f"{where}: expected a finite number >= 0, got {v!r}")
    return float(v)


def load_fit(path: str | Path, *, cascade_sigma: float | None = None) -> Fit:
    """Read a fit file (format 2, or format 1 with a note); ``cascade_sigma`` overrides the file's value.

    A file with no ``cascade_sigma`` anywhere (a bare timing dict) raises :class:`ConfigError` naming the
    file unless ``cascade_sigma`` is given: the forecast's speed conditioning rests on it.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
        data = json.loads(raw)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError(p, None, f"cannot read fit file: {exc}") from None
    if not isinstance(data, dict):
        raise InputFileError(p, None, "fit file: expected a JSON object")
    fmt = data.get("format")
    if fmt is not None and fmt != FIT_FORMAT:
        raise InputFileError(p, None, f"format {fmt!r} is not {FIT_FORMAT!r}")
    version = data.get("format_version", 1 if "timing" in data else 0)
    if not isinstance(version, int) or version > FIT_FORMAT_VERSION:
        raise InputFileError(p, None, f"format_version {version!r}: this socium reads up to {FIT_FORMAT_VERSION}")
    timing = data.get("timing", data)
    TimingParams.from_dict(timing, where=str(p))  # validates, naming the file
    note = None
    if cascade_sigma is not None:
        sigma = _number(cascade_sigma, "--cascade-sigma")
        note = f"cascade_sigma {sigma:g} given by the caller (the file's value is not used)"
    elif "cascade_sigma" in data:
        sigma = _number(data["cascade_sigma"], f"{p}: cascade_sigma")
    elif isinstance(data.get("estimates"), dict) and "cascade_sigma" in data["estimates"]:
        sigma = _number(data["estimates"]["cascade_sigma"], f"{p}: estimates.cascade_sigma")
        note = "fit file from before format 2: cascade_sigma read from estimates.cascade_sigma; no training digest"
    else:
        raise ConfigError(
            f"{p}: no cascade_sigma (a bare timing dict, or not a `socium fit propagation` file): the forecast "
            "needs the prior sd of a cascade's speed; refit with `socium fit propagation`, or state it with "
            "--cascade-sigma S (0: no speed conditioning)"
        )
    sd = data.get("dispersion_sd") or {}  # absent before it existed: no added sd, the file's old meaning
    if not isinstance(sd, dict):
        raise ConfigError(f"{p}: dispersion_sd: expected {{floor: S, per_node: C}}, got {sd!r}")
    dispersion_sd = (
        _number(sd.get("floor", 0.0), f"{p}: dispersion_sd.floor"),
        _number(sd.get("per_node", 0.0), f"{p}: dispersion_sd.per_node"),
    )
    training: dict[str, Any] = data["training"] if isinstance(data.get("training"), dict) else {}
    cal: dict[str, Any] = data["dispersion_cv"] if isinstance(data.get("dispersion_cv"), dict) else {}
    m, horizon = cal.get("observe_minutes"), cal.get("horizon_minutes")
    legacy = (timing.get("meta") or {}).get("training") or {}
    return Fit(
        path=str(p),
        timing=timing,
        cascade_sigma=sigma,
        dispersion=_number(data.get("dispersion", 1.0), f"{p}: dispersion"),
        dispersion_sd=dispersion_sd,
        dispersion_window=(m, horizon) if isinstance(m, int) and isinstance(horizon, int) else None,
        training_ids=[str(i) for i in training.get("ids") or legacy.get("ids") or []],
        training_digest=training.get("digest"),
        training_stats=training.get("stats"),
        training_kind=training.get("kind") or legacy.get("kind"),
        socium_version=data.get("socium_version"),
        format_version=version,
        sha256=hashlib.sha256(raw).hexdigest(),
        note=note,
    )


def write_fit_file(result: Mapping[str, Any], out: str | Path) -> Path:
    """Write a fit file's dict (``--out``: a file path; a folder or an unwritable place is one error)."""
    return write_fit(dict(result), out)
