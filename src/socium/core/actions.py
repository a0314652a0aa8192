"""The typed action union every policy (rule-based or LLM) must produce.

One discriminated union means an LLM's JSON is validated by the same schema that is sent to the
backend for constrained decoding, and the trace records exactly what was asked.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CreatePost(_Action):
    type: Literal["create_post"] = "create_post"
    content: str


class Repost(_Action):
    type: Literal["repost"] = "repost"
    post_id: int


class QuotePost(_Action):
    type: Literal["quote_post"] = "quote_post"
    post_id: int
    content: str


class LikePost(_Action):
    type: Literal["like_post"] = "like_post"
    post_id: int


class UnlikePost(_Action):
    type: Literal["unlike_post"] = "unlike_post"
    post_id: int


class DislikePost(_Action):
    type: Literal["dislike_post"] = "dislike_post"
    post_id: int


class UndoDislikePost(_Action):
    type: Literal["undo_dislike_post"] = "undo_dislike_post"
    post_id: int


class CreateComment(_Action):
    type: Literal["create_comment"] = "create_comment"
    post_id: int
    content: str


class LikeComment(_Action):
    type: Literal["like_comment"] = "like_comment"
    comment_id: int


class DislikeComment(_Action):
    type: Literal["dislike_comment"] = "dislike_comment"
    comment_id: int


class Follow(_Action):
    type: Literal["follow"] = "follow"
    user_id: int


class Unfollow(_Action):
    type: Literal["unfollow"] = "unfollow"
    user_id: int


class Mute(_Action):
    type: Literal["mute"] = "mute"
    user_id: int


class Unmute(_Action):
    type: Literal["unmute"] = "unmute"
    user_id: int


class SearchPosts(_Action):
    type: Literal["search_posts"] = "search_posts"
    query: str


class SearchUser(_Action):
    type: Literal["search_user"] = "search_user"
    query: str


class Trend(_Action):
    type: Literal["trend"] = "trend"


class Refresh(_Action):
    type: Literal["refresh"] = "refresh"


class ReportPost(_Action):
    type: Literal["report_post"] = "report_post"
    post_id: int
    reason: str = ""


class CreateGroup(_Action):
    type: Literal["create_group"] = "create_group"
    name: str


class JoinGroup(_Action):
    type: Literal["join_group"] = "join_group"
    group_id: int


class LeaveGroup(_Action):
    type: Literal["leave_group"] = "leave_group"
    group_id: int


class SendToGroup(_Action):
    type: Literal["send_to_group"] = "send_to_group"
    group_id: int
    content: str


class DoNothing(_Action):
    type: Literal["do_nothing"] = "do_nothing"


ACTION_CLASSES: tuple[type[_Action], ...] = (
    CreatePost,
    Repost,
    QuotePost,
    LikePost,
    UnlikePost,
    DislikePost,
    UndoDislikePost,
    CreateComment,
    LikeComment,
    DislikeComment,
    Follow,
    Unfollow,
    Mute,
    Unmute,
    SearchPosts,
    SearchUser,
    Trend,
    Refresh,
    ReportPost,
    CreateGroup,
    JoinGroup,
    LeaveGroup,
    SendToGroup,
    DoNothing,
)

Action = Annotated[
    Union[
        CreatePost,
        Repost,
        QuotePost,
        LikePost,
        UnlikePost,
        DislikePost,
        UndoDislikePost,
        CreateComment,
        LikeComment,
        DislikeComment,
        Follow,
        Unfollow,
        Mute,
        Unmute,
        SearchPosts,
        SearchUser,
        Trend,
        Refresh,
        ReportPost,
        CreateGroup,
        JoinGroup,
        LeaveGroup,
        SendToGroup,
        DoNothing,
    ],
    Field(discriminator="type"),
]

ACTION_TYPES: tuple[str, ...] = tuple(c.model_fields["type"].default for c in ACTION_CLASSES)
ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)

# Which actions each preset offers; the schema sent to an LLM is narrowed to these.
PRESET_ACTIONS: dict[str, tuple[str, ...]] = {
    "x": ACTION_TYPES,  # every action, in ACTION_CLASSES order
    "reddit": (
        "create_post",
        "like_post",
        "unlike_post",
        "dislike_post",
        "undo_dislike_post",
        "create_comment",
        "like_comment",
        "dislike_comment",
        "search_posts",
        "search_user",
        "trend",
        "refresh",
        "follow",
        "unfollow",
        "mute",
        "unmute",
        "report_post",
        "do_nothing",
    ),
}


def parse_action(data: object) -> Action:
    """Validate a dict (or JSON string) into one typed action; raises pydantic.ValidationError."""
    if isinstance(data, (str, bytes)):
        return ACTION_ADAPTER.validate_json(data)
    return ACTION_ADAPTER.validate_python(data)


def action_args(action: _Action) -> dict:
    """The action's arguments without its type, for the trace's ``args`` column."""
    return action.model_dump(exclude={"type"})


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
