"""Model answers checked against what the observation showed: typed actions, state-aware ids, reasons.

Moved out of :mod:`socium.agents.llm_policy` (which re-exports these names) so the validation rules
read apart from the calls that produce the answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from socium.core.actions import BY_TYPE, parse_action
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
        member = action.meta.target != "joinable_group"
        if gid not in {g.group_id for g in obs.groups if g.member == member}:
            raise ValueError(f"group_id {gid} is not a group {'you are in' if member else 'you were offered to join'}")
    return action


@lru_cache(maxsize=64)
def _narrowed(allowed: tuple[str, ...]) -> tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...]:
    """(action, target, requires, excludes) of the offered actions whose rows read marks."""
    return tuple((a, m.target, m.requires, m.excludes) for a in allowed if (m := BY_TYPE[a].meta).marks)


def state_aware_ids(
    obs: Observation,
    allowed: Sequence[str],
    posts: set[int] | None = None,
    users: set[int] | None = None,
    comments: set[int] | None = None,
) -> dict[str, list[int]]:
    """The ids each offered action may take given what the agent already did (the action table's
    ``requires`` / ``excludes`` marks, which the observation carries for its shown ids as the platform
    answers them), so the schema never offers what the platform would reject: liking twice or what one
    disliked, undoing what was not done, following a followee, reposting oneself. Actions without marks
    are left out (they take every shown id). ``posts`` / ``users`` / ``comments``: ``obs.shown_posts()``
    / ``obs.shown_users()`` / ``obs.shown_comments()`` when the caller has them."""
    out: dict[str, list[int]] = {}
    shown: dict[str, set[int] | None] = {"post": posts, "user": users, "comment": comments}
    marks = obs.marks
    for a, target, requires, excludes in _narrowed(tuple(allowed)):
        ids = shown[target]
        if ids is None:
            ids = shown[target] = _shown(obs, target)
        for m in requires:
            ids = ids & marks.get(m, _NONE)
        for m in excludes:
            if m in marks:
                ids = ids - marks[m]
        out[a] = sorted(ids)
    return out


_NONE: frozenset[int] = frozenset()


def _shown(obs: Observation, target: str) -> set[int]:
    if target == "post":
        return obs.shown_posts()
    if target == "comment":
        return obs.shown_comments()
    return obs.shown_users()  # the only other target a row with marks may have (ActionMeta checks)


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
