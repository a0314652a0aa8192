"""Scale study: does the number of agents change the herding or polarisation conclusion?

For each population size (default 100 / 1,000 / 10,000) and policy (rule-based null; an LLM policy on
the ``fake`` backend, a loopback OpenAI-compatible server answering schema-valid JSON, for sizes
given in ``--llm-sizes``), several seeds of:

* herding (Muchnik et al. 2013 design, experiments/herding.py): 30 items, a third up-treated and a
  third down-treated by an experimenter vote; outcome = mean crowd score of up-treated minus control
  items (and down minus control), 95% bootstrap CI over items pooled across seeds;
* polarisation (experiments/polarisation.py, synthetic population, two camps at +-0.4): outcome =
  mean change of |stance| from the start to the last survey per agent (positive: more extreme), and
  the final bimodality coefficient; 95% bootstrap CI over agents pooled across seeds.

The conclusion at a size is the sign of the effect when its CI excludes 0, else "no effect"; the
script prints whether that conclusion is the same at every size. Numbers go to docs/results.md.

    python benchmarks/scale_study.py [--sizes 100 1000 10000] [--seeds 3] [--llm-sizes 100 1000 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from socium.experiments.herding import HerdingSpec, run_herding
from socium.experiments.polarisation import PolarisationSpec, bimodality_coefficient, run_polarisation

HERD_RULE = {"kind": "random", "p_like": 0.18, "p_dislike": 0.01, "p_post": 0.0, "p_repost": 0.0}
POL_RULE = {"kind": "bounded_confidence", "epsilon": 0.3, "mu": 0.3, "p_post": 0.1}
LLM = {"policy": {"kind": "llm"}, "llm": {"backend": "fake", "seed": 0}}


def _boot(values: list[np.ndarray], stat: Any, n_boot: int, rng: np.random.Generator) -> list[float]:
    stats = [stat(*[v[rng.integers(0, len(v), len(v))] for v in values]) for _ in range(n_boot)]
    return [float(x) for x in np.percentile(stats, [2.5, 97.5])]


def herding_items(run_dir: Path) -> dict[str, np.ndarray]:
    """Crowd score (non-seed votes) of every item, by treatment group, from the trace."""
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        rows = con.execute("""
            WITH items AS (SELECT post_id FROM actions WHERE origin = 'seed' AND type = 'create_post' AND outcome = 'ok'),
            treat AS (SELECT target, sum(delta) AS t FROM votes WHERE origin = 'seed' GROUP BY target),
            crowd AS (SELECT target, sum(delta) AS s FROM votes WHERE origin != 'seed' GROUP BY target)
            SELECT i.post_id, coalesce(t.t, 0), coalesce(c.s, 0) FROM items i
            LEFT JOIN treat t ON t.target = i.post_id LEFT JOIN crowd c ON c.target = i.post_id""").fetchall()
    finally:
        con.close()
    out: dict[str, list[float]] = {"up": [], "control": [], "down": []}
    for _, t, s in rows:
        out["up" if t > 0 else "down" if t < 0 else "control"].append(float(s))
    return {k: np.array(v) for k, v in out.items()}


def stance_shift(run_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Per agent: |final surveyed stance| - |initial stance|, and the final stances."""
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        rows = con.execute("""
            WITH last AS (SELECT max(step) AS s FROM surveys WHERE value IS NOT NULL)
            SELECT a.stance, v.value FROM agents a JOIN surveys v USING (agent_id)
            WHERE v.step = (SELECT s FROM last) AND v.value IS NOT NULL AND a.stance IS NOT NULL""").fetchall()
    finally:
        con.close()
    a = np.array(rows, float).reshape(-1, 2)
    return np.abs(a[:, 1]) - np.abs(a[:, 0]), a[:, 1]


