"""Does the default world pass its stylized facts on every seed? One row per seed.

Why: ``examples/quickstart.yaml`` was tuned on seed 42 (issue 28, build 5); a scorecard that passes on
one seed may be luck. This script runs the quickstart at ``--agents`` agents on each ``--seeds`` seed
(extra ``--set key=value`` overrides try other configurations), scores each run with
``socium.experiments.validation.validate.scorecard`` and prints, per seed: the number of cascades
>= 100 nodes, the facts that fail, the cascade, activity and popularity values, the accounts with >= 500
followers and their summed reach (in-degree x mean hourly activation probability: large cascades are
their broadcasts), and the 25/50/75/95% sizes of the large cascades (Twitter15's: 148 / 258 / 460 /
1,205). ``--ks-null`` instead prints how often a perfect model (Twitter15 draws) misses the KS band
with n large cascades. docs/validation.md section 4a quotes both.

    OMP_WAIT_POLICY=PASSIVE python benchmarks/quickstart_seeds.py --seeds 0 1 2 3 4 5 6 7 8 9 42
    python benchmarks/quickstart_seeds.py --seeds 1 6 7 --set graph.params.m=20 --set policy.p_post=0.7
    python benchmarks/quickstart_seeds.py --set population.activity_follower_corr=0.5
    python benchmarks/quickstart_seeds.py --ks-null 3 6 11 16 27 35
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from socium.config.loading import load_config
from socium.experiments.validation import stylized as S
from socium.experiments.validation import validate as V
from socium.simulator.simulation import Simulation
from socium.simulator.world import build_follows, build_population, couple_to_followers

ROOT = Path(__file__).resolve().parents[1]
SHORT = {
    "cascade size tail": "tail",
    "KS distance": "KS",
    "structural virality": "vir",
    "cascade depth": "depth",
    "max breadth": "brd",
    "inter-event burstiness": "B",
    "activity heterogeneity": "het",
    "follower (in-degree)": "fol",
    "reciprocity": "rec",
    "mean local clustering": "clu",
    "popularity tail": "pop",
}
COLS = ("tail", "KS", "vir", "depth", "brd", "B", "het", "fol", "rec", "clu", "pop")


def _short(name: str) -> str | None:
    return next((v for k, v in SHORT.items() if name.startswith(k)), None)


def one_seed(seed: int, agents: int, overrides: list[str], work: Path) -> str:
    cfg = load_config(
        ROOT / "examples" / "quickstart.yaml", [f"population.n_agents={agents}", f"seed={seed}", *overrides]
    )
    t0 = time.perf_counter()
    Simulation(cfg, work / f"run-{seed}").run()
    wall = time.perf_counter() - t0
    card = V.scorecard(work / f"run-{seed}")
    data = V._load(work / f"run-{seed}", 0)  # the scorecard's own loader: the same cascades it scored
    size = S.cascade_table(data["parent"], data["root"])["size"]
    big = np.sort(size[size >= V.BIG_CASCADE])
    indeg = np.bincount(data["dst"], minlength=int(data["n"]))
    pop, following = build_population(cfg)  # the run's own population and graph, rebuilt from its seed
    couple_to_followers(cfg, pop, build_follows(cfg, len(pop), following))  # population.activity_follower_corr
    act = np.asarray(pop.activity).mean(1)
    hubs = indeg >= 500
    reach = float((indeg[hubs] * act[hubs]).sum())  # expected followers reached per hour by >= 500-follower accounts
    q = "/".join(str(int(x)) for x in np.percentile(big, [25, 50, 75, 95]).round()) if len(big) else "-"
    vals, fails = {}, []
    for f in card["facts"]:
        s = _short(f["name"])
        if s:
            vals[s] = "n/a" if f["value"] is None else f"{f['value']:.2f}"
            if f["status"] == "fail":
                fails.append(s)
    cells = [str(seed), str(card["n_cascades_big"]), *(vals.get(c, "-") for c in COLS), ", ".join(fails) or "none"]
    return "| " + " | ".join(cells) + f" | {int(hubs.sum())} | {reach:,.0f} | {q} | {wall:.1f} |"


def ks_null(sizes: tuple[int, ...], reps: int = 20_000, seed: int = 20261205) -> None:
    """How often cascades drawn from Twitter15's own size distribution (the validator's quantile stand-in)
    miss the KS band: what a perfect model would score with that many large cascades."""
    rng = np.random.default_rng(seed)
    ref = V._t15_size_sample()
    q, v = np.array([0.05, 0.25, 0.5, 0.75, 0.95]), np.array(V.T15["size_quantiles"])
    print(f"# KS of n cascades drawn from Twitter15's sizes vs its stand-in sample ({reps} draws, numpy seed {seed})")
    print("| n | P(KS > 0.3) | median KS |\n| --- | --- | --- |")
    for n in sizes:
        ks = np.array([S.ks_distance(np.interp(rng.uniform(0.05, 0.95, n), q, v), ref) for _ in range(reps)])
        print(f"| {n} | {(ks > 0.3).mean():.3f} | {np.median(ks):.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    ap.add_argument("--agents", type=int, default=10_000)
    ap.add_argument("--set", dest="overrides", action="append", default=[], help="config override key=value")
    ap.add_argument("--ks-null", type=int, nargs="*", help="instead: KS of n Twitter15 draws, for each n given")
    a = ap.parse_args()
    if a.ks_null:
        ks_null(tuple(a.ks_null))
        return
    machine = platform.processor() or platform.machine()
    print(f"# quickstart_seeds: {a.agents} agents, overrides {a.overrides or 'none'}, {machine}")
    print(
        "| seed | cascades >= 100 | "
        + " | ".join(COLS)
        + " | fails | accounts >= 500 followers | their reach | sizes >= 100 p25/50/75/95 | run s |"
    )
    print("|" + " --- |" * (len(COLS) + 7))
    with tempfile.TemporaryDirectory() as tmp:
        for seed in a.seeds:
            print(one_seed(seed, a.agents, a.overrides, Path(tmp)), flush=True)


if __name__ == "__main__":
    main()
