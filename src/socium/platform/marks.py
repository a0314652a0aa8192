"""What moderation has done to the platform so far: labels, notes, rank factors, removals, strikes.

Why one small object: the platform's rules (a removed post cannot be reposted, a suspended account
cannot act), every recommender's feed and every prompt read the same marks, and resume rebuilds
them by re-applying the recorded ``moderation_events`` rows in order -- so the marks are the only
moderation state there is, and they change only through :meth:`ModerationMarks.apply`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

EVENTS = ("queue", "label", "note", "downrank", "remove", "strike", "suspend", "prebunk", "flag")
"""Kinds of ``moderation_events`` rows. ``flag`` only records user reports counted by a strategy."""


@dataclass(frozen=True, slots=True)
class ModerationEvent:
    """One thing moderation did at a step; a row of ``moderation_events``."""

    event: str
    post_id: int | None = None
    agent_id: int | None = None
    source: str = ""  # which mechanism: fact_check, community_notes, platform, prebunk, or a plugin's name
    detail: str = ""  # the label or note text, the rank factor, the strike count, ...


@dataclass
class ModerationMarks:
    labels: dict[int, str] = field(default_factory=dict)  # post -> label text (a fact-check verdict)
    notes: dict[int, str] = field(default_factory=dict)  # post -> community note text
    factor: dict[int, float] = field(default_factory=dict)  # post -> rank factor (< 1 down-ranks)
    removed: set[int] = field(default_factory=set)
    strikes: dict[int, int] = field(default_factory=dict)
    suspended: set[int] = field(default_factory=set)
    queued: dict[int, int] = field(default_factory=dict)  # post -> step it entered the fact-check queue
    prebunked: dict[int, int] = field(default_factory=dict)  # agent -> step inoculated
    pinned_done: set[int] = field(default_factory=set)  # agents who were shown the pinned prebunk post

    def apply(self, e: ModerationEvent, step: int) -> None:
        """Apply one event; the only way marks change (so replaying the trace rebuilds them)."""
        pid, aid = e.post_id, e.agent_id
        if e.event == "queue" and pid is not None:
            self.queued.setdefault(pid, step)
        elif e.event == "label" and pid is not None:
            self.labels[pid] = e.detail
        elif e.event == "note" and pid is not None:
            self.notes[pid] = e.detail
        elif e.event == "downrank" and pid is not None:
            self.factor[pid] = float(e.detail)
        elif e.event == "remove" and pid is not None:
            self.removed.add(pid)
        elif e.event == "strike" and aid is not None:
            self.strikes[aid] = self.strikes.get(aid, 0) + 1
        elif e.event == "suspend" and aid is not None:
            self.suspended.add(aid)
        elif e.event == "prebunk" and aid is not None:
            if e.detail == "shown":
                self.pinned_done.add(aid)
            else:
                self.prebunked.setdefault(aid, step)

    def judged(self, post: int) -> bool:
        """Has any mechanism marked this post as misleading?"""
        return post in self.labels or post in self.notes

    def any_rank_marks(self) -> bool:
        return bool(self.removed or self.suspended or self.factor)