def conclusion(ci: list[float]) -> str:
    return "+" if ci[0] > 0 else "-" if ci[1] < 0 else "0"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--llm-sizes", type=int, nargs="*", default=[100, 1000, 10000])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--out", default="runs/results/scale-study")
    a = ap.parse_args()
    out = Path(a.out)
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    for n in a.sizes:
        for policy in ["rule"] + (["llm-fake"] if n in a.llm_sizes else []):
            t0 = time.perf_counter()
            items: dict[str, list[np.ndarray]] = {"up": [], "control": [], "down": []}
            shifts, finals, bimod = [], [], []
            for seed in range(a.seeds):
                d = out / f"n{n}" / policy / f"seed{seed}"
                base = {"seed": seed, "steps": a.steps, **(LLM if policy == "llm-fake" else {"policy": HERD_RULE, "llm": None})}
                run_herding(HerdingSpec(n_agents=n, n_items=30, item_seed=seed, activation=0.2, run_null=False, bootstrap=0,
                                        base=base), d / "herding")  # fmt: skip
                for g, v in herding_items(d / "herding" / "runs" / "model").items():
                    items[g].append(v)
                pbase = {"seed": seed, "steps": a.steps, **(LLM if policy == "llm-fake" else {"policy": POL_RULE, "llm": None})}
                run_polarisation(PolarisationSpec(population="synthetic", n_agents=n, split_seed=seed, run_null=False,
                                                  bootstrap=0, survey_every=a.steps, base=pbase), d / "polarisation")  # fmt: skip
                sh, fin = stance_shift(d / "polarisation" / "runs" / "model")
                shifts.append(sh)
                finals.append(fin)
                bimod.append(bimodality_coefficient(fin))
            up, ctl, down = (np.concatenate(items[g]) for g in ("up", "control", "down"))
            sh = np.concatenate(shifts)
            diff = lambda x, y: float(x.mean() - y.mean())  # noqa: E731
            row = {"agents": n, "policy": policy, "seeds": a.seeds, "items": int(len(up) + len(ctl) + len(down)),
                   "herd_up": diff(up, ctl), "herd_up_ci": _boot([up, ctl], diff, a.boot, rng),
                   "herd_down": diff(down, ctl), "herd_down_ci": _boot([down, ctl], diff, a.boot, rng),
                   "votes_per_item": float(np.abs(np.concatenate([up, ctl, down])).mean()),
                   "pol_shift": float(sh.mean()), "pol_shift_ci": _boot([sh], lambda x: float(x.mean()), a.boot, rng),
                   "pol_agents": int(len(sh)), "bimodality": float(np.mean(bimod)),
                   "bimodality_range": [float(min(bimod)), float(max(bimod))], "wall_s": round(time.perf_counter() - t0, 1)}  # fmt: skip
            rows.append(row)
            print(json.dumps(row), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    la = os.getloadavg()
    (out / "scale.json").write_text(json.dumps({"rows": rows, "load_average": la, "machine": platform.platform()}, indent=1))
    print(f"\nmachine: {platform.machine()} {os.cpu_count()} CPUs, load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    print("| agents | policy | seeds | herding: up - control crowd score [95% CI] | down - control [95% CI] | "
          "polarisation: mean change of abs(stance) [95% CI] (agents) | final bimodality (min-max over seeds) | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['agents']:,} | {r['policy']} | {r['seeds']} | {r['herd_up']:+.2f} [{r['herd_up_ci'][0]:+.2f}, "
              f"{r['herd_up_ci'][1]:+.2f}] | {r['herd_down']:+.2f} [{r['herd_down_ci'][0]:+.2f}, {r['herd_down_ci'][1]:+.2f}] | "
              f"{r['pol_shift']:+.3f} [{r['pol_shift_ci'][0]:+.3f}, {r['pol_shift_ci'][1]:+.3f}] ({r['pol_agents']:,}) | "
              f"{r['bimodality']:.3f} ({r['bimodality_range'][0]:.3f}-{r['bimodality_range'][1]:.3f}) | {r['wall_s']} |")
    for policy in ("rule", "llm-fake"):
        sel = [r for r in rows if r["policy"] == policy]
        if len(sel) > 1:
            for key in ("herd_up", "herd_down", "pol_shift"):
                signs = [conclusion(r[key + "_ci"]) for r in sel]
                print(f"{policy} {key}: conclusion by size {dict(zip([r['agents'] for r in sel], signs))} -> "
                      f"{'same at every size' if len(set(signs)) == 1 else 'CHANGES with size'}")


if __name__ == "__main__":
    main()
