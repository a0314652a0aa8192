"""The HTTP path at the bound: LLM agents against socium's own fake OpenAI-compatible server.

    python benchmarks/bench_http.py [--sizes 2000,10000] [--steps 3] [--actors 1,2,4]
        [--delays 0.05,0.2] [--slow-agents 2000] [--bound 320]
        [--src before=/path/to/old/src] [--no-profile] [--skip-ray] [--sdk]

The server is ``python -m socium.testing.fault_server`` (no faults) in its own process, answering
schema-valid actions sampled from each request's schema (so agents post, like, follow and the
trace fills as in a real run), instantly or after ``--delay-s``. It shares this machine's cores, so
its CPU per activation is measured separately (``/proc/PID/stat``): the client-side bound is what
the driver alone would do if the server were elsewhere.

Every measurement runs in its own child process with ``PYTHONPATH`` set to one source tree, so
``--src before=OLD_SRC`` puts an older checkout's numbers in the same table, under the same load.
Rows, per source tree:
1. instant server, in-process executor, per size: activations/s of whole steps (``Simulation.advance``:
   observation, recommender, LLM phase, applying actions, DuckDB write; the first step, which opens
   connections, is not timed), activations/s of the LLM phase alone, driver and server CPU ms per
   activation, the collector's CPU per activation by generation (``gc.callbacks``) and the driver
   process's peak RSS (``ru_maxrss``: the whole child, warm-up step and set-up included);
2. the driver's CPU per activation split by component: the share of py-spy samples of the timed
   steps at the first size (classified by the innermost matching frame, ``COMPONENTS``) times the
   run's measured CPU per activation, unless ``--no-profile``; py-spy runs only in that run;
3. per ``--delays`` (50 and 200 ms by default), a server answering after that delay, ``--slow-agents``
   agents, concurrency ``--bound`` x delay (16 at 50 ms, 64 at 200 ms): activations/s of the LLM
   phase against the latency bound concurrency / delay (320/s by default, below what the driver's
   CPU allows on a shared 2-core machine, so that the row measures the HTTP path, not the CPU);
4. instant server with the Ray executor at 1/2/4 actors (concurrency 64 each), whole steps;
5. (``--sdk``, needs ``pip install openai``) the official openai SDK client, for comparison.
The load average is printed before and after: on a machine shared with others, read ratios within
the table rather than absolute numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import slot_timeline  # this script's folder is on sys.path

HERE = Path(__file__).resolve()

#: Driver CPU components: the first rule matching a frame, walking from the innermost frame out.
COMPONENTS: list[tuple[str, tuple[str, ...]]] = [
    (
        "DuckDB writes (trace, call log)",
        ("simulator/store.py", "call_rows", "agents/call_log.py", "duckdb", "simulator/recording.py"),
    ),
    ("recommender", ("socium/recsys/",)),
    ("answer parsing + validation", ("validate_answer", "parse_json_lenient", "parse_completion", "llm/parsing.py")),
    ("schema building", ("answer_schema", "action_schema", "state_aware_ids")),
    ("prompt building", ("agents/prompts.py", "LLMPolicy._messages")),
    ("observation / feed", ("StepAgents.observe", "agents/perspectives.py", "agents/observation.py")),
    ("request objects, seeds, cache key", ("cache_key", "LLMPolicy.request", "LLMPolicy.seed", "llm/cache.py")),
    ("request JSON encoding", ("request_body", "encode_request")),
    ("LLM wrappers (retry, limit, usage)", ("llm/wrappers.py", "llm/usage.py", "llm/base.py")),
    (
        "HTTP client + sockets",
        ("aiohttp/", "yarl/", "multidict/", "selector_events", "llm/openai_compat.py", "llm/http11.py", "socket"),
    ),
    ("applying actions (platform)", ("apply_decisions", "socium/platform/", "moderation/")),
    ("asyncio event loop", ("asyncio/",)),
]


def classify(raw: str) -> dict[str, int]:
    """Samples per component from py-spy's ``--format raw`` output (``frame;frame;... count``)."""
    out: collections.Counter[str] = collections.Counter()
    for line in raw.splitlines():
        stack, _, n = line.rstrip().rpartition(" ")
        if not n.isdigit() or "Simulation.advance" not in stack:
            continue
        cat = "other"
        for frame in reversed(stack.split(";")):
            hit = next((c for c, keys in COMPONENTS if any(k in frame for k in keys)), None)
            if hit:
                cat = hit
                break
        out[cat] += int(n)
    return dict(out)


