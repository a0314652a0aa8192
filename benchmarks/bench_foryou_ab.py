"""foryou before / after a change: ``bench_foryou.py`` run alternately on two source trees, ratios side by side.

Run: ``python benchmarks/bench_foryou_ab.py --before /path/to/main-worktree --after . --rounds 3``.
Each round runs this tree's ``bench_foryou.py`` once with the ``before`` tree's ``src`` first on
``PYTHONPATH``, then once with ``after``'s (fresh processes, so each imports its own socium; one bench
script, so both print the same measures). Each run already interleaves x and foryou, so its foryou / x
ratio is robust to the load of a shared machine, where raw seconds are not; the table gives each run's
wall and CPU-time ratios (CPU: all of the process's threads), then the median per tree. The ``x``
recommender is the same code in both trees (change only foryou to compare).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(tree: Path, users: int, reps: int) -> tuple[float, float, float, float, str]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    cmd = [sys.executable, str(HERE / "bench_foryou.py"), "--users", str(users), "--reps", str(reps)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    x = float(re.search(r"^x feeds.*?\s(\d+\.\d+) s/step", out, re.M).group(1))  # type: ignore[union-attr]
    fy = float(re.search(r"^foryou feeds.*?\s(\d+\.\d+) s/step", out, re.M).group(1))  # type: ignore[union-attr]
    cpu = float(re.search(r"CPU time per step.*\((\d+\.\d+)\)\s*$", out, re.M).group(1))  # type: ignore[union-attr]
    load = re.search(r"load average after this size\s+(\S+)", out).group(1)  # type: ignore[union-attr]
    return x, fy, fy / x, cpu, load


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="source tree (worktree) before the change")
    ap.add_argument("--after", type=Path, default=HERE.parent, help="source tree after the change")
    ap.add_argument("--users", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=3, help="x / foryou repetitions per run")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    print(f"foryou before/after, {a.users:,} users, {a.reps} interleaved reps per run, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f} at start")  # fmt: skip
    print(f"{'round':<6}{'tree':<8}{'x s/step':>10}{'foryou s/step':>15}{'foryou / x':>12}{'CPU ratio':>11}{'load':>8}")
    ratios: dict[str, list[float]] = {"before": [], "after": []}
    cpus: dict[str, list[float]] = {"before": [], "after": []}
    for r in range(a.rounds):
        for name, tree in (("before", a.before), ("after", a.after)):
            x, fy, ratio, cpu, load = run(tree.resolve(), a.users, a.reps)
            ratios[name].append(ratio)
            cpus[name].append(cpu)
            print(f"{r:<6}{name:<8}{x:>10.2f}{fy:>15.2f}{ratio:>12.2f}{cpu:>11.2f}{load:>8}", flush=True)
    for name, rs in ratios.items():
        print(
            f"median foryou / x, {name}: wall {statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}), "
            f"CPU {statistics.median(cpus[name]):.2f} (n = {len(rs)} runs; target <= 2)"
        )


if __name__ == "__main__":
    main()
