"""Scale study: does the number of agents change the herding or polarisation conclusion?

For each population size (default 100 / 1,000 / 10,000) and policy (rule-based null; an LLM policy on
the ``fake`` backend, a loopback OpenAI-compatible server answering schema-valid random JSON, for
sizes in ``--llm-sizes``), several independent replicates (seeds; each seed draws its own items,
population, graph and run):

* herding (Muchnik et al. 2013 design, experiments/herding.py): 30 items, a third up-treated and a
  third down-treated by one experimenter vote. Per seed: mean crowd score of up-treated minus control
  items (and down minus control), and the scale-free share of positive crowd votes, up minus control;
* polarisation (experiments/polarisation.py, synthetic population, two camps at +-0.4). Per seed:
  mean change of |stance| from the start to the last survey (positive: more extreme), and the change
  of the camp gap (mean final answer of the + camp minus the - camp, minus the same at the start).

The unit of every CI is the seed: a seed's agents share one world, one graph and one run, so they
are not independent draws, and a CI that pools agents (the first version of this script) is too
narrow. Each outcome's CI is the two-sided 95% t interval over the per-seed values. Small sizes get
more seeds (default 20 / 10 / 5): their runs are cheap and their between-seed spread is largest, and
at 2 seeds of freedom the t multiplier is 4.3 against 2.1 at 19.

On the fake backend a survey answer is ``uniform(-1, 1)`` whatever the agent saw (it samples the
survey schema), so its polarisation numbers are a property of the test server, not an opinion
dynamic: the script reports them beside the value that artefact predicts (mean |answer| 0.5 minus
the start's mean |stance|; camp gap back to 0) as a pipeline check, and keeps them out of the
conclusion.

The conclusion at a size is the sign of the effect when its CI excludes 0, else "0"; the script
prints whether that conclusion is the same at every size. Numbers go to docs/results.md.

    python benchmarks/scale_study.py [--sizes 100 1000 10000] [--seeds 100:20 1000:10 10000:5]
    python benchmarks/scale_study.py --from-json runs/results/scale-study/scale.json   # reprint
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

from socium.experiments.herding import HerdingSpec, run_herding
from socium.experiments.intervention import t_ci
from socium.experiments.polarisation import PolarisationSpec, run_polarisation

HERD_RULE = {"kind": "random", "p_like": 0.18, "p_dislike": 0.01, "p_post": 0.0, "p_repost": 0.0}
POL_RULE = {"kind": "bounded_confidence", "epsilon": 0.3, "mu": 0.3, "p_post": 0.1}
LLM = {"policy": {"kind": "llm"}, "llm": {"backend": "fake", "seed": 0}}
OUTCOMES = ("herd_up", "herd_down", "herd_up_share", "pol_abs", "pol_gap")
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
    """Per item, by treatment group: rows of (crowd score, positive crowd votes, all crowd votes)."""
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        rows = con.execute("""
            WITH items AS (SELECT post_id FROM actions
                           WHERE origin = 'seed' AND type = 'create_post' AND outcome = 'ok'),
            treat AS (SELECT target, sum(delta) AS t FROM votes WHERE origin = 'seed' GROUP BY target),
            crowd AS (SELECT target, sum(delta) AS s, count_if(delta > 0) AS pos, count(*) AS n
                      FROM votes WHERE origin != 'seed' GROUP BY target)
            SELECT coalesce(t.t, 0), coalesce(c.s, 0), coalesce(c.pos, 0), coalesce(c.n, 0) FROM items i
            LEFT JOIN treat t ON t.target = i.post_id LEFT JOIN crowd c ON c.target = i.post_id""").fetchall()
    finally:
        con.close()
    out: dict[str, list[tuple[float, float, float]]] = {"up": [], "control": [], "down": []}
    for t, s, pos, n in rows:
        out["up" if t > 0 else "down" if t < 0 else "control"].append((float(s), float(pos), float(n)))
    return {k: np.array(v, float).reshape(-1, 3) for k, v in out.items()}


def herding_effects(items: dict[str, np.ndarray]) -> dict[str, float]:
    """One seed's herding outcomes from :func:`herding_items`."""

    def share(a: np.ndarray) -> float:
        return float(a[:, 1].sum() / a[:, 2].sum()) if a[:, 2].sum() else math.nan

    up, ctl, down = items["up"], items["control"], items["down"]
    return {
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
        base = {"seed": seed, "steps": steps, **(pol or {"policy": HERD_RULE, "llm": None})}
        run_herding(HerdingSpec(n_agents=n, n_items=30, item_seed=seed, activation=0.2, run_null=False, bootstrap=0,
                                base=base), d / "herding")  # fmt: skip
        pbase = {"seed": seed, "steps": steps, **(pol or {"policy": POL_RULE, "llm": None})}
        run_polarisation(PolarisationSpec(population="synthetic", n_agents=n, split_seed=seed, run_null=False,
                                          bootstrap=0, survey_every=steps, base=pbase), d / "polarisation")  # fmt: skip
        per.append(
            herding_effects(herding_items(d / "herding" / "runs" / "model"))
            | polarisation_effects(stances(d / "polarisation" / "runs" / "model"))
        )
    row: dict[str, Any] = {"agents": n, "policy": policy, "seeds": seeds, "per_seed": per}
    for k in (*OUTCOMES, "pol_abs_fake", "pol_gap_fake", "votes_per_item", "pol_agents"):
        row[k] = seed_ci([p[k] for p in per])
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
    print(
        "| agents | policy | seeds (n) | herding: up - control crowd score | down - control | up - control share "
        "of + votes | votes per item | polarisation: change of mean abs(stance) | change of camp gap | "
        "agents surveyed per seed | wall s | load avg start-end |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        fake = r["policy"] == "llm-fake"
        pol = [
            _fmt(r[k], 3, r["seeds"]) + (f" [artefact predicts {r[k + '_fake']['mean']:+.3f}]" if fake else "")
            for k in ARTEFACT
        ]
        herd = [_fmt(r[k], nd, r["seeds"]) for k, nd in (("herd_up", 2), ("herd_down", 2), ("herd_up_share", 3))]
        load = f"{r['load'][0]:.2f}-{r['load'][1]:.2f}"
        cells = [f"{r['agents']:,}", r["policy"], str(r["seeds"]), *herd, f"{r['votes_per_item']['mean']:.1f}", *pol,
                 f"{r['pol_agents']['mean']:,.0f}", str(r["wall_s"]), load]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    print(
        "(each cell: mean over seeds (95% t CI over seeds); fake-backend polarisation is an artefact of uniform "
        "random survey answers, excluded from conclusions)"
    )


def print_conclusions(rows: list[dict[str, Any]]) -> None:
    for policy in ("rule", "llm-fake"):
        sel = [r for r in rows if r["policy"] == policy]
        if len(sel) < 2:
            continue
        for key in OUTCOMES:
            if policy == "llm-fake" and key in ARTEFACT:
                continue
            signs = {r["agents"]: conclusion(r[key]) for r in sel}
            verdict = "same at every size" if len(set(signs.values())) == 1 else "CHANGES with size"
            print(f"{policy} {key}: conclusion by size {signs} -> {verdict}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--seeds", nargs="+", default=["100:20", "1000:10", "10000:5"],
                    help="seeds per size (SIZE:N ...) or one count for all")  # fmt: skip
    ap.add_argument("--llm-sizes", type=int, nargs="*", default=[100, 1000, 10000])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--out", default="runs/results/scale-study")
    ap.add_argument("--from-json", help="print the table and conclusions of a saved scale.json; run nothing")
    a = ap.parse_args()
    if a.from_json:
        saved = json.loads(Path(a.from_json).read_text())
        print(f"machine: {saved['machine']}, load average at end {saved['load_average']}")
        print_table(saved["rows"])
        print_conclusions(saved["rows"])
        return
    seeds = parse_seeds(a.seeds, a.sizes)
    out = Path(a.out)
    rows: list[dict[str, Any]] = []
    for n in a.sizes:
        for policy in ["rule"] + (["llm-fake"] if n in a.llm_sizes else []):
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
