"""Counts behind the dyadic-episodes reading, per run, and their pooling over seeds.

Why in the package: ``benchmarks/episodes_seeds.py`` prints the numbers docs/results.md quotes for the
episodes study (answers naming the shared friend or a character, deals and where their price falls,
the judge check) from these tallies; keeping them here lets tests pin the scorer's rules they reuse
(name normalisation, the deal rule) without importing a script. The unit of a t interval is the seed:
one run's episodes share a seed, so only per-seed values are independent.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from scipy import stats

from socium.episodes.objective import DealAnswer, decide_deal
from socium.episodes.tasks import BargainingTask, MutualFriendTask, normalise_name


def wilson(k: int, n: int) -> tuple[float | None, float | None]:
    """Wilson score 95% interval of ``k / n`` (scipy's), inside [0, 1]; (None, None) without trials."""
    if n == 0:
        return None, None
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=0.95, method="wilson")
    return max(0.0, float(ci.low)), min(1.0, float(ci.high))


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
