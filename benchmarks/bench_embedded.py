"""Embedded model throughput: one step of N LLM agents, all active, feed 5, SmolLM2-135M on this CPU.

    python benchmarks/bench_embedded.py [--agents 16] [--parallel 1,4] [--threads auto]

For each ``llm.n_parallel`` it runs the same world and seeds and prints one row: actions/s over the
step (model time included, set-up not), CPU-seconds per action (whole run, all threads: on a shared
machine the less load-dependent figure; idle cores could give at most cores / that), validity (share of agents whose answer parsed and validated),
prompt and completion tokens per call, the share of prompt tokens served from a slot's cache (the
shared system prompt), threads, and the load average before and after. The machine is shared, so
read the rows beside the load average: llama.cpp threads that share a core with other work slow
down many times over.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

import duckdb

from socium.config import config_from_dict
from socium.llm.embedded import IDLE_BELOW, EmbeddedBackend, auto_threads, measure_busy_elsewhere, omp_defaults
from socium.llm.wrappers import find_wrapper
from socium.simulator.simulation import Simulation


def config(n: int, parallel: int, threads: int | None, max_tokens: int) -> dict:
    return {
        "name": "bench-embedded", "seed": 3, "steps": 1,
        "population": {"n_agents": n, "activity": "uniform", "mean_activity": 1.0},
        "graph": {"kind": "random_out", "params": {"out_degree": min(8, n - 1)}},
        "recsys": {"kind": "chronological", "k": 5}, "policy": {"kind": "llm"},
        "llm": {"backend": "embedded", "n_parallel": parallel, "n_threads": threads, "max_tokens": max_tokens,
                "temperature": 0.7},
        "seed_posts": [{"author": i % n, "content": f"Post {i}: the council approved bike lanes on Main Street; "
                                                    f"shops worry about parking, cyclists celebrate."}
                       for i in range(6)],
    }


def one(n: int, parallel: int, threads: int | None, max_tokens: int) -> dict:
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        sim = Simulation(config_from_dict(config(n, parallel, threads, max_tokens)), d, force=True)
        cpu0 = time.process_time()  # all threads of this process: the engine's included
        sim.run()
        cpu_s = time.process_time() - cpu0
        con = duckdb.connect(os.path.join(d, "trace.duckdb"), read_only=True)
        step_s = con.execute("SELECT wall_s FROM steps WHERE step = 0").fetchone()[0]
        answered, invalid = con.execute(
            "SELECT count(DISTINCT agent_id), count(DISTINCT agent_id) FILTER (WHERE type = 'invalid_llm_output') "
            "FROM actions WHERE step = 0 AND origin <> 'seed'").fetchone()
        calls, ptok, ctok = con.execute(
            "SELECT count(*), sum(prompt_tokens), sum(completion_tokens) FROM llm_calls").fetchone()
        con.close()
    emb = find_wrapper(sim.policy.backend, EmbeddedBackend) if hasattr(sim.policy, "backend") else None
    cached = emb.cached_prompt_tokens / max(emb.prompt_tokens, 1) if emb is not None else float("nan")
    return {"agents": n, "parallel": parallel, "threads": emb.n_threads if emb else threads, "step_s": step_s,
            "actions_per_s": answered / step_s, "valid": 1 - invalid / max(answered, 1), "calls": calls,
            "prompt_tok": (ptok or 0) / max(calls, 1), "completion_tok": (ctok or 0) / max(calls, 1),
            "cached": cached, "cpu_per_action": cpu_s / max(answered, 1), "load": f"{load0:.1f} -> {os.getloadavg()[0]:.1f}"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--parallel", default="1,4", help="comma-separated llm.n_parallel values")
    ap.add_argument("--threads", default="auto", help="llm.n_threads, or auto (from the machine and its load)")
    ap.add_argument("--max-tokens", type=int, default=96)
    args = ap.parse_args()
    threads = None if args.threads == "auto" else int(args.threads)
    busy = measure_busy_elsewhere()
    omp_defaults(idle=busy is not None and busy < IDLE_BELOW)  # as the backend would; printed below
    shown = "?" if busy is None else f"{busy:.2f}"
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}, cores busy elsewhere now {shown}; "
          f"auto threads now: {auto_threads(load=busy)}; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} "
          f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')}")
    rows = []
    for par in (int(p) for p in args.parallel.split(",")):
        t0 = time.perf_counter()
        rows.append(one(args.agents, par, threads, args.max_tokens))
        rows[-1]["run_s"] = time.perf_counter() - t0
    print("| agents | n_parallel | threads | step s | actions/s | valid | prompt tok/call | completion tok/call "
          "| prompt tokens from cache | CPU s/action | load (1 min) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| {r['agents']} | {r['parallel']} | {r['threads']} | {r['step_s']:.1f} | {r['actions_per_s']:.2f} | "
              f"{r['valid']:.0%} | {r['prompt_tok']:.0f} | {r['completion_tok']:.0f} | {r['cached']:.0%} | {r['cpu_per_action']:.2f} | {r['load']} |")


if __name__ == "__main__":
    main()
