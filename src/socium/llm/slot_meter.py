"""How busy a connection limit kept its slots, measured by the client (issue 41, item 3).

Why: a run against vLLM, llama.cpp or any OpenAI-compatible server said nothing about whether the server
was kept busy; only socium's own fake server counted it (``/metrics``). The connection limit
(``llm.max_concurrency``) knows at every moment how many requests it lets out, so it can say, with no help
from the server, what share of a step's LLM window its slots were held (occupancy: mean in flight / limit)
and what share of the window nothing was in flight at all (idle share).

The window is the step's first slot taken to its last slot freed. Each change of the number held adds
``held x dt`` (slot-seconds) or, when none was held, ``dt`` to the idle time: a clock read and a few float
operations per acquire and release, no per-request objects. A slot handed straight from one request to a
waiting one is not a change (the count stays the same). What it measures is the client's side: a slot is
held from the moment the gate lets a request out to the moment its answer is in, so a server's own queue
counts as busy here (it does not on the server's own meter; with the fake server's ``batch_limit`` equal
to the limit both measure the same slots, see tests/test_llm/test_slot_meter.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import NamedTuple


class SlotWindow(NamedTuple):
    """One measured window (a step's LLM calls), or the sum of several (limits of several backends)."""

    window_s: float  # first slot taken -> last slot freed
    busy_slot_s: float  # integral of the number of slots held over the window
    idle_s: float  # time inside the window with no slot held
    slots: int  # the limit (summed over limits when several are combined)

    @property
    def occupancy(self) -> float:
        """Mean slots held / limit over the window, in [0, 1]."""
        cap = self.slots * self.window_s
        return min(1.0, self.busy_slot_s / cap) if cap > 0 else 0.0

    @property
    def idle_share(self) -> float:
        """Share of the window with nothing in flight, in [0, 1]."""
        return min(1.0, self.idle_s / self.window_s) if self.window_s > 0 else 0.0

    def describe(self) -> str:
        """The progress line's words, e.g. ``slots 87% busy, idle 3%``."""
        return f"slots {self.occupancy:.0%} busy, idle {self.idle_share:.0%}"


def combine(windows: Iterable[SlotWindow | None]) -> SlotWindow | None:
    """Several limits' windows as one (slot-seconds over limit-seconds); None when none was measured."""
    got = [w for w in windows if w is not None]
    if not got:
        return None
    if len(got) == 1:
        return got[0]
    # each limit's own capacity (slots x its window) weighs its busy time: sum both, keep the widest window
    cap = sum(w.slots * w.window_s for w in got)
    wide = max(w.window_s for w in got)
    slots = sum(w.slots for w in got)
    busy = sum(w.busy_slot_s for w in got) * (slots * wide / cap) if cap > 0 else 0.0
    idle = sum(w.idle_s for w in got) / sum(w.window_s for w in got) * wide if wide > 0 else 0.0
    return SlotWindow(wide, busy, idle, slots)


class SlotMeter:
    """Time-weighted slots held by one connection limit, per window (``up`` / ``down`` from the gate)."""

    __slots__ = ("slots", "clock", "held", "last", "start", "end", "busy", "idle")

    def __init__(self, slots: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.slots = slots
        self.clock = clock
        self.held = 0
        self.last = 0.0
        self.start: float | None = None  # the window's first slot taken (None: nothing since the last take)
        self.end = 0.0
        self.busy = 0.0
        self.idle = 0.0

    def _add(self, t: float) -> None:
        dt = t - self.last
        if self.held:
            self.busy += self.held * dt
        else:
            self.idle += dt
        self.last = t

    def up(self) -> None:
        """A slot was taken."""
        t = self.clock()
        if self.start is None:
            self.start = self.last = self.end = t
        else:
            self._add(t)
        self.held += 1

    def down(self) -> None:
        """A slot was freed."""
        t = self.clock()
        self._add(t)
        self.held -= 1
        self.end = t

    def take(self) -> SlotWindow | None:
        """The window since the last take (None: no slot was taken), and a new one begins. Slots still held
        (a take in the middle of calls) are counted up to now and carry into the next window."""
        if self.start is None:
            return None
        if self.held:
            self.end = self.clock()
            self._add(self.end)
        got = SlotWindow(self.end - self.start, self.busy, self.idle, self.slots)
        self.busy = self.idle = 0.0
        self.start = self.end if self.held else None
        return got
