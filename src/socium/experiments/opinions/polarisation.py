"""Group polarisation: two stance groups, a recurring survey, extremity and bimodality over time.

Population: OASIS's 196 real "core" accounts with their real follow graph (OASIS section 3.4), split
by a seeded permutation into a conservative half (OASIS's risk-averse persona, ``197_baoshou.csv``)
and a progressive half (``197_progressive.csv``), with initial stances -s0 and +s0 (plus noise) on a
risky-choice dilemma; or a synthetic two-group population. A seed post states the dilemma; every
``survey_every`` steps agents answer the same question with a structured number in [-1, 1].

Measured per survey, from answers whose words agree with their number (outcome ``ok``; the others
are counted, not averaged): mean stance, mean |stance| (extremity), variance, Sarle's bimodality
coefficient, each group's mean with its interval and its extremity in its own direction; per group
the mean shift from the first to the last survey with an interval; optionally an embedding
extremity of the free-text answers. Group polarisation (Moscovici & Zavalloni 1969; OASIS's claim
that LLM agents polarise) would show as each group moving away from the middle, in its own
direction; a group moving toward the other side, or both groups moving alike, is not polarisation
(a small model's drift that ignores the persona looks like that). Null: bounded-confidence
opinion dynamics (Deffuant et al. 2000) on the same graph, stances and seed, which can only
converge within confidence bounds, never drift apart.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from socium.config.loading import config_from_dict
from socium.core import actions as A
from socium.data.datadir import data_dir, require
from socium.errors import InputFileError
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
from socium.recsys.embeddings import make_embedder
from socium.reporting import progress
from socium.trace.queries import opinions as Q
from socium.trace.queries.runs import open_run

QUESTION = (
    "Helen is a writer with a steady income from formula novels. She has an idea for an ambitious novel that "
    "could make her name but might fail and leave her broke. How strongly would you advise her to take the risk? "
    "-1 = definitely keep the safe path, +1 = definitely take the risk."
)
SEED_POST = (
    "Helen writes formula novels for a steady income. She could instead spend two years on an ambitious novel that "
    "might make her name, or might fail and leave her broke. Safe path or big risk? What would you tell her?"
)
ISSUE = (
    "Whether Helen should give up her safe income to write a risky, ambitious novel (-1 safe path .. +1 take the risk)."
)
DEFAULT_ACTIONS = [
    A.CreatePost.type_name,
    A.Repost.type_name,
    A.QuotePost.type_name,
    A.LikePost.type_name,
    A.CreateComment.type_name,
    A.DoNothing.type_name,
]
GROUPS = Q.CAMPS
_SENT = re.compile(r"(?<=[.!?])\s+")


class PolarisationSpec(ExperimentSpec):
    experiment: Literal["polarisation"] = "polarisation"
    name: str = "polarisation"
    population: Literal["oasis_core", "synthetic"] = Field(
        "oasis_core", description="OASIS's 196 core users or a synthetic population."
    )
    core_dir: str | None = Field(
        None,
        json_schema_extra=PATH_FIELD,
        description="Folder with 197_baoshou.csv and 197_progressive.csv (default: shared data).",
    )
    n_agents: int | None = Field(  # bounded: the population is built in memory before any run's own checks
        None,
        ge=4,
        le=MAX_SPEC_AGENTS,
        description="Seeded subset of the core users, or the synthetic size (default 196).",
    )
    split_seed: int = Field(0, ge=0, description="Seed of the subset, the group split and the stance noise.")
    stance0: float = Field(
        0.4, ge=0, le=1, description="Initial stance magnitude of each group (conservative -, progressive +)."
    )
    stance_sd: float = Field(0.1, ge=0, description="Initial stance noise (sd), clipped to [-1, 1].")
    activation: float = Field(0.2, gt=0, le=1, description="Probability that an agent is active in a step.")
    question: str = Field(QUESTION, description="The recurring survey question.")
    seed_post: str = Field(SEED_POST, description="The post that starts the discussion (by agent 0).")
    survey_every: int = Field(2, ge=1, description="Survey after every this many steps.")
    sample_fraction: float = Field(1.0, gt=0, le=1, description="Fraction of agents surveyed each time.")
    epsilon: float = Field(0.3, gt=0, description="Bounded-confidence null: confidence bound.")
    mu: float = Field(0.3, gt=0, le=0.5, description="Bounded-confidence null: convergence rate.")
    extremity: Literal["none", "embedding"] = Field(
        "none", description="Also score free-text answers' extremity by embeddings."
    )
    embedder: str = Field("minilm", description="Embedder for the extremity score ('minilm' or 'hashing').")
    anchors: tuple[str, str] = Field(
        (
            "Definitely keep the safe, steady path; never take the risk.",
            "Definitely take the risk and go for the ambitious dream.",
        ),
        description="Texts of the two poles (-1, +1) for the embedding extremity.",
    )


def _persona(user_char: str, description: str) -> str:
    """OASIS's persona text without the description prefix and without its repeated sentences."""
    rest = user_char[len(description) :] if user_char.startswith(description) else user_char
    return " ".join(dict.fromkeys(s.strip() for s in _SENT.split(rest) if s.strip()))


