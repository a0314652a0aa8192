"""Model answers checked against what the observation showed: typed actions, state-aware ids, reasons.

Moved out of :mod:`socium.agents.llm_policy` (which re-exports these names) so the validation rules
read apart from the calls that produce the answers.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    shown: dict[str, set[int]] = {}
    marks = obs.marks
    for a in allowed:
        meta = BY_TYPE[a].meta
        if not meta.marks:
            continue
        if meta.target not in shown:
            given = {"post": posts, "user": users, "comment": comments}.get(meta.target)
            shown[meta.target] = given if given is not None else _shown(obs, meta.target)
        ids = set(shown[meta.target])
        for m in meta.requires:
            ids &= marks.get(m, set())
        for m in meta.excludes:
            ids -= marks.get(m, set())
        out[a] = sorted(ids)
    return out


def _shown(obs: Observation, target: str) -> set[int]:
    if target == "post":
        return obs.shown_posts()
    if target == "comment":
        return obs.shown_comments()
    if target == "user":
        return obs.shown_users()
    raise ValueError(f"no marks are kept for {target} targets")


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
