"""Turn one step's happenings into Arrow-ready columns for the trace store."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import pyarrow as pa

from socium.agents.call_log import CallLog
from socium.core.actions import Outcome, action_args
from socium.core.exposure import EXPLANATION_COLUMNS, EXPLANATION_NAMES
from socium.platform.posts import KIND_NAMES
from socium.platform.state import PlatformState
from socium.platform.text import clean_text

TEXT_FIELDS = ("content", "name", "reason", "query")
_ARROW = {
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "INTEGER": pa.int32(),
    "DOUBLE[]": pa.list_(pa.float64()),
}  # Arrow type of each core.exposure.EXPLANATION_COLUMNS type


#: ``json.dumps(args, ensure_ascii=False, sort_keys=True)`` with its encoder built once (``dumps`` builds
#: one per call when given options): the same text.
_ARGS_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


@lru_cache(maxsize=256)
def _text_fields(cls: Any) -> tuple[str, ...]:
    """The :data:`TEXT_FIELDS` an action class has. Why: ``getattr(action, name, None)`` on a pydantic
    model that lacks ``name`` goes through its slow ``__getattr__`` (~5 µs each, four per action)."""
    fields = getattr(cls, "model_fields", None)
    if not isinstance(fields, dict) or getattr(cls, "model_config", {}).get("extra") != "forbid":
        return TEXT_FIELDS  # not a closed pydantic model: ask the object itself
    return tuple(f for f in TEXT_FIELDS if f in fields)


def clean_action(action: Any, max_chars: int) -> tuple[Any, bool, bool]:
    """Bound and sanitise every free-text field of an action before it is applied or recorded."""
    update: dict[str, str] = {}
    truncated = sanitized = False
    for f in _text_fields(action.__class__):
        v = getattr(action, f, None)
        if isinstance(v, str):
            limit = max_chars if f == "content" else min(max_chars, 500)
            ct = clean_text(v, limit)
            if ct.text != v:
                update[f] = ct.text
            truncated |= ct.truncated
            sanitized |= ct.sanitized
    return (action.model_copy(update=update) if update else action), truncated, sanitized


@dataclass
class StepRecorder:
    step: int
    actions: dict[str, list] = field(
        default_factory=lambda: {
            k: []
            for k in ("step", "agent_id", "seq", "origin", "type", "args", "outcome", "reason", "post_id", "rationale")
        }
    )
    exposures: dict[str, list] = field(
        default_factory=lambda: {k: [] for k in ("step", "agent_id", "post_id", "rank", "source")}
    )
    explained: dict[str, list] | None = None  # EXPLANATION_COLUMNS, once some feed explained itself
    stances: dict[str, list] = field(default_factory=lambda: {"step": [], "agent_id": [], "stance": []})
    extra: dict[str, dict[str, list]] = field(default_factory=dict)
    flags: dict[int, tuple[bool, bool]] = field(default_factory=dict)
    calls: CallLog = field(default_factory=CallLog)  # compacted as the step goes (see CallLog)
    surveys: dict[str, list] = field(
        default_factory=lambda: {
            k: [] for k in ("step", "agent_id", "question", "answer", "value", "reason", "outcome", "stated_value")
        }
    )

    def action(
        self,
        agent: int,
        origin: str,
        action: Any,
        outcome: Outcome,
        rationale: str | None = None,
        args: dict[str, Any] | None = None,
    ) -> None:
        """One ``actions`` row; ``args``: the action's :func:`~socium.core.actions.action_args` when the
        caller already has them."""
        a = self.actions
        a["step"].append(self.step)
        a["agent_id"].append(agent)
        a["seq"].append(len(a["seq"]))
        a["origin"].append(origin)
        a["type"].append(action.type)
        a["args"].append(_ARGS_JSON(action_args(action) if args is None else args))
        a["outcome"].append(outcome.status)
        a["reason"].append(outcome.reason)
        a["post_id"].append(outcome.post_id)
        a["rationale"].append(rationale)

    def invalid_output(self, agent: int, origin: str, reason: str, raw: str | None) -> None:
        a = self.actions
        for k, v in (
            ("step", self.step),
            ("agent_id", agent),
            ("seq", len(a["seq"])),
            ("origin", origin),
            ("type", "invalid_llm_output"),
            ("args", json.dumps({"raw": clean_text(raw or "", 2000).text}, ensure_ascii=False)),
            ("outcome", "invalid_llm_output"),
            ("reason", clean_text(reason, 1000).text),
            ("post_id", None),
            ("rationale", None),
        ):
            a[k].append(v)

    def exposure(
        self,
        agent: int,
        post_ids: tuple[int, ...] | list[int],
        source: str | tuple[str, ...],
        explain: tuple[tuple[Any, ...], ...] | None = None,
    ) -> None:
        e = self.exposures
        n = len(post_ids)
        if explain is not None and self.explained is None:  # the first explained feed: earlier rows get NULLs
            self.explained = {name: [None] * len(e["step"]) for name in EXPLANATION_NAMES}
        e["step"].extend([self.step] * n)
        e["agent_id"].extend([agent] * n)
        e["post_id"].extend(post_ids)
        e["rank"].extend(range(n))
        e["source"].extend([source] * n if isinstance(source, str) else source)
        if self.explained is not None:
            for j, name in enumerate(EXPLANATION_NAMES):
                self.explained[name].extend([row[j] for row in explain] if explain is not None else [None] * n)

    def withdraw_exposures(self, agent: int, posts: list[tuple[int, str]] | list[list[Any]]) -> None:
        """Remove ``agent``'s exposure rows of these (post id, source) pairs: a policy dropped them from
        its prompt to fit the model's context (script mode), so they were never in front of it."""
        gone = {(int(p), str(s)) for p, s in posts}
        e = self.exposures
        keep = [
            i
            for i, (a, p, s) in enumerate(zip(e["agent_id"], e["post_id"], e["source"]))
            if a != agent or (p, s) not in gone
        ]
        if len(keep) < len(e["step"]):
            for k, col in e.items():
                e[k] = [col[i] for i in keep]
            if self.explained is not None:
                for k, col in self.explained.items():
                    self.explained[k] = [col[i] for i in keep]

    def _exposure_batch(self) -> pa.Table:
        """The step's exposures; with the explanation columns only if some feed explained itself."""
        tbl = _typed(self.exposures, {"post_id": pa.int64(), "rank": pa.int16()})
        if self.explained is None:
            return tbl
        for name, typ in EXPLANATION_COLUMNS:
            tbl = tbl.append_column(name, pa.array(self.explained[name], type=_ARROW[typ]))
        return tbl

    def stance(self, agent: int, value: float) -> None:
        self.stances["step"].append(self.step)
        self.stances["agent_id"].append(agent)
        self.stances["stance"].append(float(value))

    def batches(self, state: PlatformState) -> dict[str, pa.Table | dict[str, list]]:
        ev = state.events
        p = state.posts
        ids = range(ev.first_post, len(p))
        flags = {**ev.post_flags, **self.flags}
        posts: dict[str, list] = {
            "post_id": list(ids),
            "step": [int(p.get("step", i)) for i in ids],
            "time_s": [float(p.col("time")[i]) for i in ids],
            "author": [p.get("author", i) for i in ids],
            "kind": [KIND_NAMES[p.get("kind", i)] for i in ids],
            "parent_id": [(lambda x: None if x < 0 else x)(p.get("parent", i)) for i in ids],
            "root_id": [p.get("root", i) for i in ids],
            "content": [p.text[i] for i in ids],
            "truncated": [flags.get(i, (False, False))[0] for i in ids],
            "sanitized": [flags.get(i, (False, False))[1] for i in ids],
        }
        follows = {
            "step": [self.step] * len(ev.follows),
            "seq": list(range(len(ev.follows))),
            "src": [f[0] for f in ev.follows],
            "dst": [f[1] for f in ev.follows],
            "event": [f[2] for f in ev.follows],
        }
        groups = {
            "group_id": [g[0] for g in ev.groups],
            "step": [self.step] * len(ev.groups),
            "creator": [g[1] for g in ev.groups],
            "name": [g[2] for g in ev.groups],
        }
        msgs = {
            "step": [self.step] * len(ev.group_messages),
            "seq": list(range(len(ev.group_messages))),
            "group_id": [m[0] for m in ev.group_messages],
            "agent_id": [m[1] for m in ev.group_messages],
            "content": [m[2] for m in ev.group_messages],
        }
        out: dict[str, Any] = {
            "posts": _typed(posts, {"parent_id": pa.int64(), "post_id": pa.int64(), "root_id": pa.int64()}),
            "actions": _typed(self.actions, {"post_id": pa.int64(), "reason": pa.string(), "rationale": pa.string()}),
            "exposures": self._exposure_batch(),
            "stances": self.stances,
            "follow_events": _typed(follows, {"event": pa.int8()}),
            "groups": groups,
            "group_messages": msgs,
            "surveys": _typed(
                self.surveys,
                {
                    "value": pa.float64(),
                    "answer": pa.string(),
                    "reason": pa.string(),
                    "outcome": pa.string(),
                    "stated_value": pa.float64(),
                },
            ),
        }
        out.update(self.extra)
        return out


def _typed(cols: dict[str, list], types: dict[str, pa.DataType]) -> pa.Table:
    return pa.table({k: pa.array(v, type=types.get(k)) for k, v in cols.items()})
