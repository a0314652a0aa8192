"""Information propagation against real retweet cascades (OASIS arXiv 2411.11581, section 3.2).

For each real Twitter15/16 tree: the tree's users become the population (the source author is
agent 0), a user follows the user it retweeted from (Ma et al. inferred those parent links from
follow relations, so they are follow edges, not an invented shortcut), real OASIS profiles and
follows are used when the cascade is the topic OASIS shipped users for, the source tweet is seeded
at step 0, and the simulated cascade's per-minute scale, depth and max breadth are scored against
the real ones by normalised RMSE over the first ``minutes`` minutes, as OASIS reports (~30%).

Every run is paired with an independent-cascade null whose reshare probability is fitted to the
model run's own reshare rate on the seed cascade (:mod:`socium.experiments.nullfit`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from socium.config.loading import config_from_dict
from socium.data.datadir import data_dir
from socium.errors import ConfigError, InputFileError
from socium.experiments.nullfit import fit_independent_cascade
from socium.experiments.propagation.cv.cv import run_propagation_cv
from socium.experiments.propagation.cv.transfer import run_propagation_transfer
from socium.experiments.propagation.data.ced import CUTOFF, load_ced
from socium.experiments.propagation.data.curves import nrmse_curves
from socium.experiments.propagation.data.realcascades import (
    CascadeTree,
    DefectReport,
    earliest_users,
    load_labels,
    load_twitter15,
    normalise_label,
    oasis_cascade_ids,
    parse_tree,
    subtree_curves,
)
from socium.experiments.propagation.sim.population import (
    cascade_population,
    oasis_topic_users,
    oasis_topics,
    run_defaults,
    simulated_curves,
)
from socium.experiments.propagation.spec import PropagationSpec, fit_file
from socium.experiments.spec import (
    build_config,
    llm_usage,
    run_config,
    write_population_csv,
    write_results,
)
from socium.reporting import progress
from socium.trace.queries.curves import CURVE_NAMES, cascade_curves_from_events


# ---- inputs ------------------------------------------------------------------------------------
def load_ced_trees(spec: PropagationSpec) -> tuple[dict[str, CascadeTree], dict[str, dict[str, Any]]]:
    """CED cascades posted before 2013-07-01 (explicit ids, or all of them sampled with a seed, in posting
    order) and their facts (label, posted_at, ...); the reader's repair counts are under ``"_ced"``."""
    trees, info, rep = load_ced(spec.tarball, spec.cascades or None, posted_before=CUTOFF, horizon_min=spec.horizon_min)
    if not spec.cascades:
        pool = [i for i, t in trees.items() if not spec.sample_max_users or len(t.nodes) <= spec.sample_max_users]
        if spec.min_observed:  # judged on the first observe_minutes only: what a forecaster has at that time
            m = spec.observe_minutes or 0
            pool = [i for i in pool if sum(n.delay <= m for n in trees[i].nodes.values()) - 1 >= spec.min_observed]
        if len(pool) < spec.sample:
            raise ConfigError(f"sample: only {len(pool)} CED cascades qualify, asked for {spec.sample}")
        picked = sorted(np.random.default_rng(spec.sample_seed).choice(len(pool), spec.sample, replace=False).tolist())
        n_pool = len(pool)
        trees = {pool[i]: trees[pool[i]] for i in picked}
    else:
        n_pool = len(trees)
    info = {c: info[c] for c in trees}
    info["_ced"] = {"repairs": rep.as_dict(), "balanced": rep.balanced(), "pool": n_pool}
    return trees, info


