"""What one active agent is given to decide on: built by the driver, plain data so it can travel to
Ray actors, and the only channel through which a policy learns about the world."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class FeedItem:
    post_id: int
    author: int
    kind: str
    text: str
    root_id: int
    likes: int
    dislikes: int
    reposts: int
    comments: int
    source: str
    rank: int
    adopted: bool = False  # the viewer already posted/reposted/quoted this cascade
    liked: bool = False  # the viewer already liked this post
    disliked: bool = False  # the viewer already disliked this post
    adoption: float = 0.0  # fraction of the viewer's followees who adopted this cascade
    author_stance: float | None = None
    author_username: str = ""
    author_private: dict[str, Any] | None = None  # only filled under the mindreader perspective


@dataclass(slots=True)
class GroupView:
    """A chat group as one agent sees it: members see its recent messages, others only its name."""

    group_id: int
    name: str
    n_members: int
    member: bool
    messages: list[tuple[int, int, str, str]] = field(default_factory=list)  # (step, author, username, text)


@dataclass(slots=True)
class Observation:
    agent_id: int
    step: int
    time_s: float
    hour: int
    feed: list[FeedItem]
    stance: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    groups: list[GroupView] = field(default_factory=list)  # filled for LLM agents (see agents.groups)


@dataclass(slots=True)
class Decision:
    """A policy's answer: actions in the order the agent wants them applied, plus own-state updates."""

    agent_id: int
    actions: list[Any]
    stance: float | None = None
    invalid_reason: str | None = None  # set when an LLM's output could not be turned into an action
    raw: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
