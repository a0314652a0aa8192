"""The intervention layer the simulator holds: roles, veracity, the strategy and its consequences.

Hooks, in step order (see ``Simulation.advance``):

1. :meth:`ModerationLayer.split` -- bots leave the policy's batch and act by their fixed rule;
2. :meth:`annotate` -- what users see: label/note lines under judged posts, the ground truth for the
   perspectives allowed to see it, the prebunking line or pinned post;
3. :meth:`extra_decisions` -- fact-checkers' reports, applied after the policy's decisions;
4. :meth:`after_actions` -- veracity of the step's new posts, then the strategy judges and the
   platform's consequences follow (down-rank, remove, strike, suspend). Everything is returned as
   rows of ``post_veracity`` and ``moderation_events`` for the step's one transaction, and takes
   effect from the next step.

Resume calls :meth:`replay` per step with the recorded rows, which rebuilds the marks exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from socium.config.moderation import ROLES, VERACITY, ModerationConfig, RolesConfig
from socium.core.contracts import Decision, Observation
from socium.core.perspective import sees_environment_facts
from socium.core.rng import uniform
from socium.moderation.base import ModerationContext
from socium.moderation.feeds import ModeratedRecommender
from socium.moderation.registry import make_moderator
from socium.moderation.roles import (
    BOT,
    FACT_CHECKER,
    SPREADER,
    assign_roles,
    bot_decision,
    fact_checker_reports,
    post_veracity,
)
from socium.platform.marks import ModerationEvent

EVENT_COLUMNS = ("step", "seq", "event", "post_id", "agent_id", "source", "detail")
EVENT_TYPES = {
    "step": pa.int32(),
    "seq": pa.int32(),
    "event": pa.string(),
    "post_id": pa.int64(),
    "agent_id": pa.int64(),
    "source": pa.string(),
    "detail": pa.string(),
}
PREBUNK_DRAW = 10  # random-stream purpose of the prebunked-agent draw


class ModerationLayer:
    """Everything the intervention layer adds to a run, built from ``roles`` and ``moderation``."""

    def __init__(self, mcfg: ModerationConfig, rcfg: RolesConfig, n: int, key: int, perspective: str) -> None:
        self.cfg, self.rcfg, self.key, self.n = mcfg, rcfg, key, n
        self.roles = assign_roles(rcfg, n, key)
        self.moderator = make_moderator(mcfg.kind, mcfg.params)
        self.show_truth = sees_environment_facts(perspective, mcfg.veracity_visible_to)  # the perspective table
        pb = mcfg.prebunk
        self.prebunk_targets = (
            np.flatnonzero(uniform(key, PREBUNK_DRAW, 0, np.arange(n)) < pb.fraction)
            if pb.fraction > 0
            else np.zeros(0, np.int64)
        )
        self.seed_veracity: dict[int, int] = {}  # post id -> code, for this step's seed posts

    @property
    def enabled(self) -> bool:
        """Anything beyond recording veracity (a plain run keeps its feeds byte-identical)."""
        return self.cfg.active or bool(self.roles.any())

    def wrap(self, rec: Any) -> Any:
        """Every recommender honours removals, suspensions and down-ranking through this wrapper."""
        return ModeratedRecommender(rec) if self.cfg.kind != "none" else rec

    def goal_for(self, agent: int, goal: str | None) -> str | None:
        """The private goal an LLM agent of a role gets when its profile has none."""
        if goal:
            return goal
        r = int(self.roles[agent])
        return self.rcfg.spreader_goal if r == SPREADER else self.rcfg.fact_checker_goal if r == FACT_CHECKER else goal

    # ---- before the policy ------------------------------------------------------------------
    def split(self, obs: list[Observation], state: Any) -> tuple[list[Observation], list[Decision]]:
        """Bots act by their fixed rule and are not sent to the policy (no LLM call for them)."""
        if not (self.roles == BOT).any():
            return obs, []
        ver = state.posts.col("veracity")
        bots = [o for o in obs if self.roles[o.agent_id] == BOT]
        return [o for o in obs if self.roles[o.agent_id] != BOT], [
            bot_decision(o, ver, self.rcfg.bot_reposts) for o in bots
        ]

    def policy_bound(self, agents: np.ndarray) -> np.ndarray:
        """Which of ``agents`` the policy decides for (bots act by rule): a boolean mask."""
        return self.roles[agents] != BOT

    def needed_after_actions(self, o: Observation) -> bool:
        """Whether :meth:`extra_decisions` or :meth:`after_actions` reads this observation (a step
        decided in chunks keeps only these: fact-checkers' views, prebunking shown)."""
        return bool(self.roles[o.agent_id] == FACT_CHECKER) or o.prebunk_shown is not None

    def annotate(self, obs: list[Observation], state: Any) -> None:
        """Add what a user would see: labels and notes (``platform`` shows them), ground truth only
        for perspectives in ``moderation.veracity_visible_to``, and prebunking for inoculated agents."""
        m, ver = state.mod, state.posts.col("veracity")
        step = obs[0].step if obs else 0
        pb = self.cfg.prebunk
        for o in obs:
            items = [*o.feed, *o.results, *o.global_feed]
            for it in items:
                lines = self.lines(state, it.post_id, ver)
                if lines and hasattr(it, "notes"):
                    it.notes.extend(x for x in lines if x not in it.notes)
            if pb.fraction > 0 and pb.mode == "prompt" and o.agent_id in m.prebunked:
                o.platform_notice = pb.text
            if pb.fraction > 0 and pb.mode == "post" and o.agent_id in m.prebunked and o.agent_id not in m.pinned_done:
                o.platform_notice = pb.text
                o.prebunk_shown = step

    def lines(self, state: Any, post: int, ver: np.ndarray) -> list[str]:
        """The lines shown under a post: its (or its root's) label and note, and the truth if allowed."""
        m = state.mod
        root = state.posts.get("root", post)
        out = []
        if self.cfg.show_labels:
            for marks, tag in ((m.labels, "Label"), (m.notes, "Community note")):
                text = marks.get(post) or marks.get(root)
                if text:
                    out.append(f"{tag}: {text}")
        if self.show_truth and ver[post]:
            out.append(f"Ground truth (known to you, not to ordinary users): this post is {VERACITY[int(ver[post])]}")
        return out

    # ---- after the policy -------------------------------------------------------------------
    def extra_decisions(self, obs: list[Observation], state: Any) -> list[Decision]:
        if not self.rcfg.fact_checker_reports or not (self.roles == FACT_CHECKER).any():
            return []
        ver = state.posts.col("veracity")
        out = [fact_checker_reports(o, ver, state.reported) for o in obs if self.roles[o.agent_id] == FACT_CHECKER]
        return [d for d in out if d is not None]

    def after_actions(
        self, state: Any, step: int, stance: np.ndarray, first_post: int, shown: Sequence[Observation] = ()
    ) -> dict[str, dict[str, list]]:
        """Veracity of new posts, the strategy's verdicts and their consequences, as trace rows."""
        p = state.posts
        ver_rows: dict[str, list] = {"post_id": [], "veracity": []}
        for pid in range(first_post, len(p)):
            code = self.seed_veracity.get(pid)
            if code is None:
                code = post_veracity(
                    p.get("kind", pid), int(self.roles[p.get("author", pid)]), p.get("veracity", p.get("root", pid))
                )
            p.set("veracity", pid, code)
            if code:
                ver_rows["post_id"].append(pid)
                ver_rows["veracity"].append(VERACITY[code])
        self.seed_veracity.clear()
        out: dict[str, dict[str, list]] = {"post_veracity": ver_rows}
        if step == 0 and self.roles.any():
            who = np.flatnonzero(self.roles).tolist()
            out["agent_roles"] = {"agent_id": who, "role": [ROLES[int(self.roles[a])] for a in who]}
        events: list[ModerationEvent] = []
        pb = self.cfg.prebunk
        if pb.fraction > 0 and step == pb.step:
            events += [
                ModerationEvent("prebunk", agent_id=int(a), source="prebunk", detail=pb.mode)
                for a in self.prebunk_targets.tolist()
            ]
        events += [
            ModerationEvent("prebunk", agent_id=o.agent_id, source="prebunk", detail="shown")
            for o in shown
            if o.prebunk_shown is not None
        ]
        judged = self.moderator.moderate(ModerationContext(state, step, self.key, stance))
        events += judged
        events += self.consequences(state, judged)
        rows: dict[str, list[Any]] = {k: [] for k in EVENT_COLUMNS}
        for e in events:
            state.mod.apply(e, step)
            for k, v in zip(
                EVENT_COLUMNS, (step, len(rows["seq"]), e.event, e.post_id, e.agent_id, e.source, e.detail)
            ):
                rows[k].append(v)
        out["moderation_events"] = pa.table({k: pa.array(v, type=EVENT_TYPES[k]) for k, v in rows.items()})
        return out

    def consequences(self, state: Any, judged: list[ModerationEvent]) -> list[ModerationEvent]:
        """What the platform does with newly judged posts, the same whichever strategy judged them."""
        c, m = self.cfg, state.mod
        out: list[ModerationEvent] = []
        strikes = dict(m.strikes)
        done: set[int] = set()
        suspended_now: set[int] = set()
        for e in judged:
            if e.event not in ("label", "note") or e.post_id is None or e.post_id in done or m.judged(e.post_id):
                continue
            done.add(e.post_id)
            if c.downrank < 1:
                out.append(ModerationEvent("downrank", e.post_id, source="platform", detail=f"{c.downrank:g}"))
            if c.remove:
                out.append(ModerationEvent("remove", e.post_id, source="platform"))
            author = state.posts.get("author", e.post_id)
            if not c.suspend_after or author in m.suspended or author in suspended_now:
                continue
            strikes[author] = strikes.get(author, 0) + 1
            out.append(ModerationEvent("strike", e.post_id, author, source="platform", detail=str(strikes[author])))
            if strikes[author] >= c.suspend_after:
                out.append(ModerationEvent("suspend", e.post_id, author, source="platform"))
                suspended_now.add(author)
        return out

    # ---- resume -----------------------------------------------------------------------------
    def replay(self, state: Any, step: int, events: Any) -> None:
        """Re-apply one committed step's moderation events, after its actions, as the live run did."""
        for event, post_id, agent_id, source, detail in events:
            state.mod.apply(ModerationEvent(event, post_id, agent_id, source, detail or ""), step)

    def restore_veracity(self, state: Any, recorded: Iterable[tuple[int, str]]) -> None:
        """Posts' ground truth as recorded, ``(post_id, veracity)`` rows (only strategies' future verdicts
        and bots read it)."""
        for pid, v in recorded:
            if 0 <= pid < len(state.posts):
                state.posts.set("veracity", int(pid), VERACITY.index(v))

    def apply_goals(self, population: Any) -> None:
        """Spreaders and fact-checkers without a goal of their own get their role's goal."""
        goals = getattr(population, "goals", None)
        if goals is None:
            return
        for a in np.flatnonzero(np.isin(self.roles, (SPREADER, FACT_CHECKER))).tolist():
            goals[a] = self.goal_for(a, goals[a])


def role_names(roles: np.ndarray) -> list[str]:
    return [ROLES[int(r)] for r in roles]


__all__ = [
    "ModerationLayer",
    "role_names",
]
