"""Executor benchmarks: in-process vs Ray actors, rule-based and fake-LLM agents, driver overhead.

Run: ``python benchmarks/bench_ray.py`` (``--quick`` for a smoke run at 1/10 the sizes; ``--only
rule|llm`` for one half). Prints one table.

What is measured, per configuration, over ``--steps`` steps after one warm-up step (actor start-up
and first-step imports are excluded):
- steps/s and agent-activations/s end to end (a whole ``Simulation.advance``);
- for fake-LLM agents (``SleepyPolicy``: 200 ms per decision, random-null-model actions), the
  activations/s of the executor alone against the bound ``actors * concurrency / latency``;
- driver overhead = the part of a step that is not ``executor.run``: building observations
  (feeds), applying decisions, the recommender's update and the DuckDB write, as a fraction of
  step time.

Population: synthetic, uniform hourly activity (so every step activates about the same number of
agents), Barabasi-Albert graph (m=3), chronological feeds (k=5), independent-cascade rules.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform as stdlib_platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from socium.config.loading import config_from_dict
from socium.simulator.simulation import Simulation
from socium.testing.fake_policies import SleepyPolicy

GC_FREEZE = False


def _cfg(n: int, activity: float, steps: int, executor: dict[str, Any]) -> Any:
    return config_from_dict({
        "name": "bench", "seed": 1, "steps": steps + 1,
        "population": {"n_agents": n, "mean_activity": activity, "activity": "uniform"},
        "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
        "recsys": {"kind": "chronological", "k": 5},
        "policy": {"kind": "independent_cascade", "p_repost": 0.05, "p_post": 0.05},
        "seed_posts": [{"author": 0, "content": "seed"}],
        "executor": executor,
    })  # fmt: skip


def _timed(obj: Any, name: str, acc: dict[str, float]) -> None:
    """Wrap ``obj.name`` so its wall time accumulates into ``acc[name]``."""
    fn = getattr(obj, name)

    def wrapper(*a: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            acc[name] = acc.get(name, 0.0) + time.perf_counter() - t0

    setattr(obj, name, wrapper)


class _GCTime:
    """Wall time the driver spends in CPython's cyclic garbage collector (via gc.callbacks)."""

    def __init__(self) -> None:
        self.total = 0.0
        self._t0 = 0.0

    def callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._t0


def _gc_timer() -> _GCTime:
    t = _GCTime()
    gc.callbacks.append(t.callback)
    return t


def measure(n: int, activity: float, steps: int, executor: dict[str, Any], policy_delay: float | None) -> dict[str, Any]:
    cfg = _cfg(n, activity, steps, executor)
    d = Path(tempfile.mkdtemp(prefix="socium-bench-"))
    try:
        t0 = time.perf_counter()
        policy = SleepyPolicy(policy_delay, cfg.seed, p_post=0.05, p_repost=0.05, p_like=0.0) if policy_delay else None
        sim = Simulation(cfg, d / "run", policy=policy)
        build_s = time.perf_counter() - t0
        sim.advance()  # warm-up: actors start, imports, first feeds
        if GC_FREEZE:
            gc.collect()
            gc.freeze()  # the world built so far is long-lived: keep it out of every gen-2 collection
        acc: dict[str, float] = {}
        _timed(sim.executor, "run", acc)
        _timed(sim.agent_steps, "observe", acc)  # a step observes through its agents' part (StepAgents)
        _timed(sim, "apply_decisions", acc)
        _timed(sim.store, "append_step", acc)
        gc_s = _gc_timer()
        t1 = time.perf_counter()
        stats = [sim.advance() for _ in range(steps)]
        wall = time.perf_counter() - t1
        gc.callbacks.remove(gc_s.callback)
        sim.close()
    finally:
        gc.unfreeze()
        shutil.rmtree(d, ignore_errors=True)
    act = sum(s.n_active for s in stats)
    ex = acc.get("run", 0.0)
    return {"n": n, "active_per_step": act / steps, "build_s": build_s, "steps_per_s": steps / wall, "act_per_s": act / wall,
            "exec_act_per_s": act / ex if ex else float("nan"), "driver_frac": (wall - ex) / wall,
            "observe_s": acc.get("observe", 0.0) / steps, "apply_s": acc.get("apply_decisions", 0.0) / steps,
            "write_s": acc.get("append_step", 0.0) / steps, "exec_s": ex / steps, "step_s": wall / steps,
            "gc_s": gc_s.total / steps}  # fmt: skip


