"""Agents that join mid-run (OASIS ``sign_up``): who is on the platform when, and their follow edges.

Why edges are withheld: an agent that has not signed up cannot follow or be followed, so the initial
graph's edges that touch it are held back and added (as ``follow_events`` of that step) once both
ends are on the platform, the way an OASIS user arrives with its following list. Sign-ups are
written to the ``sign_ups`` table, and resume re-applies them from there before the step's actions,
so a sign-up asked for from Python (``Simulation.step(sign_up=...)``) replays like a scheduled one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from socium.config.world import JoinAt
from socium.errors import ConfigError, UsageError
from socium.platform.graph import FollowIndex
from socium.platform.state import PlatformState


class SignUps:
    def __init__(self, schedule: Sequence[JoinAt], n: int) -> None:
        self.n = n
        self.due: dict[int, list[int]] = {}
        late: list[int] = []
        for i, j in enumerate(schedule):
            bad = [a for a in j.agents if not 0 <= a < n]
            if bad:
                raise ConfigError(
                    f"population.join_schedule[{i}]: agent(s) {bad} are not agent ids (population has {n})"
                )
            if j.step is not None:
                self.due.setdefault(j.step, []).extend(j.agents)
            late.extend(j.agents)
        self.late = np.array(sorted(late), dtype=np.int64)
        self.pending: dict[int, list[tuple[int, int]]] = {}  # agent -> withheld edges touching it

    def withhold(self, follows: FollowIndex) -> FollowIndex:
        """The initial graph without edges that touch a late joiner (kept to add at sign-up)."""
        if not len(self.late):
            return follows
        src, dst = follows.edges()
        is_late = np.zeros(self.n, dtype=bool)
        is_late[self.late] = True
        held = is_late[src] | is_late[dst]
        for s, d in zip(src[held].tolist(), dst[held].tolist()):
            for a in {s, d}:
                if is_late[a]:
                    self.pending.setdefault(a, []).append((s, d))
        return FollowIndex.from_edges(src[~held], dst[~held], self.n)

    def initial_joined(self) -> np.ndarray | None:
        """Who is on the platform at step 0 (None: everyone, the fast path)."""
        if not len(self.late):
            return None
        joined = np.ones(self.n, dtype=bool)
        joined[self.late] = False
        return joined

    def check(self, state: PlatformState, agents: Sequence[int]) -> None:
        for a in agents:
            if not 0 <= a < self.n:
                raise UsageError(f"sign_up: agent {a} is not an agent id (population has {self.n})")
            if state.joined is None or state.joined[a]:
                raise UsageError(f"sign_up: agent {a} is already on the platform")

    def join(self, state: PlatformState, agent: int, record: bool = True) -> int:
        """Put ``agent`` on the platform and add its withheld edges whose other end is there too."""
        assert state.joined is not None
        state.joined[agent] = True
        added = 0
        for s, d in self.pending.get(agent, ()):
            if state.joined[s] and state.joined[d] and not state.follows.is_following(s, d):
                state.follows.add(s, d)
                if record:
                    state.events.follows.append((s, d, 1))
                added += 1
        return added
