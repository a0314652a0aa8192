"""Follow-graph generators: build time, peak memory and the graph facts `socium validate` checks.

Prints one row per (kind, size): the median wall time of ``generate_edges`` over ``--repeat`` builds
(each build a fresh seed), peak resident memory of the process (each row runs in its own
subprocess, so rows do not share memory), edges per node, and, with ``--facts``, the edge
reciprocity, the fitted follower-tail exponent (Clauset et al. KS xmin) and the mean local
clustering of 2,000 sampled nodes, measured by the same code as ``socium validate`` on the first
build.

    python benchmarks/bench_graph.py [--kinds twitter_like random_out] [--sizes 10000 100000 1000000]
                                     [--repeat 3] [--facts] [--params '{"m": 10}']
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time


def one(kind: str, n: int, repeat: int, facts: bool, params: dict) -> dict:
    import numpy as np

    from socium.platform.graph import generate_edges

    times = []
    first = None
    for seed in range(repeat):
        t0 = time.perf_counter()
        src, dst = generate_edges(kind, n, seed, **params)
        times.append(time.perf_counter() - t0)
        if first is None:
            first = (src, dst)
    src, dst = first
    row = {
        "kind": kind, "n": n, "build_s": float(np.median(times)), "min_s": min(times), "max_s": max(times),
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "edges_per_node": len(src) / n,
    }  # fmt: skip
    if facts:
        from socium.experiments.validation import stylized as S
        from socium.experiments.validation.validate import _fit_tail

        indeg = np.bincount(dst, minlength=n)
        alpha, se, _, xmin = _fit_tail(indeg[indeg > 0])
        cc, _ = S.clustering_sample(src.astype(np.int64), dst.astype(np.int64), n, 2000)
        row |= {"reciprocity": S.reciprocity(src, dst, n), "alpha": alpha, "alpha_se": se, "xmin": xmin,
                "clustering": cc, "max_in": int(indeg.max())}  # fmt: skip
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kinds", nargs="+", default=["twitter_like", "random_out"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--facts", action="store_true", help="also measure reciprocity, follower tail, clustering")
    ap.add_argument("--params", default="{}", help="JSON generator parameters, applied to every kind")
    ap.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    params = json.loads(a.params)
    if a.child is not None:
        print(json.dumps(one(a.child[0], int(a.child[1]), a.repeat, a.facts, params)))
        return
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average {os.getloadavg()[0]:.2f} at start; params {params or 'defaults'}")  # fmt: skip
    hdr = f"{'kind':>13} {'nodes':>9} {'build s (median)':>17} {'min-max s':>12} {'peak MiB':>9} {'edges/node':>10}"
    if a.facts:
        hdr += f" {'recip':>6} {'alpha (se, xmin)':>20} {'clust':>6} {'max in':>8}"
    print(hdr)
    print("-" * len(hdr))
    for kind in a.kinds:
        for n in a.sizes:
            cmd = [sys.executable, __file__, "--child", kind, str(n), "--repeat", str(a.repeat), "--params", a.params]
            res = subprocess.run(cmd + (["--facts"] if a.facts else []), capture_output=True, text=True, check=True)
            r = json.loads(res.stdout.strip().splitlines()[-1])
            line = (f"{kind:>13} {n:>9,} {r['build_s']:>17.3f} {r['min_s']:>5.2f}-{r['max_s']:<6.2f} "
                    f"{r['peak_mib']:>9,.0f} {r['edges_per_node']:>10.2f}")  # fmt: skip
            if a.facts:
                tail = f"{r['alpha']:.3f} ({r['alpha_se']:.3f}, {r['xmin']:g})"
                line += f" {r['reciprocity']:>6.3f} {tail:>20} {r['clustering']:>6.3f} {r['max_in']:>8,}"
            print(line, flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
