"""The random actor's herding positive control: votes lean toward the visible score's sign only when asked."""

from __future__ import annotations

from socium.agents.rules import RandomPolicy
from socium.config.agents import PolicyConfig
from socium.core.actions import DislikePost, LikePost
from socium.core.contracts import FeedItem, Observation


def _rates(herding: float, likes: int, dislikes: int, n: int = 4000) -> tuple[float, float]:
    """Share of agents that like / dislike one post with the given visible counts."""
    cfg = PolicyConfig(kind="random", p_post=0.0, p_repost=0.0, p_like=0.2, p_dislike=0.1, herding=herding)
    pol = RandomPolicy(cfg, seed=5)
    item = FeedItem(post_id=1, author=0, kind="post", text="x", root_id=1, likes=likes, dislikes=dislikes,
                    reposts=0, comments=0, source="random", rank=0)  # fmt: skip
    like = dislike = 0
    for agent in range(1, n + 1):
        acts = pol.decide(Observation(agent_id=agent, step=1, time_s=0.0, hour=0, feed=[item])).actions
        like += any(isinstance(a, LikePost) for a in acts)
        dislike += any(isinstance(a, DislikePost) for a in acts)
    return like / n, dislike / n


def test_null_is_blind_to_score():
    up, down = _rates(0.0, 3, 1), _rates(0.0, 1, 3)
    assert up == down  # same random streams, same rates: the score is not read at all


def test_positive_control_follows_the_score():
    pos_like, pos_dislike = _rates(0.8, 3, 1)
    neg_like, neg_dislike = _rates(0.8, 1, 3)
    zero_like, _ = _rates(0.8, 2, 2)
    # expected like 0.36 / 0.2 / 0.04; dislike (after no like) 0.02*0.64 vs 0.18*0.96
    assert pos_like > zero_like + 0.1 > neg_like + 0.2
    assert neg_dislike > pos_dislike + 0.1


def test_rates_are_capped_at_one():
    cfg = PolicyConfig(kind="random", p_like=0.9, p_dislike=0.9, herding=1.0)
    pol = RandomPolicy(cfg, seed=0)
    assert pol._vote_rates(5) == (1.0, 0.0)
    assert pol._vote_rates(-5) == (0.0, 1.0)
