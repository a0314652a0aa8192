"""The recommender protocol: what decides which posts each active agent sees this step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from socium.platform.state import PlatformState


SOURCES = ("in_network", "out_of_network", "global", "random", "search")
"""The channels a feed item may come through; ``exposures.source`` holds one of them (or 'trend')."""


@dataclass(frozen=True, slots=True)
class Feed:
    """Post ids in rank order, each with the channel it came through (logged to ``exposures``).

    ``explain``: optionally, one tuple per post in ``core.exposure.EXPLANATION_COLUMNS`` order (why it
    was shown); recorded as those ``exposures`` columns. None for every recommender but ``foryou``.
    """

    post_ids: tuple[int, ...]
    sources: tuple[str, ...]
    explain: tuple[tuple[Any, ...], ...] | None = None


@runtime_checkable
class Recommender(Protocol):
    """Two methods: learn from new events incrementally, then rank for a batch of users."""

    def observe(self, state: PlatformState, new_posts: range, step: int) -> None:
        """Called once per step after actions are applied, with the ids of posts created in it."""

    def feeds(self, state: PlatformState, users: np.ndarray, k: int, step: int, rng: np.random.Generator) -> list[Feed]:
        """One feed of at most ``k`` posts per user, in the order of ``users``."""


ServedHook = Callable[["PlatformState", int, np.ndarray, np.ndarray], None]


def served_hook(rec: object) -> ServedHook | None:
    """The ``served(state, step, agent_ids, post_ids)`` method of ``rec`` or of the recommender it wraps
    (``.base``), or None. The simulator calls it once per step with that step's recorded exposures, and
    again when a resumed run replays them, so a recommender that remembers what it served (``foryou``:
    impressions, already-seen posts) rebuilds the same memory either way."""
    seen: set[int] = set()
    while rec is not None and id(rec) not in seen:
        seen.add(id(rec))
        fn = getattr(rec, "served", None)
        if callable(fn):
            return fn  # type: ignore[no-any-return]
        rec = getattr(rec, "base", None)
    return None
