"""Scale study: does the number of agents change the herding or polarisation conclusion?

For each population size (default 100 / 1,000 / 10,000) and policy, several independent replicates
(seeds; each seed draws its own items, population, graph and run). Policies: ``rule`` (score-blind
random voters; bounded confidence for polarisation), ``rule-herd`` (a positive control for herding:
the same voters with ``herding: 0.8``, votes leaning toward the visible score's sign; herding only),
and ``llm-fake`` (the LLM policy on the ``fake`` backend, a loopback OpenAI-compatible server answering
schema-valid random JSON, for sizes in ``--llm-sizes``).

* herding (Muchnik et al. 2013 design, experiments/herding.py): 30 items, a third up-treated and a
  third down-treated by one experimenter vote. Per seed: the chance that an item's first crowd vote is
  positive, treated minus control (Muchnik's measure; one vote per item at every size); mean crowd
  score of up-treated minus control items (and down minus control); and the share of positive crowd
  votes, up minus control;
* polarisation (experiments/polarisation.py, synthetic population, two camps at +-0.4). Per seed:
  mean change of |stance| from the start to the last survey (positive: more extreme), and the change
  of the camp gap (mean final answer of the + camp minus the - camp, minus the same at the start).

The unit of every CI is the seed: a seed's agents share one world, one graph and one run, so they
are not independent draws, and a CI that pools agents (the first version of this script) is too
narrow. Each outcome's CI is the two-sided 95% t interval over the per-seed values. Small sizes get
more seeds (default 20 / 20 / 10): their runs are cheap and their between-seed spread is largest, and
at 2 seeds of freedom the t multiplier is 4.3 against 2.1 at 19.

On the fake backend a survey answer is ``uniform(-1, 1)`` whatever the agent saw (it samples the
survey schema), so its polarisation numbers are a property of the test server, not an opinion
dynamic: the script reports them beside the value that artefact predicts (mean |answer| 0.5 minus
the start's mean |stance|; camp gap back to 0) as a pipeline check, and keeps them out of the
conclusion.

The conclusion at a size is the sign of the effect when its CI excludes 0, else "0"; the script
prints whether that conclusion is the same at every size. Numbers go to docs/results.md.

    python benchmarks/scale_study.py [--sizes 100 1000 10000] [--seeds 100:20 1000:20 10000:10]
    python benchmarks/scale_study.py --from-json runs/results/scale-study/scale.json [more.json ...]   # reprint
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from socium.experiments.opinions.herding import HerdingSpec, run_herding
from socium.experiments.intervention.study import t_ci
from socium.experiments.opinions.polarisation import PolarisationSpec, run_polarisation

HERD_RULE = {"kind": "random", "p_like": 0.18, "p_dislike": 0.01, "p_post": 0.0, "p_repost": 0.0}
HERD_POSITIVE = {**HERD_RULE, "herding": 0.8}  # positive control: votes lean toward the visible score's sign
POL_RULE = {"kind": "bounded_confidence", "epsilon": 0.3, "mu": 0.3, "p_post": 0.1}
LLM = {"policy": {"kind": "llm"}, "llm": {"backend": "fake", "seed": 0}}
HERD_OUTCOMES = ("herd_first_up", "herd_first_down", "herd_up", "herd_down", "herd_up_share")
OUTCOMES = (*HERD_OUTCOMES, "pol_abs", "pol_gap")
POLICIES = ("rule", "rule-herd", "llm-fake")
ARTEFACT = ("pol_abs", "pol_gap")  # not interpretable on the fake backend


def seed_ci(per_seed: Sequence[float]) -> dict[str, Any]:
    """Mean and 95% t interval with the seed as the unit (``lo``/``hi`` None below 2 seeds)."""
    r = t_ci(list(per_seed))
    if r is None:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    if r["n"] < 2:
        r.update(lo=None, hi=None)
    return r


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
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        rows = con.execute("""
            WITH items AS (SELECT post_id FROM actions
                           WHERE origin = 'seed' AND type = 'create_post' AND outcome = 'ok'),
            treat AS (SELECT target, sum(delta) AS t FROM votes WHERE origin = 'seed' GROUP BY target),
            crowd AS (SELECT target, sum(delta) AS s, count_if(delta > 0) AS pos, count(*) AS n,
                             first(delta ORDER BY step, seq) AS f
                      FROM votes WHERE origin != 'seed' GROUP BY target)
            SELECT coalesce(t.t, 0), coalesce(c.s, 0), coalesce(c.pos, 0), coalesce(c.n, 0), coalesce(c.f, 0)
            FROM items i
            LEFT JOIN treat t ON t.target = i.post_id LEFT JOIN crowd c ON c.target = i.post_id""").fetchall()
    finally:
        con.close()
    out: dict[str, list[tuple[float, ...]]] = {"up": [], "control": [], "down": []}
    for t, s, pos, n, f in rows:
        out["up" if t > 0 else "down" if t < 0 else "control"].append((float(s), float(pos), float(n), float(f)))
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
    """Per surveyed agent at the last survey: (initial stance, final answer)."""
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        rows = con.execute("""
            WITH last AS (SELECT max(step) AS s FROM surveys WHERE value IS NOT NULL)
            SELECT a.stance, v.value FROM agents a JOIN surveys v USING (agent_id)
            WHERE v.step = (SELECT s FROM last) AND v.value IS NOT NULL AND a.stance IS NOT NULL""").fetchall()
    finally:
        con.close()
    return np.array(rows, float).reshape(-1, 2)


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
        raise SystemExit(f"--seeds gives no count for sizes {missing}")
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
        run_herding(HerdingSpec(n_agents=n, n_items=30, item_seed=seed, activation=0.2, run_null=False, bootstrap=0,
                                base=base), d / "herding")  # fmt: skip
        per.append(herding_effects(herding_items(d / "herding" / "runs" / "model")))
        if policy == "rule-herd":  # herding only: its polarisation run would be the rule one's
            continue
        pbase = {"seed": seed, "steps": steps, **(pol or {"policy": POL_RULE, "llm": None})}
        run_polarisation(PolarisationSpec(population="synthetic", n_agents=n, split_seed=seed, run_null=False,
                                          bootstrap=0, survey_every=steps, base=pbase), d / "polarisation")  # fmt: skip
        per[-1] |= polarisation_effects(stances(d / "polarisation" / "runs" / "model"))
    row: dict[str, Any] = {"agents": n, "policy": policy, "seeds": seeds, "per_seed": per}
    for k in (*OUTCOMES, "pol_abs_fake", "pol_gap_fake", "votes_per_item", "pol_agents"):
        row[k] = seed_ci([p.get(k, math.nan) for p in per])
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    row["load"] = [round(la0, 2), round(os.getloadavg()[0], 2)]
    return row


def _fmt(ci: dict[str, Any], nd: int, seeds: int) -> str:
    """A seed without a value (e.g. no crowd vote on any control item) is left out and the n is shown."""
    short = f" n={ci['n']}" if ci["n"] != seeds else ""
    if ci["lo"] is None:
        return "n/a" if ci["mean"] is None else f"{ci['mean']:+.{nd}f} (no CI{short})"
    return f"{ci['mean']:+.{nd}f} ({ci['lo']:+.{nd}f}, {ci['hi']:+.{nd}f}){short}"


def print_table(rows: list[dict[str, Any]]) -> None:
    """Two tables: herding (every policy), polarisation (the policies that ran it)."""
    print("| agents | policy | seeds (n) | P(first crowd vote +): up - control | down - control | crowd score: "
          "up - control | down - control | share of + votes: up - control | votes per item | wall s (cell) | "
          "load avg start-end |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        nd = {"herd_up": 2, "herd_down": 2}
        herd = [_fmt(r[k], nd.get(k, 3), r["seeds"]) for k in HERD_OUTCOMES]
        load = f"{r['load'][0]:.2f}-{r['load'][1]:.2f}"
        cells = [f"{r['agents']:,}", r["policy"], str(r["seeds"]), *herd, f"{r['votes_per_item']['mean']:.1f}",
                 str(r["wall_s"]), load]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    print(
        "\n| agents | policy | seeds (n) | change of mean abs(stance) | change of camp gap | agents surveyed per seed |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        if r["pol_agents"]["mean"] is None:
            continue
        fake = r["policy"] == "llm-fake"
        pol = [
            _fmt(r[k], 3, r["seeds"]) + (f" [artefact predicts {r[k + '_fake']['mean']:+.3f}]" if fake else "")
            for k in ARTEFACT
        ]
        print(
            f"| {r['agents']:,} | {r['policy']} | {r['seeds']} | {pol[0]} | {pol[1]} | {r['pol_agents']['mean']:,.0f} |"
        )
    print(
        "(each cell: mean over seeds (95% t CI over seeds); fake-backend polarisation is an artefact of uniform "
        "random survey answers, excluded from conclusions)"
    )


def print_conclusions(rows: list[dict[str, Any]]) -> None:
    for policy in POLICIES:
        sel = [r for r in rows if r["policy"] == policy]
        if len(sel) < 2:
            continue
        for key in OUTCOMES:
            if (policy == "llm-fake" and key in ARTEFACT) or sel[0][key]["n"] == 0:
                continue
            signs = {r["agents"]: conclusion(r[key]) for r in sel}
            verdict = "same at every size" if len(set(signs.values())) == 1 else "CHANGES with size"
            print(f"{policy} {key}: conclusion by size {signs} -> {verdict}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--seeds", nargs="+", default=["100:20", "1000:20", "10000:10"],
                    help="seeds per size (SIZE:N ...) or one count for all")  # fmt: skip
    ap.add_argument("--llm-sizes", type=int, nargs="*", default=[100, 1000, 10000])
    ap.add_argument("--policies", nargs="+", choices=POLICIES, default=list(POLICIES))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--out", default="runs/results/scale-study")
    ap.add_argument("--from-json", nargs="+", help="print the table and conclusions of saved scale.json files "
                    "(rows concatenated, e.g. sizes run separately); run nothing")  # fmt: skip
    a = ap.parse_args()
    if a.from_json:
        saved = [json.loads(Path(f).read_text()) for f in a.from_json]
        for f, sv in zip(a.from_json, saved):
            print(f"{f}: {sv['machine']}, load average at end {', '.join(f'{x:.2f}' for x in sv['load_average'])}")
        rows = sorted((r for sv in saved for r in sv["rows"]), key=lambda r: (r["agents"], POLICIES.index(r["policy"])))
        print_table(rows)
        print_conclusions(rows)
        return
    seeds = parse_seeds(a.seeds, a.sizes)
    out = Path(a.out)
    rows: list[dict[str, Any]] = []
    for n in a.sizes:
        for policy in [p for p in a.policies if p != "llm-fake" or n in a.llm_sizes]:
            row = run_cell(n, policy, seeds[n], a.steps, out)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "per_seed"}), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    la = os.getloadavg()
    (out / "scale.json").write_text(
        json.dumps({"rows": rows, "load_average": la, "machine": platform.platform()}, indent=1)
    )
    cpus = f"{platform.machine()} {os.cpu_count()} CPUs"
    print(f"\nmachine: {cpus}, load average at end {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    print_table(rows)
    print_conclusions(rows)


if __name__ == "__main__":
    main()