# ---- child process: one measurement ----------------------------------------------------------------
def _workloads() -> Any:
    """``socium.testing.workloads`` of THIS tree, loaded by path: the workload (which tests pin) stays the same
    when ``--src before=OLD_SRC`` runs an older tree that lacks the module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_workloads", HERE.parent.parent / "src/socium/testing/workloads.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


_config = _workloads().bench_http_config


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_server(delay: float, batch_limit: int | None = None) -> tuple[subprocess.Popen, str]:
    """The fake server, always from this tree's sources (so ``--src`` trees meet the same server); GPU-like
    ones keep a timeline of their slots (``slot_timeline``)."""
    cmd = [sys.executable, "-m", "socium.testing.fault_server", "--port", "0", "--delay-s", str(delay)]
    if batch_limit:
        cmd += ["--batch-limit", str(batch_limit), "--timeline"]
    env = {**os.environ, "PYTHONPATH": str(HERE.parent.parent / "src")}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if not line.startswith("serving "):
        proc.kill()
        raise RuntimeError(f"fake server did not start: {line!r}")
    return proc, line.split()[1]


def _tree_cpu(exclude: int) -> float:
    """CPU seconds of this process's descendants (Ray's raylet, GCS and actor workers), the fake server
    left out: with the Ray executor the driver's own CPU misses the actors'. psutil comes with Ray."""
    try:
        import psutil
    except ImportError:
        return 0.0
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        if child.pid == exclude:
            continue
        try:
            t = child.cpu_times()
        except psutil.Error:  # ended meanwhile
            continue
        total += t.user + t.system
    return total


def _server_metrics(url: str, what: str = "metrics") -> Any:
    """The fake server's counters (``GET /metrics``: busy slot-seconds, idle seconds, its clock) or its
    requests' slot times since the last read (``GET /timeline``)."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/{what}", timeout=30) as r:  # loopback only
        return json.loads(r.read())


def _sdk_backend() -> Any:
    """The official openai SDK (httpx underneath, retries off), for comparison; not a dependency."""
    from socium.llm import openai_compat
    from socium.llm.types import LLMRequest, LLMResult

    class SDKBackend(openai_compat.OpenAIBackend):
        def _make_session(self) -> Any:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(api_key="EMPTY", base_url=self.base_url, max_retries=0, timeout=self.timeout_s)
            return client, asyncio.get_running_loop().create_future()

        async def _one(self, client: Any, req: LLMRequest) -> LLMResult:
            t0 = time.perf_counter()
            body = self.request_body(req)
            resp = await client.chat.completions.create(**body)
            choice, usage = resp.choices[0], resp.usage
            return LLMResult(request_id=req.request_id, text=choice.message.content or "",
                             prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                             latency_s=time.perf_counter() - t0, finish_reason=choice.finish_reason)  # fmt: skip

        def close(self) -> None:
            pass

    openai_compat.OpenAIBackend = SDKBackend  # type: ignore[misc]


