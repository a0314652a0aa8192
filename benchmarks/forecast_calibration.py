"""Why the forecast's intervals under-cover on other Twitter15 trees, and whether a CV-chosen calibration fixes it.

The saved OASIS fit's intervals were calibrated by 5-fold CV on its 134 training cascades (issue 37) and
under-cover on the other Twitter15 trees (84% at nominal 90%). This script measures, with every
calibration chosen in CV on training cascades only and the scored trees never used to choose it:

* ``oasis``: training = OASIS's 134 cascades, scored = the other Twitter15 trees (the published design);
* ``random``: training = 134 trees drawn (seed 0) from those other trees, scored = the rest of them: the
  same procedure when the training cascades come from the scored population;

and for each, coverage of the final size's central 50 / 80 / 90% intervals (Wilson 95%) with the raw
replicas, with ``k`` alone (the issue-37 calibrator) and with ``k`` plus the prefix-size sd
(:func:`socium.experiments.propagation.forecast.predictive.prefix_sd`), overall and by nodes observed at minute m.

    PYTHONPATH=src python benchmarks/forecast_calibration.py [--design oasis --design random] [--json out.json]
        [--pool-minutes 1 --pool-minutes 2 --pool-minutes 3 --pool-minutes 5]
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from pathlib import Path

import numpy as np

from socium import forecast as fc
from socium.core.intervals import proportion_interval
from socium.core.rng import component_rng
from socium.experiments.propagation.data.realcascades import earliest_users, subtree_curves
from socium.experiments.propagation.fit.dispersion import FLOOR_GRID, GRID, PER_NODE_GRID, Finals, cv_finals
from socium.experiments.propagation.fit.fit import fit_timing
from socium.experiments.propagation.forecast.forecast import cascade_arrays
from socium.experiments.propagation.forecast.predictive import LEVELS, predict_cascade
from socium.experiments.propagation.forecast_run import FORECAST_TOOL_PURPOSE
from socium.simulator.timing import TimingParams

NOMINAL = {f"{int(lv * 100)}": lv for lv in LEVELS}
BINS = ((0, 10), (10, 25), (25, 50), (50, 100), (100, 10**9))


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def pick(f: Finals, floors: tuple[float, ...], per_nodes: tuple[float, ...]) -> tuple[float, float, float]:
    """The grid point closest to nominal coverage on ``f`` (the CV's rule in dispersion.calibrate_dispersion)."""
    best = None
    for k in GRID:
        for fl in floors:
            for pn in per_nodes:
                c = f.coverage(k, (fl, pn))
                cand = (round(sum(abs(c[lv] - v) for lv, v in NOMINAL.items()), 12), k, fl, pn)
                best = cand if best is None or cand < best else best
    assert best is not None
    return best[1], best[2], best[3]


def scored_finals(trees: dict, train: dict, m: int, replicas: int, H: int) -> Finals:
    fit = fit_timing(list(train.values()), bootstrap=0, seed=0, with_root_effects=True)
    tp, sigma = TimingParams.from_dict(fit["timing"]), float(fit["estimates"]["cascade_sigma"])
    xs, ys, obs, caps = [], [], [], []
    for cid, tree in trees.items():
        users = earliest_users(tree, None)
        real = subtree_curves(tree, users, H)
        rng = component_rng(0, FORECAST_TOOL_PURPOSE, m, zlib.crc32(cid.encode()))
        pred = predict_cascade(cascade_arrays(tree, users), tp, sigma, m, replicas, H, rng, baselines=())
        xs.append(pred.samples["forecast"]["scale"][:, -1])
        ys.append(float(real["scale"][-1]))
        obs.append(float(real["scale"][m]))
        caps.append(float(len(users)))
    return Finals(np.array(xs), np.array(ys), np.array(obs), np.array(caps))


def cov_row(f: Finals, k: float, sd: tuple[float, float]) -> str:
    c = f.coverage(k, sd)
    n = len(f.y)
    parts = []
    for lv in NOMINAL:
        ci = proportion_interval(round(c[lv] * n), n)
        parts.append(f"{100 * c[lv]:.1f} ({100 * ci.low:.1f}-{100 * ci.high:.1f})")
    return " | ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--design", action="append", choices=("oasis", "random"), default=None)
    ap.add_argument("--observe-minutes", type=int, default=10)
    ap.add_argument("--replicas", type=int, default=40)
    ap.add_argument("--json", default=None)
    ap.add_argument("--pool-minutes", type=int, action="append", default=[], help="e.g. 1 2 3 5 (repeat)")
    a = ap.parse_args()
    m, R, H = a.observe_minutes, a.replicas, 150
    others = fc.load_cascades("twitter15-not-oasis").trees
    out: dict = {"load_before": _load()}
    for design in a.design or ["oasis", "random"]:
        t0 = time.perf_counter()
        if design == "oasis":
            train = fc.load_cascades("oasis").trees
            scored = others
        else:
            ids = sorted(others)
            pick_ids = set(np.random.default_rng(0).choice(len(ids), size=134, replace=False).tolist())
            train = {ids[i]: others[ids[i]] for i in sorted(pick_ids)}
            scored = {c: t for c, t in others.items() if c not in train}
        cv, _ = cv_finals(train, minutes=(m,), replicas=R, horizon_minutes=H)
        k_only = pick(cv, (0.0,), (0.0,))
        full = pick(cv, FLOOR_GRID, PER_NODE_GRID)
        choices = {"raw": (1.0, 0.0, 0.0), "k only": k_only, "k + prefix sd": full}
        if a.pool_minutes:  # small prefixes from the same training cascades observed earlier
            pooled, _ = cv_finals(train, minutes=(*a.pool_minutes, m), replicas=R, horizon_minutes=H)
            choices[f"k + prefix sd, CV pooled over minutes {a.pool_minutes + [m]}"] = pick(
                pooled, FLOOR_GRID, PER_NODE_GRID
            )
        test = scored_finals(scored, train, m, R, H)
        print(f"\n## design {design}: train n = {len(train)}, scored n = {len(scored)}, m = {m}, R = {R}")
        print(f"train nodes at minute m: median {np.median(cv.observed):g}, min {cv.observed.min():g}")
        print(
            f"CV choice: k only -> k = {k_only[0]:g}; k + prefix sd -> k = {full[0]:g}, floor {full[1]:g}, "
            f"per_node {full[2]:g}"
        )
        for name, (k, fl, pn) in choices.items():
            print(f"CV choice, {name}: k = {k:g}, floor {fl:g}, per_node {pn:g}")
        print("| calibration | where | 50% | 80% | 90% |\n|---|---|---|---|---|")
        rows = {}
        for name, (k, fl, pn) in choices.items():
            print(f"| {name} | CV on training (n = {len(cv.y)}) | {cov_row(cv, k, (fl, pn))} |")
            print(f"| {name} | scored (n = {len(test.y)}) | {cov_row(test, k, (fl, pn))} |")
            rows[name] = {
                "k": k,
                "floor": fl,
                "per_node": pn,
                "cv": cv.coverage(k, (fl, pn)),
                "scored": test.coverage(k, (fl, pn)),
                "by_observed": {},
            }
            for lo, hi in BINS:
                s = (test.observed >= lo) & (test.observed < hi)
                sub = Finals(test.x[s], test.y[s], test.observed[s], test.cap[s])
                rows[name]["by_observed"][f"{lo}-{hi}"] = {"n": int(s.sum()), **sub.coverage(k, (fl, pn))}
                print(
                    f"| {name} | scored, {lo}-{hi if hi < 10**9 else 'inf'} nodes at m (n = {s.sum()}) | "
                    f"{cov_row(sub, k, (fl, pn))} |"
                )
        out[design] = {
            "train_n": len(train),
            "scored_n": len(scored),
            "rows": rows,
            "seconds": round(time.perf_counter() - t0, 1),
        }
    out["load_after"] = _load()
    print(f"\nload average before {out['load_before']}, after {out['load_after']}")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
