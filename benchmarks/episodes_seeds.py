"""Pool seeded runs of bench_episodes.py: per mode and task, the mean over seeds with a 95% t CI.

    python benchmarks/episodes_seeds.py runs/bench-episodes-s0 runs/bench-episodes-s1 runs/bench-episodes-s2

Why: one run's episodes share a seed, so a CI over its episodes says nothing about seed-to-seed
variation, and words/turn or turns/episode are pooled within a run with no CI at all. Here the
unit is the seed (each seed draws its own task instances and sampling): every metric is one value
per seed (the run's own pooled value), and the CI is a t interval over those values. The paired
contrasts (mindreaders - agents, script - agents) are taken per seed first, since within a seed
every mode plays the same instances.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

METRICS = ("goal_mean", "words_per_turn", "turns_per_episode", "agreement_rate", "leave_rate", "invalid_turn_rate")


def t_ci(values: list[float]) -> str:
    v = np.array([x for x in values if x is not None], dtype=float)
    if len(v) == 0:
        return "–"
    m = float(v.mean())
    if len(v) < 2:
        return f"{m:.2f} (n=1)"
    h = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return f"{m:.2f} [{m - h:.2f}, {m + h:.2f}] (n={len(v)})"


def main(dirs: list[str]) -> None:
    runs = [json.loads(Path(d, "bench.json").read_text(encoding="utf-8")) for d in dirs]
    seeds = [r["args"].get("seed", 0) for r in runs]
    if len(set(seeds)) != len(seeds):
        raise SystemExit(f"repeated seeds {seeds}: pool one run per seed")
    rows: dict[tuple[str, str], list[dict]] = {}
    for r in runs:
        for row in r["rows"]:
            rows.setdefault((row["mode"], row["task"]), []).append(row)
    print(f"seeds {seeds}; episodes per seed {[r['episodes_total'] for r in runs]}")
    print("| mode | task | episodes per seed | " + " | ".join(METRICS) + " |")
    print("|---|---|---|" + "---|" * len(METRICS))
    for (mode, task), rs in sorted(rows.items()):
        cells = [t_ci([row[m] for row in rs]) for m in METRICS]
        print(f"| {mode} | {task} | {', '.join(str(row['episodes']) for row in rs)} | " + " | ".join(cells) + " |")
    print()
    for other in ("mindreaders", "script"):
        for m in ("goal_mean", "agreement_rate"):
            diffs = []
            for r in runs:
                by_mode = {row["mode"]: row for row in r["rows"] if row["task"] == "all"}
                if other in by_mode and "agents" in by_mode and None not in (by_mode[other][m], by_mode["agents"][m]):
                    diffs.append(by_mode[other][m] - by_mode["agents"][m])
            print(f"{other} - agents, {m} (all tasks, paired per seed): {t_ci(diffs)}")


if __name__ == "__main__":
    main(sys.argv[1:])
