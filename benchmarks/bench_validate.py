"""Time `socium validate` (the stylized-facts scorecard) on a 10^5-agent rule-based run.

Target (issue 12): under one minute for 10^5 agents. The run is built once (rule-based independent
cascade with original posts on a Barabasi-Albert follow graph, bimodal stances, 30-minute steps)
and reused; the scorecard is then timed ``--repeat`` times.

    python benchmarks/bench_validate.py [--agents 100000] [--steps 48] [--out runs/bench-validate]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
from pathlib import Path

from socium.config.loading import config_from_dict
from socium.experiments.validation.validate import scorecard
from socium.simulator.simulation import Simulation


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="runs/bench-validate")
    a = ap.parse_args()
    run_dir = Path(a.out) / f"n{a.agents}-s{a.steps}"
    cfg = config_from_dict({
        "name": "bench-validate", "seed": 0, "steps": a.steps, "step_minutes": 30,
        "population": {"n_agents": a.agents, "stance": "bimodal", "activity": "diurnal", "mean_activity": 0.05},
        "graph": {"kind": "barabasi_albert", "params": {"m": 5}},
        "recsys": {"kind": "chronological", "k": 10},
        "policy": {"kind": "independent_cascade", "p_repost": 0.05, "p_post": 0.2},
    }, source="bench_validate")  # fmt: skip
    t0 = time.perf_counter()
    if not (run_dir / "trace.duckdb").exists():
        Simulation(cfg, run_dir).run()
    build = time.perf_counter() - t0
    times = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        card = scorecard(run_dir)
        times.append(time.perf_counter() - t)
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print("| agents | steps | posts | cascades >= 2 | run s (0 = reused) | validate s (min / max of "
          f"{a.repeat}) | load s | peak RSS MiB | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"| {a.agents:,} | {a.steps} | {card['n_posts']:,} | {card['n_cascades_ge2']:,} | {build:.1f} | "
          f"{min(times):.2f} / {max(times):.2f} | {card['load_s']:.2f} | {rss:,.0f} | < 60 s |")
    for f in card["facts"]:
        v = "-" if f["value"] is None else f"{f['value']:.3f}"
        print(f"  {f['status']:<5} {f['name']}: {v} (n={f['n']})")


if __name__ == "__main__":
    main()
