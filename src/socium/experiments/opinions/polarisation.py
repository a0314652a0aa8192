"""Group polarisation: two stance groups, a recurring survey, extremity and bimodality over time.

Population: OASIS's 196 real "core" accounts with their real follow graph (OASIS section 3.4), split
by a seeded permutation into a conservative half (OASIS's risk-averse persona, ``197_baoshou.csv``)
and a progressive half (``197_progressive.csv``), with initial stances -s0 and +s0 (plus noise) on a
risky-choice dilemma; or a synthetic two-group population. A seed post states the dilemma; every
``survey_every`` steps agents answer the same question with a structured number in [-1, 1].

Measured per survey: mean stance, mean |stance| (extremity), variance, Sarle's bimodality
coefficient, each group's mean and its extremity in its own direction; optionally an embedding
extremity of the free-text answers. Group polarisation (Moscovici & Zavalloni 1969; OASIS's claim
that LLM agents polarise) shows as group extremity rising over time. Null: bounded-confidence
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

from socium.config import config_from_dict
from socium.errors import InputFileError
from socium.experiments.propagation.realcascades import default_data_dir
from socium.experiments.spec import (
    PATH_FIELD,
    ExperimentSpec,
    PersonRow,
    build_config,
    connect,
    llm_usage,
    run_config,
    write_population_csv,
    write_results,
)
from socium.reporting import progress

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
DEFAULT_ACTIONS = ["create_post", "repost", "quote_post", "like_post", "create_comment", "do_nothing"]
GROUPS = ("conservative", "progressive")
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
    n_agents: int | None = Field(
        None, ge=4, description="Seeded subset of the core users, or the synthetic size (default 196)."
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
            else default_data_dir() / "oasis-reference" / "twitter_dataset" / "group_polarization"
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
def bimodality_coefficient(x: np.ndarray) -> float:
    """Sarle's b = (g^2 + 1) / (k + 3(n-1)^2 / ((n-2)(n-3))), g and k the bias-corrected sample skewness
    and excess kurtosis; b > 5/9 suggests bimodality (uniform = 5/9). NaN for n < 4 or no variance."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < 4:
        return float("nan")
    d = x - x.mean()
    m2, m3, m4 = (d**2).mean(), (d**3).mean(), (d**4).mean()
    if m2 <= 1e-15:
        return float("nan")
    g = np.sqrt(n * (n - 1)) / (n - 2) * m3 / m2**1.5
    k = (n - 1) / ((n - 2) * (n - 3)) * ((n + 1) * m4 / m2**2 - 3 * (n - 1))
    return float((g**2 + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))))


def _summary(values: np.ndarray, side: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {
        "n": int(len(values)),
        "mean": float(values.mean()) if len(values) else None,
        "mean_abs": float(np.abs(values).mean()) if len(values) else None,
        "variance": float(values.var(ddof=1)) if len(values) > 1 else None,
        "bimodality": bimodality_coefficient(values),
        "groups": {},
    }
    for g, s in zip(GROUPS, (-1, 1)):
        v = values[side == s]
        out["groups"][g] = {
            "n": int(len(v)),
            "mean": float(v.mean()) if len(v) else None,
            "extremity": float((s * v).mean()) if len(v) else None,
        }
    return out


def polarisation_metrics(run_dir: Path, extremity: Callable[[list[str]], np.ndarray] | None = None) -> dict[str, Any]:
    """Stance statistics at the start (assigned stances, step -1) and at every survey step."""
    con = connect(run_dir)
    try:
        agents = con.execute("SELECT agent_id, stance FROM agents ORDER BY agent_id").fetchall()
        rows = con.execute(
            "SELECT step, agent_id, value, answer FROM surveys WHERE value IS NOT NULL ORDER BY step, agent_id"
        ).fetchall()
        asked = dict(con.execute("SELECT step, count(*) FROM surveys GROUP BY step").fetchall())
    finally:
        con.close()
    s0 = np.array([np.nan if s is None else s for _, s in agents], dtype=float)
    side0 = np.sign(np.nan_to_num(s0)).astype(int)
    ok = ~np.isnan(s0)
    points = [
        {
            "step": -1,
            "values": s0[ok].tolist(),
            "answered": int(ok.sum()),
            "asked": int(ok.sum()),
            **_summary(s0[ok], side0[ok]),
        }
    ]
    for step in sorted({r[0] for r in rows}):
        sel = [r for r in rows if r[0] == step]
        v = np.array([r[2] for r in sel], dtype=float)
        sd = side0[[r[1] for r in sel]]
        pt = {
            "step": int(step),
            "values": v.tolist(),
            "answered": len(sel),
            "asked": int(asked.get(step, len(sel))),
            **_summary(v, sd),
        }
        if extremity is not None:
            sc = extremity([r[3] or "" for r in sel])
            pt["text_extremity"] = float(np.abs(sc).mean()) if len(sc) else None
            pt["text_score_by_group"] = {
                g: float(sc[sd == s].mean()) if (sd == s).any() else None for g, s in zip(GROUPS, (-1, 1))
            }
        points.append(pt)
    first, last = points[0], points[-1]
    shift = {
        g: (
            None
            if last["groups"][g]["extremity"] is None or first["groups"][g]["extremity"] is None
            else last["groups"][g]["extremity"] - first["groups"][g]["extremity"]
        )
        for g in GROUPS
    }
    return {
        "points": points,
        "group_extremity_shift": shift,
        "mean_abs_shift": None if last["mean_abs"] is None else last["mean_abs"] - first["mean_abs"],
    }


def embedding_extremity(embedder: str, anchors: tuple[str, str]) -> Callable[[list[str]], np.ndarray]:
    """Score texts in [-1, 1]-ish as cos(text, +pole) - cos(text, -pole), from one embedder."""
    from socium.recsys.embeddings import make_embedder

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
    pop_csv = write_population_csv(out / "inputs" / "population.csv", rows)
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
        r["metrics"] = polarisation_metrics(Path(r["dir"]), scorer if r["policy"] == "llm" else None)
        r["usage"] = llm_usage(Path(r["dir"]))
    results = {
        "experiment": "polarisation",
        "spec": spec.model_dump(mode="json"),
        "runs": runs,
        "groups": list(GROUPS),
        "reference": "OASIS arXiv 2411.11581 section 3.4: LLM agents' opinions grow more extreme over time",
    }
    write_results(out, results)
    return results
