"""The HTTP path at the bound: LLM agents against an OpenAI-compatible server on loopback.

    python benchmarks/bench_http.py [--agents 2000] [--steps 2] [--actors 1,2,4] [--skip-sdk] [--skip-ray]

Rows (one table, one run, so ratios hold on a noisy shared machine):
1. instant server, in-process executor: activations/s of the LLM phase (the executor's time for the
   last step), of the whole run, and driver CPU ms per activation; socium's aiohttp client and, for
   comparison, the official openai SDK client it replaced (same wrappers, same prompts);
2. a server answering in 200 ms, concurrency 64: calls/s against the bound 64 / 0.2 s = 320/s;
3. instant server with the Ray executor at 1/2/4 actors (concurrency 64 each).
The server is an aiohttp app in its own process (one event loop), so it does not share the driver's
GIL. The load average is printed before and after: on a machine shared with others, read ratios
within the table rather than absolute numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Any

from socium.config import config_from_dict
from socium.llm import openai_compat
from socium.llm.types import ErrorKind, LLMRequest, LLMResult
from socium.simulator.simulation import Simulation

SERVER = """
import asyncio, socket, sys, time
from aiohttp import web
DELAY = float(sys.argv[1])
ANSWER = '{"type": "do_nothing"}'
async def chat(request):
    body = await request.json()
    if DELAY:
        await asyncio.sleep(DELAY)
    return web.json_response({"id": "x", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "fake"), "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": ANSWER}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108}})
app = web.Application()
app.router.add_post("/v1/chat/completions", chat)
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(2048)
print(f"http://127.0.0.1:{sock.getsockname()[1]}/v1", flush=True)
web.run_app(app, sock=sock, print=None, access_log=None)
"""


class SDKBackend(openai_compat.OpenAIBackend):
    """The client socium used before: the official openai SDK (AsyncOpenAI, retries off)."""

    def _make_session(self) -> Any:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(api_key=self._key.reveal(), base_url=self.base_url, max_retries=0, timeout=self.timeout_s)
        return client, asyncio.get_running_loop().create_future()

    async def _one(self, client: Any, req: LLMRequest) -> LLMResult:
        import openai

        t0 = time.perf_counter()

        def fail(msg: str, kind: ErrorKind) -> LLMResult:
            return LLMResult.failure(req.request_id, msg, kind, latency_s=time.perf_counter() - t0)

        body = self.request_body(req)
        extra = {k: body.pop(k) for k in ("response_format",) if k in body}
        try:
            resp = await client.chat.completions.create(**body, **extra)
        except openai.APITimeoutError:
            return fail("timeout", "timeout")
        except openai.APIConnectionError as exc:
            return fail(f"connection error: {exc}", "connection")
        except openai.APIStatusError as exc:
            return fail(f"HTTP {exc.status_code}", openai_compat.classify_status(exc.status_code))
        choice = resp.choices[0]
        usage = resp.usage
        return LLMResult(request_id=req.request_id, text=choice.message.content or "",
                         prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                         latency_s=time.perf_counter() - t0, finish_reason=choice.finish_reason)

    def close(self) -> None:
        pass  # the SDK's httpx pools close when collected


def start_server(delay: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(delay)], stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()  # type: ignore[union-attr]


def config(n: int, steps: int, url: str, executor: dict | None = None) -> dict:
    return {"name": "bench-http", "seed": 1, "steps": steps,
            "population": {"n_agents": n, "activity": "uniform", "mean_activity": 1.0},
            "graph": {"kind": "random_out", "params": {"out_degree": min(20, n - 1)}},
            "recsys": {"kind": "chronological", "k": 5}, "policy": {"kind": "llm"},
            "llm": {"backend": "openai", "base_urls": [url], "model": "fake-model", "max_concurrency": 64,
                    "retries": 0},
            "executor": executor or {"kind": "inprocess"},
            "seed_posts": [{"author": i, "content": f"Opening post number {i} about the city's new bike lanes and "
                                                   "what they mean for parking on Main Street."}
                           for i in range(min(n, 500))]}


def measure(cfg: dict, client: str = "aiohttp") -> dict[str, float]:
    """Run; report the last step's executor time (the LLM phase, warm) and the whole run."""
    original = openai_compat.OpenAIBackend
    if client == "sdk":
        openai_compat.OpenAIBackend = SDKBackend  # type: ignore[misc]
    try:
        with tempfile.TemporaryDirectory() as d:
            sim = Simulation(config_from_dict(cfg), d, force=True)
            inner = sim.executor.run
            phase: list[tuple[float, float, int]] = []

            def timed(observations):  # type: ignore[no-untyped-def]
                t, c = time.perf_counter(), time.process_time()
                out = inner(observations)
                phase.append((time.perf_counter() - t, time.process_time() - c, len(observations)))
                return out

            sim.executor.run = timed  # type: ignore[method-assign]
            t0 = time.perf_counter()
            sim.run()
            wall = time.perf_counter() - t0
    finally:
        openai_compat.OpenAIBackend = original  # type: ignore[misc]
    acts = sum(p[2] for p in phase)
    last_s, last_cpu, last_n = phase[-1]
    return {"phase": last_n / last_s, "whole": acts / wall, "cpu_ms": 1e3 * last_cpu / last_n, "acts": acts}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--slow-agents", type=int, default=1280)
    ap.add_argument("--actors", default="1,2,4")
    ap.add_argument("--skip-sdk", action="store_true")
    ap.add_argument("--skip-ray", action="store_true")
    a = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows: list[tuple[str, str, str]] = []
    proc, url = start_server(0.0)
    try:
        clients = ["aiohttp"] + ([] if a.skip_sdk else ["sdk"])
        got = {c: measure(config(a.agents, a.steps, url), c) for c in clients}
        for c, m in got.items():
            rows.append((f"instant server, in-process, {a.agents:,} agents, {c} client", f"{m['phase']:,.0f}",
                         f"whole run {m['whole']:,.0f}/s; driver CPU {m['cpu_ms']:.2f} ms/activation"))
        if "sdk" in got:
            rows.append(("  aiohttp / sdk", f"{got['aiohttp']['phase'] / got['sdk']['phase']:.2f}x",
                         f"CPU per activation {got['sdk']['cpu_ms'] / got['aiohttp']['cpu_ms']:.2f}x lower"))
        if not a.skip_ray:
            for k in [int(x) for x in a.actors.split(",")]:
                m = measure(config(a.agents, a.steps, url, {"kind": "ray", "actors": k, "concurrency_per_actor": 64}))
                rows.append((f"instant server, Ray, {k} actor(s) x 64", f"{m['phase']:,.0f}",
                             f"last step's LLM phase; whole run incl. Ray start {m['whole']:,.0f}/s"))
    finally:
        proc.kill()
    proc, url = start_server(0.2)
    try:
        for c in ["aiohttp"] + ([] if a.skip_sdk else ["sdk"]):
            m = measure(config(a.slow_agents, a.steps, url), c)
            rows.append((f"200 ms server, concurrency 64, {c} client", f"{m['phase']:,.0f}",
                         f"{m['phase'] / 320:.0%} of the 64 / 0.2 s = 320/s bound; whole run {m['whole']:,.0f}/s"))
    finally:
        proc.kill()
    w = max(len(r[0]) for r in rows)
    print(f"{'activations/s (LLM phase)':<{w}}  {'value':>9}  notes")
    for name, val, note in rows:
        print(f"{name:<{w}}  {val:>9}  {note}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