#: ``--phases``: synchronous functions timed with ``process_time`` (inclusive; a nested one is also in
#: its caller's row), as (module, attribute path, label). The LLM phase's rest (wrappers, HTTP, the
#: event loop) is its total minus its timed parts: awaits cannot be timed per call.
PHASES: list[tuple[str, str, str]] = [
    ("socium.recsys.chronological", "ChronologicalRecommender.feeds", "feeds ranked (chronological recommender)"),
    ("socium.simulator.step_agents", "StepAgents.observe", "observation and feed"),
    ("socium.agents.perspectives", "fill_observation", "  of which profile, memory, groups (fill_observation)"),
    ("socium.agents.perspectives", "feed_item", "  of which feed items (feed_item)"),
    ("socium.agents.perspectives", "feed_items", "  of which feed items (feed_item)"),  # newer trees: per feed
    ("socium.agents.perspectives", "target_marks", "    of which action marks (target_marks)"),
    ("socium.agents.llm_policy", "LLMPolicy._messages", "LLM: prompt text (_messages)"),
    ("socium.agents.llm_policy", "LLMPolicy.answer_schema", "LLM: answer schema"),
    ("socium.agents.llm_policy", "LLMPolicy.request", "LLM: request object"),
    ("socium.agents.llm_policy", "LLMPolicy.seed", "LLM: seed"),
    ("socium.llm.types", "LLMRequest.cache_key", "LLM: cache key"),
    ("socium.llm.openai_compat", "OpenAIBackend.encode_request", "LLM: request body"),
    ("socium.llm.openai_compat", "parse_completion", "LLM: response parsing"),
    ("socium.agents.llm_policy", "parse_json_lenient", "LLM: answer JSON"),
    ("socium.agents.llm_policy", "validate_answer", "LLM: answer validation"),
    ("socium.agents.call_log", "RenderedRequest.__init__", "LLM: llm_calls JSON strings (RenderedRequest)"),
    ("socium.simulator.simulation", "call_rows", "llm_calls rows (call_rows)"),
    ("socium.simulator.step_agents", "StepAgents.apply_decisions", "applying actions"),
    ("socium.simulator.recording", "StepRecorder.batches", "trace rows of the step (StepRecorder.batches)"),
    ("socium.trace.store", "TraceStore.append_step", "DuckDB write of the step"),
]


