"""Herd effect on the Reddit preset (Muchnik, Aral & Taylor 2013, Science 341:647; OASIS section 3.3).

Items (by default OASIS's counterfactual posts, ``reddit/counterfactual_36.json``) get an initial
up-vote, down-vote or nothing from a dedicated experimenter account that never acts otherwise (its
activity is zero); agents then vote over time. Reported per treatment group, from the crowd's votes
only (the experimenter's treatment vote is excluded, as Muchnik et al. measure it; counted, it makes a
herding-free crowd look herded): the probability that the first crowd vote after the treatment is
positive (Wilson interval), the share of positive crowd votes and the crowd's final mean score per
item (bootstrap over items), and each treated-minus-control effect with its n and interval -- beside
Muchnik et al. (up-treatment: +32% next vote positive, +25% final mean rating; down-treatment
corrected by the crowd). The metrics are named trace queries (:mod:`socium.trace.queries.opinions`).

Why posts, not comments: socium's feeds never show comments (only their post), so the voted item is
a post carrying the counterfactual comment's claim, its OASIS post text as context. The treatment
is a ``seed_actions`` vote, so the whole design (who treated what) is in the trace and every number
here is SQL over the ``votes`` view; nothing is kept outside the run directory.

The null is random voting at the LLM run's own up/down rates per exposure (fitted), which by
construction cannot respond to the visible score: any group difference beyond it is herding.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from socium.config.loading import config_from_dict
from socium.core import actions as A
from socium.core.intervals import N_BOOT
from socium.data.datadir import data_dir, require
from socium.errors import ConfigError, InputFileError, TraceError
from socium.experiments.nullfit import fit_random_voting
from socium.experiments.spec import (
    MAX_SPEC_AGENTS,
    PATH_FIELD,
    ExperimentSpec,
    PersonRow,
    build_config,
    llm_usage,
    run_config,
    write_population_csv,
    write_results,
)
from socium.reporting import progress
from socium.trace.queries import opinions as Q
from socium.trace.queries.runs import open_run

GROUPS = Q.GROUPS
REFERENCE = {
    "source": "Muchnik, Aral & Taylor 2013 (Science 341:647)",
    "up_next_positive_lift": 0.32,
    "up_final_mean_lift": 0.25,
    "down": "negative herding neutralised: the crowd corrects down-treated items",
}
DEFAULT_ACTIONS = [A.LikePost.type_name, A.DislikePost.type_name, A.CreateComment.type_name, A.DoNothing.type_name]


class HerdingSpec(ExperimentSpec):
    experiment: Literal["herding"] = "herding"
    name: str = "herding"
    items: str | None = Field(
        None,
        json_schema_extra=PATH_FIELD,
        description="Items JSON: OASIS counterfactual format or [{text, group}] (default: OASIS's).",
    )
    personas: str | None = Field(
        None, json_schema_extra=PATH_FIELD, description="Reddit persona JSON (default: OASIS's user_data_36.json)."
    )
    n_items: int = Field(30, ge=3, le=100_000, description="Items used, stratified over the file's groups.")
    n_agents: int | None = Field(  # bounded: the population is built in memory before any run's own checks
        None, ge=1, le=MAX_SPEC_AGENTS, description="Voters (personas reused cyclically if more than the file has)."
    )
    item_seed: int = Field(0, ge=0, description="Seed of the item sample.")
    activation: float = Field(0.2, gt=0, le=1, description="Probability that a voter is active in a step.")


def load_items(path: Path) -> list[tuple[str, str]]:
    """(text, group) per item; group is up / down / control."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputFileError(path, None, f"cannot read items: {exc}") from None
    out = []
    for i, d in enumerate(data if isinstance(data, list) else []):
        if isinstance(d, dict) and "RC_1" in d:
            rs, rc = d.get("RS", {}), d["RC_1"]
            title = rs.get("title") if rs.get("title") not in (None, "None") else ""
            text = "\n".join(x for x in (title, rs.get("selftext", ""), f"Top comment: {rc.get('body', '')}") if x)
            group = rc.get("group")
        elif isinstance(d, dict):
            text, group = d.get("text", ""), d.get("group")
        else:
            raise InputFileError(path, None, f"item {i}: expected an object")
        if group not in GROUPS or not isinstance(text, str) or not text.strip():
            raise InputFileError(path, None, f"item {i}: needs non-empty text and group in {GROUPS}, got {group!r}")
        out.append((text, group))
    if not out:
        raise InputFileError(path, None, "no items")
    return out


