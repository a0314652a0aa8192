"""What the propagation study and its cross-validation share: OASIS's inputs, a cascade's agents, its curves.

Why a module of its own: both :mod:`~socium.experiments.propagation.study` (one run per cascade) and
:mod:`~socium.experiments.propagation.cv.cv` (fit on train folds, score held-out cascades) build the same
population from a real tree and score against the same real curves; keeping those pieces here lets the
study call cross-validation without the two importing each other.
"""

from __future__ import annotations

import ast
import csv
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from socium.core import actions as A
from socium.data.datadir import data_dir
from socium.errors import ConfigError, InputFileError
from socium.experiments.propagation.data.realcascades import CascadeTree
from socium.experiments.spec import PersonRow
from socium.trace.queries.cascades import propagation_curves
from socium.trace.queries.runs import open_run

DEFAULT_ACTIONS = [
    A.Repost.type_name,
    A.QuotePost.type_name,
    A.LikePost.type_name,
    A.CreateComment.type_name,
    A.DoNothing.type_name,
]


class PopulationSpec(Protocol):
    """The parts of a propagation spec that shape a cascade's population (a PropagationSpec has them)."""

    @property
    def follows(self) -> str: ...

    @property
    def extra_follows(self) -> int: ...

    @property
    def activation(self) -> float: ...


def run_defaults(name: str) -> dict[str, Any]:
    """Config defaults of every propagation run; the spec's ``base`` and the study's own sections override them."""
    return {
        "name": name,
        "step_minutes": 10.0,
        "policy": {"kind": "llm"},
        "llm": {"backend": "embedded"},
        "recsys": {"kind": "chronological", "k": 5},
        "llm_agents": {"actions": DEFAULT_ACTIONS},
        "executor": {"kind": "inprocess"},
    }


# ---- OASIS inputs ------------------------------------------------------------------------------------
def oasis_topics(path: Path | None = None) -> dict[str, dict[str, str]]:
    """OASIS's 198 cascades by source id: topic name, source tweet text, label."""
    p = path or data_dir() / "oasis-reference" / "twitter_dataset" / "all_topics.csv"
    if not p.is_file():
        return {}
    with p.open(newline="", encoding="utf-8") as fh:
        return {
            r["id"].strip(): {"topic": r["topic_name"], "text": r["source_tweet"], "label": r["label"]}
            for r in csv.DictReader(fh)
        }


def oasis_topic_users(path: Path) -> dict[str, dict[str, Any]] | None:
    """Real users of one OASIS topic file by user id: name, username, description, followee user ids."""
    if not path.is_file():
        return None
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    ids = [r["user_id"].strip() for r in rows]
    out: dict[str, dict[str, Any]] = {}
    for line, r in enumerate(rows, start=2):
        try:
            fl = ast.literal_eval(r.get("following_agentid_list") or "[]")
        except (ValueError, SyntaxError):
            raise InputFileError(path, line, "following_agentid_list is not a list literal") from None
        out[r["user_id"].strip()] = {
            "name": r.get("name", ""),
            "username": r.get("username", ""),
            "description": r.get("description", ""),
            "follows": [ids[j] for j in fl if isinstance(j, int) and 0 <= j < len(ids)],
        }
    return out


# ---- a cascade's agents and real curves --------------------------------------------------------
def cascade_population(
    tree: CascadeTree, users: list[str], spec: PopulationSpec, real: dict[str, dict] | None, seed: int
) -> tuple[list[PersonRow], dict[str, int]]:
    """Agents for ``users`` (source author first) with follows and profiles, and edge counts by origin."""
    idx = {u: i for i, u in enumerate(users)}
    follows: list[set[int]] = [set() for _ in users]
    counts = {"tree": 0, "real": 0, "noise": 0}
    if spec.follows in ("tree", "both") or (spec.follows == "real" and not real):
        for u in users[1:]:
            follows[idx[u]].add(idx[tree.nodes[u].parent])  # type: ignore[index]
            counts["tree"] += 1
    if spec.follows in ("real", "both") and real:
        for u in users:
            for v in real.get(u, {}).get("follows", []):
                if v in idx and v != u and idx[v] not in follows[idx[u]]:
                    follows[idx[u]].add(idx[v])
                    counts["real"] += 1
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(11,)))
    n = len(users)
    for i in range(n):
        if n > 1:
            for j in rng.choice(n - 1, min(spec.extra_follows, n - 1), replace=False).tolist():
                j = j + (j >= i)
                if j not in follows[i]:
                    follows[i].add(j)
                    counts["noise"] += 1
    rows = []
    for i, u in enumerate(users):
        r = (real or {}).get(u)
        rows.append(
            PersonRow(
                user_id=u,
                name=(r or {}).get("name") or f"user_{i}",
                username=(r or {}).get("username") or f"user{i}",
                description=(r or {}).get("description") or "A Twitter user.",
                following=sorted(follows[i]),
                activity=[spec.activation] * 24,
            )
        )
    return rows, counts


def simulated_curves(run_dir: Path, root_post: int = 0, minutes: int = 150) -> dict[str, np.ndarray]:
    """Per-minute curves of one simulated cascade of the run in ``run_dir``.

    The measure itself (each user counted once, at its earliest reshare, timed mid-step) is
    :func:`socium.trace.queries.cascades.propagation_curves`; this names the run in its errors.
    """
    with open_run(run_dir) as con:
        try:
            return propagation_curves(con, root_post, minutes)
        except ConfigError as exc:
            raise ConfigError(f"{run_dir}: {exc}") from None
