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
import os
import platform
from pathlib import Path
from typing import Any

from socium.errors import UsageError
from socium.experiments.designs.scale import (
    ARTEFACT,
    HERD_OUTCOMES,
    OUTCOMES,
    POLICIES,
    conclusion,
    fmt_ci,
    parse_seeds,
    run_cell,
)


def print_table(rows: list[dict[str, Any]]) -> None:
    """Two tables: herding (every policy), polarisation (the policies that ran it)."""
    print("| agents | policy | seeds (n) | P(first crowd vote +): up - control | down - control | crowd score: "
          "up - control | down - control | share of + votes: up - control | votes per item | wall s (cell) | "
          "load avg start-end |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        nd = {"herd_up": 2, "herd_down": 2}
        herd = [fmt_ci(r[k], nd.get(k, 3), r["seeds"]) for k in HERD_OUTCOMES]
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
            fmt_ci(r[k], 3, r["seeds"]) + (f" [artefact predicts {r[k + '_fake']['mean']:+.3f}]" if fake else "")
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
    try:
        seeds = parse_seeds(a.seeds, a.sizes)
    except UsageError as exc:
        raise SystemExit(str(exc)) from None
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
