"""Scale: memory per LLM agent over steps, and throughput at 10^3..10^5 LLM agents on the fake server.

    python benchmarks/bench_scale.py [--agents 1000 10000 100000] [--steps 10] [--active 0.05]
                                     [--executor inprocess ray] [--build-only 1000000] [--tracemalloc]

Each configuration runs in a fresh subprocess (so RSS is its own) and prints one row per (agents,
policy, executor): build time, RSS after the build and after each step, resident bytes per agent
above the same world with rule-based agents, growth per step, steps/s, activations/s, DuckDB rows/s
(rows the step wrote over the step's wall time) and trace bytes per step. LLM agents talk to the
``fake`` backend (a loopback OpenAI-compatible server answering schema-valid JSON), so the numbers
are the simulator's own cost, not a model's. ``--tracemalloc`` prints, for the LLM run at the first
size, the source lines whose Python allocations grew most between step 1 and the last step.
``--build-only N`` builds the N-agent world alone (no step) and reports time and RSS.
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
import tracemalloc
from pathlib import Path
from typing import Any

import duckdb

from socium.config import config_from_dict
from socium.simulator.simulation import Simulation

PAGE = os.sysconf("SC_PAGE_SIZE")
ROW_TABLES = ("actions", "exposures", "posts", "llm_calls", "follow_events", "stances")


def rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * PAGE


def config(n: int, steps: int, active: float, llm: bool, executor: str) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "name": "bench-scale", "seed": 1, "steps": steps,
        "population": {"n_agents": n, "activity": "uniform", "mean_activity": active},
        "graph": {"kind": "random_out", "params": {"out_degree": 10}},
        "recsys": {"kind": "chronological", "k": 5},
        "seed_posts": [{"author": i, "content": f"Opening post {i} about the city's new bike lanes."} for i in range(50)],
        "executor": {"kind": executor, "actors": 2, "concurrency_per_actor": 64},
    }
    if llm:
        cfg["policy"] = {"kind": "llm"}
        cfg["llm"] = {"backend": "fake", "max_concurrency": 64, "retries": 1}
    else:
        cfg["policy"] = {"kind": "random", "p_like": 0.2, "p_post": 0.05, "p_repost": 0.05}
    return cfg


def trace_bytes(d: str) -> int:
    return sum(p.stat().st_size for p in Path(d).glob("trace.duckdb*"))


def one(n: int, steps: int, active: float, llm: bool, executor: str, build_only: bool, trace_mem: bool) -> dict:
    if trace_mem:
        tracemalloc.start(8)
    rss0 = rss()
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        sim = Simulation(config_from_dict(config(n, steps, active, llm, executor)), d, force=True)
        build_s = time.perf_counter() - t0
        out: dict[str, Any] = {"agents": n, "llm": llm, "executor": executor, "build_s": build_s,
                               "rss_start": rss0, "rss_built": rss()}
        if build_only:
            sim.close()
            return out
        rss_steps, bytes_steps, walls, rows, acts = [], [], [], [], []
        snap1 = None
        for s in range(steps):
            before = trace_bytes(d)
            stats = sim.step()
            rss_steps.append(rss())
            bytes_steps.append(trace_bytes(d) - before)
            if s == 0 and trace_mem:
                snap1 = tracemalloc.take_snapshot()
            del stats
        con = sim.store.con
        walls = [w for (w,) in con.execute("SELECT wall_s FROM steps WHERE step >= 0 ORDER BY step").fetchall()]
        acts = [a for (a,) in con.execute("SELECT n_active FROM steps WHERE step >= 0 ORDER BY step").fetchall()]
        for s in range(steps):
            rows.append(sum(con.execute(f"SELECT count(*) FROM {t} WHERE step = ?", [s]).fetchone()[0]
                            for t in ROW_TABLES if _has(con, t)))
        top = []
        if trace_mem and snap1 is not None:
            stats2 = tracemalloc.take_snapshot().compare_to(snap1, "traceback")
            top = [f"{st.size_diff / 1024:+.0f} KiB  {st.count_diff:+d} blocks  "
                   + " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in st.traceback[:6]) for st in stats2[:8]]
        sim.close()
    out.update({"rss_steps": rss_steps, "trace_bytes_steps": bytes_steps, "wall_steps": walls,
                "active_steps": acts, "rows_steps": rows, "tracemalloc_top": top})
    return out


def _has(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]).fetchone()[0])


def sub(args: list[str]) -> dict:
    res = subprocess.run([sys.executable, __file__, "--one", *args], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"child failed ({' '.join(args)}):\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, nargs="*", default=[1000, 10_000, 100_000])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--active", type=float, default=0.05, help="share of agents active per step")
    ap.add_argument("--executor", nargs="+", default=["inprocess"], choices=["inprocess", "ray"])
    ap.add_argument("--build-only", type=int, nargs="*", default=[])
    ap.add_argument("--tracemalloc", action="store_true")
    ap.add_argument("--one", nargs=6, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        n, steps, active, llm, executor, flags = a.one
        print(json.dumps(one(int(n), int(steps), float(active), llm == "1", executor, "b" in flags, "t" in flags)))
        return
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f} at start")
    print("| agents | executor | build s | RSS built MB | LLM bytes/agent above rule-based (after step 1 -> last) "
          "| growth/step KB | steps/s | activations/s | DuckDB rows/s | trace KB/step |")
    print("| ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    top: list[str] = []
    for ex in a.executor:
        for i, n in enumerate(a.agents):
            t_flag = "t" if a.tracemalloc and i == 0 and ex == a.executor[0] else "-"
            rule = sub([str(n), str(a.steps), str(a.active), "0", ex, "-"])
            llm = sub([str(n), str(a.steps), str(a.active), "1", ex, t_flag])
            per_first = (llm["rss_steps"][0] - rule["rss_steps"][0]) / n
            per_last = (llm["rss_steps"][-1] - rule["rss_steps"][-1]) / n
            growth = (llm["rss_steps"][-1] - llm["rss_steps"][0]) / max(a.steps - 1, 1) / 1024
            wall = sum(llm["wall_steps"])
            print(f"| {n:,} | {ex} | {llm['build_s']:.2f} | {llm['rss_built'] / 2**20:,.0f} | "
                  f"{per_first:,.0f} -> {per_last:,.0f} | {growth:,.0f} | {len(llm['wall_steps']) / wall:.2f} | "
                  f"{sum(llm['active_steps']) / wall:,.0f} | {sum(llm['rows_steps']) / wall:,.0f} | "
                  f"{sum(llm['trace_bytes_steps']) / len(llm['trace_bytes_steps']) / 1024:,.0f} |", flush=True)
            top = top or llm["tracemalloc_top"]
    for n in a.build_only:
        b = sub([str(n), "1", str(a.active), "1", "inprocess", "b"])
        print(f"build only: {n:,} LLM agents in {b['build_s']:.1f} s, RSS {b['rss_built'] / 2**20:,.0f} MB "
              f"({(b['rss_built'] - b['rss_start']) / n:,.0f} B/agent above the interpreter)")
    if top:
        print("\nPython allocations that grew most between step 1 and the last step (tracemalloc):")
        for line in top:
            print("  " + line)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
