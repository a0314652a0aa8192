"""CPU the action table's marks add to one LLM activation: the platform's marks on the shown ids
(``perspectives.target_marks``) plus the narrowed ids (``answer_validation.state_aware_ids``), then the
one-action schema (``action_prompts.action_schema``), on observations of a busy world.

    python benchmarks/bench_action_marks.py [--agents 2000] [--posts 20000] [--feed 5 10 20] [--reps 2000]

The world: ``--agents`` users, ``--posts`` posts (a third of them reposts / quotes of earlier posts), random
likes, dislikes and follows; each observation shows ``feed`` posts (with what they share) and their
authors. Offered actions: the 'x' default list, and every action. Prints microseconds per activation.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time

import numpy as np

from socium.agents.action_prompts import action_schema
from socium.agents.answer_validation import state_aware_ids
from socium.agents.perspectives import feed_item, shared_chain, target_marks
from socium.core import actions as A
from socium.core.contracts import Observation
from socium.platform.graph import FollowIndex
from socium.platform.state import PlatformState


def world(n: int, n_posts: int, seed: int = 0) -> PlatformState:
    rng = random.Random(seed)
    src = np.array([rng.randrange(n) for _ in range(n * 10)], np.int64)
    dst = np.array([rng.randrange(n) for _ in range(n * 10)], np.int64)
    keep = src != dst
    st = PlatformState(n, FollowIndex.from_edges(src[keep], dst[keep], n), usernames=[f"u{i}" for i in range(n)])
    st.begin_step(0, 0.0)
    for i in range(n_posts):
        a = rng.randrange(n)
        if i > 10 and rng.random() < 0.33:
            p = rng.randrange(i)
            st.apply(a, A.Repost(post_id=p) if rng.random() < 0.5 else A.QuotePost(post_id=p, content="q"))
        else:
            st.apply(a, A.CreatePost(content=f"post {i}"))
        st.apply(rng.randrange(n), (A.LikePost if rng.random() < 0.7 else A.DislikePost)(post_id=rng.randrange(i + 1)))
    return st


def observations(st: PlatformState, feed: int, k: int, seed: int = 1) -> list[Observation]:
    rng = random.Random(seed)
    names, stance = st.usernames or [], np.zeros(st.n_users)
    out = []
    for _ in range(k):
        agent = rng.randrange(st.n_users)
        ids = rng.sample(range(len(st.posts)), feed)
        o = Observation(agent, 0, 0.0, 9, [feed_item(st, names, stance, agent, p, "x", r) for r, p in enumerate(ids)])
        for it in o.feed:
            it.shared, it.shared_more = shared_chain(st, names, it.post_id, 2)
        out.append(o)
    return out


def before_table(st: PlatformState, o: Observation) -> dict[str, list[int]]:
    """What the ids narrowing cost before the action table: the followees among the shown users (one
    vectorised lookup) and the feed items' liked / disliked / own flags (the previous state_aware_ids)."""
    posts, users = o.shown_posts(), o.shown_users()
    following = set(st.follows.following_among(o.agent_id, users))
    liked = {it.post_id for it in o.feed if it.liked}
    disliked = {it.post_id for it in o.feed if it.disliked}
    own = {it.post_id for it in o.feed if it.author == o.agent_id}
    for it in o.feed:
        mine = {s.post_id for s in it.shared if s.author == o.agent_id}
        own |= mine | ({it.post_id} if mine else set())
    return {
        "like_post": sorted(posts - liked),
        "unlike_post": sorted(liked),
        "dislike_post": sorted(posts - disliked),
        "undo_dislike_post": sorted(disliked),
        "repost": sorted(posts - own),
        "follow": sorted(users - following),
        "unfollow": sorted(following),
    }


def per_activation_us(
    st: PlatformState, obs: list[Observation], offered: tuple[str, ...], rounds: int = 5
) -> tuple[float, float, float]:
    """Best of ``rounds`` interleaved rounds (the machine is shared): before, marks + ids, whole schema."""
    best = [float("inf")] * 3
    for _ in range(rounds):
        t0 = time.perf_counter()
        for o in obs:
            before_table(st, o)
        t1 = time.perf_counter()
        for o in obs:  # as fill_observation, then LLMPolicy.action_schema (which has the shown sets) do
            o.marks = target_marks(st, o, offered)
            state_aware_ids(o, offered, o.shown_posts(), o.shown_users())
        t2 = time.perf_counter()
        for o in obs:
            ids = state_aware_ids(o, offered)
            action_schema(offered, sorted(o.shown_posts()), sorted(o.shown_users()), 280, ids_for=ids)
        t3 = time.perf_counter()
        for j, dt in enumerate((t1 - t0, t2 - t1, t3 - t2)):
            best[j] = min(best[j], dt / len(obs) * 1e6)
    return best[0], best[1], best[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--posts", type=int, default=20000)
    ap.add_argument("--feed", type=int, nargs="+", default=[5, 10, 20])
    ap.add_argument("--reps", type=int, default=500)
    a = ap.parse_args()
    st = world(a.agents, a.posts)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"load {open('/proc/loadavg').read().split()[:3]}; {a.agents} agents, {a.posts} posts"
    )
    print("| offered | feed | before: followees + flags (us) | marks + narrowed ids (us) | schema from them (us) |")
    print("| --- | --- | --- | --- | --- |")
    for name, offered in (
        ("x default (8)", A.DEFAULT_LLM_ACTIONS["x"]),
        (f"all ({len(A.ACTION_TYPES)})", A.PRESET_ACTIONS["x"]),
    ):
        for feed in a.feed:
            obs = observations(st, feed, a.reps)
            b, m, s = per_activation_us(st, obs, offered)
            print(f"| {name} | {feed} | {b:.1f} | {m:.1f} | {s:.1f} |")


if __name__ == "__main__":
    main()
