"""Prompts that speak for several agents at once, made to fit the model's context window.

Why: one call writes for a whole group and its prompt holds every member's profile, memory and feed, so
it grows with the group and the run. Two policies do this: script mode's narrator
(``llm_agents.group_size`` characters; 8 overflowed 2,048 tokens, and one call 4,096) and group agents
(``policy.kind: group_llm``, up to ``policy.group_max_members`` per persona cluster). A prompt the model
refuses loses the whole group's turn.

How, in order, so that what each member sees is kept whole as long as possible:

1. a group whose prompt plus its completion allowance (``max_tokens`` per member) fits is one call;
2. else it is split into halves (runs of consecutive agent ids, so the result does not depend on the
   shard or chunk it ran in), each fitted again;
3. a single member that still does not fit loses, one at a time and in turn, its lowest-ranked feed
   item, its oldest memory line, the last trending post (narrator prompts show one), its last search
   result and its oldest group message, until it fits (or nothing is left to drop: the call is then
   sent as it is and the backend's refusal is recorded).

Each call records what was done (:meth:`FittedCall.record`: the whole group when it was split, under the
caller's key, ``narrator_group`` or ``split_from``; ``trimmed``: per member, the post ids and counts
dropped; ``context_tokens``: the window, which a replay reads back to fit the same way), and every post
dropped from a member's prompt is handed back as ``unshown`` so its exposure row is withdrawn
(:func:`mark_unshown`): ``exposures`` stay what prompts held.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from socium.core.contracts import Observation

Render = Callable[[list[Observation]], list[dict[str, str]]]
Count = Callable[[list[dict[str, str]]], int]


@dataclass
class FittedCall:
    """One call: its members (observations as shown, trimmed or not) and its messages."""

    members: list[Observation]
    messages: list[dict[str, str]]
    tokens: int | None = None  # the prompt's count (None when nothing bounds it)
    context: int | None = None  # the context window it was fitted to (None: unbounded)
    trimmed: dict[int, dict[str, Any]] = field(default_factory=dict)  # agent id -> what was dropped
    unshown: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # agent id -> (post id, source)

    def record(self, meta: dict[str, Any], whole: Sequence[Observation], attempt: int, split_key: str) -> None:
        """Write into a request's ``meta`` how this call was fitted: ``split_key`` lists the group it was
        split from (first attempts only; a re-ask is a subset anyway), ``trimmed`` what each member lost,
        ``context_tokens`` the window (a replay bounds its prompts the same way)."""
        if len(self.members) < len(whole) and not attempt:
            meta[split_key] = [o.agent_id for o in whole]
        if self.trimmed:
            meta["trimmed"] = {str(a): t for a, t in self.trimmed.items()}
        if self.context is not None:
            meta["context_tokens"] = self.context


def collect_unshown(calls: Sequence[FittedCall], into: dict[int, list[tuple[int, str]]]) -> None:
    """Add the posts trimmed from these calls' prompts to ``into`` (agent id -> (post id, source))."""
    for call in calls:
        for a, posts in call.unshown.items():
            into.setdefault(a, []).extend(posts)


def mark_unshown(decisions: Sequence[Any], unshown: dict[int, list[tuple[int, str]]]) -> None:
    """Hand the trimmed posts to the simulation with each member's decision (``meta['unshown']``), which
    withdraws their exposure rows (``StepRecorder.withdraw_exposures``)."""
    for d in decisions:
        if d.agent_id in unshown:
            d.meta["unshown"] = unshown[d.agent_id]


def fit_calls(
    group: list[Observation],
    render: Render,
    count: Count,
    budget: int | None,
    reserve_per_member: int,
) -> list[FittedCall]:
    """The calls that write ``group``: one when it fits in ``budget`` tokens (or ``budget`` is None), else
    halves, else single members trimmed as the module says. ``reserve_per_member``: completion tokens
    kept free per member."""
    msgs = render(group)
    if budget is None:
        return [FittedCall(group, msgs)]
    n = count(msgs)
    if n + reserve_per_member * len(group) <= budget:
        return [FittedCall(group, msgs, n, budget)]
    if len(group) > 1:
        mid = len(group) // 2
        return [
            *fit_calls(group[:mid], render, count, budget, reserve_per_member),
            *fit_calls(group[mid:], render, count, budget, reserve_per_member),
        ]
    call = _trimmed(group[0], render, count, budget - reserve_per_member)
    call.context = budget  # the window; _trimmed fitted the prompt to what is left of it after the reserve
    return [call]


def _trimmed(o: Observation, render: Render, count: Count, budget: int) -> FittedCall:
    """``o`` with items dropped in turn (feed, memory, trending, results, group messages) until its prompt fits."""
    o = replace(
        o,
        feed=list(o.feed),
        results=list(o.results),
        found_users=list(o.found_users),
        groups=[replace(g, messages=list(g.messages)) for g in o.groups],
        memory=list(o.memory),
        global_feed=list(o.global_feed),
    )
    dropped: dict[str, Any] = {}
    unshown: list[tuple[int, str]] = []

    def drop_feed() -> bool:
        if not o.feed:
            return False
        it = o.feed.pop()
        dropped.setdefault("feed", []).append(it.post_id)
        unshown.append((it.post_id, it.source))
        return True

    def drop_memory() -> bool:
        mem = o.memory
        if not mem:
            return False
        mem.pop(0)
        dropped["memory_lines"] = dropped.get("memory_lines", 0) + 1
        return True

    def drop_global() -> bool:
        top = o.global_feed
        if not top:
            return False
        it = top.pop()
        dropped.setdefault("global", []).append(it.post_id)
        unshown.append((it.post_id, it.source))
        return True

    def drop_result() -> bool:
        if o.results:
            it = o.results.pop()
            dropped.setdefault("results", []).append(it.post_id)
            unshown.append((it.post_id, it.source))
            return True
        if o.found_users:
            o.found_users.pop()
            dropped["found_users"] = dropped.get("found_users", 0) + 1
            return True
        return False

    def drop_message() -> bool:
        for g in o.groups:
            if g.messages:
                g.messages.pop(0)
                dropped["group_messages"] = dropped.get("group_messages", 0) + 1
                return True
        return False

    steps: Sequence[Callable[[], bool]] = (drop_feed, drop_memory, drop_global, drop_result, drop_message)
    msgs = render([o])
    n = count(msgs)
    turn = 0
    while n > budget:  # one item at a time, the kinds in turn: no kind is emptied before another loses one
        for k in range(len(steps)):
            if steps[(turn + k) % len(steps)]():
                turn = (turn + k + 1) % len(steps)
                break
        else:
            dropped["still_over"] = True
            break
        msgs = render([o])
        n = count(msgs)
    dropped["prompt_tokens"] = n
    return FittedCall([o], msgs, n, budget, {o.agent_id: dropped}, {o.agent_id: unshown} if unshown else {})
