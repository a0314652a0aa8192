"""The platform's per-activation read paths (issue 41, third round) answer exactly what the slower
paths they replaced answered: post columns read through memoryviews, follows looked up by binary
search over the CSR row and its overlay, a feed's items built in one call, action text fields found
per class, and search / trend results kept for the next observation."""

from __future__ import annotations

import copy
import pickle
import random

import numpy as np
import pytest

from socium.agents.perspectives import feed_item, feed_items, pending_for, pending_from
from socium.core import actions as A
from socium.platform.graph import FollowIndex
from socium.platform.posts import _INT_COLS, PostTable
from socium.platform.state import PlatformState
from socium.simulator.recording import TEXT_FIELDS, _text_fields, clean_action


def _busy_state(n: int = 40, posts: int = 1500, seed: int = 3) -> PlatformState:
    """Posts past the table's first growth (1,024), a third reposts / quotes / comments, votes and follows."""
    rng = random.Random(seed)
    src = np.array([rng.randrange(n) for _ in range(n * 6)])
    dst = np.array([rng.randrange(n) for _ in range(n * 6)])
    st = PlatformState(n, FollowIndex.from_edges(src, dst, n), usernames=[f"u{i}" for i in range(n)])
    st.begin_step(0, 0.0)
    for i in range(posts):
        a = rng.randrange(n)
        r = rng.random()
        if i > 5 and r < 0.15:
            st.apply(a, A.Repost(post_id=rng.randrange(i)))
        elif i > 5 and r < 0.3:
            st.apply(a, A.QuotePost(post_id=rng.randrange(i), content=f"quote {i}"))
        elif i > 5 and r < 0.4:
            st.apply(a, A.CreateComment(post_id=rng.randrange(i), content=f"comment {i}"))
        else:
            st.apply(a, A.CreatePost(content=f"post {i}"))
        vote = A.LikePost if rng.random() < 0.6 else A.DislikePost
        st.apply(rng.randrange(n), vote(post_id=rng.randrange(len(st.posts))))
        if rng.random() < 0.2:
            u, v = rng.randrange(n), rng.randrange(n)
            st.apply(u, A.Follow(user_id=v) if rng.random() < 0.6 else A.Unfollow(user_id=v))
    return st


def test_memoryview_reads_equal_the_numpy_columns_after_growth_and_bumps():
    st = _busy_state()
    p = st.posts
    assert len(p) > 1024  # grown at least once: the views were rebuilt
    for name in _INT_COLS:
        col = p.col(name)
        view = getattr(p.ints, name)
        got = [view[i] for i in range(len(p))]
        assert got == col.tolist(), name
        assert all(type(x) is int for x in got[:50])
        assert [p.get(name, i) for i in range(0, len(p), 97)] == col[::97].tolist()
    assert [p.ints.time[i] for i in range(len(p))] == p.col("time").tolist()
    with pytest.raises(TypeError):
        p.ints.likes[0] = 5  # read-only: counts change only through bump / set
    p.bump("likes", 7, 3)
    assert p.ints.likes[7] == int(p.col("likes")[7]) == p.get("likes", 7)


@pytest.mark.parametrize("clone", [pickle.loads, copy.deepcopy])
def test_a_copied_post_table_has_working_views(clone):
    p = PostTable(capacity=2)
    for i in range(5):
        p.add(i % 2, 0, 0.5 * i, 0, -1, -1, f"t{i}")
    q = clone(pickle.dumps(p)) if clone is pickle.loads else clone(p)
    q.add(1, 1, 9.0, 0, -1, -1, "new")  # grows the copy: its own views follow
    assert [q.ints.author[i] for i in range(6)] == [0, 1, 0, 1, 0, 1]
    assert q.ints.time[5] == 9.0 and [p.ints.author[i] for i in range(5)] == [0, 1, 0, 1, 0]


def test_following_among_agrees_with_is_following_through_the_overlay_and_compaction():
    rng = random.Random(0)
    n = 60
    src = np.array([rng.randrange(n) for _ in range(n * 8)])
    dst = np.array([rng.randrange(n) for _ in range(n * 8)])
    g = FollowIndex.from_edges(src, dst, n)

    def check() -> None:
        for u in range(n):
            vs = rng.sample(range(n), 12)
            want = sorted({v for v in vs if g.is_following(u, v)})
            assert g.following_among(u, vs) == want
            assert want == sorted(set(g.followees(u).tolist()) & set(vs))

    check()
    for _ in range(300):  # the overlay: follows and unfollows made during a run
        u, v = rng.randrange(n), rng.randrange(n)
        if u != v:
            g.add(u, v) if rng.random() < 0.5 else g.remove(u, v)
    check()
    g.compact()  # new CSR arrays: the memoryviews must follow them
    check()
    h = pickle.loads(pickle.dumps(g))
    assert [h.following_among(u, range(n)) for u in range(n)] == [g.following_among(u, range(n)) for u in range(n)]
    with pytest.raises(IndexError):
        g.following_among(0, [n])


def test_a_feeds_items_in_one_call_equal_one_call_per_post():
    st = _busy_state()
    stance = np.linspace(-1, 1, st.n_users).astype(np.float32)
    stance[3] = np.nan
    names = st.usernames or []
    rng = random.Random(5)
    for viewer in range(st.n_users):
        ids = rng.sample(range(len(st.posts)), 6)
        srcs = tuple(rng.choice(("followed", "global")) for _ in ids)
        followees = set(st.follows.followees(viewer).tolist()) if viewer % 2 else None
        one = [feed_item(st, names, stance, viewer, p, s, r, followees) for r, (p, s) in enumerate(zip(ids, srcs))]
        assert feed_items(st, names, stance, viewer, ids, srcs, followees) == one
        for it, pid in zip(one, ids):
            author = int(st.posts.col("author")[pid])
            assert it.likes == int(st.posts.col("likes")[pid]) and it.author == author
            s = float(stance[author])
            assert it.author_stance == (None if np.isnan(s) else s)
            assert it.liked == ((viewer, pid) in st.likes)


def test_text_fields_found_per_class_are_those_the_instance_has():
    for cls in A.ACTION_CLASSES:
        fields = _text_fields(cls)
        assert set(fields) == {f for f in TEXT_FIELDS if f in cls.model_fields}, cls.type_name
    long = "x" * 700
    act, trunc, san = clean_action(A.SearchPosts(query=long), 2000)
    assert act.query == "x" * 500 and trunc and not san  # query: at most 500 characters
    act, trunc, san = clean_action(A.CreatePost(content="a\x00b"), 2000)
    assert act.content == "ab" and san and not trunc
    like = A.LikePost(post_id=3)
    assert clean_action(like, 10) == (like, False, False)

    class Loose:  # not a closed pydantic model: every text field is asked of the object
        type = "create_post"

    assert _text_fields(Loose) == TEXT_FIELDS


@pytest.mark.parametrize(
    "action",
    [A.SearchPosts(query="bikes"), A.SearchUser(query="u1"), A.Trend(), A.CreatePost(content="hi"), A.DoNothing()],
)
def test_pending_for_an_action_equals_pending_from_its_type_and_query(action):
    results = (4, 2, 9)
    assert pending_for(action, results) == pending_from(action.type, getattr(action, "query", ""), results)
