"""Where the calibrated null's held-out scale error comes from (issue 12): residuals and what-if variants.

Why: on the 134-cascade CV the calibrated null (fitted timing, tree population, p = 1) scores about
0.15 scale NRMSE. In a tree population every user reshares once, so the *structure* of each cascade
is given and the error is all *timing*: how many of the tree's users the model has reached by each
minute. This script answers which cascades carry the error, in which direction, and how much of it a
cascade-level speed (which no fitted parameter can know for a held-out cascade) explains.

Two parts:

* ``--results DIR ...``: per-cascade residuals of finished CV runs (``socium experiment propagation
  ... cv``): final scale at 150 min simulated vs real, share over/under-predicted, the worst cascades.
* emulation (default on): the calibrated null re-simulated in numpy with the same per-fold fits on
  train cascades only (``fit_timing``), the same delay law (influence shift, user factor), the same
  1-minute wake-up rounding and ``RESHARE_AT`` stamp, ``--runs`` replicas per prediction. It is not the
  simulator (no trace, no feeds) but reproduces its held-out scores to about 0.01; it is fast enough to
  compare variants that keep every fit on train folds:

  - ``fitted``: the calibrated null as the CV runs it;
  - ``source_effect``: plus an empirical-Bayes shift per source author seen in training (mean cascade
    residual of that author's training cascades, shrunk by a one-way random-effects ANOVA);
  - ``oracle_shift``: each held-out cascade shifted by its *own* mean log-delay residual: not a
    model (it reads the held-out delays), only a bound on what knowing each cascade's speed would give.

    python benchmarks/propagation_diagnosis.py --seeds 0 1 2 [--results runs/results/propagation-cv-s0]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from socium.experiments.propagation.data.curves import (
    CURVE_NAMES,
    cascade_curves_from_events,
    node_depths,
    nrmse_curves,
)
from socium.experiments.propagation.data.folds import train_and_held
from socium.experiments.propagation.data.realcascades import earliest_users, subtree_curves
from socium.experiments.propagation.fit.fit import fit_timing, tree_edges
from socium.experiments.propagation.spec import PropagationSpec
from socium.experiments.propagation.study import load_trees
from socium.simulator.timing import MIN_DELAY_MIN, TimingParams
from socium.trace.queries.cascades import RESHARE_AT

SPEC = Path(__file__).resolve().parents[1] / "examples" / "results" / "propagation-cv.yaml"
MINUTES = 150


def emulate(tree: Any, tp: TimingParams, shift: float, rng: np.random.Generator, runs: int) -> dict[str, np.ndarray]:
    """Mean curves of ``runs`` replicas of the calibrated null on ``tree`` (p = 1, 1-minute steps)."""
    _, parent, _ = tree.events()
    n = len(parent)
    children = np.bincount(parent[parent >= 0], minlength=n)
    order = np.argsort(node_depths(parent), kind="stable")
    acc = {c: np.zeros(MINUTES) for c in CURVE_NAMES}
    for _ in range(runs):
        z = tp.user_sigma * rng.standard_normal(n)
        u, v = rng.random(n), rng.random(n)
        step = np.zeros(n)
        for i in order:
            p = parent[i]
            if p < 0:
                continue
            logd = tp.log_delays(u[i : i + 1], v[i : i + 1], float(children[p]), float(children[0]), z[i : i + 1])
            delay = math.exp(min(float(logd[0]) + shift, 50.0))
            step[i] = step[p] + max(1, math.ceil(max(delay, MIN_DELAY_MIN) - 1e-9))
        sim = cascade_curves_from_events(parent, np.where(parent < 0, 0.0, step + RESHARE_AT), MINUTES)
        for c in CURVE_NAMES:
            acc[c] += sim[c] / runs
    return acc


def _residual_means(trees: list[Any], tp: TimingParams) -> np.ndarray:
    """Per-cascade mean of log delay minus the fitted influence shift."""
    e = tree_edges(trees)
    r = np.log(e.delay) - tp.b_author * e.x_author - tp.b_root * e.x_root
    return np.bincount(e.cascade, r, minlength=len(trees)) / np.maximum(np.bincount(e.cascade, minlength=len(trees)), 1)


def source_effects(trees: list[Any], tp: TimingParams) -> dict[str, float]:
    """Empirical-Bayes shift per source author from training cascades (0-mean; ANOVA shrinkage)."""
    cm = _residual_means(trees, tp)
    cm = cm - cm.mean()
    roots = [t.root_user for t in trees]
    names, g, m = np.unique(roots, return_inverse=True, return_counts=True)
    k, n = len(names), len(cm)
    if k < 2 or n <= k:
        return {}
    means = np.bincount(g, cm) / m
    msw = float(np.sum((cm - means[g]) ** 2)) / (n - k)
    msb = float(np.sum(m * (means - cm.mean()) ** 2)) / (k - 1)
    n0 = (n - float(np.sum(m**2)) / n) / (k - 1)
    ta2 = max((msb - msw) / n0, 0.0)
    shrink = ta2 / (ta2 + msw / m) if ta2 > 0 else np.zeros(k)
    return {str(u): float(s * mu) for u, s, mu in zip(names, shrink, means)}


def emulation(trees: dict[str, Any], seeds: list[int], runs: int) -> dict[str, Any]:
    ids = list(trees)
    out: dict[str, Any] = {}
    for seed in seeds:
        rng = np.random.default_rng(seed)
        scores: dict[str, list[dict[str, float]]] = {"fitted": [], "source_effect": [], "oracle_shift": []}
        rows = []
        for train, held in train_and_held(ids, 5, seed):
            fit = fit_timing([trees[c] for c in train], bootstrap=0, seed=seed)
            tp = TimingParams.from_dict(fit["timing"])
            et = tree_edges([trees[c] for c in train])  # oracle shifts are relative to the train edges' mean
            train_mean = float(np.mean(np.log(et.delay) - tp.b_author * et.x_author - tp.b_root * et.x_root))
            eff = source_effects([trees[c] for c in train], tp)
            own = _residual_means([trees[c] for c in held], tp) - train_mean
            for j, cid in enumerate(held):
                tree = trees[cid]
                real = subtree_curves(tree, earliest_users(tree, None), MINUTES)
                for name, shift in (
                    ("fitted", 0.0),
                    ("source_effect", eff.get(str(tree.root_user), 0.0)),
                    ("oracle_shift", float(own[j])),
                ):
                    sim = emulate(tree, tp, shift, rng, runs)
                    scores[name].append(nrmse_curves(sim, real, MINUTES))
                    if name == "fitted":
                        rows.append(
                            {
                                "id": cid,
                                "n": len(tree.nodes),
                                "real": int(real["scale"][-1]),
                                "sim": float(sim["scale"][-1]),
                                "nrmse": scores[name][-1]["scale"],
                            }
                        )
        out[str(seed)] = {
            "nrmse": {k: {c: float(np.mean([s[c] for s in v])) for c in CURVE_NAMES} for k, v in scores.items()},
            "reach": _reach(rows),
        }
        print(f"seed {seed}: " + "; ".join(f"{k} {_fmt(v)}" for k, v in out[str(seed)]["nrmse"].items()), flush=True)
    return out


def _reach(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How the fraction of a tree reached by 150 min differs, real vs simulated, across cascades."""
    real = np.array([r["real"] / r["n"] for r in rows])
    sim = np.array([r["sim"] / r["n"] for r in rows])
    return {
        "real_frac_q10_50_90": np.quantile(real, [0.1, 0.5, 0.9]).round(3).tolist(),
        "sim_frac_q10_50_90": np.quantile(sim, [0.1, 0.5, 0.9]).round(3).tolist(),
        "corr_real_sim_frac": round(float(np.corrcoef(real, sim)[0, 1]), 3),
    }


