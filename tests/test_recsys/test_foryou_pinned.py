"""foryou's feeds pinned to a digest (issue 39's speed-up must not change a single exposure).

A seeded world of 300 agents with follows, likes, reposts, blocks, mutes and posts marked not
interested; three steps of feeds (each step's exposures served back, so the already-seen filter and
impressions count), for each re-ranker. The digest covers every feed's post ids, order, sources and
explanation rows (scores to the last bit, via ``repr`` of the floats). A change in any of them is a
change in what agents see, so it must be a deliberate one: update the digest and say why.
"""

import hashlib

import numpy as np
import pytest

from socium.core import actions as A
from socium.platform.graph import FollowIndex
from socium.platform.posts import ORIGINAL, REPOST
from socium.platform.state import PlatformState
from socium.recsys.foryou import ForYouRecommender

WORDS = "match goal league vote city recipe garlic sauce rain storm film album chess code rust piano".split()


def seeded_world(n_users: int = 300, n_posts: int = 3000, seed: int = 7) -> tuple[PlatformState, list[str]]:
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(n_users), 8)
    dst = rng.integers(0, n_users, len(src))
    st = PlatformState(n_users, FollowIndex.from_edges(src, dst, n_users))
    topic = rng.integers(0, len(WORDS), n_users)
    steps = np.sort(rng.integers(0, 48, n_posts))
    authors = rng.integers(0, n_users, n_posts)
    p = st.posts
    for i in range(n_posts):
        s = int(steps[i])
        if i > 10 and rng.random() < 0.15:  # a repost of an earlier post
            parent = int(rng.integers(0, i))
            p.add(int(authors[i]), s, s * 3600.0, REPOST, parent, int(p.col("root")[parent]), "")
            continue
        t = WORDS[topic[authors[i]]] if rng.random() < 0.8 else WORDS[rng.integers(0, len(WORDS))]
        text = " ".join([t, *rng.choice(WORDS, 4).tolist(), t])
        p.add(int(authors[i]), s, s * 3600.0, ORIGINAL, -1, -1, text)
    p._cols["likes"][:n_posts] = rng.poisson(1.0, n_posts)
    st.begin_step(47, 47 * 3600.0)
    for u in range(0, n_users, 7):  # negative feedback through the platform's own actions
        assert st.apply(u, A.Block(user_id=int((u * 13 + 1) % n_users))).ok
        assert st.apply(u, A.NotInterested(post_id=int(rng.integers(0, n_posts)))).ok
    for u in range(3, n_users, 11):
        st.mutes.setdefault(u, set()).add(int((u * 5 + 2) % n_users))
    profiles = [" ".join([WORDS[t], WORDS[(t + 1) % len(WORDS)]]) for t in topic]
    return st, profiles


def feeds_digest(rerank: str, n_users: int = 300, n_posts: int = 3000, steps: int = 3, k: int = 5) -> str:
    st, profiles = seeded_world(n_users, n_posts)
    rec = ForYouRecommender(48, embedder="hashing", profile_texts=profiles, rerank=rerank)
    rec.observe(st, range(0, len(st.posts)), 47)
    h = hashlib.sha256()
    rng = np.random.default_rng(0)
    users = np.arange(n_users)
    for s in range(steps):
        ask = users[(users + s) % 3 != 0]  # not everyone is active every step
        feeds = rec.feeds(st, ask, k, 47, rng)
        for u, f in zip(ask.tolist(), feeds):
            h.update(repr((u, f.post_ids, f.sources, f.explain)).encode())
        shown_u = np.repeat(ask, [len(f.post_ids) for f in feeds])
        shown_p = np.asarray([p for f in feeds for p in f.post_ids], np.int64)
        rec.served(st, 47, shown_u, shown_p)
    return h.hexdigest()[:16]


# Digests of the feeds as first released (main at cec99ca); the speed-up keeps them.
PINNED = {
    "dpp": "61d52928d005b728",
    "slate": "92c621cd290f602b",
    "none": "048a19dd19c1bda0",
}


@pytest.mark.parametrize("rerank", sorted(PINNED))
def test_foryou_feeds_match_the_pinned_digest(rerank):
    assert feeds_digest(rerank) == PINNED[rerank]
