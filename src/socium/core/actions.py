"""The action table: every action an agent may take, its typed arguments and what it means, in one place.

Why one table: an action's meaning was scattered over ten files (the prompt catalogue, the schema's id
sets, answer validation, memory importance, config checks, the trace's ``votes`` view...). Each now asks
the class instead (:data:`ActionMeta`), as the perspective table does for perspectives, so a new action
is one class here plus its rule in :mod:`socium.platform.rules` and nothing else.

One discriminated union, built from the classes as they are defined, means an LLM's JSON is validated
by the same schema that is sent to the backend for constrained decoding, and the trace records exactly
what was asked. The order of definition is the catalogue order (the 'x' preset lists every action in
it), so a new action goes at the end: existing prompts stay byte-identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

Target = Literal["none", "post", "comment", "user", "member_group", "joinable_group"]
"""What an action's id argument names: a post shown, a comment shown under one, a user shown, a group the
agent is in, or a group listed for it to join."""
Mark = Literal[
    "liked",
    "disliked",
    "unratable",
    "comment",
    "hidden",
    "own_chain",
    "reposted",
    "reported",
    "not_interested",
    "following",
    "muted",
    "blocked",
    "blocked_by",
]
"""A relation between the acting agent and a target that the platform's rules read. The platform answers
them (``PlatformState.marked``); the observation carries those of its shown ids, so an answer schema
offers an action only on targets the platform would accept:

``liked`` / ``disliked``  the agent's vote on the post or comment
``unratable``   its own post or comment where the platform forbids self-rating
``comment``     the id is a comment (post actions refuse it)
``hidden``      removed by moderation, itself or the post it shares, or by a suspended author
``own_chain``   the post or one it shares, up to the root, is the agent's own (no reposting oneself)
``reposted`` / ``reported`` / ``not_interested``  the agent already did that to the post
``following`` / ``muted`` / ``blocked``  the agent's relation to the user; ``blocked_by``: the user's to it
"""
Needs = Literal["comments", "listed_groups", "results"]
_ID_FIELD: dict[Target, str] = {
    "post": "post_id",
    "comment": "comment_id",
    "user": "user_id",
    "member_group": "group_id",
    "joinable_group": "group_id",
}


@dataclass(frozen=True)
class ActionMeta:
    """One row of the action table: what an action means to everything that is not the platform's rule.

    ``target``     what its id argument names (``_ID_FIELD`` gives the argument)
    ``vote``       its sign in the trace's ``votes`` view (+1 up, -1 down, 0 not a vote) ...
    ``undo``       ... and whether it takes back a vote rather than casting one
    ``requires`` / ``excludes``  marks a target must carry / must not carry for the platform to accept it,
                   so the answer schema offers only those targets
    ``needs``      what the observation must show for it to have targets or an effect: comments under posts
                   (a config precondition: ``llm_agents.comments_per_post`` >= 1), groups listed to join,
                   or results shown in the next observation (search and trend)
    ``note``       a line the prompt's catalogue adds when it is offered (identical notes are shown once)
    ``importance`` Generative Agents' 1..10 memory importance of having done it
    ``presets``    the platform presets that accept it (``PRESET_ACTIONS``)
    ``default_for`` the presets whose LLM agents are offered it when ``llm_agents.actions`` is not set
    """

    target: Target = "none"
    vote: int = 0
    undo: bool = False
    requires: tuple[Mark, ...] = ()
    excludes: tuple[Mark, ...] = ()
    needs: Needs | None = None
    note: str = ""
    importance: float = 3.0
    presets: tuple[str, ...] = ("x", "reddit")
    default_for: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.marks and self.target not in ("post", "comment", "user"):
            raise TypeError(f"marks are kept for post, comment and user targets only, not {self.target!r}")
        if self.vote not in (-1, 0, 1) or (self.undo and not self.vote):
            raise TypeError("vote is -1, 0 or 1, and only a vote can be an undo")

    @property
    def id_field(self) -> str | None:
        """The argument holding its target id (None: it takes none)."""
        return _ID_FIELD.get(self.target)

    @property
    def marks(self) -> tuple[Mark, ...]:
        """Every mark its targets are checked for."""
        return self.requires + self.excludes


_REGISTRY: list[type[ActionBase]] = []


class ActionBase(BaseModel):
    """An action's arguments (its pydantic fields) and its meaning (:attr:`meta`); every subclass is a row."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    meta: ClassVar[ActionMeta] = ActionMeta()
    type_name: ClassVar[str] = ""  # the ``type`` discriminator, set when the class is defined
    text_field: ClassVar[str | None] = None  # its free-text argument (content, reason, query, name), if any
    if TYPE_CHECKING:
        type: str  # each row's own Literal field (the union's discriminator)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.type_name = cls.model_fields["type"].default
        texts = [n for n, f in cls.model_fields.items() if n != "type" and f.annotation in (str, "str")]
        cls.text_field = texts[0] if texts else None
        if cls.meta.id_field is not None and cls.meta.id_field not in cls.model_fields:
            raise TypeError(f"action {cls.type_name!r}: target {cls.meta.target!r} needs a {cls.meta.id_field} field")
        _REGISTRY.append(cls)


