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
from typing import Any, Literal

import numpy as np
from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from socium.config.loading import config_from_dict
from socium.data.datadir import data_dir
from socium.errors import ConfigError, InputFileError
from socium.experiments.nullfit import fit_independent_cascade
from socium.experiments.propagation.counterfactual import CounterfactualSpec
from socium.experiments.propagation.cv.cv import run_propagation_cv
from socium.experiments.propagation.cv.transfer import fit_file, run_propagation_transfer
from socium.experiments.propagation.data.ced import CUTOFF, load_ced
from socium.experiments.propagation.data.curves import nrmse_curves
from socium.experiments.propagation.data.realcascades import (
    DEFAULT_HORIZON_MIN,
    CascadeTree,
    DefectReport,
    load_labels,
    load_twitter15,
    normalise_label,
    oasis_cascade_ids,
    parse_tree,
)
from socium.experiments.propagation.sim.cv_config import CVSpec
from socium.experiments.propagation.sim.population import (
    cascade_population,
    earliest_users,
    oasis_topic_users,
    oasis_topics,
    run_defaults,
    simulated_curves,
    subtree_curves,
)
from socium.experiments.spec import (
    PATH_FIELD,
    ExperimentSpec,
    build_config,
    llm_usage,
    run_config,
    write_population_csv,
    write_results,
)
from socium.reporting import progress
from socium.trace.queries.curves import CURVE_NAMES, cascade_curves_from_events