def load_trees(spec: PropagationSpec) -> dict[str, CascadeTree]:
    """The trees the spec asks for (explicit ids, own files, or OASIS's list sampled with a seed)."""
    if spec.dataset == "ced":
        return load_ced_trees(spec)[0]
    trees: dict[str, CascadeTree] = {}
    tar = Path(spec.tarball) if spec.tarball else None
    for f in spec.tree_files:  # the user's own files: a malformed line is an error naming file and line
        trees[Path(f).stem] = parse_tree(Path(f), horizon_min=spec.horizon_min)
    if spec.cascades:
        trees.update(load_twitter15(tar, spec.cascades, horizon_min=spec.horizon_min, strict=False))
    elif not spec.tree_files:
        pool = oasis_cascade_ids(Path(spec.topics_csv) if spec.topics_csv else None)
        all_trees = load_twitter15(tar, pool, horizon_min=spec.horizon_min, strict=False)
        if spec.sample_max_users:
            pool = [i for i in pool if all_trees[i].defects.nodes_kept <= spec.sample_max_users]
        if len(pool) < spec.sample:
            raise ConfigError(f"sample: only {len(pool)} OASIS cascades qualify, asked for {spec.sample}")
        picked = sorted(np.random.default_rng(spec.sample_seed).choice(len(pool), spec.sample, replace=False).tolist())
        trees.update({pool[i]: all_trees[pool[i]] for i in picked})
    return trees


def _final(curves: dict[str, np.ndarray]) -> dict[str, int]:
    return {k: int(v[-1]) for k, v in curves.items()}


