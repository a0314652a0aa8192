"""The recommender protocol: what decides which posts each active agent sees this step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from socium.platform.state import PlatformState


SOURCES = ("in_network", "out_of_network", "global", "random", "search")
"""The channels a feed item may come through; ``exposures.source`` holds one of them (or 'trend')."""


@dataclass(frozen=True, slots=True)
class Feed:
    """Post ids in rank order, each with the channel it came through (logged to ``exposures``)."""

    post_ids: tuple[int, ...]
    sources: tuple[str, ...]


@dataclass(frozen=True)
class RecsysContext:
    """What a recommender is told about the run when it is built (``context=`` of its constructor).

    Why a small typed value and not the simulation: a plugin written against it keeps working when the
    loop is re-arranged, and it cannot reach (or change) parts of the world a recommender has no
    business with. ``bios`` / ``interests`` / ``usernames``: one entry per agent (profile-based ranking).
    """

    n_agents: int
    seed: int
    step_minutes: float
    bios: Sequence[str] = ()
    interests: Sequence[Sequence[str]] = ()
    usernames: Sequence[str] = ()

    def profile_texts(self) -> list[str] | None:
        """'bio. Interests: a, b' per agent, or None when the run gave no profiles."""
        if not self.bios:
            return None
        ints = self.interests or [()] * len(self.bios)
        return [f"{bio}. Interests: {', '.join(i)}" if i else str(bio) for bio, i in zip(self.bios, ints)]


@runtime_checkable
class Recommender(Protocol):
    """Two methods: learn from new events incrementally, then rank for a batch of users."""

    def observe(self, state: PlatformState, new_posts: range, step: int) -> None:
        """Called once per step after actions are applied, with the ids of posts created in it."""

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        """One feed of at most ``k`` posts per user, in the order of ``users``."""
