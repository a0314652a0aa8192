"""What changed on the platform during the current step, drained by the simulator into the trace.

Its own module so that the rules (:mod:`socium.platform.rules`) can name it without importing the state."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class StepEvents:
    """What changed during the current step, drained by the simulator into the trace."""

    post_flags: dict[int, tuple[bool, bool]] = field(default_factory=dict)
    follows: list[tuple[int, int, int]] = field(default_factory=list)  # (src, dst, +1 follow / -1 unfollow)
    groups: list[tuple[int, int, str]] = field(default_factory=list)  # (group_id, creator, name)
    group_messages: list[tuple[int, int, str]] = field(default_factory=list)  # (group_id, author, text)
    likes: list[tuple[int, int]] = field(
        default_factory=list
    )  # (user, post) up-votes, so recommenders learn incrementally
    first_post: int = 0