# ---- the experiment ----------------------------------------------------------------------------
def run_propagation(
    spec: PropagationSpec, out: Path, *, force: bool = False, log: Callable[[str], None] = lambda s: None
) -> dict[str, Any]:
    """Run every cascade of ``spec`` (model + IC null), score against the real curves, write results.json."""
    if spec.dataset == "ced":
        if spec.cv is None or fit_file(spec) or spec.tree_files:
            raise ConfigError("dataset: ced is scored in cross-validation only; add cv: (no timing_file, tree_files)")
        trees, ced_info = load_ced_trees(spec)
        repairs = ced_info.pop("_ced")
        log(f"CED: {len(trees)} cascades (of {repairs['pool']} qualifying); reader repairs: {repairs['repairs']}")
        res = run_propagation_cv(spec, out, trees, force=force, log=log, info=ced_info)
        res["ced_repairs"] = repairs
        write_results(out, res)
        return res
    trees = load_trees(spec)
    if fit_file(spec):
        return run_propagation_transfer(spec, out, trees, force=force, log=log)
    if spec.cv is not None:
        return run_propagation_cv(spec, out, trees, force=force, log=log)
    topics = oasis_topics(Path(spec.topics_csv) if spec.topics_csv else None)
    users_dir = (
        Path(spec.oasis_users_dir)
        if spec.oasis_users_dir
        else (data_dir() / "oasis-reference" / "twitter_dataset" / "anonymous_topic_200_1h")
    )
    labels: dict[str, str] = {}
    if set(trees) - {Path(f).stem for f in spec.tree_files}:  # only Twitter15 trees have labels
        try:
            labels = load_labels(Path(spec.tarball) if spec.tarball else None)
        except InputFileError:
            labels = {}
    defaults = run_defaults(spec.name)
    dt = float({**defaults, **spec.base}.get("step_minutes", 10.0))
    steps = math.ceil(spec.minutes / dt)
    if int(spec.base.get("steps", steps)) < steps:
        raise ConfigError(f"base.steps: {spec.base['steps']} steps of {dt} min do not cover minutes={spec.minutes}")
    cascades, total = [], DefectReport()
    progress.current().expect(len(trees) * (1 + int(spec.run_null)))
    for cid, tree in trees.items():
        total = total + tree.defects
        info = topics.get(cid, {})
        real = oasis_topic_users(users_dir / f"{info['topic']}.csv") if info.get("topic") else None
        users = earliest_users(tree, spec.max_users)
        seed = int({**defaults, **spec.base}.get("seed", 0))
        rows, edge_counts = cascade_population(tree, users, spec, real, seed)
        pop_csv = write_population_csv(out / "inputs" / f"{cid}.csv", rows)
        text = spec.source_texts.get(cid) or info.get("text")
        if not text:
            log(
                f"cascade {cid}: NO SOURCE TEXT (not in OASIS's list, no source_texts entry): the agents are shown "
                "a placeholder post; add source_texts: {" + cid + ": ...} to the spec"
            )
            text = "(the source tweet's text is not available)"
        owned = {
            "population": {"source": "oasis_csv", "path": str(pop_csv.resolve())},
            "graph": {"kind": "profiles"},
            "seed_posts": [{"author": 0, "content": text}],
        }
        base = dict(spec.base)
        base.setdefault("steps", steps)
        cfg = build_config({**defaults, "name": f"{spec.name}-{cid}"}, base, owned, f"propagation {cid}")
        runs: dict[str, Any] = {}
        log(f"cascade {cid}: {len(users)} agents, model run ({cfg.policy.kind})")
        info_m = run_config(cfg, out / "runs" / cid / "model", force=force)
        runs["model"] = {"dir": str(info_m.run_dir), "status": info_m.status, "policy": cfg.policy.kind}
        if cfg.policy.kind == "independent_cascade":  # a rule-based model run: its p is configured, not fitted
            runs["model"]["configured_p"] = cfg.policy.p_repost
        fit = fit_independent_cascade(info_m.run_dir, roots=[0])
        fit_all = fit_independent_cascade(info_m.run_dir)
        runs["model"]["reshare_fit"] = {
            "p": fit.p,
            "adoptions": fit.adoptions,
            "trials": fit.trials,
            "p_all_cascades": fit_all.p,
        }
        if spec.run_null:
            data = cfg.model_dump(mode="json")
            data.update(
                name=f"{cfg.name}-null",
                llm=None,
                policy={"kind": "independent_cascade", "p_repost": fit.p, "p_post": 0.0},
            )
            ncfg = config_from_dict(data, source=f"propagation {cid} null")
            log(f"cascade {cid}: IC null, p={fit.p:.4f}")
            info_n = run_config(ncfg, out / "runs" / cid / "null", force=force)
            runs["null"] = {
                "dir": str(info_n.run_dir),
                "status": info_n.status,
                "policy": "independent_cascade",
                "p": fit.p,
            }
        real_sub = subtree_curves(tree, users, spec.minutes)
        _, par, dl = tree.events()
        real_full = cascade_curves_from_events(par, dl, spec.minutes)
        for r in runs.values():
            sim = simulated_curves(Path(r["dir"]), 0, spec.minutes)
            r.update(
                curves={k: v.tolist() for k, v in sim.items()},
                final=_final(sim),
                nrmse=nrmse_curves(sim, real_sub, spec.minutes),
                nrmse_full=nrmse_curves(sim, real_full, spec.minutes),
                usage=llm_usage(Path(r["dir"])),
            )
        cascades.append(
            {
                "id": cid,
                "topic": info.get("topic"),
                "label": normalise_label(labels.get(cid, info.get("label"))),
                "source_text": "oasis"
                if cid in topics and cid not in spec.source_texts
                else ("spec" if cid in spec.source_texts else "missing"),
                "real_users": len(tree.nodes),
                "agents": len(users),
                "real_profiles": real is not None,
                "edges": edge_counts,
                "defects": tree.defects.as_dict(),
                "real": {k: v.tolist() for k, v in real_sub.items()},
                "real_full": {k: v.tolist() for k, v in real_full.items()},
                "real_final": _final(real_sub),
                "runs": runs,
            }
        )
    results = {
        "experiment": "propagation",
        "spec": spec.model_dump(mode="json"),
        "minutes": spec.minutes,
        "step_minutes": dt,
        "cascades": cascades,
        "defects": total.as_dict(),
        "defects_balanced": total.balanced(),
        "summary": summarise(cascades),
    }
    write_results(out, results)
    return results


def summarise(cascades: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean NRMSE per curve and model over cascades (each cascade weighted equally, as OASIS)."""
    out: dict[str, Any] = {"reference": {"oasis_nrmse": 0.30, "source": "OASIS arXiv 2411.11581: ~30% over 150 min"}}
    for model in ("model", "null"):
        have = [c["runs"][model] for c in cascades if model in c["runs"]]
        if not have:
            continue
        out[model] = {
            "n": len(have),
            "nrmse": {k: float(np.mean([r["nrmse"][k] for r in have])) for k in CURVE_NAMES},
            "nrmse_full": {k: float(np.mean([r["nrmse_full"][k] for r in have])) for k in CURVE_NAMES},
            "llm_calls": int(sum(r["usage"]["llm_calls"] for r in have)),
            "tokens": int(sum(r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] for r in have)),
            "wall_s": float(sum(r["usage"]["wall_s"] for r in have)),
        }
    return out
