"""Agent roles (ordinary, misinformation spreader, fact-checker, bot) and the ground truth of posts.

Roles are a column drawn once from the run's seed (or pinned by id), so the same agents hold the same
roles in every condition of an intervention study. A role changes three things: the veracity of the
agent's own original posts (a spreader's are false, a fact-checker's true), the private goal an LLM
agent gets when it has none, and -- for bots and fact-checkers -- fixed behaviour on top of (bots:
instead of) the policy, so the same amplification happens under an LLM population and its null.
"""

from __future__ import annotations

import numpy as np

from socium.config.moderation import ROLES, VERACITY, RolesConfig
from socium.core.actions import Action, ReportPost, Repost
from socium.core.contracts import Decision, Observation
from socium.core.rng import uniform
from socium.errors import ConfigError
from socium.platform.posts import COMMENT, ORIGINAL

ROLE_DRAW = 9  # random-stream purpose of role draws
ORDINARY, SPREADER, FACT_CHECKER, BOT = range(4)
FALSE, TRUE, UNKNOWN = VERACITY.index("false"), VERACITY.index("true"), 0


def assign_roles(cfg: RolesConfig, n: int, key: int) -> np.ndarray:
    """One role code per agent: a seeded draw by the configured fractions, then the pinned ids."""
    u = uniform(key, ROLE_DRAW, 0, np.arange(n))
    roles = np.zeros(n, dtype=np.int8)
    edges = np.cumsum([cfg.spreader, cfg.fact_checker, cfg.bot])
    for code, lo, hi in ((SPREADER, 0.0, edges[0]), (FACT_CHECKER, edges[0], edges[1]), (BOT, edges[1], edges[2])):
        roles[(u >= lo) & (u < hi)] = code
    for name, ids in cfg.agents.items():
        for a in ids:
            if not 0 <= a < n:
                raise ConfigError(f"roles.agents.{name}: {a} is not an agent id (population has {n})")
            roles[a] = ROLES.index(name)
    return roles


def post_veracity(kind: int, author_role: int, root_veracity: int) -> int:
    """Ground truth of a new post: reposts and quotes carry their root's, comments none, originals the
    author's role's (spreader: false, fact-checker: true, others: unknown)."""
    if kind == COMMENT:
        return UNKNOWN
    if kind != ORIGINAL:
        return root_veracity
    return FALSE if author_role == SPREADER else TRUE if author_role == FACT_CHECKER else UNKNOWN


def bot_decision(obs: Observation, veracity: np.ndarray, max_reposts: int) -> Decision:
    """A bot's fixed behaviour: repost the first false posts in its feed it has not shared yet."""
    acts: list[Action] = []
    roots: set[int] = set()
    for it in obs.feed:
        if len(acts) >= max_reposts:
            break
        if it.adopted or it.root_id in roots or it.author == obs.agent_id or veracity[it.post_id] != FALSE:
            continue
        roots.add(it.root_id)
        acts.append(Repost(post_id=it.post_id))
    return Decision(obs.agent_id, acts, origin="bot")


def fact_checker_reports(obs: Observation, veracity: np.ndarray, reported: set[tuple[int, int]]) -> Decision | None:
    """A fact-checker reports every false post in its feed it has not reported yet."""
    acts: list[Action] = [
        ReportPost(post_id=it.post_id, reason="false information")
        for it in obs.feed
        if veracity[it.post_id] == FALSE and (obs.agent_id, it.post_id) not in reported
    ]
    return Decision(obs.agent_id, acts, origin="fact_checker") if acts else None
