"""Persona clusters for group agents (GA-S3): similar users share one LLM call per step.

Why cluster on persona embedding *and* stance: two users who write alike but disagree on the
issue must not be voiced by the same call, or the scale trick would erase the very polarisation
a study measures. Stance enters as an extra coordinate scaled by ``stance_weight`` (embedding
rows are unit-norm, so a weight of 1 makes the two camps of a bimodal population about as far
apart as unrelated personas).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from socium.agents.profiles import Population


def persona_texts(pop: Population) -> list[str]:
    return [
        " ".join([pop.bios[i], ", ".join(pop.interests[i] or [])]).strip() or pop.usernames[i] for i in range(len(pop))
    ]


def cluster_population(
    pop: Population, cluster_size: int, seed: int, embedder: Any, stance_weight: float = 1.0
) -> np.ndarray:
    """One cluster id per agent (0..K-1, K = ceil(n / cluster_size)), deterministic given the seed.

    k-means++ (scipy) on [persona embedding | stance_weight * stance]; ids are renumbered by each
    cluster's lowest member so the labelling does not depend on k-means' arbitrary order.
    """
    from scipy.cluster.vq import kmeans2

    n = len(pop)
    k = max(1, -(-n // max(1, cluster_size)))
    if k == 1:
        return np.zeros(n, np.int32)
    x = np.asarray(embedder.encode(persona_texts(pop)), dtype=np.float64)
    stance = np.nan_to_num(np.asarray(pop.stance, dtype=np.float64), nan=0.0)
    feats = np.hstack([x, stance_weight * stance[:, None]])
    _, labels = kmeans2(feats, k, minit="++", seed=np.random.default_rng(seed), missing="warn")
    first: dict[int, int] = {}
    for i, lab in enumerate(labels.tolist()):
        first.setdefault(lab, i)
    order = {lab: rank for rank, lab in enumerate(sorted(first, key=first.__getitem__))}
    return np.array([order[lab] for lab in labels.tolist()], dtype=np.int32)
