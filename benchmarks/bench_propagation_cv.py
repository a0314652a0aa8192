"""Time the runs of the 134-cascade propagation CV (examples/results/propagation-cv.yaml), one cascade at a time.

Why: the full CV is 134 cascades x 2 models, each run a population of ``cv.runs`` (40) copies of a
cascade's users (up to ~33,000 agents) over 150 one-minute (calibrated) or 30 five-minute (IC) steps,
so its cost is per-run set-up plus per-step commits. This script fits fold 0's timing once (as the CV
does per fold), then runs chosen held-out cascades of fold 0 with both models ``--repeat`` times and
prints per run: wall seconds (min / max), the part spent in ``TraceStore.append_step`` (the step's
DuckDB transaction) and in ``Simulation.__init__`` (population load and world set-up), and the
held-out NRMSE, which must not change between two source trees. To compare trees, run it once per
tree: ``PYTHONPATH=path/to/src python benchmarks/bench_propagation_cv.py``.

    python benchmarks/bench_propagation_cv.py [--cascades 0 3 5] [--repeat 3] [--out runs/bench-propagation-cv]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import yaml
from bench_ray import _timed  # the same wrapper (benchmarks/ is on sys.path when run as a script)

import socium
from socium.experiments.propagation.data.curves import CURVE_NAMES, nrmse_curves
from socium.experiments.propagation.data.folds import train_and_held
from socium.experiments.propagation.data.realcascades import earliest_users, subtree_curves
from socium.experiments.propagation.fit.fit import fit_timing
from socium.experiments.propagation.sim.cv_config import cv_run_config, replicate_rows
from socium.experiments.propagation.sim.population import cascade_population, oasis_topics, simulated_curves
from socium.experiments.propagation.spec import PropagationSpec
from socium.experiments.propagation.study import load_trees
from socium.experiments.spec import run_config, write_population_csv
from socium.simulator.simulation import Simulation
from socium.trace.store import TraceStore

SPEC = Path(__file__).resolve().parents[1] / "examples" / "results" / "propagation-cv.yaml"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cascades", type=int, nargs="+", default=[0, 3, 5], help="indices into fold 0's held-out list")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="runs/bench-propagation-cv")
    a = ap.parse_args()
    spec = PropagationSpec.model_validate(yaml.safe_load(SPEC.read_text(encoding="utf-8")))
    cv = spec.cv
    assert cv is not None
    trees = load_trees(spec)
    ids = list(trees)
    train, held = train_and_held(ids, cv.folds, cv.seed)[0]
    t = time.perf_counter()
    fit = fit_timing([trees[c] for c in train], families=cv.families, bootstrap=0, seed=cv.seed, sources=train)
    fit_s = time.perf_counter() - t
    topics = oasis_topics(None)
    spent: dict[str, float] = {}
    _timed(TraceStore, "append_step", spent)
    _timed(Simulation, "__init__", spent)
    out = Path(a.out)
    load = os.getloadavg()
    print(f"socium from {Path(socium.__file__).parent}; machine: {platform.machine()} {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}; fold-0 fit on {len(train)} trees: {fit_s:.1f} s")  # fmt: skip
    print("| cascade | users x copies | model | steps | run s (min / max) | append_step s | set-up s | "
          "NRMSE scale / depth / max breadth |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for i in a.cascades:
        cid = held[i]
        users = earliest_users(trees[cid], spec.max_users)
        rows, _ = cascade_population(trees[cid], users, spec, None, cv.seed)
        pop_csv = write_population_csv(out / "inputs" / f"{cid}.csv", replicate_rows(rows, cv.runs))
        text = topics.get(cid, {}).get("text") or "(source text not available)"
        real = subtree_curves(trees[cid], users, spec.minutes)
        for model in cv.models:
            cfg = cv_run_config(model, spec, cv, cid, pop_csv, text, fit["timing"], cv.seed, len(rows))
            walls, commits, inits = [], [], []
            for _ in range(a.repeat):
                spent.clear()
                t = time.perf_counter()
                info = run_config(cfg, out / model / cid, force=True)
                acc = {c: np.zeros(spec.minutes) for c in CURVE_NAMES}
                for r in range(cv.runs):
                    sim = simulated_curves(info.run_dir, r, spec.minutes)
                    for c in CURVE_NAMES:
                        acc[c] += sim[c] / cv.runs
                walls.append(time.perf_counter() - t)
                commits.append(spent.get("append_step", 0.0))
                inits.append(spent.get("__init__", 0.0))
            score = nrmse_curves(acc, real, spec.minutes)
            print(f"| {cid} | {len(users)} x {cv.runs} | {model} | {cfg.steps} | {min(walls):.2f} / {max(walls):.2f} | "
                  f"{min(commits):.2f} | {min(inits):.2f} | "
                  + " / ".join(f"{score[c]:.6f}" for c in CURVE_NAMES) + " |")  # fmt: skip
    end = os.getloadavg()
    print(f"load average at start {' '.join(f'{x:.2f}' for x in load)}, at end {' '.join(f'{x:.2f}' for x in end)}")


if __name__ == "__main__":
    main()
