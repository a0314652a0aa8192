"""Cross-validated propagation scoring: fit on train folds, score NRMSE only on held-out cascades.

Why: a null whose timing is fitted to the very cascades it is scored on proves nothing. Here the
cascades are split into ``cv.folds`` folds (seeded); for each fold the timing parameters are fitted
(:func:`socium.experiments.propagation.fit.fit.fit_timing`) on the *other* folds' trees, and every model is run
on the held-out fold's cascades only. A check refuses any overlap between fitted and scored ids.

Models (``cv.models``):

* ``ic_pooled``: today's baseline -- independent cascade with one pooled ``p_repost`` (``cv.ic_p``,
  taken from the embedded-model runs, not fitted on these trees) on the hourly activation clock
  (``activation`` per step of ``base.step_minutes``).
* ``calibrated``: the exposure-timing layer with the train folds' fitted delays, 1-minute steps,
  independent cascade with ``cv.calibrated_p`` (1: everyone in a tree population eventually
  reshared; see propfit's note on identifiability), no background activation.
* ``llm``: the spec's LLM policy (``base.llm``) on the same fitted timing, so only the decision
  differs from ``calibrated``.

The prediction for a cascade is the mean curve over ``cv.runs`` independent replicas; scores are
the mean NRMSE over held-out cascades per model and curve, with a percentile bootstrap CI over
cascades. Replicas run *in one simulation*: the population is ``cv.runs`` disjoint copies of the
tree's users (copy ``r`` is agents ``r*n .. r*n+n-1``, following only within its copy), each copy's
source author posts the source at step 0 (post id ``r``), and every random draw is keyed by agent
and post ids, so the copies are independent realisations. One run of R copies costs about one run,
where R separate runs would each pay the per-step commit (1-minute steps: 150 commits per run).
"""

from __future__ import annotations

import datetime
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from socium.core.rng import component_rng
from socium.errors import ConfigError
from socium.experiments.propagation.counterfactual import counterfactual_cascade, counterfactual_summary
from socium.experiments.propagation.data.curves import nrmse_curves
from socium.experiments.propagation.data.folds import train_and_held
from socium.experiments.propagation.data.realcascades import earliest_users, subtree_curves
from socium.experiments.propagation.fit.fit import fit_timing, write_fit
from socium.experiments.propagation.forecast.bias import learn_bias
from socium.experiments.propagation.forecast.forecast import (
    CascadeArrays,
    cascade_arrays,
    forecast_summary,
    window_nrmse,
)
from socium.experiments.propagation.forecast.predictive import bias_note, final_bias, forecast_cascade, predict_cascade
from socium.experiments.propagation.sim.cv_config import cv_run_config, replicate_rows
from socium.experiments.propagation.sim.population import cascade_population, oasis_topics, simulated_curves
from socium.experiments.propagation.sim.simcheck import events_curves
from socium.experiments.propagation.sim.simforecast import draw_shifts, grid_prefix, simulate_forecast
from socium.experiments.propagation.spec import CVSpec, PropagationSpec
from socium.experiments.spec import run_config, write_population_csv, write_results
from socium.simulator.timing import TimingParams
from socium.trace.queries.curves import CURVE_NAMES

FORECAST_PURPOSE = 41
"""socium.core.rng stream of the forecast's replicas (apart from rng.py's 1..7 and intervals' 29)."""
FORECAST_SIM_PURPOSE = 44
"""Stream of the simulator forecast's per-replica cascade speeds (``cv.models: [forecast_sim]``)."""
COUNTERFACTUAL_PURPOSE = 42
"""Stream of the counterfactual's replicas: its own, so adding arms never changes the forecast's scores."""
BIAS_PURPOSE = 49
"""Stream of the forecasts of the training cascades that learn ``cv.bias_calibration`` (apart from the scores')."""


