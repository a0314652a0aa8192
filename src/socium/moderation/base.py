"""The moderation strategy protocol: after a step's actions, decide which posts are misleading.

A strategy only *judges* (returns ``label`` / ``note`` / ``queue`` events); what the platform then
does with a judged post -- show the label, down-rank it, remove it, strike and suspend its author --
is the same for every strategy and lives in :mod:`socium.moderation.engine`, so strategies can be
compared with the consequences held fixed (and combined with them freely in one config).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from socium.platform.marks import ModerationEvent, ModerationMarks

if TYPE_CHECKING:
    from socium.platform.state import PlatformState

MODERATION = 8
"""Random-stream purpose of moderation draws (see socium.core.rng); distinct from every other."""


@dataclass
class ModerationContext:
    """What a strategy may look at: the platform (posts with their ground-truth ``veracity`` column,
    reports, likes, the marks so far), the step, the run's random key, and agents' stances."""

    state: PlatformState
    step: int
    key: int
    stance: np.ndarray  # per agent, NaN where none

    @property
    def marks(self) -> ModerationMarks:
        """The labels, removals and suspensions so far (the platform's record, written only by the engine)."""
        return self.state.mod


@runtime_checkable
class Moderator(Protocol):
    """One method, called once per step after the step's actions (effects show from the next step)."""

    def moderate(self, ctx: ModerationContext) -> list[ModerationEvent]:
        """Events of this step: ``queue``, ``label`` (post, text) or ``note`` (post, text)."""
