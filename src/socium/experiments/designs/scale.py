"""Scale study: does the number of agents change the herding or polarisation conclusion?

For each population size and policy, several independent replicates (seeds; each seed draws its own
items, population, graph and run). Policies: ``rule`` (score-blind random voters; bounded confidence
for polarisation), ``rule-herd`` (a positive control for herding: the same voters with ``herding:
0.8``; herding only) and ``llm-fake`` (the LLM policy on the model-free ``fake`` backend).

Why in the package: the unit of every interval is the seed (a seed's agents share one world, one
graph and one run, so they are not independent draws; a CI that pools agents is too narrow), and the
design must find herding where the policy has it. Tests pin both here; ``benchmarks/scale_study.py``
runs the sizes and prints the tables docs/results.md quotes.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from socium.errors import UsageError
from socium.experiments.intervention.study import t_ci
from socium.experiments.opinions.herding import HerdingSpec, run_herding
from socium.experiments.opinions.polarisation import PolarisationSpec, run_polarisation
from socium.trace.queries.opinions import assigned_stances, herding_votes, survey_rows
from socium.trace.queries.runs import open_run

HERD_RULE = {"kind": "random", "p_like": 0.18, "p_dislike": 0.01, "p_post": 0.0, "p_repost": 0.0}
HERD_POSITIVE = {**HERD_RULE, "herding": 0.8}  # positive control: votes lean toward the visible score's sign
POL_RULE = {"kind": "bounded_confidence", "epsilon": 0.3, "mu": 0.3, "p_post": 0.1}
LLM = {"policy": {"kind": "llm"}, "llm": {"backend": "fake", "seed": 0}}
HERD_OUTCOMES = ("herd_first_up", "herd_first_down", "herd_up", "herd_down", "herd_up_share")
OUTCOMES = (*HERD_OUTCOMES, "pol_abs", "pol_gap")
POLICIES = ("rule", "rule-herd", "llm-fake")
ARTEFACT = ("pol_abs", "pol_gap")  # not interpretable on the fake backend


def seed_ci(per_seed: Sequence[float]) -> dict[str, Any]:
    """Mean and 95% interval with the seed as the unit, by the one interval policy (``lo``/``hi`` None below
    3 seeds); NaN seeds (no value, e.g. no crowd vote on any control item) are left out of ``n``."""
    r = t_ci(list(per_seed))
    return r if r is not None else {"mean": None, "lo": None, "hi": None, "n": 0}


def agent_pooled_ci(per_seed: Sequence[np.ndarray]) -> tuple[float, float, float]:
    """The old, wrong interval: every agent of every seed as an independent draw (normal, 95%).

    Kept only so that the test can show it is narrower than :func:`seed_ci` when seeds differ."""
    v = np.concatenate([np.asarray(a, float) for a in per_seed])
    m = float(v.mean())
    half = 1.96 * float(v.std(ddof=1)) / math.sqrt(len(v))
    return m, m - half, m + half


def herding_items(run_dir: Path) -> dict[str, np.ndarray]:
    """Per item, by treatment group: rows of (crowd score, positive crowd votes, all crowd votes, first
    crowd vote: +1, -1, or 0 when nobody voted)."""
    with open_run(run_dir) as con:
        hv = herding_votes(con)
    crowd: dict[int, list[int]] = {}
    for _step, post, delta in hv.crowd:  # in (step, seq) order: the first entry is the first crowd vote
        crowd.setdefault(post, []).append(delta)
    out: dict[str, list[tuple[float, ...]]] = {"up": [], "control": [], "down": []}
    for item in hv.items:
        t, votes = hv.treatment.get(item, 0), crowd.get(item, [])
        row = (
            float(sum(votes)),
            float(sum(1 for v in votes if v > 0)),
            float(len(votes)),
            float(votes[0] if votes else 0),
        )
        out["up" if t > 0 else "down" if t < 0 else "control"].append(row)
    return {k: np.array(v, float).reshape(-1, 4) for k, v in out.items()}


def herding_effects(items: dict[str, np.ndarray]) -> dict[str, float]:
    """One seed's herding outcomes from :func:`herding_items`.

    ``herd_first_*`` is Muchnik et al.'s measure, the chance that the first vote after the treatment
    is positive (treated minus control): one vote per item at every size, so it does not dilute as
    the crowd grows, unlike the crowd score."""

    def share(a: np.ndarray) -> float:
        return float(a[:, 1].sum() / a[:, 2].sum()) if a[:, 2].sum() else math.nan

    def first_pos(a: np.ndarray) -> float:
        voted = a[a[:, 3] != 0, 3]
        return float((voted > 0).mean()) if len(voted) else math.nan

    up, ctl, down = items["up"], items["control"], items["down"]
    return {
        "herd_first_up": first_pos(up) - first_pos(ctl),
        "herd_first_down": first_pos(down) - first_pos(ctl),
        "herd_up": float(up[:, 0].mean() - ctl[:, 0].mean()),
        "herd_down": float(down[:, 0].mean() - ctl[:, 0].mean()),
        "herd_up_share": share(up) - share(ctl),
        "votes_per_item": float(np.concatenate([up, ctl, down])[:, 2].mean()),
    }


def stances(run_dir: Path) -> np.ndarray:
    """Per surveyed agent at the last survey with a numeric answer: (initial stance, final answer)."""
    with open_run(run_dir) as con:
        initial = assigned_stances(con)
        valued = [(step, agent, value) for step, agent, value, *_ in survey_rows(con) if value is not None]
    if not valued:
        return np.zeros((0, 2))
    last = max(step for step, _, _ in valued)
    pairs = [(initial[a], v) for s, a, v in valued if s == last and not np.isnan(initial[a])]
    return np.array(pairs, float).reshape(-1, 2)


def polarisation_effects(a: np.ndarray) -> dict[str, float]:
    """One seed's polarisation outcomes; the camp is the sign of the initial stance.

    ``pol_abs_fake``/``pol_gap_fake`` are what a server answering ``uniform(-1, 1)`` must give."""
    s0, s1 = a[:, 0], a[:, 1]
    pos, neg = s0 > 0, s0 < 0
    gap0 = float(s0[pos].mean() - s0[neg].mean())
    return {
        "pol_abs": float((np.abs(s1) - np.abs(s0)).mean()),
        "pol_gap": float(s1[pos].mean() - s1[neg].mean()) - gap0,
        "pol_abs_fake": 0.5 - float(np.abs(s0).mean()),
        "pol_gap_fake": -gap0,
        "pol_agents": float(len(a)),
    }


def conclusion(ci: dict[str, Any]) -> str:
    """The sign of an effect whose interval excludes 0 (``+``/``-``), ``0`` when it covers 0, ``?`` without one."""
    if ci["lo"] is None:
        return "?"
    return "+" if ci["lo"] > 0 else "-" if ci["hi"] < 0 else "0"


def parse_seeds(spec: Sequence[str], sizes: Sequence[int]) -> dict[int, int]:
    """``["100:20", "1000:10"]`` or one number for every size."""
    if len(spec) == 1 and ":" not in spec[0]:
        return {n: int(spec[0]) for n in sizes}
    out = {int(k): int(v) for k, v in (s.split(":") for s in spec)}
    missing = [n for n in sizes if n not in out]
    if missing:
        raise UsageError(f"--seeds gives no count for sizes {missing}")
    return out


def run_cell(n: int, policy: str, seeds: int, steps: int, out: Path) -> dict[str, Any]:
    """All seeds of one (size, policy); per-seed outcomes and their seed-level CIs."""
    t0, la0 = time.perf_counter(), os.getloadavg()[0]
    per: list[dict[str, float]] = []
    for seed in range(seeds):
        d = out / f"n{n}" / policy / f"seed{seed}"
        pol = LLM if policy == "llm-fake" else None
        herd_rule = HERD_POSITIVE if policy == "rule-herd" else HERD_RULE
        base = {"seed": seed, "steps": steps, **(pol or {"policy": herd_rule, "llm": None})}
        herding = HerdingSpec(
            n_agents=n, n_items=30, item_seed=seed, activation=0.2, run_null=False, bootstrap=0, base=base
        )
        run_herding(herding, d / "herding")
        per.append(herding_effects(herding_items(d / "herding" / "runs" / "model")))
        if policy == "rule-herd":  # herding only: its polarisation run would be the rule one's
            continue
        pbase = {"seed": seed, "steps": steps, **(pol or {"policy": POL_RULE, "llm": None})}
        polarisation = PolarisationSpec(
            population="synthetic",
            n_agents=n,
            split_seed=seed,
            run_null=False,
            bootstrap=0,
            survey_every=steps,
            base=pbase,
        )
        run_polarisation(polarisation, d / "polarisation")
        per[-1] |= polarisation_effects(stances(d / "polarisation" / "runs" / "model"))
    row: dict[str, Any] = {"agents": n, "policy": policy, "seeds": seeds, "per_seed": per}
    for k in (*OUTCOMES, "pol_abs_fake", "pol_gap_fake", "votes_per_item", "pol_agents"):
        row[k] = seed_ci([p.get(k, math.nan) for p in per])
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    row["load"] = [round(la0, 2), round(os.getloadavg()[0], 2)]
    return row


def fmt_ci(ci: dict[str, Any], nd: int, seeds: int) -> str:
    """A seed without a value (e.g. no crowd vote on any control item) is left out and the n is shown."""
    short = f" n={ci['n']}" if ci["n"] != seeds else ""
    if ci["lo"] is None:
        return "n/a" if ci["mean"] is None else f"{ci['mean']:+.{nd}f} (no CI{short})"
    return f"{ci['mean']:+.{nd}f} ({ci['lo']:+.{nd}f}, {ci['hi']:+.{nd}f}){short}"