def tree_caps(tree: Any, users: list[str]) -> dict[str, float]:
    """What the tree can reach: its size, depth and max breadth (the bias calibration's caps)."""
    return {"scale": float(len(users)), "depth": float(tree.max_depth), "max_breadth": float(tree.max_breadth)}


def learn_fold_bias(
    spec: PropagationSpec, cv: CVSpec, train: list[str], trees: Mapping[str, Any], tp: TimingParams, casc_sd: float
) -> dict[str, Any]:
    """``cv.bias_calibration``'s per-curve ``beta`` of one fold, from forecasts of its *training* cascades by the
    fold's own fit (in-sample for the fit; the held-out fold is never read). Why in-sample is enough here: the
    bias is the model's structure, measured as large on training cascades as on held-out ones (docs/results.md)."""
    m = spec.observe_minutes
    assert m is not None
    rows = []
    for cid in train:
        tree = trees[cid]
        users = earliest_users(tree, spec.max_users)
        real = subtree_curves(tree, users, spec.minutes)
        rng = component_rng(cv.seed, BIAS_PURPOSE, zlib.crc32(cid.encode()))
        pred = predict_cascade(cascade_arrays(tree, users), tp, casc_sd, m, cv.runs, spec.minutes, rng, baselines=())
        mean = pred.points["forecast"]
        rows.append({k: (float(mean[k][-1]), float(real[k][-1]), float(real[k][m])) for k in CURVE_NAMES})
    return {"beta": learn_bias(rows), "n_train": len(rows)}


def chronological_split(
    ids: list[str], folds: int, posted: Mapping[str, datetime.datetime | None]
) -> list[tuple[list[str], list[str]]]:
    """Train on earlier cascades, score later ones: ``ids`` ordered by posting time (ties by id) and cut into
    ``folds`` blocks; pair ``k - 1`` fits blocks ``0 .. k-1`` and scores block ``k`` (the first block is only
    ever trained on). Why beside random folds: a forecast is used on cascades posted after its fit, and a
    drift over time (news cycles, platform changes) is invisible to random folds."""
    if len(ids) < folds:
        raise ConfigError(f"cv.folds: {folds} folds need at least {folds} cascades, got {len(ids)}")
    missing = [i for i in ids if posted.get(i) is None]
    if missing:
        raise ConfigError(
            f"cv.split: chronological needs each cascade's posting time; {missing[0]!r} has none "
            "(Twitter snowflake ids carry it; cascade files give posted_at)"
        )
    order = sorted(ids, key=lambda i: (posted[i], i))
    blocks = [list(b) for b in np.array_split(np.array(order, dtype=object), folds)]
    return [([c for b in blocks[:k] for c in b], blocks[k]) for k in range(1, folds)]


def cv_pairs(
    ids: list[str], cv: CVSpec, posted: Mapping[str, datetime.datetime] | None = None
) -> list[tuple[list[str], list[str]]]:
    """The (train, held) pairs of ``cv.split``: seeded random folds, or chronological blocks (by ``posted``
    where given, e.g. CED's original times, else the Twitter snowflake ids)."""
    if cv.split == "chronological":
        from socium.experiments.propagation.data.cascade_sources import (
            snowflake_time,
        )  # lazy: only for a chronological split

        when = posted if posted is not None else {i: snowflake_time(i) for i in ids}
        return chronological_split(ids, cv.folds, when)
    return train_and_held(ids, cv.folds, cv.seed)


def bootstrap_ci(values: np.ndarray, n_boot: int, seed: int) -> list[float] | None:
    """95% percentile CI of the mean of ``values`` over ``n_boot`` resamples (None when n_boot is 0)."""
    if n_boot <= 0 or len(values) < 2:
        return None
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(32,)))
    means = values[rng.integers(0, len(values), (n_boot, len(values)))].mean(1)
    return [float(x) for x in np.percentile(means, [2.5, 97.5])]


