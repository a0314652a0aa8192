"""Scale: memory per LLM agent over steps, and throughput at 10^3..10^5 LLM agents on the fake server.

    python benchmarks/bench_scale.py [--agents 1000 10000 100000] [--steps 10] [--active 0.05]
                                     [--executor inprocess ray] [--actors 1 2] [--server process|inproc]
                                     [--src before=/path/to/old/src] [--malloc-trim]
                                     [--build-only 1000000] [--tracemalloc] [--step-chunk 0 1024]

Each configuration runs in a fresh subprocess (so RSS is its own) and prints one row per (agents,
executor): build time, RSS after the build, resident bytes per LLM agent above the same world with
rule-based agents after the first and the last step, growth per step, steps/s, activations/s,
DuckDB rows/s (rows the steps wrote over their wall time), trace bytes per step and the load
average; then, per step, the bytes per agent above rule-based and where the LLM run's memory is:
peak RSS during the step (VmHWM, reset before each step), CPython's small-object arenas, glibc's
heap in use, DuckDB's own accounting. With Ray the RSS is the driver's plus its actors' (Ray's own
raylet/GCS processes are not counted); ``--actors`` lists the actor counts to run.
``--src before=OLD_SRC`` runs the same configurations with an older checkout's ``src`` in the same
invocation (same load), so a change's effect is read off one table. ``--malloc-trim`` calls glibc's
``malloc_trim(0)`` after every step and reports what it gave back (is glibc fragmentation the growth?).
``--step-chunk`` lists ``executor.step_chunk`` values to run (0: a step's LLM agents all at once; the
default is the config's default), to read the in-step peak against the chunk size.
``--structures`` prints the deep size of each structure that may grow (agent memory, response
cache, posts, indexes) after the first and the last step: what grew, by name (slows those steps).

LLM agents talk to socium's fake OpenAI-compatible server (schema-valid JSON answers, as
``llm.backend: fake``), so the numbers are the simulator's own cost, not a model's. By default
(``--server process``) that server runs in its own process, as vLLM would, so its threads and
buffers are not counted as socium's memory; ``--server inproc`` uses ``llm.backend: fake`` itself
(server threads inside the measured process).
``--tracemalloc`` adds one more LLM run at the first size (not timed: tracing slows it ~3x) and
prints the allocation sites whose Python memory grew most between step 1 and the last step.
``--build-only N`` builds the N-agent world alone (no step) and reports time and RSS.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from array import array
from pathlib import Path
from typing import Any

import duckdb

from socium.config.loading import config_from_dict
from socium.simulator.simulation import Simulation

PAGE = os.sysconf("SC_PAGE_SIZE")
ROW_TABLES = ("actions", "exposures", "posts", "llm_calls", "follow_events", "stances")


def rss(pid: int | str = "self") -> int:
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * PAGE
    except FileNotFoundError:
        return 0


def peak_reset(pid: int | str = "self") -> None:
    """Start a new VmHWM window (Linux: writing 5 to clear_refs resets the peak RSS)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass


def peak(pid: int | str = "self") -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:
        pass
    return 0


def _libc() -> Any:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2  # noqa: B018 - glibc >= 2.33 only
        return libc
    except (OSError, AttributeError):
        return None


LIBC = _libc()


class _MallInfo2(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]


def glibc_heap() -> tuple[int, int]:
    """(bytes in use, bytes free) in glibc's heap, all arenas plus mmapped chunks; (0, 0) off glibc."""
    if LIBC is None:
        return 0, 0
    LIBC.mallinfo2.restype = _MallInfo2
    m = LIBC.mallinfo2()
    return m.uordblks + m.hblkhd, m.fordblks


def pymalloc() -> tuple[int, int]:
    """(bytes of CPython's small-object arenas mapped, bytes of live objects in them): objects of
    <= 512 bytes live there, not in glibc's heap; the difference is fragmentation."""
    r, w = os.pipe()
    saved = os.dup(2)
    try:
        os.dup2(w, 2)
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(w)
    with os.fdopen(r, encoding="ascii", errors="replace") as f:
        text = f.read()
    mapped = live = 0
    for line in text.splitlines():
        if "bytes/arena" in line:
            mapped = int(line.split("=")[1].replace(",", ""))
        elif line.startswith("# bytes in allocated blocks"):
            live = int(line.split("=")[1].replace(",", ""))
    return mapped, live