_Action = ActionBase  # the name older code imports
_POST_VOTE: tuple[Mark, ...] = ("liked", "disliked", "unratable", "comment", "hidden")
_COMMENT_VOTE: tuple[Mark, ...] = ("liked", "disliked", "unratable", "hidden")
_SEARCH = "search / trend results are shown to you next time"
_COMMENTS = "comments are shown under posts"
_GROUPS = "groups: join those listed, post to those you are in"


class CreatePost(ActionBase):
    meta = ActionMeta(importance=6.0, default_for=("x", "reddit"))
    type: Literal["create_post"] = "create_post"
    content: str


class Repost(ActionBase):
    meta = ActionMeta(
        target="post",
        excludes=("comment", "hidden", "own_chain", "reposted"),
        importance=4.0,
        presets=("x",),
        default_for=("x",),
    )
    type: Literal["repost"] = "repost"
    post_id: int


class QuotePost(ActionBase):
    meta = ActionMeta(target="post", excludes=("comment", "hidden"), importance=6.0, presets=("x",), default_for=("x",))
    type: Literal["quote_post"] = "quote_post"
    post_id: int
    content: str


class LikePost(ActionBase):
    meta = ActionMeta(target="post", vote=1, excludes=_POST_VOTE, importance=2.0, default_for=("x", "reddit"))
    type: Literal["like_post"] = "like_post"
    post_id: int


class UnlikePost(ActionBase):
    meta = ActionMeta(target="post", vote=-1, undo=True, requires=("liked",), excludes=("hidden",))
    type: Literal["unlike_post"] = "unlike_post"
    post_id: int


class DislikePost(ActionBase):
    meta = ActionMeta(target="post", vote=-1, excludes=_POST_VOTE, importance=2.0, default_for=("x", "reddit"))
    type: Literal["dislike_post"] = "dislike_post"
    post_id: int


class UndoDislikePost(ActionBase):
    meta = ActionMeta(target="post", vote=1, undo=True, requires=("disliked",), excludes=("hidden",))
    type: Literal["undo_dislike_post"] = "undo_dislike_post"
    post_id: int


class CreateComment(ActionBase):
    meta = ActionMeta(target="post", excludes=("hidden",), importance=5.0, default_for=("x", "reddit"))
    type: Literal["create_comment"] = "create_comment"
    post_id: int
    content: str


class LikeComment(ActionBase):
    meta = ActionMeta(
        target="comment", vote=1, excludes=_COMMENT_VOTE, needs="comments", note=_COMMENTS, importance=2.0
    )
    type: Literal["like_comment"] = "like_comment"
    comment_id: int


class DislikeComment(ActionBase):
    meta = ActionMeta(
        target="comment", vote=-1, excludes=_COMMENT_VOTE, needs="comments", note=_COMMENTS, importance=2.0
    )
    type: Literal["dislike_comment"] = "dislike_comment"
    comment_id: int


class Follow(ActionBase):
    meta = ActionMeta(
        target="user", excludes=("following", "blocked", "blocked_by"), importance=4.0, default_for=("x", "reddit")
    )
    type: Literal["follow"] = "follow"
    user_id: int


class Unfollow(ActionBase):
    meta = ActionMeta(target="user", requires=("following",), importance=4.0)
    type: Literal["unfollow"] = "unfollow"
    user_id: int


class Mute(ActionBase):
    meta = ActionMeta(target="user", excludes=("muted",), importance=4.0)
    type: Literal["mute"] = "mute"
    user_id: int


class Unmute(ActionBase):
    meta = ActionMeta(target="user", requires=("muted",), excludes=("blocked",))
    type: Literal["unmute"] = "unmute"
    user_id: int


class SearchPosts(ActionBase):
    meta = ActionMeta(needs="results", note=_SEARCH)
    type: Literal["search_posts"] = "search_posts"
    query: str


class SearchUser(ActionBase):
    meta = ActionMeta(needs="results", note=_SEARCH)
    type: Literal["search_user"] = "search_user"
    query: str


class Trend(ActionBase):
    meta = ActionMeta(needs="results", note=_SEARCH, importance=2.0)
    type: Literal["trend"] = "trend"


class Refresh(ActionBase):
    type: Literal["refresh"] = "refresh"


class ReportPost(ActionBase):
    meta = ActionMeta(target="post", excludes=("hidden", "reported"), importance=5.0)
    type: Literal["report_post"] = "report_post"
    post_id: int
    reason: str = ""


class CreateGroup(ActionBase):
    meta = ActionMeta(importance=5.0, presets=("x",))
    type: Literal["create_group"] = "create_group"
    name: str


class JoinGroup(ActionBase):
    meta = ActionMeta(target="joinable_group", needs="listed_groups", note=_GROUPS, presets=("x",))
    type: Literal["join_group"] = "join_group"
    group_id: int