def sample_items(items: list[tuple[str, str]], n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` items, as equal a share per group as the file allows, in a seeded random order."""
    rng = np.random.default_rng(seed)
    by = {g: [it for it in items if it[1] == g] for g in GROUPS}
    per = {g: min(len(by[g]), n // 3 + (i < n % 3)) for i, g in enumerate(GROUPS)}
    picked = [by[g][j] for g in GROUPS for j in sorted(rng.choice(len(by[g]), per[g], replace=False).tolist())]
    return [picked[i] for i in rng.permutation(len(picked)).tolist()]


def herding_population(personas: Path, n_agents: int | None, activation: float) -> list[PersonRow]:
    """Voters from Reddit personas, then the poster and the experimenter (both never active)."""
    try:
        people = json.loads(personas.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputFileError(personas, None, f"cannot read personas: {exc}") from None
    if not isinstance(people, list) or not people:
        raise InputFileError(personas, None, "expected a non-empty JSON list of personas")
    n = n_agents or len(people)
    rows = []
    for i in range(n):
        p = people[i % len(people)]
        suffix = "" if i < len(people) else f"_{i // len(people)}"
        desc = " ".join(str(p.get(k, "")) for k in ("bio", "persona") if p.get(k))
        rows.append(
            PersonRow(
                user_id=str(i),
                name=str(p.get("realname", f"user {i}")),
                username=f"{p.get('username', 'user')}{suffix}",
                description=desc or "A Reddit user.",
                following=[],
                activity=[activation] * 24,
            )
        )
    for name in ("poster", "experimenter"):
        rows.append(
            PersonRow(
                user_id=name,
                name=name,
                username=name,
                description=f"The experiment's {name} account.",
                following=[],
                activity=[0.0] * 24,
            )
        )
    return rows


def herding_configs(spec: HerdingSpec, out: Path) -> tuple[Any, list[str]]:
    """The model run's config and each item's group (post id = index)."""
    data = data_dir() / "oasis-reference" / "reddit"
    if not (spec.items and spec.personas):
        require(data)  # absent research data: one line naming `socium data fetch oasis`
    items = sample_items(
        load_items(Path(spec.items) if spec.items else data / "counterfactual_36.json"), spec.n_items, spec.item_seed
    )
    rows = herding_population(
        Path(spec.personas) if spec.personas else data / "user_data_36.json", spec.n_agents, spec.activation
    )
    poster, experimenter = len(rows) - 2, len(rows) - 1
    pop_csv = out / "inputs" / "population.csv"  # written once the config is accepted (a refusal left it behind)
    seed_actions = [
        {
            "agent": experimenter,
            "step": 0,
            "action": {"type": (A.LikePost if g == "up" else A.DislikePost).type_name, "post_id": i},
        }
        for i, (_, g) in enumerate(items)
        if g != "control"
    ]
    owned = {
        "platform": {"preset": "reddit"},
        "population": {"source": "oasis_csv", "path": str(pop_csv.resolve())},
        "graph": {"kind": "empty"},
        "seed_posts": [{"author": poster, "content": t} for t, _ in items],
        "seed_actions": seed_actions,
    }
    defaults = {
        "name": spec.name,
        "steps": 10,
        "step_minutes": 60.0,
        "policy": {"kind": "llm"},
        "llm": {"backend": "embedded"},
        "recsys": {"kind": "random", "k": 5},
        "llm_agents": {"actions": DEFAULT_ACTIONS},
    }
    cfg = build_config(defaults, spec.base, owned, "herding")
    write_population_csv(pop_csv, rows)
    return cfg, [g for _, g in items]


# ---- metrics -----------------------------------------------------------------------------------
def herding_metrics(run_dir: Path, n_boot: int = N_BOOT, seed: int = 0) -> dict[str, Any]:
    """Per-group herding statistics and crowd-only effects of one run, from its trace alone
    (:func:`socium.trace.queries.opinions.herding_metrics`); errors name the run."""
    with open_run(run_dir) as con:
        try:
            return Q.herding_metrics(con, n_boot, seed)
        except (TraceError, ConfigError) as exc:
            raise type(exc)(f"{run_dir}: {exc}") from None


def run_herding(
    spec: HerdingSpec, out: Path, *, force: bool = False, log: Callable[[str], None] = lambda s: None
) -> dict[str, Any]:
    """Run the model population and the fitted random-voting null; write results.json."""
    cfg, groups = herding_configs(spec, out)
    log(f"herding: {len(groups)} items, model run ({cfg.policy.kind})")
    runs: dict[str, Any] = {}
    progress.current().expect(1 + int(spec.run_null))
    info = run_config(cfg, out / "runs" / "model", force=force)
    runs["model"] = {"dir": str(info.run_dir), "status": info.status, "policy": cfg.policy.kind}
    if spec.run_null:
        fit = fit_random_voting(info.run_dir, range(len(groups)))
        data = cfg.model_dump(mode="json")
        data.update(
            name=f"{cfg.name}-null",
            llm=None,
            policy={"kind": "random", "p_post": 0.0, "p_repost": 0.0, "p_like": fit.p_like, "p_dislike": fit.p_dislike},
        )
        log(f"herding: random-voting null p_like={fit.p_like:.4f} p_dislike={fit.p_dislike:.4f}")
        ninfo = run_config(config_from_dict(data, source="herding null"), out / "runs" / "null", force=force)
        runs["null"] = {
            "dir": str(ninfo.run_dir),
            "status": ninfo.status,
            "policy": "random",
            "fit": {
                "p_like": fit.p_like,
                "p_dislike": fit.p_dislike,
                "ups": fit.ups,
                "downs": fit.downs,
                "trials": fit.trials,
            },
        }
    for r in runs.values():
        r["metrics"] = herding_metrics(Path(r["dir"]), spec.bootstrap, cfg.seed)
        r["usage"] = llm_usage(Path(r["dir"]))
    results = {
        "experiment": "herding",
        "spec": spec.model_dump(mode="json"),
        "reference": REFERENCE,
        "runs": runs,
        "step_minutes": cfg.step_minutes,
    }
    write_results(out, results)
    return results