def _fmt(d: dict[str, float]) -> str:
    return " / ".join(f"{d[c]:.4f}" for c in CURVE_NAMES)


def residuals(dirs: list[str]) -> dict[str, Any]:
    """Per-cascade final-scale residuals of finished CV runs (mean over the given seeds per cascade)."""
    per: dict[str, list[tuple[float, float, float]]] = {}
    for d in dirs:
        res = json.loads((Path(d) / "results.json").read_text(encoding="utf-8"))
        for c in res["cascades"]:
            m = c["models"]["calibrated"]
            per.setdefault(c["id"], []).append((c["real_final"]["scale"], m["final"]["scale"], m["nrmse"]["scale"]))
    ids = sorted(per)
    real = np.array([np.mean([x[0] for x in per[i]]) for i in ids])
    sim = np.array([np.mean([x[1] for x in per[i]]) for i in ids])
    err = np.array([float(np.mean([x[2] for x in per[i]])) for i in ids])
    rel = (sim - real) / real
    order = np.argsort(-err)
    top = int(max(1, round(0.1 * len(ids))))
    return {
        "n_cascades": len(ids),
        "mean_scale_nrmse": float(err.mean()),
        "over_predicted_share": float(np.mean(rel > 0)),
        "rel_final_error_mean_median": [float(rel.mean()), float(np.median(rel))],
        "mean_nrmse_over_vs_under": [float(err[rel > 0].mean()), float(err[rel <= 0].mean())],
        "worst_10pct_share_of_error": float(err[order[:top]].sum() / err.sum()),
        "worst": [
            {"id": ids[i], "real150": float(real[i]), "sim150": round(float(sim[i]), 1), "nrmse": round(err[i], 3)}
            for i in order[:8]
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--runs", type=int, default=5, help="replicas per emulated prediction (the CV uses 5)")
    ap.add_argument("--results", nargs="*", default=[], help="finished CV output folders for per-cascade residuals")
    ap.add_argument("--no-emulation", action="store_true")
    ap.add_argument("--json", default=None, help="write everything to this JSON file")
    a = ap.parse_args()
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    if a.results:
        out["residuals"] = residuals(a.results)
        print(json.dumps(out["residuals"], indent=1))
    if not a.no_emulation:
        spec = PropagationSpec.model_validate(yaml.safe_load(SPEC.read_text(encoding="utf-8")))
        out["emulation"] = emulation(load_trees(spec), a.seeds, a.runs)
        print(json.dumps({k: v["reach"] for k, v in out["emulation"].items()}))
    out["wall_s"] = round(time.perf_counter() - t0, 1)
    out["loadavg_end"] = os.getloadavg()
    print(f"wall {out['wall_s']} s, load average at end {' '.join(f'{x:.2f}' for x in out['loadavg_end'])}")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
