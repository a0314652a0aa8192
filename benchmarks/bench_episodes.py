"""Dyadic-episodes benchmark: agents vs mindreaders vs script on the procedural tasks.

    python benchmarks/bench_episodes.py [--minutes 20] [--per-task 12] [--max-turns 8] [--backend embedded] [--seed 0]
    python benchmarks/bench_episodes.py --judge --per-task 2 --minutes 8 --seed 0 --out runs/bench-judge-s0

Runs every mode on the same mutual-friend (cooperative) and bargaining (competitive) instances
with the embedded CPU model (SmolLM2-135M, llama.cpp, one thread) until the time budget runs out;
the run order interleaves tasks and modes, so whatever finished is balanced. Rerunning with the
same arguments continues the run (``--fresh`` starts over). Prints the summary table (mean goal
with 95% CI, words per turn, turns, agreement and leave rates), episodes per minute and the
machine, and writes them to OUT/bench.json. Goal scores are rule-based. ``--judge`` also has the
same model judge every episode (SOTOPIA-Eval, temperature 0, reasoning capped at
``--judge-reasoning-chars``), so ``benchmarks/episodes_seeds.py --judge`` can check the judge against
the rule-based goals; the goal column stays rule-based either way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from socium.episodes.config import episodes_config_from_dict
from socium.episodes.report import markdown_table
from socium.episodes.runner import run_episodes


def machine() -> dict:
    info = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "load_avg_start": os.getloadavg()}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "?")
    except OSError:
        pass
    try:
        from importlib.metadata import version

        info["xllamacpp"] = version("xllamacpp")
    except ImportError:
        info["xllamacpp"] = None
    except Exception:  # noqa: BLE001 - PackageNotFoundError
        info["xllamacpp"] = None
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=20.0, help="Stop starting episodes after this long.")
    ap.add_argument("--per-task", type=int, default=12, help="Instances of each task (upper bound on the run).")
    ap.add_argument("--max-turns", type=int, default=8)
    ap.add_argument("--n-friends", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=100, help="Completion cap per turn.")
    ap.add_argument("--argument-chars", type=int, default=240, help="Utterance cap (schema maxLength), every mode.")
    ap.add_argument("--script-max-tokens", type=int, default=900, help="Completion cap of a whole script.")
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads.")
    ap.add_argument("--backend", default="embedded", choices=["embedded", "random"])
    ap.add_argument("--out", default="runs/bench-episodes")
    ap.add_argument("--fresh", action="store_true", help="Discard a previous run in --out.")
    ap.add_argument("--seed", type=int, default=0, help="Root seed: task instances and sampling (one --out per seed).")
    ap.add_argument("--judge", action="store_true", help="Also judge every episode with the same model (temp. 0).")
    ap.add_argument("--judge-reasoning-chars", type=int, default=60, help="maxLength of each judge reasoning string.")
    args = ap.parse_args()
    judge = ({"judge_llm": {"backend": args.backend, "n_threads": args.threads, "temperature": 0.0},
              "judge_reasoning_chars": args.judge_reasoning_chars} if args.judge else {})

    cfg = episodes_config_from_dict({
        "name": "bench-episodes", "seed": args.seed, "out": args.out,
        "llm": {"backend": args.backend, "n_threads": args.threads, "max_tokens": args.max_tokens, "temperature": 0.7},
        "modes": ["agents", "mindreaders", "script"],
        "tasks": {"mutual_friend": args.per_task, "bargaining": args.per_task, "n_friends": args.n_friends},
        "max_turns": args.max_turns, "argument_chars": args.argument_chars, "script_max_tokens": args.script_max_tokens,
        **judge,
    })
    info = machine()
    t0 = time.perf_counter()

    def on_done(res, n, total) -> None:
        goal = res.objective.goal if res.objective else None
        print(f"[{time.perf_counter() - t0:7.1f}s] {n}/{total} {res.spec.episode_id:40s} {res.ended_by:12s} "
              f"turns={len(res.turns):2d} goal={goal} {res.wall_s:.1f}s", flush=True)

    rep = run_episodes(cfg, force=args.fresh, on_done=on_done, time_budget_s=args.minutes * 60)
    info["load_avg_end"] = os.getloadavg()
    s = rep.summary
    result = {"args": vars(args), "machine": info, "this_invocation": s["this_invocation"],
              "episodes_total": s["episodes"], "episode_wall_s_total": s["episode_wall_s_total"],
              "episodes_per_min_total": 60.0 * s["episodes"] / s["episode_wall_s_total"] if s["episode_wall_s_total"] else None,
              "llm_calls": s["llm_calls"], "prompt_tokens": s["prompt_tokens"], "completion_tokens": s["completion_tokens"],
              "ended_by": s["ended_by"], "rows": s["rows"], "model": s["model"], "judge_model": s["judge_model"],
              "judge_vs_objective": s["judge_vs_objective"]}
    Path(args.out, "bench.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    print(markdown_table(s))
    print(json.dumps({k: result[k] for k in ("this_invocation", "episodes_total", "episodes_per_min_total",
                                             "llm_calls", "prompt_tokens", "completion_tokens", "model")},
                     indent=2, default=str))
    print(json.dumps(info, default=str))


if __name__ == "__main__":
    main()