class LeaveGroup(ActionBase):
    meta = ActionMeta(target="member_group", presets=("x",))
    type: Literal["leave_group"] = "leave_group"
    group_id: int


class SendToGroup(ActionBase):
    meta = ActionMeta(target="member_group", note=_GROUPS, importance=5.0, presets=("x",))
    type: Literal["send_to_group"] = "send_to_group"
    group_id: int
    content: str


class DoNothing(ActionBase):
    meta = ActionMeta(importance=1.0, default_for=("x", "reddit"))
    type: Literal["do_nothing"] = "do_nothing"


class UnlikeComment(ActionBase):
    meta = ActionMeta(
        target="comment",
        vote=-1,
        undo=True,
        requires=("liked",),
        excludes=("hidden",),
        needs="comments",
        note=_COMMENTS,
    )
    type: Literal["unlike_comment"] = "unlike_comment"
    comment_id: int


class UndoDislikeComment(ActionBase):
    meta = ActionMeta(
        target="comment",
        vote=1,
        undo=True,
        requires=("disliked",),
        excludes=("hidden",),
        needs="comments",
        note=_COMMENTS,
    )
    type: Literal["undo_dislike_comment"] = "undo_dislike_comment"
    comment_id: int


class Block(ActionBase):
    meta = ActionMeta(
        target="user",
        excludes=("blocked",),
        note="block: the blocked user's posts are no longer shown and both follows end",
        importance=4.0,
    )
    type: Literal["block"] = "block"
    user_id: int


class NotInterested(ActionBase):
    meta = ActionMeta(
        target="post",
        excludes=("comment", "hidden", "not_interested"),
        note="not_interested: fewer posts like that one are shown",
        importance=2.0,
    )
    type: Literal["not_interested"] = "not_interested"
    post_id: int


ACTION_CLASSES: tuple[type[ActionBase], ...] = tuple(_REGISTRY)
"""Every action class, in definition (catalogue) order."""
ACTION_TYPES: tuple[str, ...] = tuple(c.type_name for c in ACTION_CLASSES)
BY_TYPE: dict[str, type[ActionBase]] = {c.type_name: c for c in ACTION_CLASSES}

if TYPE_CHECKING:
    Action = ActionBase
else:
    Action = Annotated[Union[ACTION_CLASSES], Field(discriminator="type")]
ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)


def meta_of(action_type: str) -> ActionMeta:
    """The table row of an action type (a KeyError names an unknown one)."""
    return BY_TYPE[action_type].meta


def types_where(**meta: Any) -> tuple[str, ...]:
    """The action types whose row has every given value, in catalogue order (e.g. ``vote=1, undo=False``)."""
    return tuple(c.type_name for c in ACTION_CLASSES if all(getattr(c.meta, k) == v for k, v in meta.items()))


POST_VOTES: tuple[str, ...] = tuple(
    c.type_name for c in ACTION_CLASSES if c.meta.target == "post" and c.meta.vote and not c.meta.undo
)
"""Votes cast on posts (not undone): like_post and dislike_post."""

PRESETS: tuple[str, ...] = ("x", "reddit")
# Which actions each preset accepts (catalogue order); the schema sent to an LLM is narrowed to these.
PRESET_ACTIONS: dict[str, tuple[str, ...]] = {
    p: tuple(c.type_name for c in ACTION_CLASSES if p in c.meta.presets) for p in PRESETS
}
# What LLM agents are offered on each preset when ``llm_agents.actions`` is not set.
DEFAULT_LLM_ACTIONS: dict[str, tuple[str, ...]] = {
    p: tuple(c.type_name for c in ACTION_CLASSES if p in c.meta.default_for) for p in PRESETS
}


def parse_action(data: object) -> Action:
    """Validate a dict (or JSON string) into one typed action; raises pydantic.ValidationError."""
    if isinstance(data, (str, bytes)):
        return ACTION_ADAPTER.validate_json(data)
    return ACTION_ADAPTER.validate_python(data)


def action_args(action: ActionBase) -> dict:
    """The action's arguments without its type, for the trace's ``args`` column."""
    return action.model_dump(exclude={"type"})


def vote_signs() -> list[tuple[str, int]]:
    """(type, +1 / -1) of every vote action and undo, in catalogue order: the trace's ``votes`` view is
    generated from it, so a new vote action is counted without editing SQL."""
    return [(c.type_name, c.meta.vote) for c in ACTION_CLASSES if c.meta.vote]


class Outcome(BaseModel):
    """What applying one action did: ``ok`` or ``invalid`` with a reason; invalid changes nothing."""

    model_config = ConfigDict(frozen=True)

    status: Literal["ok", "invalid", "invalid_llm_output"]
    reason: str | None = None
    code: Literal["suspended", "removed"] | None = None  # why moderation refused it (a typed invalid outcome)
    post_id: int | None = None
    group_id: int | None = None
    results: tuple[int, ...] = ()
    truncated: bool = False
    sanitized: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"
