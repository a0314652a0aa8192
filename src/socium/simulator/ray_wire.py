"""How observations and decisions cross the wire between the Ray driver and its actors.

Why its own module: the driver (:mod:`socium.simulator.ray_executor`) and the actors
(:mod:`socium.simulator.ray_actor`) both pack and unpack; tests check the format without starting Ray.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from socium.core.contracts import Decision, FeedItem, Observation

# ---- wire format -----------------------------------------------------------------------------
# Pickling a slotted dataclass goes through Python-level __reduce_ex__ per object; for 10^5
# observations of 5 feed items that dominated a rule-based step. Observations travel as nested
# tuples (half the bytes, about half the time). Actions (pydantic models) travel as (class, state)
# and are rebuilt through pydantic's own ``__setstate__``, without re-validation: they were
# validated where they were made; this saves the reduce machinery on the actor's side.
_FEED_FIELDS = [f.name for f in dataclasses.fields(FeedItem)]
_feed_tuple = operator.attrgetter(*_FEED_FIELDS)


def pack_observations(obs: Sequence[Observation]) -> list[tuple]:
    """LLM agents' views (groups, search results) travel only when present, keeping rule-based packing lean."""
    return [
        (
            o.agent_id,
            o.step,
            o.time_s,
            o.hour,
            [_feed_tuple(i) for i in o.feed],
            o.stance,
            o.extra,
            (o.groups, [_feed_tuple(i) for i in o.results], o.results_from, o.found_users)
            if (o.groups or o.results_from)
            else None,
            o.marks or None,  # the platform's marks the answer schema narrows ids by (LLM agents only)
            _pack_shown(o) if o.profile is not None or o.platform_notice is not None else None,
        )
        for o in obs
    ]


def _pack_shown(o: Observation) -> tuple:
    """What an LLM agent is shown besides its feed (the typed fields ``fill_observation`` sets)."""
    return (
        o.profile,
        o.memory,
        o.show_score,
        o.datetime,
        [_feed_tuple(i) for i in o.global_feed],
        o.stats,
        None if o.co_acting is None else pack_observations(o.co_acting),
        o.platform_notice,
        o.prebunk_shown,
    )


def unpack_observations(packed: list[tuple]) -> list[Observation]:
    out = []
    for a, s, t, h, feed, st, ex, more, marks, shown in packed:
        o = Observation(a, s, t, h, [FeedItem(*i) for i in feed], st, ex)
        if marks is not None:
            o.marks = marks
        if more is not None:
            o.groups, results, o.results_from, o.found_users = more
            o.results = [FeedItem(*i) for i in results]
        if shown is not None:
            o.profile, o.memory, o.show_score, o.datetime, top, o.stats, co, notice, pb = shown
            o.global_feed = [FeedItem(*i) for i in top]
            o.co_acting = None if co is None else unpack_observations(co)
            o.platform_notice, o.prebunk_shown = notice, pb
        out.append(o)
    return out


def _pack_action(a: Any) -> tuple[Any, Any]:
    return (type(a), a.__getstate__()) if isinstance(a, BaseModel) else (None, a)


def _unpack_action(cls: Any, state: Any) -> Any:
    if cls is None:
        return state
    obj = cls.__new__(cls)
    obj.__setstate__(state)
    return obj


def pack_decisions(decisions: Sequence[Decision]) -> list[tuple]:
    return [
        (
            d.agent_id,
            [_pack_action(a) for a in d.actions],
            d.stance,
            d.invalid_reason,
            d.raw,
            d.meta,
            d.origin,
            d.reason,
            d.calls,
        )
        for d in decisions
    ]


def unpack_decisions(packed: list[tuple]) -> list[Decision]:
    return [
        Decision(aid, [_unpack_action(c, a) for c, a in acts], st, inv, raw, meta, origin, reason, calls)
        for aid, acts, st, inv, raw, meta, origin, reason, calls in packed
    ]


__all__ = ["pack_decisions", "pack_observations", "unpack_decisions", "unpack_observations"]