def _read_core(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise InputFileError(path, None, "file not found")
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def polarisation_population(spec: PolarisationSpec) -> list[PersonRow]:
    """Two stance groups; the group is the sign of the initial stance (recorded in ``agents.stance``)."""
    rng = np.random.default_rng(np.random.SeedSequence(spec.split_seed, spawn_key=(23,)))
    if spec.population == "synthetic":
        n = spec.n_agents or 196
        src = [
            {
                "description": f"A social media user (#{i}).",
                "cons": "I am careful and avoid risks.",
                "prog": "I welcome change and like bold moves.",
            }
            for i in range(n)
        ]
        follows = [
            sorted({int(j) + (int(j) >= i) for j in rng.choice(n - 1, min(5, n - 1), replace=False)}) for i in range(n)
        ]
        ids, names = [str(i) for i in range(n)], [(f"user_{i}", f"user{i}") for i in range(n)]
    else:
        d = (
            Path(spec.core_dir)
            if spec.core_dir
            else require(data_dir() / "oasis-reference" / "twitter_dataset" / "group_polarization")
        )
        cons, prog = _read_core(d / "197_baoshou.csv"), _read_core(d / "197_progressive.csv")
        if len(cons) != len(prog):
            raise InputFileError(d, None, "the two core-user files differ in length")
        keep = sorted(rng.choice(len(cons), min(spec.n_agents or len(cons), len(cons)), replace=False).tolist())
        new = {old: i for i, old in enumerate(keep)}
        src, follows, ids, names = [], [], [], []
        for old in keep:
            c, p = cons[old], prog[old]
            src.append(
                {
                    "description": c["description"],
                    "cons": _persona(c["user_char"], c["description"]),
                    "prog": _persona(p["user_char"], p["description"]),
                }
            )
            fl = [int(x) for x in re.findall(r"-?\d+", c.get("following_agentid_list", ""))]
            follows.append(sorted({new[j] for j in fl if j in new and new[j] != new[old]}))
            ids.append(c["user_id"])
            names.append((c["name"], c["username"]))
        n = len(keep)
    side = np.zeros(n, dtype=int)
    side[rng.permutation(n)[: n // 2]] = -1
    side[side == 0] = 1
    stance = np.clip(side * spec.stance0 + rng.normal(0, spec.stance_sd, n), -1, 1)
    stance = np.where(np.sign(stance) == side, stance, side * 1e-3)  # noise never flips a group
    rows = []
    for i in range(n):
        persona = src[i]["cons"] if side[i] < 0 else src[i]["prog"]
        desc = f"{src[i]['description']} {persona}".strip() + f"\nThe main issue: {ISSUE}"
        rows.append(
            PersonRow(
                user_id=ids[i],
                name=names[i][0],
                username=names[i][1],
                description=desc,
                following=follows[i],
                activity=[spec.activation] * 24,
                stance=float(stance[i]),
            )
        )
    return rows


# ---- metrics -----------------------------------------------------------------------------------
bimodality_coefficient = Q.bimodality_coefficient


def polarisation_metrics(
    run_dir: Path, extremity: Callable[[list[str]], np.ndarray] | None = None, seed: int = 0
) -> dict[str, Any]:
    """Assigned stances (step -1) and every survey's ``ok`` answers, outcome counts and per-camp shifts
    of one run (:func:`socium.trace.queries.opinions.polarisation_metrics`)."""
    with open_run(run_dir) as con:
        return Q.polarisation_metrics(con, extremity, seed=seed)


def embedding_extremity(embedder: str, anchors: tuple[str, str]) -> Callable[[list[str]], np.ndarray]:
    """Score texts in [-1, 1]-ish as cos(text, +pole) - cos(text, -pole), from one embedder."""

    emb = make_embedder(embedder)
    poles = emb.encode(list(anchors))

    def score(texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        m = emb.encode(texts)
        return (m @ poles[1] - m @ poles[0]).astype(float)

    return score


def run_polarisation(
    spec: PolarisationSpec, out: Path, *, force: bool = False, log: Callable[[str], None] = lambda s: None
) -> dict[str, Any]:
    """Run the model population and the bounded-confidence null; write results.json."""
    rows = polarisation_population(spec)
    pop_csv = out / "inputs" / "population.csv"  # written once the config is accepted (a refusal left it behind)
    owned = {
        "population": {"source": "oasis_csv", "path": str(pop_csv.resolve())},
        "graph": {"kind": "profiles"},
        "seed_posts": [{"author": 0, "content": spec.seed_post}],
        "surveys": [{"every": spec.survey_every, "question": spec.question, "sample_fraction": spec.sample_fraction}],
    }
    defaults = {
        "name": spec.name,
        "steps": 6,
        "step_minutes": 60.0,
        "policy": {"kind": "llm"},
        "llm": {"backend": "embedded"},
        "recsys": {"kind": "chronological", "k": 5},
        "llm_agents": {"actions": DEFAULT_ACTIONS},
    }
    cfg = build_config(defaults, spec.base, owned, "polarisation")
    write_population_csv(pop_csv, rows)
    log(f"polarisation: {len(rows)} agents, model run ({cfg.policy.kind})")
    runs: dict[str, Any] = {}
    progress.current().expect(1 + int(spec.run_null))
    info = run_config(cfg, out / "runs" / "model", force=force)
    runs["model"] = {"dir": str(info.run_dir), "status": info.status, "policy": cfg.policy.kind}
    if spec.run_null:
        data = cfg.model_dump(mode="json")
        data.update(
            name=f"{cfg.name}-null",
            llm=None,
            policy={"kind": "bounded_confidence", "epsilon": spec.epsilon, "mu": spec.mu, "p_post": 0.05},
        )
        log("polarisation: bounded-confidence null")
        ninfo = run_config(config_from_dict(data, source="polarisation null"), out / "runs" / "null", force=force)
        runs["null"] = {
            "dir": str(ninfo.run_dir),
            "status": ninfo.status,
            "policy": "bounded_confidence",
            "epsilon": spec.epsilon,
            "mu": spec.mu,
        }
    scorer = embedding_extremity(spec.embedder, spec.anchors) if spec.extremity == "embedding" else None
    for r in runs.values():
        r["metrics"] = polarisation_metrics(Path(r["dir"]), scorer if r["policy"] == "llm" else None, cfg.seed)
        r["usage"] = llm_usage(Path(r["dir"]))
    results = {
        "experiment": "polarisation",
        "spec": spec.model_dump(mode="json"),
        "runs": runs,
        "groups": list(GROUPS),
        "reference": "OASIS arXiv 2411.11581 section 3.4 reports that LLM agents' opinions grow more extreme over time",
    }
    write_results(out, results)
    return results
