"""Foundation benchmark: rule-based agents at 10^4..10^6 on this machine.

Prints one row per size: agent construction time per agent (population + follow graph + platform),
resident memory per agent, seconds per step with 1% of agents active, actions applied per second
and trace rows written per second. Each size runs in a fresh subprocess so memory is not shared.

    python benchmarks/bench_foundation.py [--sizes 10000 100000 1000000] [--steps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def one(n: int, steps: int, out: str) -> dict:
    import duckdb

    from socium.config.loading import config_from_dict
    from socium.simulator.simulation import Simulation

    cfg = config_from_dict({
        "name": f"bench{n}", "seed": 1, "steps": steps,
        "population": {"n_agents": n, "activity": "uniform", "mean_activity": 0.01},
        "graph": {"kind": "random_out", "params": {"out_degree": 10}},
        "policy": {"kind": "random", "p_post": 0.3, "p_like": 0.2, "p_repost": 0.05},
        "recsys": {"kind": "chronological", "k": 5},
        "seed_posts": [{"author": i, "content": f"seed {i}"} for i in range(50)],
    })  # fmt: skip
    import socium.simulator.simulation  # noqa: F401  (imports paid before timing)

    rss0 = rss_bytes()
    t0 = time.perf_counter()
    sim = Simulation(cfg, out, force=True)
    t_build = time.perf_counter() - t0
    rss1 = rss_bytes()
    stats = []
    t1 = time.perf_counter()
    for _ in range(steps):
        stats.append(sim.advance())
    t_steps = time.perf_counter() - t1
    sim.close()
    con = duckdb.connect(os.path.join(out, "trace.duckdb"), read_only=True)
    rows = sum(con.execute(f"SELECT count(*) FROM {t} WHERE step >= 0").fetchone()[0]
               for t in ("actions", "exposures", "posts", "stances", "follow_events"))  # fmt: skip
    con.close()
    actions = sum(s.n_actions for s in stats)
    return {
        "agents": n, "build_s": t_build, "us_per_agent": t_build / n * 1e6, "bytes_per_agent": (rss1 - rss0) / n,
        "active_per_step": sum(s.n_active for s in stats) / steps, "s_per_step": t_steps / steps,
        "actions_per_s": actions / t_steps, "rows_per_s": rows / t_steps,
    }  # fmt: skip


def apply_rate(n_actions: int = 200_000) -> float:
    """Platform rule checks + state changes alone: posts, likes and reposts on a 10^5-user platform."""
    import numpy as np

    from socium.core.actions import CreatePost, LikePost, Repost
    from socium.platform.graph import FollowIndex, generate_edges
    from socium.platform.state import PlatformState

    n = 100_000
    src, dst = generate_edges("random_out", n, 1, out_degree=10)
    st = PlatformState(n, FollowIndex.from_edges(src, dst, n))
    st.begin_step(0, 0.0)
    rng = np.random.default_rng(0)
    users = rng.integers(0, n, n_actions)
    kinds = rng.integers(0, 3, n_actions)
    acts = []
    for i, (u, k) in enumerate(zip(users.tolist(), kinds.tolist())):
        if k == 0 or i < 100:
            acts.append((u, CreatePost(content=f"post {i}")))
        elif k == 1:
            acts.append((u, LikePost(post_id=int(rng.integers(0, 100)))))
        else:
            acts.append((u, Repost(post_id=int(rng.integers(0, 100)))))
    t0 = time.perf_counter()
    for u, a in acts:
        st.apply(u, a)
    return n_actions / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        with tempfile.TemporaryDirectory() as d:
            print(json.dumps(one(a.child, a.steps, d)))
        return
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("rule-based random policy, random_out graph (10 followees each), chronological feed k=5, 1% active per step")
    hdr = f"{'agents':>9} {'build s':>8} {'µs/agent':>9} {'B/agent':>8} {'active':>7} {'s/step':>7} {'actions/s':>10} {'rows/s':>9}"
    print(hdr)
    print("-" * len(hdr))
    for n in a.sizes:
        res = subprocess.run([sys.executable, __file__, "--child", str(n), "--steps", str(a.steps)],
                             capture_output=True, text=True, check=True)  # fmt: skip
        r = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"{r['agents']:>9,} {r['build_s']:>8.2f} {r['us_per_agent']:>9.1f} {r['bytes_per_agent']:>8.0f} "
              f"{r['active_per_step']:>7.0f} {r['s_per_step']:>7.3f} {r['actions_per_s']:>10,.0f} {r['rows_per_s']:>9,.0f}")  # fmt: skip
    print("actions/s above is whole steps (activation, feeds, policy, apply, trace write) per action;")
    print(f"PlatformState.apply alone (validate + apply, 200k mixed posts/likes/reposts): {apply_rate():,.0f} actions/s")


if __name__ == "__main__":
    main()
