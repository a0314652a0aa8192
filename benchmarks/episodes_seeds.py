"""Pool seeded runs of bench_episodes.py: per mode and task, the mean over seeds with a 95% t CI.

    python benchmarks/episodes_seeds.py runs/bench-episodes-s0 runs/bench-episodes-s1 runs/bench-episodes-s2

Why: one run's episodes share a seed, so a CI over its episodes says nothing about seed-to-seed
variation, and words/turn or turns/episode are pooled within a run with no CI at all. Here the
unit is the seed (each seed draws its own task instances and sampling): every metric is one value
per seed (the run's own pooled value), and the CI is a t interval over those values. The paired
contrasts (mindreaders - agents, script - agents) are taken per seed first, since within a seed
every mode plays the same instances.

It also re-reads each run's trace (``episodes.duckdb``, read-only) for the counts behind the
results' reading: end-of-episode answers that name the shared friend or one of the two characters,
bargaining deals and where their price falls, and the scripts' 'speak' turns; each as per-seed
counts, the pooled proportion with a Wilson 95% CI and a t CI over the per-seed proportions. Runs
made with ``bench_episodes.py --judge`` add the judge check: valid and failed judgements (Wilson
CIs), the judge's score values (is it constant?) and its mean absolute error against the rule-based
goals, with t CIs over seeds and over episodes.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import stats

from socium.episodes.tallies import (
    judge_tally,
    proportion,
    read_episodes,
    script_turn_kinds,
    t_interval,
    tally_episodes,
)

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


def _fmt_ci(lo: float | None, hi: float | None) -> str:
    return "–" if lo is None or hi is None else f"[{lo:.2f}, {hi:.2f}]"


def _prop_line(label: str, counts: Sequence[tuple[int, int]]) -> str:
    p = proportion(counts)
    per = ", ".join(f"{k}/{n}" for k, n in p["per_seed"])
    if p["p"] is None:
        return f"{label}: per seed {per}; none"
    return (
        f"{label}: per seed {per}; pooled {p['k']}/{p['n']} = {p['p']:.2f} Wilson 95% CI "
        f"{_fmt_ci(*p['wilson'])}; mean over seeds {p['seed_mean']:.2f} t 95% CI {_fmt_ci(*p['seed_t'])}"
    )


def print_tallies(dirs: Sequence[str], seeds: Sequence[int]) -> None:
    eps = [read_episodes(d) for d in dirs]
    tallies = [tally_episodes(e) for e in eps]
    print(f"\nCounts behind the reading (seeds {list(seeds)}; answers: two per episode, invalid included):")
    print(
        _prop_line(
            "mutual-friend answers naming the shared friend", [(x["mf_shared"], x["mf_answers"]) for x in tallies]
        )
    )
    print(
        _prop_line(
            "mutual-friend answers naming one of the two characters",
            [(x["mf_character"], x["mf_answers"]) for x in tallies],
        )
    )
    print(
        _prop_line(
            "mutual-friend agreements that are on a wrong name", [(x["mf_agree_wrong"], x["mf_agree"]) for x in tallies]
        )
    )
    print(_prop_line("bargaining episodes with a deal", [(x["deals"], x["bargaining"]) for x in tallies]))
    print(
        "deal prices: at/below buyer target "
        f"{sum(x['deal_buyer'] for x in tallies)}, at/above seller target {sum(x['deal_seller'] for x in tallies)}, "
        f"between {sum(x['deal_between'] for x in tallies)}"
    )
    for seed, x in zip(seeds, tallies):
        print(
            f"  seed {seed}: deals at {'; '.join(x['prices']) or '-'}; scripts {x['scripts']} with "
            f"{x['script_speak_turns']} 'speak' turns"
        )
    kinds = [script_turn_kinds(d) for d in dirs]
    total = sum(kinds, Counter())
    print(
        f"script turns by action type, per seed {[dict(k) for k in kinds]}; all seeds {dict(total)} "
        f"in {sum(x['scripts'] for x in tallies)} scripts"
    )
    judges = [judge_tally(e) for e in eps]
    if not any(j["judged"] for j in judges):
        return
    print(f"\nJudge check (seeds {list(seeds)}):")
    print(_prop_line("valid judgements", [(j["valid"], j["judged"]) for j in judges]))
    print(_prop_line("failed (no valid judgement after the re-ask)", [(j["failed"], j["judged"]) for j in judges]))
    for seed, j in zip(seeds, judges):
        for err in j["errors"]:
            print(f"  seed {seed} failure: {err}")
    values: dict[str, Counter[float]] = {}
    for j in judges:
        for dim, c in j["values"].items():
            values.setdefault(dim, Counter()).update(c)
    print(
        "judge score values (value x agent-judgements): "
        + "; ".join(
            f"{dim} " + ", ".join(f"{v:g} x{n}" for v, n in sorted(c.items())) for dim, c in sorted(values.items())
        )
    )
    print(
        f"constant judge (one value per dimension in every valid judgement, all seeds): "
        f"{all(len(c) == 1 for c in values.values()) and bool(values)}"
    )
    per_seed = [float(np.mean(j["episode_abs_err"])) for j in judges if j["episode_abs_err"]]
    errs = [e for j in judges for e in j["episode_abs_err"]]
    if errs:
        m, lo, hi = t_interval(per_seed)
        me, elo, ehi = t_interval(errs)
        print(
            f"judge goal vs rule goal, MAE per seed {[round(x, 2) for x in per_seed]}: mean {m:.2f} "
            f"t 95% CI over seeds {_fmt_ci(lo, hi)} (n = {len(per_seed)}); over episodes {me:.2f} "
            f"{_fmt_ci(elo, ehi)} (n = {len(errs)} judged episodes, 2 agents each); episodes with a non-zero "
            f"rule-based goal: {sum(j['nonzero_rule'] for j in judges)}"
        )


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
    print("\nThroughput per seed (one process each; timings: min-max over seeds, no CI):")
    for seed, r in zip(seeds, runs):
        la0, la1 = r["machine"]["load_avg_start"][0], r["machine"]["load_avg_end"][0]
        print(
            f"  seed {seed}: {r['episodes_total']} episodes in {r['episode_wall_s_total']:.0f} s = "
            f"{r['episodes_per_min_total']:.2f} episodes/min; {r['llm_calls']} LLM calls, {r['prompt_tokens']} prompt "
            f"and {r['completion_tokens']} completion tokens; load average {la0:.1f} at start, {la1:.1f} at end"
        )
    print_tallies(dirs, seeds)


if __name__ == "__main__":
    main(sys.argv[1:])
