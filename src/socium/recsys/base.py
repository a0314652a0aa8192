"""The recommender protocol: what decides which posts each active agent sees this step."""

from __future__ import annotations

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


@runtime_checkable
class Recommender(Protocol):
    """Two methods: learn from new events incrementally, then rank for a batch of users."""

    def observe(self, state: PlatformState, new_posts: range, step: int) -> None:
        """Called once per step after actions are applied, with the ids of posts created in it."""

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        """One feed of at most ``k`` posts per user, in the order of ``users``."""