def _time_phases() -> tuple[dict[str, float], Any]:
    """Wrap :data:`PHASES` with CPU timers; returns the totals (seconds) and a function to undo it."""
    import functools
    import importlib

    totals: dict[str, float] = collections.defaultdict(float)
    undo = []
    for mod_name, path, label in PHASES:
        owner: Any = importlib.import_module(mod_name)
        *parents, attr = path.split(".")
        for p in parents:
            owner = getattr(owner, p, None)
        if owner is None or not hasattr(owner, attr):  # an older tree (--src) without this function
            continue
        if isinstance(owner, type):  # wrap where the method is defined (since the splits, often a mixin)
            owner = next(cls for cls in owner.__mro__ if attr in cls.__dict__)
        fn = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)

        def wrap(fn: Any, label: str) -> Any:
            @functools.wraps(fn)
            def timed(*a: Any, **k: Any) -> Any:
                t = time.process_time()
                try:
                    return fn(*a, **k)
                finally:
                    totals[label] += time.process_time() - t

            return timed

        setattr(owner, attr, wrap(fn, label))
        undo.append((owner, attr, fn))
    return totals, lambda: [setattr(o, a, f) for o, a, f in undo]


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``spec`` (agents, steps, delay, executor, concurrency, profile, sdk) and time its steps."""
    from socium.config.loading import config_from_dict
    from socium.simulator.simulation import Simulation

    if spec.get("sdk"):
        _sdk_backend()
    proc, url = _start_server(spec["delay"], spec.get("batch_limit"))
    spy = flame = None
    try:
        executor = spec.get("executor")
        if spec.get("step_chunk") is not None:  # --step-chunk: 0 decides a step's agents in one batch
            executor = {"kind": "inprocess", **(executor or {}), "step_chunk": spec["step_chunk"]}
        cfg = _config(spec["agents"], spec["steps"], url, executor, spec["concurrency"], spec.get("activity", 1.0))
        if spec.get("reddit"):  # the OASIS-parity prompts: reddit preset, 13 actions, 5 comments per post
            cfg = _workloads().oasis_reddit(cfg)
        with tempfile.TemporaryDirectory() as d:
            sim = Simulation(config_from_dict(cfg), d, force=True)
            inner, decide = sim.executor.run, sim.agent_steps.decide
            phase: list[float] = []  # executor.run walls (none where a step's chunks overlap: one decide)
            decided: list[float] = []  # per step: StepAgents.decide wall (observation + LLM phase)
            idle: list[float] = []  # per step's decide: the server's idle share (GET /metrics), GPU-like rows
            occupied: list[float] = []  # per step's decide: busy slot-time over batch x wall
            slots: list[dict[str, Any]] = []  # per step's decide: where the slot time went (slot_timeline)

            def timed(observations):  # type: ignore[no-untyped-def]
                t = time.perf_counter()
                out = inner(observations)
                phase.append(time.perf_counter() - t)
                return out

            def timed_decide(*a: Any) -> Any:
                """A step's observation and LLM phase, measured as one window: since the chunks of a step
                overlap (issue 41, third round) the LLM phase is not a separate span any more."""
                m0 = _server_metrics(url) if spec.get("batch_limit") else None
                if m0 is not None:
                    _server_metrics(url, "timeline")  # empty it: only this step's requests
                t, mt = time.perf_counter(), time.monotonic()
                out = decide(*a)
                decided.append(time.perf_counter() - t)
                mt1 = time.monotonic()
                if m0 is not None:
                    tl = _server_metrics(url, "timeline")["requests"]
                    slots.append(slot_timeline.decompose([tuple(r) for r in tl], mt, mt1, spec["batch_limit"]))
                    m1 = _server_metrics(url)
                    span = max(1e-9, m1["monotonic"] - m0["monotonic"])
                    idle.append((m1["idle_s"] - m0["idle_s"]) / span)
                    occupied.append((m1["busy_slot_s"] - m0["busy_slot_s"]) / (span * m1["batch_limit"]))
                return out

            sim.executor.run = timed  # type: ignore[method-assign]
            sim.agent_steps.decide = timed_decide  # type: ignore[method-assign]
            sim.advance()  # warm-up: connections, imports, Ray actors
            phase_cpu: list[float] = []
            if spec.get("phases"):
                totals, undo = _time_phases()

                def cpu_timed(*a: Any) -> Any:
                    c = time.process_time()
                    try:
                        return timed_decide(*a)
                    finally:
                        phase_cpu.append(time.process_time() - c)

                sim.agent_steps.decide = cpu_timed  # type: ignore[method-assign]
            pyspy = shutil.which(
                "py-spy", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
            )
            if spec.get("profile") and pyspy:
                raw = os.path.join(d, "spy.txt")
                spy = subprocess.Popen([pyspy, "record", "--pid", str(os.getpid()), "--nonblocking", "--format",
                                        "raw", "-r", "200", "-o", raw],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
                if spec.get("flame"):  # a second sampler writes the flame graph of the same steps
                    flame = subprocess.Popen([pyspy, "record", "--pid", str(os.getpid()), "--nonblocking", "-r", "100",
                                              "--format", "flamegraph", "-o", spec["flame"]],
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
                time.sleep(1.0)  # py-spy attaches
            acts = 0
            gc_start = [0.0]
            gc_cpu = [0.0, 0.0, 0.0]  # CPU seconds in the collector per generation (gc.callbacks)
            gc_n = [0, 0, 0]

            def gc_note(what: str, info: dict[str, int]) -> None:
                if what == "start":
                    gc_start[0] = time.process_time()
                else:
                    gc_cpu[info["generation"]] += time.process_time() - gc_start[0]
                    gc_n[info["generation"]] += 1

            gc.callbacks.append(gc_note)
            ray = (spec.get("executor") or {}).get("kind") == "ray"
            k0 = _tree_cpu(proc.pid) if ray else 0.0
            t0, c0, s0 = time.perf_counter(), time.process_time(), _cpu_s(proc.pid)
            p0, d0 = len(phase), len(decided)
            for _ in range(spec["steps"] - 1):
                acts += sim.advance().n_active
            wall, cpu, scpu = time.perf_counter() - t0, time.process_time() - c0, _cpu_s(proc.pid) - s0
            kids = _tree_cpu(proc.pid) - k0 if ray else 0.0
            gc.callbacks.remove(gc_note)
            phases: dict[str, float] = {}
            if spec.get("phases"):
                undo()
                phases = {k: 1e6 * v / acts for k, v in totals.items()}
                # decide's CPU less what it spends outside the LLM phase (feeds, observation), timed inside it
                outside = sum(v for k, v in phases.items() if k.startswith(("feeds ranked", "observation")))
                llm = 1e6 * sum(phase_cpu) / acts - outside
                inside = sum(v for k, v in phases.items() if k.startswith("LLM: "))  # disjoint calls
                phases["LLM phase, all of it"] = llm
                phases["LLM: the rest (wrappers, HTTP, event loop)"] = llm - inside
                phases["driver total"] = 1e6 * cpu / acts
            samples: dict[str, int] = {}
            if flame is not None:
                flame.send_signal(signal.SIGINT)
                flame.wait(timeout=60)
                flame = None
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(timeout=60)
                spy = None
                if os.path.exists(raw):
                    samples = classify(Path(raw).read_text())
            sim.close()
    finally:
        for sampler in (spy, flame):
            if sampler is not None:
                sampler.kill()
        proc.kill()
    llm_s, decide_s = sum(phase[p0:]), sum(decided[d0:])
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the driver's peak (server: own process)
    idle, occupied, slots = idle[d0:], occupied[d0:], slots[d0:]  # the timed steps'
    return {"step": acts / wall, "phase": acts / (llm_s or decide_s), "llm_phase_timed": bool(llm_s), "decide": acts / decide_s, "idle": idle, "occupied": occupied, "slots": slots, "all_cpu_ms": 1e3 * (cpu + kids) / acts, "cpu_ms": 1e3 * cpu / acts, "server_ms": 1e3 * scpu / acts,
            "rss_mb": rss_mb, "acts": acts, "samples": samples, "phases": phases, "loop": _loop_kind(),
            "gc_us": [1e6 * c / acts for c in gc_cpu], "gc_n": gc_n}  # fmt: skip


def _loop_kind() -> str:
    try:
        from socium.llm.base import event_loop_kind
    except ImportError:  # an older tree (--src) had no choice of loop
        return "asyncio"
    return event_loop_kind()


# ---- parent: spawn children, print the table ---------------------------------------------------------
def run_child(src: str, spec: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": src, "OMP_WAIT_POLICY": "PASSIVE"}
    out = subprocess.run([sys.executable, str(HERE), "--child", json.dumps(spec)], env=env, capture_output=True,
                         text=True, timeout=1800)  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"measurement {spec} with {src} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def phase_table(
    trees: list[tuple[str, str]], sizes: list[int], steps: int, repeat: int, activity: float, reddit: bool = False
) -> None:
    """Driver CPU µs per activation by phase (medians over ``repeat`` runs, the trees alternated);
    ``reddit``: on the OASIS-parity prompts."""
    import statistics

    for n in sizes:
        got: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in trees}
        for _ in range(repeat):
            for name, src in trees:
                got[name].append(run_child(src, {"steps": steps, "delay": 0.0, "concurrency": 64, "agents": n,
                                                 "phases": True, "activity": activity,
                                                 "reddit": reddit}))  # fmt: skip
        per_step = statistics.median(m["acts"] for ms in got.values() for m in ms) / (steps - 1)
        active = f", activity {activity:g} (~{per_step:,.0f} activations per step)"
        active = (active if activity != 1.0 else "") + (", OASIS-parity reddit prompts" if reddit else "")
        print(
            f"\n{n:,} agents{active}, instant server: driver CPU µs per activation "
            f"(median of {repeat}; load {load()})"
        )
        labels = list(dict.fromkeys(k for ms in got.values() for m in ms for k in m["phases"]))
        print(f"{'phase':<52}" + "".join(f"{name:>14}" for name in got))
        for k in labels:
            vals = [statistics.median(m["phases"].get(k, 0.0) for m in ms) for ms in got.values()]
            print(f"{k:<52}" + "".join(f"{v:>14.0f}" for v in vals))
        for key, fmt in (("step", "act/s whole step"), ("phase", "act/s LLM phase")):
            vals = [statistics.median(m[key] for m in ms) for ms in got.values()]
            print(f"{fmt:<52}" + "".join(f"{v:>14,.0f}" for v in vals))
        for g, gen in enumerate(("young", "middle", "full")):  # in the timed steps, included in the rows above
            vals = [statistics.median(m["gc_us"][g] for m in ms) for ms in got.values()]
            print(f"{f'collector, {gen} generation, µs/act':<52}" + "".join(f"{v:>14.1f}" for v in vals))
        print(f"{'event loop':<52}" + "".join(f"{ms[0]['loop']:>14}" for ms in got.values()))


def interleaved(trees: list[tuple[str, str]], a: argparse.Namespace) -> None:
    """``--interleave N``: the instant and ``--delays`` rows, each run N times with the trees alternated
    (so that a shared machine's changing load falls on every tree alike); each run's row, then the
    median per tree. The latency-bound rows are the LLM phase's share of concurrency / delay."""
    import statistics

    configs: list[tuple[str, dict[str, Any], float]] = []
    for n in [int(x) for x in a.sizes.split(",") if x]:  # --sizes "": only the latency-bound rows
        configs.append((f"instant, {n:,} agents, concurrency 64", {"agents": n, "delay": 0.0, "concurrency": 64}, 0))
    for delay in [float(x) for x in a.delays.split(",") if x]:
        conc = a.inflight or max(1, round(a.bound * delay))
        spec: dict[str, Any] = {"agents": a.slow_agents, "delay": delay, "concurrency": conc}
        kind = "server"
        if a.reddit:
            spec["reddit"] = True
        if a.step_chunk is not None:
            spec["step_chunk"] = a.step_chunk
        if a.inflight:  # a GPU-like server: a batch of `inflight` decodes in `delay`
            spec["batch_limit"] = a.inflight
            kind = f"GPU-like server (batch {a.inflight})"
        if a.ray_actors:  # the same in-flight total, split over the actors
            spec["executor"] = {"kind": "ray", "actors": a.ray_actors,
                                "concurrency_per_actor": max(1, conc // a.ray_actors)}  # fmt: skip
            kind += f", Ray {a.ray_actors} actor(s)"
        extra = (", OASIS-parity reddit prompts" if a.reddit else "") + (
            f", step_chunk {a.step_chunk}" if a.step_chunk is not None else ""
        )
        configs.append(
            (f"{delay * 1e3:g} ms {kind}, {a.slow_agents:,} agents, concurrency {conc}{extra}", spec, conc / delay)
        )
    for label, spec, bound in configs:
        got: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in trees}
        for rep in range(a.interleave):
            for name, src in trees:
                m = run_child(src, {"steps": a.steps, **spec})
                got[name].append(m)
                share = f"; {m['phase'] / bound:.0%} of the {bound:,.0f}/s bound" if bound else ""
                if not m.get("llm_phase_timed", True):
                    share += " (no separate LLM phase: chunks overlapped; observation + LLM)"
                if bound and "decide" in m:
                    share += f"; observation + LLM {m['decide']:,.0f} act/s = {m['decide'] / bound:.0%} of the bound"
                if m.get("idle"):
                    share += "; server idle per step's observation + LLM " + "/".join(f"{x:.0%}" for x in m["idle"])
                    share += ", slots busy " + "/".join(f"{x:.0%}" for x in m["occupied"])
                if m.get("slots"):
                    share += "; " + slot_timeline.summary(m["slots"])
                if spec.get("executor"):
                    share += f"; driver + Ray processes CPU {m['all_cpu_ms']:.2f} ms/act"
                print(f"  run {rep + 1} {name:<14} {label}: {m['step']:,.0f} act/s step, {m['phase']:,.0f} act/s "
                      f"LLM phase{share}, driver CPU {m['cpu_ms']:.2f} ms/act; load {load()}", flush=True)  # fmt: skip
        for name, ms in got.items():
            phase = statistics.median(m["phase"] for m in ms)
            share = f" = {phase / bound:.0%} of the {bound:,.0f}/s bound" if bound else ""
            if bound and "decide" in ms[0]:
                dec = statistics.median(m["decide"] for m in ms)
                share += f"; observation + LLM {dec:,.0f} act/s = {dec / bound:.0%} of the bound"
            if ms[0].get("idle"):
                share += f", server idle {statistics.median(x for m in ms for x in m['idle']):.0%} of it"
                share += f", slots busy {statistics.median(x for m in ms for x in m['occupied']):.0%}"
            print(f"median of {a.interleave}, {name:<14} {label}: {statistics.median(m['step'] for m in ms):,.0f} "
                  f"act/s step, {phase:,.0f} act/s LLM phase{share}, driver CPU "
                  f"{statistics.median(m['cpu_ms'] for m in ms):.2f} ms/act", flush=True)  # fmt: skip
            if ms[0].get("slots"):
                print(f"  {name}: " + slot_timeline.summary([p for m in ms for p in m["slots"]]), flush=True)


def _gc_note(m: dict[str, Any]) -> str:
    """The collector's CPU per activation in the timed steps, per generation (and how many passes)."""
    us, n = m.get("gc_us", [0.0] * 3), m.get("gc_n", [0] * 3)
    return "GC µs/act young/middle/full " + "/".join(f"{u:.0f} ({k})" for u, k in zip(us, n))


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--steps", type=int, default=3, help="steps per run, the first (warm-up) not timed")
    ap.add_argument("--slow-agents", type=int, default=2000)
    ap.add_argument("--delays", default="0.05,0.2", help="server delays (s) of the latency-bound rows")
    ap.add_argument("--bound", type=float, default=320.0, help="latency bound (act/s): concurrency = bound x delay")
    ap.add_argument("--inflight", type=int, default=0, metavar="N",
                    help="--interleave: the --delays rows at N in flight, GPU-like server (batch N)")  # fmt: skip
    ap.add_argument("--ray-actors", type=int, default=0, metavar="K",
                    help="--interleave: run the --delays rows on the Ray executor with K actors")  # fmt: skip
    ap.add_argument("--actors", default="1,2,4")
    ap.add_argument("--src", action="append", default=[], metavar="NAME=PATH", help="extra source tree to compare")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--flame", metavar="SVG", help="also write py-spy's flame graph of the profiled run ({name}: tree)")
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--sdk", action="store_true", help="also measure the official openai SDK client")
    ap.add_argument(
        "--phases",
        action="store_true",
        help="only the driver's CPU per activation by phase (timers), instant server, per tree and size",
    )
    ap.add_argument("--repeat", type=int, default=1, help="--phases: runs per tree and size, alternating trees")
    ap.add_argument(
        "--activity",
        type=float,
        default=1.0,
        help="--phases: agents' mean activation probability per step (1: all active; less: a world "
        "larger than the step, to tell the world's size from the step's)",
    )
    ap.add_argument("--interleave", type=int, default=0, metavar="N",
                    help="only the instant and --delays rows, N runs per tree, alternated; medians")  # fmt: skip
    ap.add_argument("--reddit", action="store_true",
                    help="--interleave / --phases: on OASIS-parity prompts (reddit, 13 actions)")  # fmt: skip
    ap.add_argument("--step-chunk", type=int, default=None, metavar="N",
                    help="--interleave: executor.step_chunk of the --delays rows (0: a step in one batch)")  # fmt: skip
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(measure(json.loads(a.child))))
        return
    trees = [(name, str(Path(p).resolve())) for name, _, p in (s.partition("=") for s in a.src)]
    trees.append(("this tree", str(HERE.parent.parent / "src")))
    sizes = [int(x) for x in a.sizes.split(",") if x]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average before: {load()}")  # fmt: skip
    if a.phases:
        phase_table(trees, sizes, a.steps, a.repeat, a.activity, a.reddit)
        print(f"load average after: {load()}")
        return
    if a.interleave:
        interleaved(trees, a)
        print(f"load average after: {load()}")
        return
    rows: list[list[str]] = []
    split: dict[str, dict[str, float]] = {}
    base = {"steps": a.steps, "delay": 0.0, "concurrency": 64}
    for name, src in trees:
        for i, n in enumerate(sizes):
            flame = a.flame.replace("{name}", name.replace(" ", "_")) if a.flame and i == 0 else None
            m = run_child(src, {**base, "agents": n, "profile": i == 0 and not a.no_profile, "flame": flame})
            rows.append([name, f"instant, in-process, {n:,} agents", f"{m['step']:,.0f}", f"{m['phase']:,.0f}",
                         f"{m['cpu_ms']:.2f}", f"{m['server_ms']:.2f}",
                         f"load {load()}; peak RSS {m['rss_mb']:,.0f} MB; {_gc_note(m)}"])  # fmt: skip
            if m["samples"]:  # each component's share of the samples, times the measured CPU per activation
                total = sum(m["samples"].values())
                split[name] = {k: m["cpu_ms"] * v / total for k, v in m["samples"].items()}
        if a.sdk:
            m = run_child(src, {**base, "agents": sizes[0], "sdk": True})
            rows.append([name, f"instant, in-process, {sizes[0]:,} agents, openai SDK", f"{m['step']:,.0f}",
                         f"{m['phase']:,.0f}", f"{m['cpu_ms']:.2f}", f"{m['server_ms']:.2f}", ""])  # fmt: skip
        for delay in [float(x) for x in a.delays.split(",") if x]:
            conc = max(1, round(a.bound * delay))
            m = run_child(src, {**base, "agents": a.slow_agents, "delay": delay, "concurrency": conc})
            bound = conc / delay
            rows.append([name, f"{delay * 1e3:g} ms server, concurrency {conc}, {a.slow_agents:,} agents",
                         f"{m['step']:,.0f}", f"{m['phase']:,.0f}", f"{m['cpu_ms']:.2f}", f"{m['server_ms']:.2f}",
                         f"LLM phase {m['phase'] / bound:.0%} of the {conc} / {delay:g} s = {bound:,.0f}/s bound; "
                         f"load {load()}"])  # fmt: skip
        if not a.skip_ray:
            for k in [int(x) for x in a.actors.split(",")]:
                ex = {"kind": "ray", "actors": k, "concurrency_per_actor": 64}
                m = run_child(src, {**base, "agents": sizes[0], "executor": ex})
                rows.append([name, f"instant, Ray {k} actor(s) x 64, {sizes[0]:,} agents", f"{m['step']:,.0f}",
                             f"{m['phase']:,.0f}", "-", f"{m['server_ms']:.2f}", "driver CPU excludes actors"])  # fmt: skip
    head = ["source", "configuration", "act/s step", "act/s LLM", "driver CPU ms/act", "server CPU ms/act", "notes"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(c.ljust(w) if i in (0, 1, 6) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    if split:
        names = list(split)
        comps = sorted({c for s in split.values() for c in s}, key=lambda c: -max(s.get(c, 0) for s in split.values()))
        print(f"\ndriver CPU ms per activation by component (py-spy, {sizes[0]:,} agents, instant server)")
        print(f"{'component':<38}" + "".join(f"{n:>14}" for n in names))
        for c in comps:
            print(f"{c:<38}" + "".join(f"{split[n].get(c, 0):>14.3f}" for n in names))
        print(f"{'total (driver CPU ms/activation)':<38}" + "".join(f"{sum(split[n].values()):>14.3f}" for n in names))
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