def config(n: int, steps: int, active: float, llm: bool, executor: str, url: str | None,
           actors: int = 2, chunk: int | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "name": "bench-scale", "seed": 1, "steps": steps,
        "population": {"n_agents": n, "activity": "uniform", "mean_activity": active},
        "graph": {"kind": "random_out", "params": {"out_degree": 10}},
        "recsys": {"kind": "chronological", "k": 5},
        "seed_posts": [{"author": i, "content": f"Opening post {i} about the city's new bike lanes."} for i in range(50)],
        "executor": {"kind": executor, "actors": actors, "concurrency_per_actor": 64},
    }
    if chunk is not None:
        cfg["executor"]["step_chunk"] = chunk
    if llm:
        cfg["policy"] = {"kind": "llm"}
        cfg["llm"] = {"backend": "fake", "max_concurrency": 64, "retries": 1}
        if url:  # the same fake server, in its own process
            cfg["llm"] = {**cfg["llm"], "backend": "openai", "base_urls": [url], "model": "fake-model"}
    else:
        cfg["policy"] = {"kind": "random", "p_like": 0.2, "p_post": 0.05, "p_repost": 0.05}
    return cfg


def trace_bytes(d: str) -> int:
    return sum(p.stat().st_size for p in Path(d).glob("trace.duckdb*"))


def deep_size(root: Any) -> int:
    """Bytes reachable from ``root`` through containers and instance dicts (numpy arrays by nbytes)."""
    import numpy as np

    seen: set[int] = set()
    stack, total = [root], 0
    while stack:
        x = stack.pop()
        if id(x) in seen or isinstance(x, type):
            continue
        seen.add(id(x))
        if isinstance(x, array):
            total += sys.getsizeof(x)
            continue
        if isinstance(x, np.ndarray):
            total += x.nbytes + 112
            if x.dtype == object:
                stack.extend(x.ravel().tolist())
            continue
        total += sys.getsizeof(x)
        if isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, (list, tuple, set, frozenset)):
            stack.extend(x)
        elif hasattr(x, "__dict__"):
            stack.append(vars(x))
        elif hasattr(type(x), "__slots__"):
            stack.extend(getattr(x, k) for k in type(x).__slots__ if hasattr(x, k))
    return total


def structures(sim: Simulation) -> dict[str, int]:
    """Deep sizes of the structures that may grow per agent or per step (what grew, by name)."""
    st = sim.world.state
    named = {"agent memory": sim.world.memory, "response cache": getattr(sim.policy, "_cache", None),
             "pending search results": sim.world.pending_results, "posts": st.posts,
             "search index": getattr(st, "_index", None), "adopters": getattr(st.adopters, "_more", st.adopters),
             "by_author": getattr(st, "by_author", None), "comments_of": st.comments_of,
             "likes, dislikes, reposts, reports": [st.likes, st.dislikes, st.reposted, st.reported]}
    return {k: deep_size(v) for k, v in named.items() if v is not None}


def pids(sim: Simulation) -> list[int | str]:
    """This process plus, with Ray, every actor of the run."""
    info = getattr(sim.executor, "actor_info", None)
    return ["self", *(a["pid"] for a in info())] if info is not None else ["self"]


def one(n: int, steps: int, active: float, llm: bool, executor: str, flags: str, url: str | None) -> dict:
    """One run; ``flags``: b build only, t tracemalloc, m malloc_trim after each step, s structure sizes,
    r<k> k Ray actors, c<k> executor.step_chunk k."""
    trace_mem = "t" in flags
    actors = int(m.group(1)) if (m := re.search(r"r(\d+)", flags)) else 2
    chunk = int(m.group(1)) if (m := re.search(r"c(\d+)", flags)) else None
    if trace_mem:
        tracemalloc.start(25)
    rss0 = rss()
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        sim = Simulation(config_from_dict(config(n, steps, active, llm, executor, url, actors, chunk)), d, force=True)
        build_s = time.perf_counter() - t0
        out: dict[str, Any] = {"build_s": build_s, "rss_start": rss0, "rss_built": rss()}
        if "b" in flags:
            sim.close()
            return out
        rss_steps, bytes_steps, snaps, where, sizes = [], [], [], [], []
        con = sim.store.con
        for s in range(steps):
            before = trace_bytes(d)
            for p in pids(sim):
                peak_reset(p)
            sim.step()
            trimmed = 0
            if "m" in flags and LIBC is not None:
                r0 = rss()
                LIBC.malloc_trim(0)
                trimmed = r0 - rss()
            rss_steps.append(sum(rss(p) for p in pids(sim)))
            bytes_steps.append(trace_bytes(d) - before)
            used, free = glibc_heap()
            duck_now = con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchone()[0]
            where.append({"peak": sum(peak(p) for p in pids(sim)), "pymalloc": pymalloc(),
                          "glibc_used": used, "glibc_free": free, "duckdb": int(duck_now or 0), "trimmed": trimmed})
            if "s" in flags and s in (0, steps - 1):
                sizes.append(structures(sim))
            if trace_mem and s in (0, steps - 1):
                gc.collect()
                snaps.append(tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)]))
        walls = [w for (w,) in con.execute("SELECT wall_s FROM steps WHERE step >= 0 ORDER BY step").fetchall()]
        acts = [a for (a,) in con.execute("SELECT n_active FROM steps WHERE step >= 0 ORDER BY step").fetchall()]
        tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        rows = [sum(con.execute(f"SELECT count(*) FROM {t} WHERE step = ?", [s]).fetchone()[0]
                    for t in ROW_TABLES if t in tables) for s in range(steps)]
        duck = con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchone()[0]
        top = _top_growth(snaps) if len(snaps) == 2 else []
        sim.close()
    out.update({"rss_steps": rss_steps, "where_steps": where, "trace_bytes_steps": bytes_steps, "wall_steps": walls, "active_steps": acts,
                "rows_steps": rows, "duckdb_bytes": duck, "tracemalloc_top": top, "structures": sizes, "load": os.getloadavg()[0]})
    return out


