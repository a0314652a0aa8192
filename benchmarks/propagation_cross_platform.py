"""Across platforms: the Twitter15 timing fit forecasting Weibo, the Weibo fit forecasting Twitter15 (issue 38).

Why: every validity number socium reported came from one data family (Twitter rumour trees of 2015-16). Here
each platform's fit forecasts the other's cascades, and the loss is measured against that platform's own
(in-domain) fit on the very same cascades, paired per cascade.

* Twitter fit: OASIS's 134 Twitter15 cascades (the fit the forecast issue ships). Twitter targets: the
  Twitter15 trees outside those 134 (a seeded sample of ``--n``), forecast from minute 10, scored over
  minutes 10..149 (the Twitter15 forecast's window).
* Weibo fit: ``--wb-train`` (600) CED cascades posted before 2013-01-01, a seeded sample (chronological: the
  fit never sees a later cascade; the sample keeps the fit to minutes on a 2-core machine).
  Weibo targets: CED cascades posted 2013-01-01 .. 2013-06-30 with >= 10 reshares in their first hour (a
  seeded sample of ``--n``), forecast from minute 60, scored over minutes 60..1439 (24 h). Nothing posted on
  or after 2013-07-01 is read. The in-domain Weibo row is therefore also the chronological check.

The forecast is ``forecast.replica_times`` (prefix-conditioned speed posterior, ``--runs`` replicas); the
unconditioned null (nothing observed, g = 0) is printed beside it. Per cell: mean window NRMSE of scale /
depth / max breadth (bootstrap interval over cascades) and the paired transfer-minus-in-domain difference
(t interval). Also printed: the two fits' delay quantiles (time scale), cascade_sigma (speed dispersion)
and influence slopes, the things that may or may not transfer.

    PYTHONPATH=src python benchmarks/propagation_cross_platform.py [--n 300] [--json out.json] [--fits fits.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from socium.core.intervals import mean_interval, nonnegative_interval
from socium.core.rng import component_rng
from socium.experiments.propagation.data.ced import load_ced
from socium.experiments.propagation.data.realcascades import (
    earliest_users,
    load_twitter15,
    oasis_cascade_ids,
    subtree_curves,
)
from socium.experiments.propagation.fit.fit import fit_timing
from socium.experiments.propagation.forecast.forecast import (
    cascade_arrays,
    curves_from_times,
    replica_times,
    window_nrmse,
)
from socium.simulator.timing import TimingParams
from socium.trace.queries.curves import CURVE_NAMES

UTC = timezone.utc
CHRONO = datetime(2013, 1, 1, tzinfo=UTC)


def _sample(ids: list[str], n: int, seed: int) -> list[str]:
    if len(ids) <= n:
        return ids
    pick = np.random.default_rng(seed).choice(len(ids), n, replace=False)
    return [ids[i] for i in sorted(pick.tolist())]


def score(trees: dict[str, Any], fit: dict[str, Any], m: int, minutes: int, runs: int, seed: int) -> dict[str, Any]:
    """Per cascade: window NRMSE per curve of the forecast and the null under ``fit``."""
    tp = TimingParams.from_dict(fit["timing"])
    sd = float(fit["estimates"]["cascade_sigma"])
    out: dict[str, Any] = {"forecast": {c: [] for c in CURVE_NAMES}, "null": {c: [] for c in CURVE_NAMES}}
    for cid, tree in trees.items():
        users = earliest_users(tree, None)
        arr = cascade_arrays(tree, users)
        real = subtree_curves(tree, users, minutes)
        for name, cond in (("forecast", True), ("null", False)):
            rng = component_rng(seed, 41, 0, zlib.crc32(cid.encode()))  # same draws for both fits
            sims = curves_from_times(arr.parent, replica_times(arr, tp, sd, m, runs, rng, cond), minutes)
            for c in CURVE_NAMES:
                out[name][c].append(window_nrmse(sims[c].mean(0), real[c], m, minutes))
    return out


def describe(fit: dict[str, Any]) -> dict[str, float]:
    e = fit["estimates"]
    keys = ("delay_q25_min", "delay_q50_min", "delay_q75_min", "delay_q90_min", "cascade_sigma", "b_author", "b_root")
    return {"family": fit["timing"]["delay"]["family"], **{k: round(float(e[k]), 3) for k in keys}}  # type: ignore[dict-item]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="target cascades per platform (seeded sample)")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write every number here")
    ap.add_argument("--wb-train", type=int, default=600, help="Weibo fit: a seeded sample of the 2012 cascades")
    ap.add_argument("--fits", default=None, help="JSON file of both fits: read if it exists, else written")
    ap.add_argument(
        "--tw-min-observed",
        type=int,
        default=3,
        help="Twitter targets: at least this many reshares in the first 10 minutes (Weibo: 10 in 60; a cascade not "
        "started by then has a window NRMSE normalised by almost nothing)",
    )
    a = ap.parse_args()
    t0 = time.perf_counter()
    tw_all = load_twitter15(None, strict=False)
    oasis = oasis_cascade_ids(available=tw_all)
    tw_train = {i: tw_all[i] for i in oasis}
    tw_pool = [
        i
        for i in tw_all
        if i not in set(oasis) and sum(n.delay <= 10 for n in tw_all[i].nodes.values()) - 1 >= a.tw_min_observed
    ]
    tw_targets = {i: tw_all[i] for i in _sample(tw_pool, a.n, a.seed)}
    ced, info, _ = load_ced()
    early = [i for i in ced if datetime.fromisoformat(info[i]["posted_at"]) < CHRONO]
    wb_train = {i: ced[i] for i in _sample(early, a.wb_train, a.seed + 1)}
    later = [
        i
        for i, t in ced.items()
        if datetime.fromisoformat(info[i]["posted_at"]) >= CHRONO
        and sum(n.delay <= 60 for n in t.nodes.values()) - 1 >= 10
    ]
    wb_targets = {i: ced[i] for i in _sample(later, a.n, a.seed)}
    cache = Path(a.fits) if a.fits else None
    if cache is not None and cache.is_file():  # the fits are the slow part (~1,700 Weibo cascades): reuse them
        fits = json.loads(cache.read_text(encoding="utf-8"))
    else:
        fits = {
            "twitter15 (OASIS 134)": fit_timing(list(tw_train.values()), bootstrap=0, sources=list(tw_train)),
            "weibo (CED < 2013)": fit_timing(list(wb_train.values()), bootstrap=0, sources=list(wb_train)),
        }
        if cache is not None:
            cache.write_text(json.dumps(fits), encoding="utf-8")
    print(
        f"fits: twitter {len(tw_train)} trees, weibo {len(wb_train)} cascades ({time.perf_counter() - t0:.0f} s); "
        f"targets: twitter {len(tw_targets)} of {len(tw_pool)}, weibo {len(wb_targets)} of {len(later)}",
        flush=True,
    )
    for name, f in fits.items():
        print(f"  {name}: {describe(f)}")
    targets = {
        "twitter15 (other trees, m=10, 150 min)": (tw_targets, 10, 150, "twitter15 (OASIS 134)"),
        "weibo (2013 H1, m=60, 24 h)": (wb_targets, 60, 1440, "weibo (CED < 2013)"),
    }
    res: dict[str, Any] = {"fits": {k: describe(v) for k, v in fits.items()}, "targets": {}}
    print(f"\n{'target':<40}{'fit':<24}{'model':<10}" + "".join(f"{c:>26}" for c in CURVE_NAMES))
    for tname, (trees, m, minutes, home) in targets.items():
        scores = {fname: score(trees, f, m, minutes, a.runs, a.seed) for fname, f in fits.items()}
        entry: dict[str, Any] = {"n": len(trees), "observe_minutes": m, "minutes": minutes, "in_domain": home}
        for fname, sc in scores.items():
            for model in ("forecast", "null"):
                cells = {c: nonnegative_interval(sc[model][c], seed=a.seed).as_dict() for c in CURVE_NAMES}
                entry[f"{fname} / {model}"] = cells
                print(
                    f"{tname:<40}{fname:<24}{model:<10}"
                    + "".join(
                        f"{cells[c]['mean']:>8.3f} [{cells[c]['lo']:.3f},{cells[c]['hi']:.3f}]" for c in CURVE_NAMES
                    )
                )
        for fname, sc in scores.items():
            entry[f"{fname} / forecast median"] = {c: float(np.median(sc["forecast"][c])) for c in CURVE_NAMES}
        away = next(f for f in fits if f != home)
        diff = {
            c: mean_interval(np.subtract(scores[away]["forecast"][c], scores[home]["forecast"][c])).as_dict()
            for c in CURVE_NAMES
        }
        entry["transfer_minus_in_domain_forecast"] = diff
        print(
            f"{tname:<40}{'transfer - in-domain':<34}"
            + "".join(f"{diff[c]['mean']:>+8.3f} [{diff[c]['lo']:+.3f},{diff[c]['hi']:+.3f}]" for c in CURVE_NAMES)
        )
        res["targets"][tname] = entry
    wall = time.perf_counter() - t0
    print(f"\nmachine: {platform.machine()} {os.cpu_count()} cpus, load {os.getloadavg()}, wall {wall:.0f} s")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
