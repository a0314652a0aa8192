"""Model answers checked against what the observation showed: typed actions, state-aware ids, reasons.

Moved out of :mod:`socium.agents.llm_policy` (which re-exports these names) so the validation rules
read apart from the calls that produce the answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from socium.core.actions import parse_action
from socium.core.contracts import Observation
from socium.platform.text import clean_text


def validate_action(data: Any, obs: Observation, allowed: Sequence[str]) -> Any:
    """Typed action from model output; ids the observation did not show are invalid (ValueError)."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    action = parse_action(data)
    if action.type not in allowed:
        raise ValueError(f"action '{action.type}' is not offered; choose one of {', '.join(allowed)}")
    pid = getattr(action, "post_id", None)
    if pid is not None and pid not in obs.shown_posts():
        raise ValueError(f"post_id {pid} is not a post shown to you")
    cid = getattr(action, "comment_id", None)
    if cid is not None and cid not in obs.shown_comments():
        raise ValueError(f"comment_id {cid} is not a comment shown to you")
    uid = getattr(action, "user_id", None)
    if uid is not None and uid not in obs.shown_users() | {obs.agent_id}:
        raise ValueError(f"user_id {uid} is not a user shown to you")
    gid = getattr(action, "group_id", None)
    if gid is not None:
        member = action.type != "join_group"
        if gid not in {g.group_id for g in obs.groups if g.member == member}:
            raise ValueError(f"group_id {gid} is not a group {'you are in' if member else 'you were offered to join'}")
    return action


def state_aware_ids(
    obs: Observation, posts: set[int] | None = None, users: set[int] | None = None
) -> dict[str, list[int]]:
    """Ids each vote / share / follow action may take given what the agent already did, so the schema
    never offers what the platform would reject (liking twice, following a followee, reposting oneself).
    ``posts`` / ``users``: ``obs.shown_posts()`` / ``obs.shown_users()`` when the caller has them."""
    posts = obs.shown_posts() if posts is None else posts
    users = obs.shown_users() if users is None else users
    items = (*obs.feed, *obs.results)
    liked = {it.post_id for it in items if it.liked}
    disliked = {it.post_id for it in items if it.disliked}
    own = {it.post_id for it in items if it.author == obs.agent_id}  # and shares of its own posts:
    for it in items:  # the platform refuses both
        mine = {s.post_id for s in it.shared if s.author == obs.agent_id}
        own |= mine | ({it.post_id} if mine else set())
    following = set(obs.following) & users
    return {
        k: sorted(v)
        for k, v in (
            ("like_post", posts - liked),
            ("unlike_post", liked),
            ("dislike_post", posts - disliked),
            ("undo_dislike_post", disliked),
            ("repost", posts - own),
            ("follow", users - following),
            ("unfollow", following),
        )
    }


def validate_answer(
    data: Any, obs: Observation, allowed: Sequence[str], max_actions: int = 1, reason: bool = False
) -> tuple[list[Any], str | None]:
    """The actions (and the stated reason) of one answer shaped as :func:`prompts.answer_schema` says."""
    if max_actions <= 1 and not reason:
        return [validate_action(data, obs, allowed)], None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    why = data.get("reason")
    why = clean_text(why, 2000).text if isinstance(why, str) else None
    if max_actions > 1:
        items = data.get("actions")
        if not isinstance(items, list) or not items:
            raise ValueError("'actions' must be a non-empty list")
        if len(items) > max_actions:
            raise ValueError(f"at most {max_actions} actions per turn, got {len(items)}")
        return [validate_action(a, obs, allowed) for a in items], why
    if "action" not in data:
        raise ValueError("missing 'action'")
    return [validate_action(data["action"], obs, allowed)], why


def _short_error(exc: Exception) -> str:
    """A bounded, storable reason; parse errors quote the model's text, which may be hostile."""
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        return clean_text(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}", 300).text
    return clean_text(str(exc), 300).text
