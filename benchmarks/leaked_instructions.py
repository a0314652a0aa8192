"""The main job's leaked-instruction rate with the old retry note and the new one (issue 40 item 2).

    nice python benchmarks/leaked_instructions.py [--seeds 0 1 2 3 4 5] [--steps 3] [--out runs/leaks]
                                                  [--config examples/llm-agents.yaml]

Each (seed, note) runs ``examples/llm-agents.yaml`` (SmolLM2-135M on the embedded llama.cpp backend) in a
fresh subprocess with ``--set seed=S``. ``new`` is this checkout as it is. ``old`` is the same checkout with
the re-ask of before issue 40 put back: the note "That answer was invalid: R. Reply with one valid JSON
object." (``socium.agents.retry.retry_message`` replaced; :func:`~socium.agents.retry.retry_turns` looks it
up at call time) and a retried answer repeating the note accepted (``llm_policy.repeats_note`` always
false). Everything else (prompts, model, seeds) is the same, so the two arms differ in the note alone.

Per run it reads, from the trace, the agents' posts with text and those carrying any of socium's
instruction phrases (:data:`socium.reporting.guardrails.LEAK_MARKERS`, which hold both notes' phrases),
the re-asks made (calls whose fate is ``retried``) and the invalid actions. Then, per arm, the pooled rate
(leaked / text posts) with a Wilson 95% interval (bounded in [0, 1]; valid at any n, including 0 leaks),
and the same per re-ask (posts written after a re-ask are the only ones the note can reach).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

OLD = r"""
import sys
import socium.agents.retry as R
import socium.agents.llm_policy as LP
R.retry_message = lambda reason: f"That answer was invalid: {reason}. Reply with one valid JSON object."
LP.repeats_note = lambda text: False
from socium.cli.main import app
sys.argv = ["socium", *sys.argv[1:]]
app()
"""
NEW = r"""
import sys
from socium.cli.main import app
sys.argv = ["socium", *sys.argv[1:]]
app()
"""


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n (bounded in [0, 1]; (0, 1) when n is 0)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def measure(run_dir: Path) -> dict[str, int]:
    """Text posts, leaked posts, re-asks and invalid actions of one finished run."""
    import duckdb

    from socium.reporting.guardrails import LEAK_MARKERS
    from socium.trace.queries import explore as q
    from socium.trace.queries.quality import leaked_posts

    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        leaked, posts = leaked_posts(con, LEAK_MARKERS)
        retried = q.count_calls(con, q.CallFilter(fate="retried"))
        calls = q.count_calls(con, q.CallFilter())
        invalid = con.execute("SELECT count(*) FROM actions WHERE outcome <> 'ok'").fetchone()
        acts = con.execute("SELECT count(*) FROM actions WHERE origin <> 'seed'").fetchone()
    finally:
        con.close()
    return {
        "text_posts": posts,
        "leaked": leaked,
        "retried_calls": retried,
        "calls": calls,
        "invalid_actions": int(invalid[0]) if invalid else 0,
        "actions": int(acts[0]) if acts else 0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--steps", type=int, default=None, help="override the job's steps (default: the job's own)")
    ap.add_argument("--config", default=str(ROOT / "examples" / "llm-agents.yaml"))
    ap.add_argument("--out", default=str(ROOT / "runs" / "leaks"))
    ap.add_argument("--arms", nargs="+", default=["old", "new"], choices=["old", "new"])
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for seed in a.seeds:
        for arm in a.arms:  # alternated, so the machine's load falls on both arms alike
            run_dir = out / f"{arm}-s{seed}"
            args = [a.config, "--out", str(run_dir), "--force", "--set", f"seed={seed}"]
            if a.steps:
                args += ["--set", f"steps={a.steps}"]
            t0 = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", OLD if arm == "old" else NEW, "run", *args],
                env=env,
                capture_output=True,
                text=True,
            )
            wall = time.perf_counter() - t0
            if done.returncode != 0:
                print(f"{arm} seed {seed}: exit {done.returncode}\n{done.stderr[-2000:]}", file=sys.stderr)
                continue
            row = {"arm": arm, "seed": seed, "wall_s": round(wall, 1), **measure(run_dir)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    print(f"machine: {platform.node()} {os.cpu_count()} cores; load at end: {os.getloadavg()}")
    print(f"{'arm':4} {'runs':>4} {'text posts':>10} {'leaked':>6} {'rate':>6} {'95% (Wilson)':>15} "
          f"{'re-asks':>7} {'invalid/actions':>15}")  # fmt: skip
    for arm in a.arms:
        rr = [r for r in rows if r["arm"] == arm]
        n, k = sum(r["text_posts"] for r in rr), sum(r["leaked"] for r in rr)
        lo, hi = wilson(k, n)
        inv, acts = sum(r["invalid_actions"] for r in rr), sum(r["actions"] for r in rr)
        rate = f"{k / n:.3f}" if n else "-"
        print(f"{arm:4} {len(rr):>4} {n:>10} {k:>6} {rate:>6} {f'[{lo:.3f}, {hi:.3f}]':>15} "
              f"{sum(r['retried_calls'] for r in rr):>7} {f'{inv}/{acts}':>15}")  # fmt: skip
    (out / "leaks.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