class PropagationSpec(ExperimentSpec):
    experiment: Literal["propagation"] = "propagation"
    name: str = "propagation"
    cascades: list[str] = Field(
        default_factory=list, description="Twitter15 source tweet ids; empty: a seeded sample of OASIS's list."
    )
    sample: int = Field(
        5,
        ge=1,
        description="How many OASIS Twitter15 cascades to sample when neither `cascades` nor `tree_files` is given "
        "(setting it with either is an error).",
    )
    sample_seed: int = Field(0, ge=0, description="Seed of that sample.")
    sample_max_users: int | None = Field(None, ge=2, description="Sample only cascades with at most this many users.")
    tree_files: list[str] = Field(
        json_schema_extra=PATH_FIELD,
        default_factory=list,
        description="Your own trees in the Ma et al. format (id = file stem).",
    )
    source_texts: dict[str, str] = Field(
        default_factory=dict, description="Source tweet text per cascade id (else OASIS's list)."
    )
    dataset: Literal["twitter15", "ced"] = Field(
        "twitter15",
        description="Where `cascades` ids and the sample come from: Twitter15 (OASIS's list) or CED's Weibo repost "
        "cascades posted before 2013-07-01 (socium.experiments.propagation.data.ced; sampled from all of them).",
    )
    min_observed: int | None = Field(
        None,
        ge=1,
        description="dataset: ced only: keep cascades with at least this many reshares within observe_minutes (a "
        "selection on the observed prefix only, as SEISMIC's evaluation does: the window NRMSE of a cascade that has "
        "not started is normalised by almost nothing).",
    )
    tarball: str | None = Field(
        None,
        json_schema_extra=PATH_FIELD,
        description="The data set's archive (Twitter15 trees tarball; CED: its tarball or CED_Dataset folder); "
        "default: the data folder.",
    )
    topics_csv: str | None = Field(
        None, json_schema_extra=PATH_FIELD, description="OASIS all_topics.csv (default: shared data)."
    )
    oasis_users_dir: str | None = Field(
        None, json_schema_extra=PATH_FIELD, description="OASIS per-topic user CSVs (default: shared data)."
    )
    horizon_min: float | None = Field(DEFAULT_HORIZON_MIN, description="Drop real nodes later than this (minutes).")
    max_users: int | None = Field(None, ge=2, description="Cap the population at the earliest N users of each tree.")
    activation: float = Field(0.3, gt=0, le=1, description="Probability that an agent is active in a step.")
    follows: Literal["tree", "real", "both"] = Field(
        "both", description="Follow edges: child->parent of the tree, OASIS's real ones, or both."
    )
    extra_follows: int = Field(0, ge=0, description="Random extra followees per agent (noise edges).")
    minutes: int = Field(150, ge=1, description="Comparison window in minutes.")
    cv: CVSpec | None = Field(
        None,
        description="Cross-validated scoring: {folds, seed, models, runs, ...}; fit timing on train folds, score "
        "held-out cascades (experiments/propcv.py).",
    )
    timing_file: str | None = Field(
        None,
        json_schema_extra=PATH_FIELD,
        description="A saved fit (`socium fit propagation`'s JSON; base.timing.params_file works too): score it on "
        "these trees with replicas (cv.runs, default 40) and no refit; cv: may give models, runs, seed only.",
    )
    observe_minutes: int | None = Field(
        None,
        ge=1,
        description="Forecast from an observed prefix (needs cv:): the first m minutes of each held-out cascade are "
        "observed, its speed is inferred from them, the rest is simulated; scored on minutes m..minutes only.",
    )
    counterfactual: CounterfactualSpec | None = Field(
        None,
        description="Interventions on the conditioned forecast (needs observe_minutes): {strategies: {name: {remove, "
        "downrank, label, prebunk}}, act_minutes, label_effect, prebunk_effect}; change in reach with two-level "
        "bootstrap intervals (cascades, replicas).",
    )

    @model_serializer(mode="wrap")
    def _omit_default_dataset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave ``dataset`` out while it is Twitter15, so every spec written before it existed dumps as before."""
        data = handler(self)
        if data.get("dataset") == "twitter15":
            del data["dataset"]
        if data.get("min_observed", 0) is None:
            del data["min_observed"]
        return data

    @model_validator(mode="after")
    def _sample_only_without_explicit_trees(self) -> PropagationSpec:
        given = [k for k in ("sample", "sample_seed", "sample_max_users") if k in self.model_fields_set]
        if given and (self.cascades or self.tree_files):
            which = "cascades" if self.cascades else "tree_files"
            raise ValueError(f"{', '.join(given)}: sampling applies only when no trees are named; remove it or {which}")
        return self

    @model_validator(mode="after")
    def _min_observed_on_ced(self) -> PropagationSpec:
        if self.min_observed is not None and (self.dataset != "ced" or self.observe_minutes is None):
            raise ValueError(
                "min_observed: selects CED cascades by their observed prefix; needs dataset: ced and observe_minutes"
            )
        return self

    @model_validator(mode="after")
    def _forecast_in_cv(self) -> PropagationSpec:
        if self.observe_minutes is not None:
            if fit_file(self):  # cv: without the fit would refit on the very cascades to be forecast
                raise ValueError(
                    f"observe_minutes: a saved fit ({fit_file(self)}) forecasts with `socium forecast --fit FILE "
                    "--cascades ...` (never refitted); a spec's observe_minutes is the cross-validation's, which "
                    "fits its own folds"
                )
            if self.cv is None:
                raise ValueError(
                    "observe_minutes: the forecast is scored in cross-validation here (add cv:); to apply a saved "
                    "fit use `socium forecast`"
                )
            if self.observe_minutes >= self.minutes:
                raise ValueError(f"observe_minutes: {self.observe_minutes} leaves nothing of minutes={self.minutes}")
        if self.cv is not None and "forecast_sim" in self.cv.models:
            if self.observe_minutes is None:
                raise ValueError("cv.models: forecast_sim is the prefix-conditioned forecast; set observe_minutes")
            if self.follows != "tree" or self.max_users is not None:
                raise ValueError(
                    "cv.models: forecast_sim runs on the whole tree population; needs follows: tree, no max_users"
                )
        if self.counterfactual is not None:
            if self.observe_minutes is None:
                raise ValueError("counterfactual: interventions act on the conditioned forecast; set observe_minutes")
            for a in self.counterfactual.act_minutes:
                if not self.observe_minutes <= a < self.minutes:
                    raise ValueError(
                        f"counterfactual.act_minutes: {a} must lie in [observe_minutes={self.observe_minutes}, "
                        f"minutes={self.minutes})"
                    )
        return self

    @field_validator("cascades", mode="before")
    @classmethod
    def _ids_as_text(cls, v: Any) -> Any:
        """Tweet ids written unquoted in YAML arrive as ints; they are names, not numbers."""
        return [str(x) for x in v] if isinstance(v, list) else v


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
