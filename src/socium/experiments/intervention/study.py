"""What if the platform did X? The same world and seeds under no intervention and under each strategy.

Each condition is a ``moderation`` block (a strategy and what the platform does with its verdicts:
labels, down-ranking, removal, suspension, prebunking), run over the same seeds -- hence the same
population, graph, roles and seeded claims -- by the model population under each perspective in
``perspectives`` (the issue's "perspective angle": ``perspective`` is the one config key that
changes), and by a rule-based null (independent cascade fitted to the control model runs) under the
same interventions. Reported per condition: reach, speed (steps to 50% of final reach), depth,
shares and engagement of false vs true claims, stance change, content drift (FUSE), each with a 95%
interval over seeds (socium.core.intervals: a bootstrap that stays >= 0 for these non-negative levels,
none below 3 seeds); and effect sizes vs the control as paired differences per seed with t intervals.

Claims come from OASIS's labelled Twitter15/16 source tweets (``all_topics.csv``: label True/False)
or from ``base.seed_posts`` with ``veracity``; false claims are posted by pinned spreaders.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from socium.config.base import PerspectiveName
from socium.config.experiment import ExperimentConfig
from socium.config.loading import config_from_dict
from socium.core import actions as A
from socium.core.intervals import mean_interval, nonnegative_interval
from socium.data.datadir import data_dir, require
from socium.errors import ConfigError, InputFileError
from socium.experiments.intervention.drift import drift
from socium.experiments.nullfit import fit_independent_cascade
from socium.experiments.spec import (
    PATH_FIELD,
    ExperimentSpec,
    build_config,
    deep_merge,
    llm_usage,
    run_config,
    write_results,
)
from socium.reporting import progress
from socium.trace.queries import cascades, interventions, population
from socium.trace.queries import runs as run_q

METRICS = ("reach", "t50", "depth", "shares", "engagement")
DEFAULT_STRATEGIES: dict[str, dict[str, Any]] = {
    "none": {},
    "fact_check": {"kind": "fact_check", "params": {"delay": 2, "recall": 0.8, "precision": 0.9}},
    "community_notes": {"kind": "community_notes"},
    "hybrid+downrank": {"kind": "hybrid", "downrank": 0.3},
    "removal+suspension": {"kind": "fact_check", "params": {"delay": 1}, "remove": True, "suspend_after": 2},
    "prebunk": {"prebunk": {"fraction": 0.5}},
}
DEFAULT_ACTIONS = [
    A.Repost.type_name,
    A.QuotePost.type_name,
    A.LikePost.type_name,
    A.CreateComment.type_name,
    A.ReportPost.type_name,
    A.DoNothing.type_name,
]


class InterventionSpec(ExperimentSpec):
    experiment: Literal["intervention"] = "intervention"
    name: str = "intervention"
    seeds: list[int] = Field(
        default_factory=lambda: [0, 1, 2],
        min_length=1,
        description="Seeds: every condition runs each (paired comparisons).",
    )
    strategies: dict[str, dict[str, Any]] = Field(
        default_factory=lambda: dict(DEFAULT_STRATEGIES),
        description="Condition name -> moderation block (merged over base.moderation).",
    )
    control: str = Field("none", description="The condition effects are measured against.")
    perspectives: list[PerspectiveName] = Field(
        default=["local"], description="Run the model population under each (the `perspective` key)."
    )
    claims: str | None = Field(
        None,
        json_schema_extra=PATH_FIELD,
        description="CSV of labelled claims (OASIS all_topics.csv: label, source_tweet); default: OASIS's.",
    )
    n_false: int = Field(2, ge=0, description="False claims seeded (from claims; authors pinned as spreaders).")
    n_true: int = Field(2, ge=0, description="True claims seeded (authors ordinary agents).")
    claim_seed: int = Field(0, ge=0, description="Seed of the claim sample.")
    drift_embedder: str = Field(
        "minilm", description="Embedder for content drift (minilm, hashing, or a sentence-transformers model)."
    )

    @model_validator(mode="after")
    def _room_after_effect(self) -> InterventionSpec:
        problems = design_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


#: Steps a run needs from the earliest step at which a strategy can act on a claim (a label or note in
#: force, prebunked agents inoculated) for reach to be able to show it: in the first, acted-on claims are
#: reshared less; in the second, the reshares that did not happen are exposures that do not happen. With
#: fewer, the effect on reach is zero by construction: the 3-step, delay-1 study of issue 29 labelled
#: claims in its last step and docs/results.md read that zero as a finding. Removal and down-ranking act on
#: feeds directly, so their effect on exposures shows in the step they take effect: they need 1.
MIN_STEPS_AFTER_EFFECT = 2
MIN_STEPS_AFTER_FEED_EFFECT = 1
DEFAULT_STEPS = 8  # condition_config's default for base.steps


def earliest_effect_step(block: dict[str, Any], claim_step: int = 0) -> int | None:
    """First step at which a moderation block can change what agents see or do about a claim posted at
    ``claim_step`` (None: it never acts). Verdicts are made after a step's actions and take effect from
    the next step (socium.moderation.engine), so a fact-check with ``delay`` d acts from claim + d + 1."""
    kind = str(block.get("kind") or "none")
    params = block.get("params") or {}
    steps = []
    if kind in ("fact_check", "hybrid"):
        steps.append(claim_step + int(params.get("delay", 2)) + 1)
    if kind in ("community_notes", "hybrid"):  # flags in the claim's own step at the earliest, the note after it
        steps.append(claim_step + 1)
    prebunk = block.get("prebunk") or {}
    if float(prebunk.get("fraction", 0) or 0) > 0:
        steps.append(int(prebunk.get("step", 0) or 0))
    return min(steps) if steps else None


def design_problems(spec: InterventionSpec) -> list[str]:
    """Each strategy that cannot show an effect on reach in ``base.steps`` steps, named with the fix."""
    steps = int(spec.base.get("steps", DEFAULT_STEPS))
    posts = [p for p in spec.base.get("seed_posts") or [] if isinstance(p, dict) and p.get("veracity")]
    claim_step = min([int(p.get("step", 0) or 0) for p in posts] + ([0] if spec.n_false or spec.n_true else []))
    out = []
    for name, block in spec.strategies.items():
        merged = deep_merge(spec.base.get("moderation") or {}, block)
        first = earliest_effect_step(merged, claim_step)
        on_feeds = bool(merged.get("remove")) or float(merged.get("downrank") or 0) > 0
        need = MIN_STEPS_AFTER_FEED_EFFECT if on_feeds else MIN_STEPS_AFTER_EFFECT
        if first is not None and steps - first < need:
            out.append(
                f"strategies.{name}: acts on claims from step {first} at the earliest, but base.steps is {steps} "
                f"(steps 0..{steps - 1}), which leaves {max(steps - first, 0)} step(s) for reach to show it; "
                f"need {need} (base.steps >= {first + need}, or a shorter delay), "
                "else its effect on reach is zero by construction"
            )
    return out


# ---- configs -------------------------------------------------------------------------------------
def load_claims(path: Path, n_false: int, n_true: int, seed: int) -> list[tuple[str, str]]:
    """(text, 'false'|'true') claims, a seeded sample of each label, false ones first."""
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise InputFileError(path, None, f"cannot read claims: {exc}") from None
    by: dict[str, list[str]] = {"false": [], "true": []}
    for i, r in enumerate(rows, start=2):
        label, text = str(r.get("label", "")).strip().lower(), r.get("source_tweet") or r.get("text") or ""
        if label in by and text.strip():
            by[label].append(text.strip())
        elif "label" not in r:
            raise InputFileError(path, i, "expected columns label and source_tweet (or text)")
    rng = np.random.default_rng(seed)
    out = []
    for label, n in (("false", n_false), ("true", n_true)):
        if n > len(by[label]):
            raise InputFileError(path, None, f"asked for {n} {label} claims, the file has {len(by[label])}")
        out += [(by[label][j], label) for j in sorted(rng.choice(len(by[label]), n, replace=False).tolist())]
    return out


def condition_config(spec: InterventionSpec, strategy: str, seed: int, perspective: str) -> ExperimentConfig:
    """One model run's config: base + claims as seed posts by pinned authors + the strategy's block."""
    base = dict(spec.base)
    mod = deep_merge(base.pop("moderation", {}) or {}, spec.strategies[strategy])
    roles = dict(base.pop("roles", {}) or {})
    posts = [p for p in base.pop("seed_posts", []) or []]
    if spec.n_false or spec.n_true:
        path = (
            Path(spec.claims)
            if spec.claims
            else require(data_dir() / "oasis-reference" / "twitter_dataset" / "all_topics.csv")
        )
        claims = load_claims(path, spec.n_false, spec.n_true, spec.claim_seed)
        offset = len(posts)
        posts += [{"author": offset + i, "content": t, "veracity": v, "step": 0} for i, (t, v) in enumerate(claims)]
    pinned = dict(roles.get("agents", {}) or {})
    spreaders = sorted(set(pinned.get("spreader", [])) | {p["author"] for p in posts if p.get("veracity") == "false"})
    pinned["spreader"] = spreaders
    roles["agents"] = pinned
    owned = {
        "seed": seed,
        "perspective": perspective,
        "moderation": mod,
        "roles": roles,
        "seed_posts": posts,
        "name": f"{spec.name}-{strategy}-{perspective}-s{seed}",
    }
    base.pop("seed", None)
    base.pop("perspective", None)
    base.pop("name", None)
    defaults = {
        "steps": 8,
        "population": {"n_agents": 60, "mean_activity": 0.4, "stance": "bimodal"},
        "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
        "recsys": {"kind": "chronological", "k": 5},
        "policy": {"kind": "llm"},
        "llm": {"backend": "embedded", "max_tokens": 96},
        "llm_agents": {"actions": DEFAULT_ACTIONS},
    }
    return build_config(defaults, base, owned, f"intervention ({strategy}, seed {seed})")


def null_config(cfg: ExperimentConfig, p_repost: float, p_post: float) -> ExperimentConfig:
    """The same world and intervention with independent-cascade agents at the fitted rates."""
    data = cfg.model_dump(mode="json")
    data.update(
        name=f"{cfg.name}-null",
        llm=None,
        llms={},
        perspective="local",
        policy={"kind": "independent_cascade", "p_repost": p_repost, "p_post": p_post},
    )
    data["population"]["llms"] = []
    return config_from_dict(data, source="intervention null")


def fit_null(run_dirs: list[Path]) -> dict[str, float]:
    """IC reshare probability (pooled over the control runs) and the rate of own posts per activation."""
    fits = [fit_independent_cascade(d) for d in run_dirs]
    adopt, trials = sum(f.adoptions for f in fits), sum(f.trials for f in fits)
    posts = acts = 0
    for d in run_dirs:
        with run_q.open_run(d) as con:
            posts += run_q.own_posts(con)
            acts += run_q.agent_steps(con, committed_only=True)
    return {
        "p_repost": adopt / trials if trials else 0.0,
        "p_post": min(1.0, posts / acts) if acts else 0.0,
        "adoptions": adopt,
        "trials": trials,
    }


# ---- metrics -------------------------------------------------------------------------------------
def run_metrics(run_dir: Path, steps: int) -> dict[str, Any]:
    """Per-claim reach/speed/depth/shares/engagement, their means by veracity, reach curves, stance change."""
    with run_q.open_run(run_dir) as con:
        claims = interventions.seeded_claims(con)
        ids = [c[0] for c in claims]
        reach_rows = interventions.new_reach(con, ids)
        size = cascades.shares_and_comments(con, ids)
        likes = cascades.likes(con, ids)
        depth = cascades.depths(con, ids)
        false_all = interventions.false_reach(con)
        stance = population.stance_shift(con)
        n_agents = run_q.count_rows(con, "agents")
        mod = interventions.moderation_counts(con)
    new = {pid: np.zeros(steps) for pid in ids}
    for root, step, n in reach_rows:
        if 0 <= step < steps:
            new[root][step] += n
    per: list[dict[str, Any]] = []
    for pid, s0, ver in claims:
        curve = np.cumsum(new[pid])
        final = float(curve[-1]) if len(curve) else 0.0
        t50 = float(np.argmax(curve >= 0.5 * final) - s0) if final > 0 else None
        shares, comments = size.get(pid, (0, 0))
        per.append(
            {
                "post_id": pid,
                "veracity": ver,
                "reach": final,
                "t50": t50,
                "depth": float(depth.get(pid, 0)),
                "shares": float(shares),
                "engagement": float(shares + comments + likes.get(pid, 0)),
                "curve": curve.tolist(),
            }
        )
    out: dict[str, Any] = {
        "claims": per,
        "false_exposures_all": int(false_all),
        "moderation_events": mod,
        "stance_abs_change": None if not stance[2] else float(stance[0]),
        "stance_change": None if not stance[2] else float(stance[1]),
        "stance_changed_agents": int(stance[2]),
        "n_agents": int(n_agents),
    }
    for ver in ("false", "true"):
        sub = [c for c in per if c["veracity"] == ver]
        for m in METRICS:
            vals = [c[m] for c in sub if c[m] is not None]
            out[f"{ver}_{m}"] = float(np.mean(vals)) if vals else None
        out[f"{ver}_curve"] = np.mean([c["curve"] for c in sub], axis=0).tolist() if sub else []
    return out


def t_ci(values: list[float | None], nonnegative: bool = False) -> dict[str, Any] | None:
    """Mean and 95% interval over seeds by the one policy (socium.core.intervals): ``lo``/``hi`` None below
    3 seeds; a t interval for a signed quantity (a paired effect), a bootstrap that cannot go below 0 for a
    level that cannot (reach, depth, shares). None without values."""
    v = [float(x) for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
    if not v:
        return None
    return (nonnegative_interval(v) if nonnegative and min(v) >= 0 else mean_interval(v)).as_dict()


SUMMARY_KEYS = tuple(f"{v}_{m}" for v in ("false", "true") for m in METRICS) + (
    "false_exposures_all",
    "stance_abs_change",
    "drift_false",
    "drift_true",
)


def summarise(per_seed: dict[int, dict[str, Any]], control: dict[int, dict[str, Any]] | None) -> dict[str, Any]:
    """Per metric: mean with t CI over seeds; with a control, the paired per-seed difference and its CI."""
    seeds = sorted(per_seed)
    out: dict[str, Any] = {"seeds": seeds, "metrics": {}, "effects": {}}
    for k in SUMMARY_KEYS:
        out["metrics"][k] = t_ci([per_seed[s].get(k) for s in seeds], nonnegative=True)
        if control is not None:
            diffs = [
                per_seed[s][k] - control[s][k]
                for s in seeds
                if s in control and per_seed[s].get(k) is not None and control[s].get(k) is not None
            ]
            ci = t_ci(diffs)
            base = t_ci([control[s].get(k) for s in seeds if s in control])
            if ci is not None and base is not None and abs(base["mean"]) > 1e-9:
                ci["relative"] = ci["mean"] / abs(base["mean"])
            out["effects"][k] = ci
    for ver in ("false", "true"):
        curves = [per_seed[s][f"{ver}_curve"] for s in seeds if per_seed[s].get(f"{ver}_curve")]
        out[f"{ver}_curve"] = np.mean(curves, axis=0).tolist() if curves else []
    return out


def _with_drift(m: dict[str, Any], run_dir: Path, embedder: str) -> dict[str, Any]:
    d = drift(run_dir, embedder)
    m["drift"] = d
    for ver in ("false", "true"):
        m[f"drift_{ver}"] = (d.get("by_veracity", {}).get(ver) or {}).get("drift")
    return m


# ---- the experiment ------------------------------------------------------------------------------
def run_intervention(
    spec: InterventionSpec, out: Path, *, force: bool = False, log: Callable[[str], None] = lambda s: None
) -> dict[str, Any]:
    """Run every (perspective, strategy, seed) model run, then the fitted null under every strategy."""
    if spec.control not in spec.strategies:
        raise ConfigError(f"control: {spec.control!r} is not one of the strategies ({', '.join(spec.strategies)})")
    order = [spec.control] + [s for s in spec.strategies if s != spec.control]
    n_runs = len(order) * len(spec.seeds) * (len(spec.perspectives) + int(spec.run_null))
    progress.current().expect(n_runs)
    runs: dict[str, Any] = {}
    models: dict[str, dict[str, dict[int, Path]]] = {}
    first_cfg: dict[tuple[str, int], ExperimentConfig] = {}
    for persp in spec.perspectives:
        for strat in order:
            for seed in spec.seeds:
                cfg = condition_config(spec, strat, seed, persp)
                first_cfg.setdefault((strat, seed), cfg)
                info = run_config(cfg, out / "runs" / persp / _slug(strat) / f"seed{seed}", force=force)
                models.setdefault(persp, {}).setdefault(strat, {})[seed] = info.run_dir
                log(f"intervention: {persp}/{strat}/seed {seed}: {info.status}")
    sources: dict[str, dict[str, dict[int, Path]]] = {f"model:{p}": models[p] for p in spec.perspectives}
    null_fit = None
    if spec.run_null:
        null_fit = fit_null(list(models[spec.perspectives[0]][spec.control].values()))
        log(f"intervention: IC null p_repost={null_fit['p_repost']:.4f} p_post={null_fit['p_post']:.4f}")
        sources["null"] = {}
        for strat in order:
            for seed in spec.seeds:
                cfg = null_config(first_cfg[(strat, seed)], null_fit["p_repost"], null_fit["p_post"])
                info = run_config(cfg, out / "runs" / "null" / _slug(strat) / f"seed{seed}", force=force)
                sources["null"].setdefault(strat, {})[seed] = info.run_dir
    steps = first_cfg[(spec.control, spec.seeds[0])].steps
    for src, by_strat in sources.items():
        per = {
            strat: {seed: _with_drift(run_metrics(d, steps), d, spec.drift_embedder) for seed, d in by_seed.items()}
            for strat, by_seed in by_strat.items()
        }
        runs[src] = {
            "strategies": {
                strat: {
                    "summary": summarise(per[strat], None if strat == spec.control else per[spec.control]),
                    "per_seed": per[strat],
                    "dirs": {s: str(d) for s, d in by_strat[strat].items()},
                    "usage": [llm_usage(d) for d in by_strat[strat].values()],
                }
                for strat in order
            }
        }
    cfg0 = first_cfg[(spec.control, spec.seeds[0])]
    results = {
        "experiment": "intervention",
        "spec": spec.model_dump(mode="json"),
        "control": spec.control,
        "order": order,
        "sources": runs,
        "null_fit": null_fit,
        "steps": steps,
        "model": (
            cfg0.llm.model
            if cfg0.llm is not None and cfg0.llm.model
            else (cfg0.llm.backend if cfg0.llm is not None else cfg0.policy.kind)
        ),
        "n_agents": cfg0.population.n_agents,
    }
    write_results(out, results)
    return results


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
