"""The recommender protocol: what decides which posts each active agent sees this step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
            return fn
        rec = getattr(rec, "base", None)
    return None
