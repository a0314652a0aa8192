"""Counter-based per-agent random streams.

The design asks for one stream per agent spawned from the root seed. A million stateful
``Generator`` objects would cost ~1 KB each and would have to be checkpointed for resume. Instead a
draw is a pure function of (root seed, purpose, agent id, step): resume needs no saved state, and
the numbers an agent gets do not depend on how agents are sharded across Ray actors.

Two forms: :func:`uniform` hashes a whole vector of agent ids at once (SplitMix64 finaliser; numpy
has no vectorised keyed hash), and :func:`agent_rng` gives a full ``numpy.random.Generator`` for
one agent at one step, seeded through ``SeedSequence`` with the same key.
"""

from __future__ import annotations

import numpy as np

# Purposes: distinct streams for distinct decisions so adding one never shifts another.
ACTIVATION = 1
POLICY = 2
RECSYS = 3
GENERATOR = 4
LLM = 5
SURVEY = 6
TIMING = 7

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


def root_key(seed: int) -> int:
    """64-bit key derived from the root seed through SeedSequence (well mixed even for seed 0)."""
    return int(np.random.SeedSequence(seed).generate_state(1, dtype=np.uint64)[0])


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def uniform(key: int, purpose: int, step: int, ids: np.ndarray, sub: int = 0) -> np.ndarray:
    """One U[0,1) draw per id, a pure function of (key, purpose, step, id, sub)."""
    with np.errstate(over="ignore"):
        base = _mix(
            np.asarray([key ^ (purpose * 0x100000001B3) ^ (sub << 40)], dtype=np.uint64) + np.uint64(step) * _GOLD
        )
        z = _mix(base + (np.asarray(ids, dtype=np.uint64) + np.uint64(1)) * _GOLD)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def agent_rng(seed: int, purpose: int, agent_id: int, step: int) -> np.random.Generator:
    """A Generator private to one agent at one step (independent of shard and order)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(purpose, int(agent_id), int(step))))


def component_rng(seed: int, purpose: int, *extra: int) -> np.random.Generator:
    """A Generator for a non-agent component (graph generator, recommender, sampler)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(purpose, *extra)))
