"""Transfer scoring: a saved timing fit scored on other trees with replicas, never refitted.

Why: cross-validation refits the timing on every train split, so it cannot answer "how well does
*this* fit (the one a study ships) do on another data set?". Here the parameter file written by
``socium fit propagation`` is loaded once, every cascade of the spec is run with ``cv.runs`` replicas
per model exactly as a cross-validation fold scores its held-out cascades
(:func:`~socium.experiments.propagation.cv.cv.score_cascade`), and nothing is fitted.

What the fit was trained on matters: fitting on all 1,490 Twitter15 trees instead of OASIS's 134 made
held-out scale NRMSE worse by +0.040 (issue 28). So the fit file records its training population
(:func:`training_population`: which data, which kind, how many trees, their sizes), results.json and the
report print it beside the scored population. A fit file of format 2 also records the training cascades'
size, depth and early-share distributions; then the warning compares those with the scored cascades' by
KS (:mod:`~socium.experiments.propagation.fit.transfer_check`, issue 37: the kinds warned on a matched
population). An older file falls back to the kinds and the median size.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from socium.core.intervals import nonnegative_interval
from socium.errors import ConfigError
from socium.experiments.propagation.cv.cv import score_cascade
from socium.experiments.propagation.data.realcascades import CascadeTree
from socium.experiments.propagation.data.trained_on import population_kind, training_population
from socium.experiments.propagation.fit.fit_file import population_stats
from socium.experiments.propagation.fit.transfer_check import ks_table, ks_warning
from socium.experiments.propagation.sim.population import oasis_topics
from socium.experiments.propagation.spec import CVSpec, PropagationSpec, fit_file
from socium.experiments.spec import write_results
from socium.simulator.timing import TimingParams
from socium.trace.queries.curves import CURVE_NAMES

TRANSFER_RUNS = 40
"""Replicas per cascade when the spec has no ``cv:`` block: the count the cross-validation results use."""
SIZE_RATIO_WARN = 2.0
"""Median tree sizes further apart than this factor are a different population even of the same kind."""
_FIT_ONLY = ("folds", "families", "root_effects", "fit_bootstrap")


def scored_population(spec: PropagationSpec, trees: Mapping[str, CascadeTree]) -> dict[str, Any]:
    """The spec's population described as :func:`training_population` describes a fit's."""
    own = {Path(f).stem for f in spec.tree_files}
    named = [i for i in trees if i not in own]
    kind = population_kind(ids=named, files=bool(own)) if spec.cascades or spec.tree_files else "oasis"
    data = ([*spec.tree_files] if own else []) + (["twitter15 ids"] if spec.cascades else [])
    return training_population(data or ["oasis sample"], trees, kind)


def population_warning(train: dict[str, Any] | None, scored: dict[str, Any]) -> str | None:
    """Why the scores may not transfer: a fit without a recorded population, another kind, other sizes."""
    if not train:
        return (
            "the timing file does not record its training population (fitted before issue 28): "
            "refit it with `socium fit propagation` to have it checked"
        )
    if train.get("kind") != scored["kind"]:
        return (
            f"the fit was trained on {train.get('kind')} trees ({train.get('n_trees')}), scored here on "
            f"{scored['kind']} trees ({scored['n_trees']}): the fit population changes held-out error"
        )
    a, b = float(train.get("users_median") or 0), float(scored["users_median"] or 0)
    if a > 0 and b > 0 and max(a, b) / min(a, b) > SIZE_RATIO_WARN:
        return f"median tree size {a:g} users in training vs {b:g} scored: a different population"
    return None


def transfer_settings(spec: PropagationSpec) -> CVSpec:
    """Models, replicas and seed from the spec's ``cv:`` block (its fitting keys refused), or the defaults."""
    if spec.cv is None:
        return CVSpec(models=["calibrated"], runs=TRANSFER_RUNS)
    set_keys = [k for k in _FIT_ONLY if k in spec.cv.model_fields_set]
    if set_keys:
        raise ConfigError(
            f"cv.{set_keys[0]}: a saved timing fit ({fit_file(spec)}) is scored as it is, never refitted; "
            "remove the fitting keys or the fit file"
        )
    return spec.cv


def run_propagation_transfer(
    spec: PropagationSpec,
    out: Path,
    trees: dict[str, CascadeTree],
    *,
    force: bool = False,
    log: Callable[[str], None] = lambda s: None,
) -> dict[str, Any]:
    """Score the spec's saved fit on every tree with replicas; write and return results.json's dict."""
    path = Path(fit_file(spec) or "")
    TimingParams.load(path)  # validates the file, naming it in any error
    raw = path.read_bytes()
    data = json.loads(raw)
    timing = data.get("timing", data)
    cv = transfer_settings(spec)
    train = (timing.get("meta") or {}).get("training")
    scored = scored_population(spec, trees)
    stats = (data.get("training") or {}).get("stats") if isinstance(data.get("training"), dict) else None
    ks: dict[str, Any] = {}
    if stats:  # a format-2 fit file: compare the cascades themselves (KS), not the one-word kinds
        ks = ks_table(stats, population_stats(trees))
        warning = ks_warning(ks)
    else:
        warning = population_warning(train, scored)
    overlap = sorted(set((train or {}).get("ids") or ()) & set(trees))
    if overlap:  # scoring a fit on its own training trees is not transfer: say so, loudly
        warning = f"{len(overlap)} scored cascades were in the fit's training trees (e.g. {overlap[0]}); " + (
            warning or "these scores are in-sample"
        )
    if warning:
        log(f"WARNING: {warning}")
    log(f"transfer: scoring {path} on {len(trees)} cascades, {cv.runs} replicas, no refit")
    topics = oasis_topics(Path(spec.topics_csv) if spec.topics_csv else None)
    per_cascade = []
    for cid, tree in trees.items():
        row = {"id": cid, **score_cascade(spec, cv, cid, tree, timing, out, None, topics, force)}
        per_cascade.append(row)
        log(f"  {cid}: " + "  ".join(f"{m} {row['models'][m]['nrmse']['scale']:.3f}" for m in cv.models))
    summary: dict[str, Any] = {"note": "a saved fit scored as it is: nothing was fitted on these cascades"}
    for model in cv.models:
        ivs = {
            c: nonnegative_interval([p["models"][model]["nrmse"][c] for p in per_cascade], seed=cv.seed)
            for c in CURVE_NAMES
        }
        summary[model] = {
            "n": len(per_cascade),
            "nrmse": {c: iv.estimate for c, iv in ivs.items()},
            "ci95": {c: [iv.low, iv.high] if iv.has_bounds else None for c, iv in ivs.items()},
        }
    results = {
        "experiment": "propagation",
        "mode": "transfer",
        "spec": spec.model_dump(mode="json"),
        "minutes": spec.minutes,
        "fit": {
            "file": str(path),
            "sha256": hashlib.sha256(raw).hexdigest(),
            "family": timing["delay"]["family"],
            "training": {k: v for k, v in (train or {}).items() if k != "ids"} or None,
        },
        "scored_population": {k: v for k, v in scored.items() if k != "ids"},
        "population_warning": warning,
        "population_ks": ks,
        "in_training": overlap,
        "cascades": per_cascade,
        "summary": summary,
    }
    write_results(out, results)
    return results
