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
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from scipy import stats

from socium.episodes.multiparty_runner import _wilson as wilson
from socium.episodes.objective import DealAnswer, decide_deal
from socium.episodes.tasks import BargainingTask, MutualFriendTask, normalise_name

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


def t_interval(values: Sequence[float]) -> tuple[float, float | None, float | None]:
    """Mean and two-sided 95% t interval (None below two values)."""
    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return m, None, None
    h = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return m, m - h, m + h


def proportion(counts: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """Per-seed ``(k, n)`` counts -> the pooled k/n with a Wilson 95% CI, and the mean of the per-seed
    proportions with a t 95% CI over seeds (seeds with n = 0 are left out of the latter).

    The Wilson interval treats the pooled units as independent; the t interval takes the seed as the
    unit, so it also covers seed-to-seed variation (and is wide with 3 seeds).
    """
    k, n = sum(c[0] for c in counts), sum(c[1] for c in counts)
    lo, hi = wilson(k, n)
    per_seed = [c[0] / c[1] for c in counts if c[1] > 0]
    m, tlo, thi = t_interval(per_seed) if per_seed else (None, None, None)
    return {
        "k": k,
        "n": n,
        "p": k / n if n else None,
        "wilson": (lo, hi),
        "per_seed": list(counts),
        "seed_mean": m,
        "seed_t": (tlo, thi),
    }


def _names(agents: Iterable[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for a in agents:
        first, last = a.get("first_name", ""), a.get("last_name", "")
        out |= {normalise_name(x) for x in (first, last, f"{first} {last}") if normalise_name(x)}
    return out


def tally_episodes(episodes: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Counts behind the reading, for one run.

    ``episodes``: dicts with ``mode``, ``spec`` (the stored episode spec) and ``answers`` (the two
    end-of-episode answers, None where invalid) and ``n_speak``. Mutual friend: of all answers
    (two per episode, invalid ones included), how many name the shared friend and how many name one
    of the two characters (first, last or full name; both with the scorer's name normalisation), and
    how many episodes' agreements (both named the same person) were on a wrong name.
    Bargaining: deals by the scorer's rule, and whether each price is at or below the buyer's
    target, at or above the seller's, or between. Script mode: scripts and their 'speak' turns.
    """
    t: Counter[str] = Counter()
    prices: list[str] = []
    for ep in episodes:
        task, answers = ep["spec"]["task"], ep["answers"] or [None, None]
        if ep["mode"] == "script":
            t["scripts"] += 1
            t["script_speak_turns"] += int(ep.get("n_speak") or 0)
        if task["kind"] == "mutual_friend":
            mf = MutualFriendTask.model_validate(task)
            target, characters = normalise_name(mf.shared_name), _names(ep["spec"]["agents"])
            said = [normalise_name(a.get("friend_name") if isinstance(a, dict) else None) for a in answers]
            for name in said:
                t["mf_answers"] += 1
                t["mf_shared"] += name == target
                t["mf_character"] += name in characters
            t["mf_episodes"] += 1
            if said[0] and said[0] == said[1] and said[0] != "none":  # the scorer's agreement rule
                t["mf_agree"] += 1
                t["mf_agree_wrong"] += said[0] != target
        else:
            bt = BargainingTask.model_validate(task)
            a, b = (DealAnswer.model_validate(x) if isinstance(x, dict) else None for x in answers)
            deal, price, _ = decide_deal(bt, a, b)
            t["bargaining"] += 1
            if deal and price is not None:
                t["deals"] += 1
                side = "buyer" if price <= bt.buyer_target else "seller" if price >= bt.seller_target else "between"
                t[f"deal_{side}"] += 1
                prices.append(f"{price:g} ({ep['mode']}; targets {bt.buyer_target:g}/{bt.seller_target:g})")
    return {
        **{
            k: t[k]
            for k in (
                "mf_answers",
                "mf_shared",
                "mf_character",
                "mf_episodes",
                "mf_agree",
                "mf_agree_wrong",
                "bargaining",
                "deals",
                "deal_buyer",
                "deal_seller",
                "deal_between",
                "scripts",
                "script_speak_turns",
            )
        },
        "prices": prices,
    }


def read_episodes(run_dir: str) -> list[dict[str, Any]]:
    con = duckdb.connect(str(Path(run_dir, "episodes.duckdb")), read_only=True)
    try:
        cur = con.execute(
            "SELECT mode, spec, answers, n_speak, goal_0, goal_1, judge_scores, judge_error FROM episodes ORDER BY idx"
        )
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()
    for r in rows:
        for k in ("spec", "answers", "judge_scores"):
            if isinstance(r[k], str):
                r[k] = json.loads(r[k])
    return rows


def script_turn_kinds(run_dir: str) -> Counter[str]:
    """Tally of the script-mode turns' action types in one run (what the scripts are made of)."""
    con = duckdb.connect(str(Path(run_dir, "episodes.duckdb")), read_only=True)
    try:
        rows = con.execute(
            "SELECT t.action_type, count(*) FROM turns t JOIN episodes e USING (episode_id) "
            "WHERE e.mode = 'script' GROUP BY 1"
        ).fetchall()
    finally:
        con.close()
    return Counter({str(k): int(n) for k, n in rows})


def judge_tally(episodes: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One run's judge check: episodes judged; valid judgements; failed ones (no valid judgement after
    the re-ask) with their last error, since a failure can be the judge's (a score out of range, a
    truncated reply) or the backend's (the re-ask no longer fits the context), and the trace's
    ``llm_calls`` tell which; every score value it gave per dimension; and per episode the mean
    absolute error of the judge's goal against the rule-based goal over its two agents (the MAE's unit
    is the episode: its two agents share it), with how many episodes had a non-zero rule-based goal
    (without them a correlation is not estimable)."""
    judged = valid = nonzero_rule = 0
    errors: list[str] = []
    values: dict[str, Counter[float]] = {}
    episode_err: list[float] = []
    for ep in episodes:
        js = ep.get("judge_scores")
        if js is None and ep.get("judge_error") is None:
            continue
        judged += 1
        if js is None:
            errors.append(str(ep["judge_error"])[:120])
            continue
        valid += 1
        for agent in ("agent_0", "agent_1"):
            for dim, v in js[agent].items():
                if dim != "overall":
                    values.setdefault(dim, Counter())[float(v)] += 1
        if ep.get("goal_0") is not None:
            nonzero_rule += bool(ep["goal_0"] or ep["goal_1"])
            episode_err.append(
                (abs(js["agent_0"]["goal"] - ep["goal_0"]) + abs(js["agent_1"]["goal"] - ep["goal_1"])) / 2
            )
    constant = valid > 0 and all(len(c) == 1 for c in values.values())
    return {
        "judged": judged,
        "valid": valid,
        "failed": len(errors),
        "errors": errors,
        "nonzero_rule": nonzero_rule,
        "values": values,
        "constant": constant,
        "episode_abs_err": episode_err,
    }


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
