"""Agent profiles: a typed per-agent record for input/output and a columnar store for scale.

A million pydantic objects would cost far more than the 2 KB per agent socium budgets, so the
simulation keeps a :class:`Population` of columns (numpy arrays and plain lists) and materialises
an :class:`AgentProfile` only when one agent is looked at (prompts, interviews, the trace).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from socium.core.profile import HOURS, AgentProfile

SIDE_THRESHOLD = 0.2  # |stance| below this is undecided, for goals and personas alike


def stance_side(stance: float | None) -> str:
    """'for', 'against' or 'undecided': the side a stance (-1 against .. +1 for) takes on its issue."""
    if stance is None or stance != stance:  # None or NaN
        return "undecided"
    return "for" if stance >= SIDE_THRESHOLD else "against" if stance <= -SIDE_THRESHOLD else "undecided"


def goal_for(stance: float | None, issue: str) -> str:
    """A goal that agrees with the stance's side, so personas never contradict themselves."""
    side = stance_side(stance)
    if side == "for":
        return f"Convince others to support {issue}."
    if side == "against":
        return f"Convince others to oppose {issue}."
    return f"Understand the arguments on both sides of {issue} before taking a side."


class Population:
    """Columnar agent attributes; index i is agent id i."""

    def __init__(
        self,
        names: Sequence[str],
        usernames: Sequence[str],
        bios: Sequence[str],
        interests: Sequence[list[str]],
        activity: np.ndarray,
        stance: np.ndarray | None = None,
        goals: Sequence[str | None] | None = None,
        extra: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        n = len(names)
        activity = np.ascontiguousarray(activity, dtype=np.float32)
        if activity.shape != (n, HOURS):
            raise ValueError(f"activity must have shape ({n}, {HOURS}), got {activity.shape}")
        for label, col in (("usernames", usernames), ("bios", bios), ("interests", interests)):
            if len(col) != n:
                raise ValueError(f"{label} has {len(col)} entries for {n} agents")
        self.names = list(names)
        self.usernames = list(usernames)
        self.bios = list(bios)
        self.interests = list(interests)
        self.activity = activity
        self.stance = (
            np.full(n, np.nan, dtype=np.float32) if stance is None else np.asarray(stance, dtype=np.float32).copy()
        )
        self.goals: list[str | None] = list(goals) if goals is not None else [None] * n
        self.extra: list[dict[str, Any]] | None = list(extra) if extra is not None else None

    def __len__(self) -> int:
        return len(self.names)

    @classmethod
    def from_profiles(cls, profiles: Iterable[AgentProfile]) -> Population:
        """Build from typed profiles; ids must be exactly 0..N-1 in order."""
        profs = list(profiles)
        for i, p in enumerate(profs):
            if p.id != i:
                raise ValueError(f"profile ids must be 0..N-1 in order; position {i} has id {p.id}")
        return cls(
            names=[p.name for p in profs],
            usernames=[p.username for p in profs],
            bios=[p.bio for p in profs],
            interests=[list(p.interests) for p in profs],
            activity=np.array([p.activity for p in profs], dtype=np.float32).reshape(len(profs), HOURS),
            stance=np.array([np.nan if p.stance is None else p.stance for p in profs], dtype=np.float32),
            goals=[p.goal for p in profs],
            extra=[dict(p.extra) for p in profs],
        )

    def profile(self, i: int) -> AgentProfile:
        """Materialise agent ``i`` as a typed profile."""
        s = float(self.stance[i])
        return AgentProfile.model_construct(  # columns were validated on the way in
            id=i,
            name=self.names[i],
            username=self.usernames[i],
            bio=self.bios[i],
            interests=list(self.interests[i]),
            stance=None if np.isnan(s) else s,
            goal=self.goals[i],
            activity=self.activity[i].tolist(),  # the same floats as float(x) per element, ~8x cheaper
            extra=dict(self.extra[i]) if self.extra is not None else {},
        )

    def profiles(self) -> list[AgentProfile]:
        return [self.profile(i) for i in range(len(self))]
