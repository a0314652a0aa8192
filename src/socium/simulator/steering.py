"""What enters a step besides the policy's decisions: the configured seed posts and actions, and the
manual actions, chosen active agents and sign-ups of a step steered from Python (``Simulation.step``).

Checked and built here, before anything of the step changes, so a bad call leaves the world as it
was; kept apart from the loop (:mod:`socium.simulator.simulation`), which only orders them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from socium.config.experiment import ExperimentConfig
from socium.config.moderation import VERACITY
from socium.core.actions import CreatePost, parse_action
from socium.core.contracts import Decision
from socium.errors import UsageError
from socium.platform.state import PlatformState
from socium.simulator.recording import StepRecorder
from socium.simulator.signups import SignUps


def manual_decisions(actions: Mapping[int, Sequence[Any]] | None, n: int) -> list[Decision]:
    """``{agent_id: [Action or action dict, ...]}`` as decisions with ``origin = 'manual'``, in agent-id
    order; :class:`UsageError` naming the agent (of ``n``) or the action that is wrong."""
    out = []
    for agent in sorted(actions or {}):
        if not 0 <= agent < n:
            raise UsageError(f"actions: agent {agent} is not an agent id (population has {n})")
        parsed = []
        for a in actions[agent]:  # type: ignore[index]
            try:
                parsed.append(parse_action(a.model_dump() if hasattr(a, "model_dump") else a))
            except ValueError as exc:
                raise UsageError(f"actions[{agent}]: {a!r} is not a valid action: {exc}") from None
        out.append(Decision(agent, parsed, origin="manual"))
    return out


def chosen_agents(active: Sequence[int], n: int) -> np.ndarray:
    """The agents asked to act this step, sorted and unique; :class:`UsageError` for an id not of ``n``."""
    ids = np.unique(np.asarray(list(active), dtype=np.int64))
    for a in ids.tolist():
        if not 0 <= a < n:
            raise UsageError(f"active: agent {a} is not an agent id (population has {n})")
    return ids


def check_signed_up(
    chosen: np.ndarray | None, state: PlatformState, signups: SignUps, step: int, asked: Sequence[int]
) -> None:
    """:class:`UsageError` naming the ``chosen`` agents that will not have signed up when ``step`` starts
    (neither before, nor by the schedule, nor ``asked`` to now)."""
    if chosen is not None and state.joined is not None:
        will = state.joined.copy()
        will[list(asked) + list(signups.due.get(step, ()))] = True
        if (out := chosen[~will[chosen]]).size:
            raise UsageError(f"active: agent(s) {out.tolist()} have not signed up")


def sign_up_agents(signups: SignUps, state: PlatformState, step: int, asked: Sequence[int], rec: StepRecorder) -> None:
    """Sign up the agents due at ``step`` by the schedule and those ``asked`` from Python, in agent order,
    each recorded (``sign_ups``) with where it came from."""
    st = state
    due = [(a, "schedule") for a in signups.due.get(step, ()) if st.joined is not None and not st.joined[a]]
    who = sorted(due + [(int(a), "manual") for a in asked])
    for agent, origin in who:
        signups.join(st, agent)
        rec.extra.setdefault("sign_ups", {"step": [], "agent_id": [], "origin": []})
        for k, v in (("step", step), ("agent_id", agent), ("origin", origin)):
            rec.extra["sign_ups"][k].append(v)


def seed_decisions(cfg: ExperimentConfig, step: int) -> list[Decision]:
    """The configured seed posts, then seed actions, of ``step`` (``origin = 'seed'``)."""
    seeds = [
        Decision(sp.author, [CreatePost(content=sp.content)], meta=seed_truth(sp), origin="seed")
        for sp in cfg.seed_posts
        if sp.step == step
    ]
    seeds += [
        Decision(sa.agent, [parse_action(sa.action)], origin="seed") for sa in cfg.seed_actions if sa.step == step
    ]
    return seeds


def seed_truth(sp: Any) -> dict[str, int]:
    """A seed post's configured veracity as decision metadata (nothing when it has none)."""
    return {"veracity": VERACITY.index(sp.veracity)} if sp.veracity else {}
