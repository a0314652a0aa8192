"""The same world under four feeds (issue 39, item 5, first cut): chronological, x, reddit_hot, foryou.

Runs ``examples/quickstart.yaml`` (independent-cascade agents on a Twitter-like graph, 24 one-hour
steps) at ``--agents`` agents under each recommender on each ``--seeds`` seed (x and foryou with the
hashing embedder, so no torch is needed) and prints, per recommender, the mean over seeds with a
t interval (n = seeds; none below 3) of: cascade size (nodes incl. the root, mean over cascades),
the largest cascade, the share of feed exposures that came out-of-network, and the Gini coefficient
of impressions over the posts shown at least once (concentration of attention). Cross-stance
exposure needs a population with stances (polarisation world): not measured here.

    OMP_WAIT_POLICY=PASSIVE python benchmarks/foryou_study.py --agents 500 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from socium.config.loading import load_config
from socium.core.intervals import mean_interval
from socium.simulator.simulation import Simulation
from socium.trace.queries import cascades, exposures
from socium.trace.queries.runs import open_run

KINDS = {
    "chronological": [],
    "x": ["recsys.params={embedder: hashing}"],
    "reddit_hot": [],
    "foryou": ["recsys.params={embedder: hashing}"],
}
QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart.yaml"


def load() -> str:
    return open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"


def gini(counts: np.ndarray) -> float:
    """Gini of non-negative counts (0: equal attention; -> 1: one post takes it all)."""
    x = np.sort(np.asarray(counts, float))
    n = len(x)
    if n == 0 or x.sum() == 0:
        return float("nan")
    return float((2 * np.arange(1, n + 1) - n - 1) @ x / (n * x.sum()))


def measure(run_dir: Path) -> dict[str, float]:
    with open_run(run_dir) as con:
        sd = cascades.sizes_and_depths(con)
        src = exposures.by_source(con)
        shown = exposures.shown(con)
    feed = {s: 0 for s in ("in_network", "out_of_network", "global", "random")}
    for _, s, n in src:
        if s in feed:
            feed[s] += n
    total = sum(feed.values())
    posts = np.asarray([r[2] for r in shown], np.int64)
    _, per_post = np.unique(posts, return_counts=True)
    return {
        "cascade size": float(sd[:, 0].mean()) if len(sd) else float("nan"),
        "largest cascade": float(sd[:, 0].max()) if len(sd) else float("nan"),
        "OON share": feed["out_of_network"] / total if total else float("nan"),
        "Gini of impressions": gini(per_post),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=500)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=24)
    a = ap.parse_args()
    print(f"foryou study: quickstart world, {a.agents} agents, {a.steps} steps, seeds {a.seeds}; load {load()}")
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, extra in KINDS.items():
            for seed in a.seeds:
                cfg = load_config(
                    QUICKSTART,
                    [f"population.n_agents={a.agents}", f"seed={seed}", f"steps={a.steps}", f"recsys.kind={kind}"]
                    + extra,
                )
                out = Path(tmp) / f"{kind}-{seed}"
                t = time.perf_counter()
                Simulation(cfg, out).run()
                m = measure(out)
                m["wall s"] = time.perf_counter() - t
                results.setdefault(kind, []).append(m)
    names = ["cascade size", "largest cascade", "OON share", "Gini of impressions", "wall s"]
    print("| recsys | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for kind, runs in results.items():
        cells = []
        for name in names:
            iv = mean_interval([r[name] for r in runs])
            if iv.has_bounds:
                cells.append(f"{iv.estimate:.3g} [{iv.low:.3g}, {iv.high:.3g}]")
            else:
                cells.append(f"{iv.estimate:.3g} (n={iv.n}: {iv.note or 'no interval'})")
        print(f"| {kind} | " + " | ".join(cells) + " |")
    print(f"load average at the end: {load()}")


if __name__ == "__main__":
    main()
