"""Group agents vs per-agent LLM calls on the same world: call reduction, and does the result change?

    python benchmarks/bench_group_agents.py [--agents 200] [--steps 4] [--seeds 3] [--backend random|embedded]
                                            [--cluster-size 16] [--max-members 8]

For each seed, the same config (population, graph, seed posts, activations) runs twice: policy
``llm`` (one call per active agent) and ``group_llm`` (one call per chunk of a persona cluster's
active members). Printed per policy, as mean and 95% t-interval over seeds: LLM calls, calls per
activation, prompt and completion tokens per activation, wall time, invalid rate, the action
mix (share of posts, reposts/quotes, likes, do_nothing) and reposts per original post (a
cascade proxy). With ``--backend random`` answers are schema-valid noise, so only the cost rows
mean anything; behavioural rows need a real model (``--backend embedded``).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import tempfile
import time

import duckdb
import numpy as np

from socium.config.loading import config_from_dict
from socium.simulator.simulation import Simulation


def config(policy: str, n: int, steps: int, seed: int, backend: str, cluster: int, members: int) -> dict:
    return {"name": f"bench-group-{policy}", "seed": seed, "steps": steps, "step_minutes": 60,
            "population": {"n_agents": n, "activity": "uniform", "mean_activity": 0.3, "stance": "bimodal",
                           "goals": ["Convince others that the new bike lanes make the city safer.",
                                     "Warn people that the bike lanes will hurt local shops."]},
            "graph": {"kind": "barabasi_albert", "params": {"m": 3}}, "recsys": {"kind": "chronological", "k": 5},
            "policy": {"kind": policy, "group_cluster_size": cluster, "group_max_members": members,
                       "group_embedder": "minilm" if backend == "embedded" else "hashing"},
            "llm": {"backend": backend, "max_tokens": 96},
            "seed_posts": [{"author": i, "content": t} for i, t in enumerate((
                "The council just approved protected bike lanes on Main Street. Finally!",
                "Main Street shops say the bike lanes will remove half the parking spaces.",
                "Anyone else cycling to work this week?"))]}  # fmt: skip


def measure(cfg: dict, out: str) -> dict[str, float]:
    t0 = time.perf_counter()
    Simulation(config_from_dict(cfg), out, force=True).run()
    wall = time.perf_counter() - t0
    con = duckdb.connect(os.path.join(out, "trace.duckdb"), read_only=True)
    q = lambda sql: con.execute(sql).fetchone()  # noqa: E731
    acts = q("SELECT sum(n_active) FROM steps WHERE step >= 0")[0] or 0
    calls, pt, ct = q("SELECT count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0) FROM llm_calls")
    mix = dict(con.execute("SELECT type, count(*) FROM actions WHERE origin != 'seed' GROUP BY 1").fetchall())
    originals = q("SELECT count(*) FROM posts WHERE kind = 'original'")[0] or 1
    shares = q("SELECT count(*) FROM posts WHERE kind IN ('repost', 'quote')")[0]
    con.close()
    total = max(1, sum(mix.values()))
    return {"activations": acts, "calls": calls, "calls/activation": calls / max(1, acts),
            "prompt tok/activation": pt / max(1, acts), "completion tok/activation": ct / max(1, acts),
            "wall s": wall, "invalid %": 100 * mix.get("invalid_llm_output", 0) / total,
            "posts %": 100 * mix.get("create_post", 0) / total,
            "reposts+quotes %": 100 * (mix.get("repost", 0) + mix.get("quote_post", 0)) / total,
            "likes %": 100 * mix.get("like_post", 0) / total, "do_nothing %": 100 * mix.get("do_nothing", 0) / total,
            "shares per original": shares / originals}  # fmt: skip


def ci(xs: list[float]) -> str:
    m = float(np.mean(xs))
    if len(xs) < 2:
        return f"{m:.3g}"
    from scipy.stats import t

    h = float(t.ppf(0.975, len(xs) - 1)) * float(np.std(xs, ddof=1)) / math.sqrt(len(xs))
    return f"{m:.3g} ± {h:.2g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--backend", default="random")
    ap.add_argument("--cluster-size", type=int, default=16)
    ap.add_argument("--max-members", type=int, default=8)
    a = ap.parse_args()
    res: dict[str, list[dict[str, float]]] = {"llm": [], "group_llm": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(a.seeds):
            for pol in res:
                res[pol].append(measure(config(pol, a.agents, a.steps, seed, a.backend, a.cluster_size, a.max_members),
                                        os.path.join(tmp, f"{pol}-{seed}")))  # fmt: skip
    print(f"# group agents vs per-agent calls: {a.agents} agents, {a.steps} steps, {a.seeds} seeds, backend "
          f"{a.backend}, cluster size {a.cluster_size}, <= {a.max_members} members/call")
    print(f"# machine: {platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"| metric | llm (per agent) | group_llm | ratio group/llm |\n| --- | --- | --- | --- |")
    for k in res["llm"][0]:
        x, y = [r[k] for r in res["llm"]], [r[k] for r in res["group_llm"]]
        ratio = f"{np.mean(y) / np.mean(x):.2f}" if np.mean(x) else "-"
        print(f"| {k} | {ci(x)} | {ci(y)} | {ratio} |")


if __name__ == "__main__":
    main()
