"""How much of a post's reach does a down-rank factor keep? Measured in socium's own platform.

Why: the counterfactual interventions on real cascades (``socium.experiments.propagation.counterfactual``)
assume a post down-ranked with factor f keeps a share f of its would-be reshares. On a platform where
users follow many accounts and feeds hold k posts, ``ModeratedRecommender`` re-ranks by ``f / (1 + rank)``
and a down-ranked post can leave a limited feed altogether, so what it keeps depends on k, the
recommender and how many posts compete. This script measures it in the rule-based quickstart world
(``examples/quickstart.yaml``: independent cascade, Twitter-like graph, 24 one-hour steps).

Design: a moderation strategy (:class:`LabelShare`, a plugin given as ``moderation.kind``) labels a
seeded random share of original posts in the step they are made (so before anyone is shown them);
``moderation.downrank`` is f; rule-based agents ignore labels, so f = 1 is the control. Each (world
seed, f) is one run. Per run, read through ``socium.trace.queries.interventions.judged_cascade_totals``:
exposures (distinct step, agent, post of any post of the cascade) and reshares (reposts + quotes) per
labelled original, and the same per unlabelled original. Each is divided by the same seed's f = 1 value,
and the per-seed ratios get a percentile-bootstrap interval over seeds (``socium.core.intervals``:
ratios are non-negative; no interval below 3 seeds).

The label draw is a pure function of (seed, step, author), not of the post id: arms of one seed
share activation draws, so an agent that posts at a step in two arms gets the same label in both
(common random numbers), while post ids shift as soon as the arms' reshares differ.

    OMP_WAIT_POLICY=PASSIVE nice -n 10 python benchmarks/downrank_retention.py --seeds 5
    python benchmarks/downrank_retention.py --agents 10000 --seeds 3 --factors 1 0.5 0.1 0
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from socium.config.loading import config_from_dict, read_yaml_mapping
from socium.core.intervals import Interval, nonnegative_interval
from socium.core.rng import uniform
from socium.moderation.base import MODERATION, ModerationContext
from socium.platform.marks import ModerationEvent
from socium.platform.posts import ORIGINAL

ROOT = Path(__file__).resolve().parents[1]
LABEL_SUB = 11
"""Sub-stream of the label draw within socium.moderation.base.MODERATION (the built-ins use sub 0)."""
FACTORS = (1.0, 0.75, 0.5, 0.25, 0.1, 0.0)


class LabelShare:
    """Label a seeded random share of original posts in the step they are made (a benchmark's strategy).

    Why a plugin and not ``fact_check``: the built-ins label false posts after a delay or on engagement,
    which selects posts by how well they spread; a random share labelled at birth isolates the rank factor.
    """

    def __init__(self, share: float = 0.2) -> None:
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"share {share!r} must lie in [0, 1]")
        self.share = share

    def moderate(self, ctx: ModerationContext) -> list[ModerationEvent]:
        p = ctx.state.posts
        n = len(p)
        new = np.flatnonzero((p.col("step")[:n] == ctx.step) & (p.col("kind")[:n] == ORIGINAL))
        authors = p.col("author")[new]
        hit = uniform(ctx.key, MODERATION, ctx.step, authors, sub=LABEL_SUB) < self.share
        return [
            ModerationEvent("label", int(i), source="benchmark", detail="Labelled at random (benchmark)")
            for i in new[hit].tolist()
            if not ctx.marks.judged(int(i))
        ]


def config(agents: int, seed: int, factor: float, k: int, recsys: str, share: float) -> dict[str, Any]:
    """The quickstart world at ``agents`` agents and world ``seed``, with the label strategy and factor."""
    cfg = read_yaml_mapping(ROOT / "examples" / "quickstart.yaml")
    cfg["seed"] = seed
    cfg["population"]["n_agents"] = agents
    if recsys == "x":  # hashing embedder: no model download; feed split 60/40 in/out of network
        n_in = max(1, round(0.6 * k))
        cfg["recsys"] = {
            "kind": "x",
            "k": k,
            "params": {"embedder": "hashing", "in_network": n_in, "out_of_network": k - n_in},
        }
    else:
        cfg["recsys"] = {"kind": recsys, "k": k}
    cfg["moderation"] = {"kind": "downrank_retention:LabelShare", "params": {"share": share}, "downrank": factor}
    return cfg


def one_run(cfg: dict[str, Any], work: Path) -> tuple[dict[bool, tuple[int, int, int, int]], float, float]:
    """Run one world; (labelled / unlabelled cascade totals, posts shown per activation, seconds)."""
    from socium.simulator.simulation import Simulation
    from socium.trace.queries.interventions import judged_cascade_totals
    from socium.trace.queries.runs import agent_steps, count_rows, open_run

    out = work / "run"
    t0 = time.perf_counter()
    with Simulation(config_from_dict(cfg), out, force=True) as sim:
        sim.run()
    wall = time.perf_counter() - t0
    with open_run(out) as con:
        totals = judged_cascade_totals(con)
        shown = count_rows(con, "exposures") / max(agent_steps(con, committed_only=True), 1)
    shutil.rmtree(out)
    return totals, shown, wall


def per_post(tot: dict[bool, tuple[int, int, int, int]], judged: bool) -> tuple[float, float, float]:
    """(exposures, reach, reshares) per original of one group; NaN for a group without originals."""
    n, e, r, s = tot.get(judged, (0, 0, 0, 0))
    return (e / n, r / n, s / n) if n else (float("nan"),) * 3


def _ratio(a: float, b: float) -> float:
    """a / b, NaN (a seed not measured) where the control had none."""
    return a / b if b > 0 else float("nan")


def ratio_interval(values: list[float], seed: int) -> Interval:
    return nonnegative_interval([v for v in values if np.isfinite(v)], seed=seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=5, help="world seeds 1..N")
    ap.add_argument("--factors", type=float, nargs="+", default=list(FACTORS))
    ap.add_argument("--k", type=int, nargs="+", default=[10])
    ap.add_argument("--recsys", nargs="+", default=["chronological"])
    ap.add_argument("--share", type=float, default=0.2)
    a = ap.parse_args()
    factors = sorted({1.0, *a.factors}, reverse=True)  # f = 1 is the control every ratio divides by
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # the plugin's module: this file
    seeds = list(range(1, a.seeds + 1))
    print(
        f"# downrank_retention: quickstart world, {a.agents} agents, 24 steps, share labelled {a.share:g}, "
        f"seeds {seeds[0]}..{seeds[-1]}; {platform.machine()} {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.2f} at start, python {platform.python_version()}"
    )
    with tempfile.TemporaryDirectory(prefix="downrank-") as tmp:
        for rec in a.recsys:
            for k in a.k:
                res: dict[tuple[int, float], dict[bool, tuple[int, int, int, int]]] = {}
                walls, fill = [], []
                for s in seeds:
                    for f in factors:
                        res[s, f], shown, w = one_run(config(a.agents, s, f, k, rec, a.share), Path(tmp))
                        walls.append(w)
                        if f == 1.0:
                            fill.append(shown / k)
                report(rec, k, seeds, factors, res, walls, float(np.mean(fill)))
    print(f"# load {os.getloadavg()[0]:.2f} at end")


def report(
    rec: str,
    k: int,
    seeds: list[int],
    factors: list[float],
    res: dict[tuple[int, float], dict[bool, tuple[int, int, int, int]]],
    walls: list[float],
    fill: float,
) -> None:
    """One table per (recommender, k): per f, labelled and unlabelled per-post measures relative to f = 1."""
    print(f"\n## recsys {rec}, k={k}: {len(walls)} runs, {np.mean(walls):.1f} s per run (max {max(walls):.1f} s)")
    base = {s: (per_post(res[s, 1.0], True), per_post(res[s, 1.0], False)) for s in seeds}
    lab = np.mean([res[s, 1.0].get(True, (0,))[0] for s in seeds])
    unl = np.mean([res[s, 1.0].get(False, (0,))[0] for s in seeds])
    b = np.array([[*base[s][0], *base[s][1]] for s in seeds])
    print(
        f"f = 1 per seed (mean): {lab:.0f} labelled / {unl:.0f} unlabelled originals; per labelled original "
        f"{b[:, 0].mean():.2f} exposures, {b[:, 2].mean():.3f} reshares; per unlabelled "
        f"{b[:, 3].mean():.2f} exposures, {b[:, 5].mean():.3f} reshares; feeds {fill:.0%} full "
        f"(posts shown per activation / k)"
    )
    cols = ("labelled exposures", "labelled reshares", "unlabelled exposures", "unlabelled reshares")
    print("| f | " + " | ".join(f"{c} / f=1 [95% CI]" for c in cols) + " |")
    print("|" + " --- |" * (len(cols) + 1))
    for f in factors:
        if f == 1.0:
            print("| 1 (control) | 1 | 1 | 1 | 1 |")
            continue
        cells = []
        for judged, m in ((True, 0), (True, 2), (False, 0), (False, 2)):
            r = [_ratio(per_post(res[s, f], judged)[m], base[s][0 if judged else 1][m]) for s in seeds]
            iv = ratio_interval(r, seed=int(f * 1000) + m + 10 * judged)
            cells.append(f"{iv.estimate:.3f} {iv.bounds(3)}" if iv.estimate is not None else "n/a")
        print(f"| {f:g} | " + " | ".join(cells) + " |")
    print(f"(intervals: percentile bootstrap of the per-seed ratio over n={len(seeds)} seeds, socium.core.intervals)")


if __name__ == "__main__":
    main()
