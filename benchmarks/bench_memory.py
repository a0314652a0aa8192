"""Prompt size and cost of the memory stream: tokens per activation at memory 20 + feed 5, window vs stream.

    python benchmarks/bench_memory.py [--agents 50] [--steps 12] [--memory 20] [--feed 5]

Runs the same world (random backend: schema-valid answers, so only sizes and times mean anything)
with ``llm_agents.memory.kind`` window and stream (MiniLM or ``--embedder hashing``) and prints, per
kind: prompt tokens per activation in the last steps (mean and max; SmolLM2's tokenizer through
xllamacpp when available, else characters / 4, as labelled), memory-section tokens, memories
stored, reflections, extra LLM calls (reflection) per activation, and wall time per step.
Target (memory issue): <= 1.2k prompt tokens per activation at memory 20 + feed 5.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

import duckdb
import numpy as np

from socium.config.loading import config_from_dict
from socium.simulator.simulation import Simulation


def tokenizer():
    """SmolLM2's own tokenizer when the embedded model can be loaded; else ~4 characters per token."""
    try:
        from socium.llm.embedded import count_prompt_tokens  # type: ignore[attr-defined]

        return count_prompt_tokens, "SmolLM2 tokenizer"
    except Exception:  # noqa: BLE001 - any failure means: fall back to the labelled estimate
        return (lambda text: (len(text) + 3) // 4), "characters/4"


def run(kind: str, a: argparse.Namespace, out: str) -> tuple[dict, str]:
    cfg = config_from_dict({
        "name": f"bench-mem-{kind}", "seed": 1, "steps": a.steps,
        "population": {"n_agents": a.agents, "activity": "uniform", "mean_activity": 0.5, "stance": "bimodal",
                       "goals": ["Convince others that the new bike lanes make the city safer.",
                                 "Warn people that the bike lanes will hurt local shops."]},
        "graph": {"kind": "barabasi_albert", "params": {"m": 3}}, "recsys": {"kind": "chronological", "k": a.feed},
        "policy": {"kind": "llm"}, "llm": {"backend": "random", "max_tokens": 96},
        "llm_agents": {"memory_size": a.memory, "memory": {"kind": kind, "embedder": a.embedder,
                                                            "reflect_threshold": 40.0}},
        "seed_posts": [{"author": i, "content": f"Post {i}: what do you think about the new bike lanes on Main "
                        "Street and the parking spaces the shops are losing?"} for i in range(10)],
    })  # fmt: skip
    t0 = time.perf_counter()
    Simulation(cfg, out, force=True).run()
    wall = time.perf_counter() - t0
    con = duckdb.connect(os.path.join(out, "trace.duckdb"), read_only=True)
    last = a.steps - 3
    prompts = [json.loads(p) for (p,) in con.execute(
        "SELECT prompt FROM llm_calls WHERE step >= ? AND metadata->>'reflection' IS NULL", [last]).fetchall()]  # fmt: skip
    acts = con.execute("SELECT sum(n_active) FROM steps WHERE step >= 0").fetchone()[0]
    refl = con.execute("SELECT count(*) FROM llm_calls WHERE metadata->>'reflection' = 'true'").fetchone()[0]
    mems = dict(con.execute("SELECT kind, count(*) FROM memories GROUP BY 1").fetchall())
    con.close()
    count, label = tokenizer()
    toks = [sum(count(m["content"]) for m in p) for p in prompts]
    mem_toks = [count(p[1]["content"].split("## What you did recently\n", 1)[-1].split("\n\n", 1)[0]) for p in prompts]
    return {"prompt tokens/activation (mean)": float(np.mean(toks)), "prompt tokens/activation (max)": max(toks),
            "memory-section tokens (mean)": float(np.mean(mem_toks)), "memories stored": sum(mems.values()),
            "reflections written": mems.get("reflection", 0), "reflection calls/activation": refl / max(1, acts),
            "wall s/step": wall / a.steps}, label  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", type=int, default=50)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--memory", type=int, default=20)
    ap.add_argument("--feed", type=int, default=5)
    ap.add_argument("--embedder", default="minilm")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = {k: run(k, a, os.path.join(tmp, k)) for k in ("window", "stream")}
    label = rows["stream"][1]
    print(f"# memory: {a.agents} agents, {a.steps} steps, memory {a.memory}, feed {a.feed}, embedder {a.embedder}; "
          f"tokens by {label}; last 3 steps")
    print(f"# machine: {platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| metric | window | stream |\n| --- | --- | --- |")
    for k in rows["window"][0]:
        w, s = rows["window"][0][k], rows["stream"][0][k]
        print(f"| {k} | {w:.4g} | {s:.4g} |")


if __name__ == "__main__":
    main()