def simulator_forecast(
    spec: PropagationSpec,
    cv: CVSpec,
    tree: Any,
    arrays: CascadeArrays,
    tp: TimingParams,
    casc_sd: float,
    real: dict[str, np.ndarray],
    out: Path,
    rng: np.random.Generator,
) -> dict[str, float | None]:
    """The prefix-conditioned forecast run in socium's simulator (``cv.models: [forecast_sim]``), scored like
    the numpy forecast: NRMSE over minutes ``m .. minutes-1`` of the replicas' mean curves.

    The observed reshares are replayed as seed actions, each replica copy draws its cascade speed from the
    posterior of the prefix as the simulator holds it (on its step grid), and followers of observed users
    wake only after minute ``m`` (:mod:`~socium.experiments.propagation.sim.simforecast`).
    """
    m, dt = spec.observe_minutes, cv.step_minutes
    assert m is not None  # cv.models: forecast_sim needs observe_minutes (PropagationSpec checks it)
    g = draw_shifts(grid_prefix(arrays, m, dt), tp, casc_sd, m, cv.runs, rng)
    events = simulate_forecast(tree, tp, casc_sd, m, g, out, seed=cv.seed, dt=dt, minutes=spec.minutes)
    sims = events_curves(events, spec.minutes)
    out_row: dict[str, float | None] = {c: window_nrmse(sims[c].mean(0), real[c], m, spec.minutes) for c in CURVE_NAMES}
    out_row["final_scale"] = float(sims["scale"].mean(0)[-1])
    return out_row


