"""Rule-based null models: what a simple mechanism gives on the same platform, graph and seeds.

Each policy is a pure function of the observation and a per-(agent, step) random stream, so the
same run is reproduced exactly whether agents run in-process or sharded on Ray actors.
"""

from __future__ import annotations

import numpy as np

from socium.config.agents import PolicyConfig
from socium.core.actions import CreatePost, DislikePost, LikePost, Repost
from socium.core.contracts import Decision, Observation
from socium.core.rng import POLICY, agent_rng, root_key, uniform

_WORDS = ("news", "today", "think", "people", "great", "new", "why", "world", "update", "read", "opinion", "thread")


def _chatter(rng: np.random.Generator, interests: list[str] | None = None) -> str:
    words = list(rng.choice(_WORDS, size=int(rng.integers(3, 8))))
    if interests:
        words.append("#" + interests[int(rng.integers(len(interests)))])
    return " ".join(words)


class RulePolicy:
    """Base: holds the run seed and config; subclasses implement :meth:`decide`."""

    needs_adoption = False
    needs_stance = False

    def __init__(self, cfg: PolicyConfig, seed: int) -> None:
        self.cfg = cfg
        self.seed = seed

    def rng(self, obs: Observation) -> np.random.Generator:
        return agent_rng(self.seed, POLICY, obs.agent_id, obs.step)

    def decide(self, obs: Observation) -> Decision:  # pragma: no cover - abstract
        raise NotImplementedError


class RandomPolicy(RulePolicy):
    """Posts, likes (and, if ``p_dislike`` > 0, dislikes) and reposts at fixed rates regardless of
    content or visible score: the no-mechanism baseline, and the random-voting null for herding.

    With ``herding`` > 0 the vote rates lean toward the sign of the visible score: a known herding
    mechanism, so that a herding design can be checked for finding an effect that is there (a
    positive control), not only for finding none where there is none."""

    def _vote_rates(self, score: int) -> tuple[float, float]:
        h = self.cfg.herding if score > 0 else -self.cfg.herding if score < 0 else 0.0
        return min(1.0, self.cfg.p_like * (1 + h)), min(1.0, self.cfg.p_dislike * (1 - h))

    def decide(self, obs: Observation) -> Decision:
        rng = self.rng(obs)
        acts: list = []
        if rng.random() < self.cfg.p_post:
            acts.append(CreatePost(content=_chatter(rng)))
        for item in obs.feed:
            p_like, p_dislike = self._vote_rates(item.likes - item.dislikes)
            if not item.liked and not item.disliked and rng.random() < p_like:
                acts.append(LikePost(post_id=item.post_id))
            elif p_dislike and not item.liked and not item.disliked and rng.random() < p_dislike:
                acts.append(DislikePost(post_id=item.post_id))
            if not item.adopted and item.kind != "comment" and rng.random() < self.cfg.p_repost:
                acts.append(Repost(post_id=item.post_id))
        return Decision(obs.agent_id, acts)


class IndependentCascadePolicy(RulePolicy):
    """Each exposure of a not-yet-adopted cascade is one independent trial with probability p_repost.

    (Repeated exposures are repeated trials; the per-exposure probability is what
    ``experiments`` fits from an LLM run's reshare rate.)
    """

    def decide(self, obs: Observation) -> Decision:
        rng = self.rng(obs)
        acts: list = []
        seen_roots: set[int] = set()
        for item in obs.feed:
            if item.adopted or item.root_id in seen_roots:
                continue
            seen_roots.add(item.root_id)
            if rng.random() < self.cfg.p_repost:
                acts.append(Repost(post_id=item.post_id))
        if self.cfg.p_post and rng.random() < self.cfg.p_post:
            acts.append(CreatePost(content=_chatter(rng)))
        return Decision(obs.agent_id, acts)


class ThresholdPolicy(RulePolicy):
    """Linear threshold: adopt once the fraction of followees who adopted reaches a personal threshold."""

    needs_adoption = True

    def theta(self, agent_id: int) -> float:
        u = float(uniform(root_key(self.seed), POLICY, 0, np.array([agent_id]), sub=7)[0])
        t = self.cfg.threshold + self.cfg.threshold_spread * (2 * u - 1)
        return min(max(t, 0.0), 1.0)

    def decide(self, obs: Observation) -> Decision:
        theta = self.theta(obs.agent_id)
        acts: list = []
        roots: set[int] = set()
        for item in obs.feed:
            if item.adopted or item.root_id in roots:
                continue
            if item.adoption >= theta and item.adoption > 0:
                roots.add(item.root_id)
                acts.append(Repost(post_id=item.post_id))
        rng = self.rng(obs)
        if self.cfg.p_post and rng.random() < self.cfg.p_post:
            acts.append(CreatePost(content=_chatter(rng)))
        return Decision(obs.agent_id, acts)


class BoundedConfidencePolicy(RulePolicy):
    """Deffuant-style: move toward each exposed author whose stance is within epsilon; post when moved.

    One-sided (only the reader updates), because on a feed-driven platform the author does not see
    the reader; this is the usual adaptation of Deffuant et al. (2000) to broadcast media.
    """

    needs_stance = True

    def decide(self, obs: Observation) -> Decision:
        x0 = 0.0 if obs.stance is None else obs.stance
        x = x0
        for item in obs.feed:
            xj = item.author_stance
            if xj is None or item.author == obs.agent_id:
                continue
            if abs(xj - x) < self.cfg.epsilon:
                x += self.cfg.mu * (xj - x)
        x = float(np.clip(x, -1.0, 1.0))
        acts: list = []
        rng = self.rng(obs)
        if abs(x - x0) >= self.cfg.post_on_change or rng.random() < self.cfg.p_post:
            acts.append(CreatePost(content=f"My view on the issue: {x:+.2f}"))
        return Decision(obs.agent_id, acts, stance=x if x != x0 else None)


RULE_POLICIES: dict[str, type[RulePolicy]] = {
    "random": RandomPolicy,
    "independent_cascade": IndependentCascadePolicy,
    "threshold": ThresholdPolicy,
    "bounded_confidence": BoundedConfidencePolicy,
}