def _row(label: str, r: dict[str, Any], bound: float | None = None) -> str:
    pct = f"{100 * r['exec_act_per_s'] / bound:5.1f}%" if bound else "    - "
    b = f"{bound:8.0f}" if bound else "       -"
    return (f"{label:<26} {r['n']:>9,} {r['active_per_step']:>9,.0f} {r['steps_per_s']:>8.3f} {r['act_per_s']:>10,.0f} "
            f"{r['exec_act_per_s']:>10,.0f} {b} {pct} {r['step_s']:>7.2f} {r['observe_s']:>6.2f} {r['apply_s']:>6.2f} "
            f"{r['write_s']:>6.2f} {r['exec_s']:>6.2f} {r['gc_s']:>5.2f} {100 * r['driver_frac']:>5.1f}%")  # fmt: skip


HEADER = (f"{'executor':<26} {'agents':>9} {'act/step':>9} {'steps/s':>8} {'act/s':>10} {'exec act/s':>10} {'bound':>8} "
          f"{'%bound':>6} {'step s':>7} {'obs s':>6} {'apply':>6} {'write':>6} {'exec s':>6} {'gc s':>5} {'driver':>6}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1/10 of the sizes, 2 steps")
    ap.add_argument("--only", choices=["rule", "llm"], default=None)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--sizes-rule", default="100000,1000000")
    ap.add_argument("--sizes-llm", default="10000,100000")
    ap.add_argument("--gc-freeze", action="store_true", help="gc.freeze() the driver's heap after the warm-up step")
    args = ap.parse_args()
    global GC_FREEZE
    GC_FREEZE = args.gc_freeze
    scale = 10 if args.quick else 1
    steps = 2 if args.quick else args.steps
    import ray

    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    print(f"machine: {stdlib_platform.machine()}, {os.cpu_count()} cores, Python {stdlib_platform.python_version()}, "
          f"ray {ray.__version__}; {steps} timed steps after 1 warm-up step; gc.freeze: {GC_FREEZE}; "
          f"load average at start {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(HEADER)
    if args.only in (None, "rule"):
        for n in [int(x) // scale for x in args.sizes_rule.split(",")]:
            print(_row("in-process (rules)", measure(n, 0.1, steps, {"kind": "inprocess"}, None)), flush=True)
            for k in (1, 2):
                print(_row(f"ray {k} actor(s) (rules)", measure(n, 0.1, steps, {"kind": "ray", "actors": k}, None)), flush=True)
    if args.only in (None, "llm"):
        for n in [int(x) // scale for x in args.sizes_llm.split(",")]:
            active = n * 0.1
            for k in (1, 2):
                c = max(1, int(active / k / 10))  # ~10 rounds of calls per actor per step
                bound = k * c / args.latency
                ex = {"kind": "ray", "actors": k, "concurrency_per_actor": c}
                r = measure(n, 0.1, steps, ex, args.latency)
                print(_row(f"ray {k}x{c} (fake LLM)", r, bound), flush=True)
            c = max(1, int(active / 10))
            r = measure(n, 0.1, steps, {"kind": "inprocess", "concurrency_per_actor": c}, args.latency)
            print(_row(f"in-process x{c} (fake LLM)", r, c / args.latency), flush=True)
    ray.shutdown()
    print(f"load average at the end (other processes share these CPUs): {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