def score_cascade(
    spec: PropagationSpec,
    cv: CVSpec,
    cid: str,
    tree: Any,
    timing: dict[str, Any] | None,
    out: Path,
    fold: int | None,
    topics: dict[str, dict[str, str]],
    force: bool = False,
    casc_sd: float = 0.0,
    bias: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Run every ``cv.models`` model on one cascade with ``timing`` (``cv.runs`` replicas) and score it.

    Shared by cross-validation (``fold`` k: runs under ``cv/fold{k}``) and transfer scoring of a saved fit
    (``fold`` None: runs under ``transfer``), so both score exactly the same way. With the spec's
    ``observe_minutes`` (cross-validation only) the models are also scored on the window after the
    observed prefix, and the prefix-conditioned forecast and its baselines are added
    (:mod:`~socium.experiments.propagation.forecast.forecast`; ``casc_sd``: the fold's fitted cascade_sigma).
    """
    users = earliest_users(tree, spec.max_users)
    sim_models = [m for m in cv.models if m != "forecast_sim"]
    if sim_models:  # a forecast-only run (cv.models: []) simulates nothing: no population file to write
        rows, _ = cascade_population(tree, users, spec, None, cv.seed)
        pop_csv = write_population_csv(out / "inputs" / f"{cid}.csv", replicate_rows(rows, cv.runs))
    text = spec.source_texts.get(cid) or topics.get(cid, {}).get("text") or "(source text not available)"
    real = subtree_curves(tree, users, spec.minutes)
    row: dict[str, Any] = {
        "agents": len(users),
        "real_final": {c: int(real[c][-1]) for c in CURVE_NAMES},
        "models": {},
    }
    runs_dir = out / "transfer" if fold is None else out / "cv" / f"fold{fold}"
    for model in sim_models:  # forecast_sim, the prefix-conditioned forecast in the simulator: below
        acc = {c: np.zeros(spec.minutes) for c in CURVE_NAMES}
        cfg = cv_run_config(model, spec, cv, cid, pop_csv, text, timing, cv.seed, len(rows))
        info = run_config(cfg, runs_dir / model / cid, force=force)
        for r in range(cv.runs):  # seed posts are applied first at step 0: copy r's source is post r
            sim = simulated_curves(info.run_dir, r, spec.minutes)
            for c in CURVE_NAMES:
                acc[c] += sim[c] / cv.runs
        row["models"][model] = {
            "nrmse": nrmse_curves(acc, real, spec.minutes),
            "final": {c: float(acc[c][-1]) for c in CURVE_NAMES},
        }
        if spec.observe_minutes:  # scored like the forecast: on the window after the prefix
            m = spec.observe_minutes
            row["models"][model]["nrmse_remaining"] = {
                c: window_nrmse(acc[c], real[c], m, spec.minutes) for c in CURVE_NAMES
            }
    if spec.observe_minutes and timing is not None and fold is not None:
        tp = TimingParams.from_dict(timing)
        rng = component_rng(cv.seed, FORECAST_PURPOSE, fold, zlib.crc32(cid.encode()))
        arrays = cascade_arrays(tree, users)
        row["forecast"] = forecast_cascade(
            arrays, tp, casc_sd, spec.observe_minutes, cv.runs, spec.minutes, real, rng, bias, tree_caps(tree, users)
        )
        if "forecast_sim" in cv.models:
            sim_rng = component_rng(cv.seed, FORECAST_SIM_PURPOSE, fold, zlib.crc32(cid.encode()))
            row["forecast"]["forecast_sim"] = simulator_forecast(
                spec, cv, tree, arrays, tp, casc_sd, real, runs_dir / "forecast_sim" / cid, sim_rng
            )
        if spec.counterfactual is not None:
            row["label"] = topics.get(cid, {}).get("label") or "unknown"
            row["counterfactual"] = counterfactual_cascade(
                arrays,
                tp,
                casc_sd,
                spec.observe_minutes,
                cv.runs,
                spec.minutes,
                spec.counterfactual,
                component_rng(cv.seed, COUNTERFACTUAL_PURPOSE, fold, zlib.crc32(cid.encode())),
                real["scale"],
            )
    return row


def run_propagation_cv(
    spec: PropagationSpec,
    out: Path,
    trees: dict[str, Any],
    *,
    force: bool = False,
    log: Callable[[str], None] = lambda s: None,
    info: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Fit per fold, run every model on held-out cascades, write and return results.json's dict.

    ``info``: per-cascade facts of a data set other than OASIS's list (CED: label, posted_at); with it every
    row carries its label and the forecast is also summarised per label."""
    cv = spec.cv
    assert cv is not None  # the study calls this only for a spec with cv:
    ids = list(trees)
    posted = {c: datetime.datetime.fromisoformat(v["posted_at"]) for c, v in (info or {}).items() if v.get("posted_at")}
    folds = cv_pairs(ids, cv, posted or None)
    topics = {**oasis_topics(Path(spec.topics_csv) if spec.topics_csv else None), **(info or {})}
    per_cascade: list[dict[str, Any]] = []
    fold_fits: list[dict[str, Any]] = []
    for k, (train, held) in enumerate(folds):
        if set(train) & set(held):  # the one rule of cross-validation, checked rather than assumed
            raise ConfigError(f"cv fold {k}: cascades both fitted and scored")
        log(f"fold {k}: fitting timing on {len(train)} cascades, scoring {len(held)}")
        fit = fit_timing(
            [trees[c] for c in train],
            families=cv.families,
            bootstrap=cv.fit_bootstrap,
            seed=cv.seed,
            sources=train,
            with_root_effects=cv.root_effects,
        )
        write_fit(fit, out / "cv" / f"fold{k}" / "timing.json")
        fold_fits.append(
            {
                "fold": k,
                "train": train,
                "held_out": held,
                "family": fit["timing"]["delay"]["family"],
                "estimates": fit["estimates"],
                "ci95": fit["ci95"],
                "families": fit["families"],
            }
        )
        sigma = fit["estimates"]["cascade_sigma"]
        bias = None
        if cv.bias_calibration and spec.observe_minutes:  # learnt on this fold's training cascades only
            learnt = learn_fold_bias(spec, cv, train, trees, TimingParams.from_dict(fit["timing"]), sigma)
            fold_fits[-1]["bias_calibration"] = learnt
            bias = learnt["beta"]
            log(f"fold {k}: bias calibration beta {bias} from {learnt['n_train']} training cascades")
        for cid in held:
            row = {
                "id": cid,
                "fold": k,
                **score_cascade(spec, cv, cid, trees[cid], fit["timing"], out, k, topics, force, sigma, bias),
            }
            if info and cid in info:
                row["label"] = info[cid].get("label") or "unknown"
            per_cascade.append(row)
            log(
                f"  {cid}: "
                + "  ".join(
                    f"{m} " + "/".join(f"{row['models'][m]['nrmse'][c]:.2f}" for c in CURVE_NAMES)
                    for m in row["models"]
                )
                + (
                    f"  forecast/null scale after {spec.observe_minutes} min: "
                    f"{row['forecast']['forecast']['scale']:.3f}/{row['forecast']['null']['scale']:.3f}"
                    if "forecast" in row
                    else ""
                )
            )
    summary: dict[str, Any] = {
        "note": "every score is on cascades held out from the fit of that fold's parameters"
        + (
            "; chronological split: each block scored by a fit on the blocks posted before it"
            if cv.split == "chronological"
            else ""
        ),
        "split": cv.split,
        "reference": {"oasis_nrmse": 0.30, "targets": {"scale": 0.15, "depth": 0.20, "max_breadth": 0.15}},
    }
    for model in (m for m in cv.models if m != "forecast_sim"):  # forecast_sim is summarised with the forecast
        entry: dict[str, Any] = {"n": len(per_cascade), "nrmse": {}, "ci95": {}, "per_fold": {}}
        for c in CURVE_NAMES:
            vals = np.array([p["models"][model]["nrmse"][c] for p in per_cascade])
            entry["nrmse"][c] = float(vals.mean())
            entry["ci95"][c] = bootstrap_ci(vals, spec.bootstrap, cv.seed)
            entry["per_fold"][c] = [
                float(np.mean([p["models"][model]["nrmse"][c] for p in per_cascade if p["fold"] == f]))
                for f in range(len(folds))
            ]
        summary[model] = entry
    if spec.observe_minutes:
        summary["forecast"] = forecast_summary(per_cascade, spec.observe_minutes, cv.seed)
        if info:  # side by side per label (CED: rumour vs non-rumour), each on its own held-out cascades
            labels = sorted({str(p.get("label")) for p in per_cascade})
            summary["forecast_by_label"] = {
                lab: forecast_summary(
                    [p for p in per_cascade if str(p.get("label")) == lab], spec.observe_minutes, cv.seed
                )
                for lab in labels
            }
    if cv.bias_calibration and spec.observe_minutes and per_cascade:  # the before / after, on the same replicas
        real = [float(p["real_final"]["scale"]) for p in per_cascade]
        summary["bias_calibration"] = {
            "beta_by_fold": [f.get("bias_calibration", {}).get("beta") for f in fold_fits],
            **{
                name: final_bias([float(p["forecast"][name]["final_scale"]) for p in per_cascade], real)
                for name in ("forecast", "forecast_bc")
            },
        }
        for name in ("forecast", "forecast_bc"):
            note = bias_note(summary["bias_calibration"][name], name)
            log(f"WARNING: {note}" if note else f"{name}: no bias of the final size distinguishable from 0")
    if spec.counterfactual is not None and spec.observe_minutes:  # the spec has both or neither
        summary["counterfactual"] = counterfactual_summary(
            per_cascade, spec.counterfactual, spec.observe_minutes, cv.seed
        )
    results = {
        "experiment": "propagation",
        "mode": "cv",
        "spec": spec.model_dump(mode="json"),
        "minutes": spec.minutes,
        "folds": fold_fits,
        "cascades": per_cascade,
        "summary": summary,
    }
    write_results(out, results)
    return results
