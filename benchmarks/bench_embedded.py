"""Embedded model throughput: one step of N LLM agents, all active, feed 5, SmolLM2-135M on this CPU.

    python benchmarks/bench_embedded.py [--agents 16] [--parallel 1,4] [--threads auto]
        [--modes reproducible,batched] [--rounds 1]

For each round, ``llm.n_parallel`` and decoding mode (``llm.reproducible`` true / false, interleaved so
both meet the same load) it runs the same world and seeds and prints one row: actions/s over the
step (model time included, set-up not), CPU-seconds per action (whole run, all threads: on a shared
machine the less load-dependent figure; idle cores could give at most cores / that), validity (share
of agents whose answer parsed and validated),
prompt and completion tokens per call, the share of prompt tokens served from a slot's cache (the
shared system prompt), threads, and the load average before and after. The machine is shared, so
read the rows beside the load average and the cores busy elsewhere (sampled before each row):
llama.cpp threads that share a core with other work slow down many times over. A last table gives,
per round and n_parallel, reproducible actions/s over batched (a ratio of rows run back to back),
and whether the two modes answered every request alike.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

import duckdb

from socium.config.loading import config_from_dict
from socium.llm.embedded import IDLE_BELOW, EmbeddedBackend, auto_threads, measure_busy_elsewhere, omp_defaults
from socium.llm.wrappers import find_wrapper
from socium.simulator.simulation import Simulation


def config(n: int, parallel: int, threads: int | None, max_tokens: int, reproducible: bool = True) -> dict:
    return {
        "name": "bench-embedded",
        "seed": 3,
        "steps": 1,
        "population": {"n_agents": n, "activity": "uniform", "mean_activity": 1.0},
        "graph": {"kind": "random_out", "params": {"out_degree": min(8, n - 1)}},
        "recsys": {"kind": "chronological", "k": 5},
        "policy": {"kind": "llm"},
        "llm": {
            "backend": "embedded",
            "n_parallel": parallel,
            "n_threads": threads,
            "max_tokens": max_tokens,
            "temperature": 0.7,
            "reproducible": reproducible,
        },
        "seed_posts": [
            {
                "author": i % n,
                "content": f"Post {i}: the council approved bike lanes on Main Street; "
                f"shops worry about parking, cyclists celebrate.",
            }
            for i in range(6)
        ],
    }


def one(n: int, parallel: int, threads: int | None, max_tokens: int, reproducible: bool = True) -> dict:
    busy = measure_busy_elsewhere()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        sim = Simulation(config_from_dict(config(n, parallel, threads, max_tokens, reproducible)), d, force=True)
        cpu0 = time.process_time()  # all threads of this process: the engine's included
        sim.run()
        cpu_s = time.process_time() - cpu0
        con = duckdb.connect(os.path.join(d, "trace.duckdb"), read_only=True)
        step_s = con.execute("SELECT wall_s FROM steps WHERE step = 0").fetchone()[0]
        answered, invalid = con.execute(
            "SELECT count(DISTINCT agent_id), count(DISTINCT agent_id) FILTER (WHERE type = 'invalid_llm_output') "
            "FROM actions WHERE step = 0 AND origin <> 'seed'"
        ).fetchone()
        calls, ptok, ctok = con.execute(
            "SELECT count(*), sum(prompt_tokens), sum(completion_tokens) FROM llm_calls"
        ).fetchone()
        answers = dict(con.execute("SELECT request_hash, response FROM llm_calls").fetchall())
        con.close()
    emb = find_wrapper(sim.policy.backend, EmbeddedBackend) if hasattr(sim.policy, "backend") else None
    cached = emb.cached_prompt_tokens / max(emb.prompt_tokens, 1) if emb is not None else float("nan")
    return {
        "agents": n,
        "parallel": parallel,
        "mode": "reproducible" if reproducible else "batched",
        "busy": "?" if busy is None else f"{busy:.2f}",
        "answers": answers,
        "threads": emb.n_threads if emb else threads,
        "step_s": step_s,
        "actions_per_s": answered / step_s,
        "valid": 1 - invalid / max(answered, 1),
        "calls": calls,
        "prompt_tok": (ptok or 0) / max(calls, 1),
        "completion_tok": (ctok or 0) / max(calls, 1),
        "cached": cached,
        "cpu_per_action": cpu_s / max(answered, 1),
        "load": f"{load0:.1f} -> {os.getloadavg()[0]:.1f}",
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--parallel", default="1,4", help="comma-separated llm.n_parallel values")
    ap.add_argument("--threads", default="auto", help="llm.n_threads, or auto (from the machine and its load)")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--modes", default="reproducible,batched", help="comma-separated: reproducible, batched")
    ap.add_argument("--rounds", type=int, default=1, help="repeat every (n_parallel, mode) row this many times")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",")]
    if not set(modes) <= {"reproducible", "batched"}:
        ap.error(f"--modes: {args.modes!r} (reproducible, batched)")
    threads = None if args.threads == "auto" else int(args.threads)
    busy = measure_busy_elsewhere()
    omp_defaults(idle=busy is not None and busy < IDLE_BELOW)  # as the backend would; printed below
    shown = "?" if busy is None else f"{busy:.2f}"
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.2f}, cores busy elsewhere now {shown}; "
        f"auto threads now: {auto_threads(load=busy)}; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} "
        f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')}"
    )
    rows = []
    for rnd in range(args.rounds):
        for par in (int(p) for p in args.parallel.split(",")):
            for mode in modes[:: 1 if rnd % 2 == 0 else -1]:  # alternate which mode goes first
                t0 = time.perf_counter()
                rows.append(one(args.agents, par, threads, args.max_tokens, mode == "reproducible"))
                rows[-1]["run_s"], rows[-1]["round"] = time.perf_counter() - t0, rnd
                r = rows[-1]
                print(
                    f"  round {rnd} n_parallel {par} {mode}: {r['actions_per_s']:.2f} actions/s, "
                    f"{r['cpu_per_action']:.2f} CPU s/action, {r['cached']:.0%} from cache, valid {r['valid']:.0%}, "
                    f"busy elsewhere {r['busy']}, load {r['load']}",
                    flush=True,
                )
    print(
        "| round | agents | n_parallel | decoding | threads | step s | actions/s | valid | prompt tok/call "
        "| completion tok/call | prompt tokens from cache | CPU s/action | busy elsewhere | load (1 min) |"
    )
    print("| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(
            f"| {r['round']} | {r['agents']} | {r['parallel']} | {r['mode']} | {r['threads']} | {r['step_s']:.1f} | "
            f"{r['actions_per_s']:.2f} | {r['valid']:.0%} | {r['prompt_tok']:.0f} | {r['completion_tok']:.0f} | "
            f"{r['cached']:.0%} | {r['cpu_per_action']:.2f} | {r['busy']} | {r['load']} |"
        )
    if set(modes) == {"reproducible", "batched"}:
        print(
            "\n| round | n_parallel | actions/s reproducible / batched | CPU s/action reproducible / batched "
            "| same answers (request_hash in both) |"
        )
        print("| ---: | ---: | ---: | ---: | --- |")
        for (rnd, par), pair in _pairs(rows).items():
            rep, bat = pair["reproducible"], pair["batched"]
            shared = rep["answers"].keys() & bat["answers"].keys()
            same = sum(rep["answers"][h] == bat["answers"][h] for h in shared)
            print(
                f"| {rnd} | {par} | {rep['actions_per_s'] / bat['actions_per_s']:.2f} | "
                f"{rep['cpu_per_action'] / bat['cpu_per_action']:.2f} | {same}/{len(shared)} |"
            )
    reps = [r for r in rows if r["mode"] == "reproducible"]
    if len(reps) > 1:
        base = reps[0]["answers"]
        same = [sum(r["answers"].get(h) == a for h, a in base.items()) for r in reps[1:]]
        print(f"\nreproducible rows answering every request of the first one alike: {same} of {len(base)} each")


def _pairs(rows: list[dict]) -> dict[tuple[int, int], dict[str, dict]]:
    out: dict[tuple[int, int], dict[str, dict]] = {}
    for r in rows:
        out.setdefault((r["round"], r["parallel"]), {})[r["mode"]] = r
    return out


if __name__ == "__main__":
    main()