def _top_growth(snaps: list[Any]) -> list[str]:
    """The allocation sites (innermost socium/library frames first) that grew most."""
    lines = []
    for st in snaps[1].compare_to(snaps[0], "traceback")[:10]:
        frames = [f for f in reversed(list(st.traceback)) if "asyncio" not in f.filename][:6]
        where = " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in frames)
        lines.append(f"{st.size_diff / 1024:+,.0f} KiB {st.count_diff:+,d} blocks  {where}")
    return lines


def serve() -> None:
    """The fake model server in its own process: print its URL, serve until stdin closes."""
    from socium.llm.fake_server import FakeOpenAIServer

    with FakeOpenAIServer(record=False) as srv:
        print(srv.base_url, flush=True)
        sys.stdin.read()


def sub(args: list[str], url: str | None, src: str | None = None) -> dict:
    """One configuration in a fresh process, with ``src`` (a checkout's src folder) first on the path."""
    cmd = [sys.executable, __file__, "--one", *args] + (["--url", url] if url else [])
    env = {**os.environ, "PYTHONPATH": src} if src else None
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if res.returncode != 0:
        raise SystemExit(f"child failed ({' '.join(args)}, src {src or 'this tree'}):\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, nargs="*", default=[1000, 10_000, 100_000])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--active", type=float, default=0.05, help="share of agents active per step")
    ap.add_argument("--executor", nargs="+", default=["inprocess"], choices=["inprocess", "ray"])
    ap.add_argument("--actors", type=int, nargs="+", default=[2], help="Ray actor counts to run")
    ap.add_argument("--server", default="process", choices=["process", "inproc"])
    ap.add_argument("--src", action="append", default=[], metavar="NAME=PATH", help="extra source tree to compare")
    ap.add_argument("--malloc-trim", action="store_true", help="malloc_trim(0) after every step")
    ap.add_argument("--structures", action="store_true", help="deep sizes of growing structures, step 1 and last")
    ap.add_argument("--step-chunk", type=int, nargs="+", default=[None],
                    help="executor.step_chunk values to run (0: whole step; default: the config's default)")
    ap.add_argument("--build-only", type=int, nargs="*", default=[])
    ap.add_argument("--tracemalloc", action="store_true")
    ap.add_argument("--one", nargs=6, help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve()
        return
    if a.one:
        n, steps, active, llm, executor, flags = a.one
        print(json.dumps(one(int(n), int(steps), float(active), llm == "1", executor, flags, a.url)))
        return
    server = None
    url = None
    if a.server == "process" and a.agents:
        server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
    try:
        report(a, url)
    finally:
        if server is not None:
            server.stdin.close()  # type: ignore[union-attr]
            server.wait(timeout=30)


def _mb(x: float) -> str:
    return f"{x / 2**20:,.0f}"


def report(a: argparse.Namespace, url: str | None) -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"duckdb {duckdb.__version__}, {a.active:.0%} active, fake server: {a.server}, "
          f"malloc_trim after each step: {'yes' if a.malloc_trim else 'no'}, "
          f"load average {os.getloadavg()[0]:.2f} at start")
    trees: list[tuple[str, str | None]] = [(name, str(Path(p).resolve())) for name, _, p in
                                           (x.partition("=") for x in a.src)]
    trees.append(("this tree", None))
    print("| tree | agents | executor | build s | RSS built MB "
          "| LLM bytes/agent above rule-based (after step 1 -> last) | peak during last step, above rule-based | growth/step KB | steps/s | activations/s | DuckDB rows/s "
          "| trace KB/step | load |")
    print("| --- | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    per_step: list[str] = []
    runs = [(ex, k, c) for ex in a.executor for k in (a.actors if ex == "ray" else [0]) for c in a.step_chunk]
    for ex, k, c in runs:
        for n in a.agents:
            for tree, src in trees:
                flags = (("m" if a.malloc_trim else "") + ("s" if a.structures else "") + (f"r{k}" if k else "")
                         + (f"c{c}" if c is not None else "")) or "-"
                rule = sub([str(n), str(a.steps), str(a.active), "0", ex, flags], url, src)
                llm = sub([str(n), str(a.steps), str(a.active), "1", ex, flags], url, src)
                above = [(x - y) / n for x, y in zip(llm["rss_steps"], rule["rss_steps"])]
                peak_above = (llm["where_steps"][-1]["peak"] - rule["where_steps"][-1]["peak"]) / n
                growth = (llm["rss_steps"][-1] - llm["rss_steps"][0]) / max(a.steps - 1, 1) / 1024
                wall = sum(llm["wall_steps"][1:]) or sum(llm["wall_steps"])  # step 0's wall_s includes the set-up
                timed = slice(1, None) if len(llm["wall_steps"]) > 1 else slice(None)
                exn = (f"ray, {k} actor{'s' if k > 1 else ''}" if k else ex) + (
                    f", step_chunk {c}" if c is not None else "")
                print(f"| {tree} | {n:,} | {exn} | {llm['build_s']:.2f} | {_mb(llm['rss_built'])} | "
                      f"{above[0]:,.0f} -> {above[-1]:,.0f} | {peak_above:,.0f} | {growth:,.0f} | "
                      f"{len(llm['wall_steps'][timed]) / wall:.2f} | "
                      f"{sum(llm['active_steps'][timed]) / wall:,.0f} | {sum(llm['rows_steps'][timed]) / wall:,.0f} | "
                      f"{sum(llm['trace_bytes_steps']) / len(llm['trace_bytes_steps']) / 1024:,.0f} | "
                      f"{llm['load']:.1f} |", flush=True)
                lines = [f"{n:,} {exn}, {tree}: bytes/agent above rule-based after each step: "
                         + " ".join(f"{b:,.0f}" for b in above)
                         + f"  (DuckDB holds {llm['duckdb_bytes'] / 2**20:,.1f} MB at the end)",
                         "    LLM run, MB after each step: RSS / peak / pymalloc arenas (live objects) / glibc heap "
                         "in use (free) / DuckDB" + (" / given back by malloc_trim" if a.malloc_trim else "")
                         + "; step wall s"]
                for i, (r, w) in enumerate(zip(llm["rss_steps"], llm["where_steps"])):
                    lines.append(f"    step {i}: {_mb(r)} / {_mb(w['peak'])} / {_mb(w['pymalloc'][0])} "
                                 f"({_mb(w['pymalloc'][1])}) / {_mb(w['glibc_used'])} ({_mb(w['glibc_free'])}) / "
                                 f"{_mb(w['duckdb'])}" + (f" / {w['trimmed'] / 2**20:,.1f}" if a.malloc_trim else "")
                                 + f"; {llm['wall_steps'][i]:.1f}")
                if len(llm["structures"]) == 2:
                    first, last = llm["structures"]
                    lines.append(f"    deep size MB after step 1 -> {a.steps} (LLM run): " + ", ".join(
                        f"{k} {first[k] / 2**20:.2f} -> {last[k] / 2**20:.2f}" for k in last))
                per_step.append("\n".join(lines))
    if per_step:
        print("\nPer step (with Ray, pymalloc/glibc/DuckDB are the driver's alone):")
        for block in per_step:
            print("  " + block)
    for n in a.build_only:
        b = sub([str(n), "1", str(a.active), "1", "inprocess", "b"], None)
        print(f"build only: {n:,} LLM agents in {b['build_s']:.1f} s, RSS {b['rss_built'] / 2**20:,.0f} MB "
              f"({(b['rss_built'] - b['rss_start']) / n:,.0f} B/agent above the interpreter)")
    if a.tracemalloc and a.agents:
        t = sub([str(a.agents[0]), str(a.steps), str(a.active), "1", a.executor[0], "t"], url)
        print(f"\nPython allocations that grew most between step 1 and step {a.steps} at {a.agents[0]:,} agents:")
        for line in t["tracemalloc_top"]:
            print("  " + line)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
