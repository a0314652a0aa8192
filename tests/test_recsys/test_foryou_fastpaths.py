"""foryou's third cost round keeps every result: chunks ranked on threads, the duplicate pass folded
into repost de-duplication, the per-user feedback loops visiting only users with feedback, per-line
sorts by numpy's (unstable) default sort where it cannot differ from a stable one.

Each test compares the faster path with the plain one on inputs the pinned digests do not reach
(several chunks, a cold-start slot range wide enough to draw from the rng, every kind of feedback,
keys with ties and keys equal to the padding).
"""

import threading
import time

import numpy as np
import pytest
from test_foryou_pinned import seeded_world

from socium.recsys.foryou import ForYouRecommender, filters
from socium.recsys.foryou import recommender as fy_rec
from socium.recsys.foryou.sources import Candidates


def _feeds(threads: int, monkeypatch, chunk: int = 40, steps: int = 2, **params) -> list:
    monkeypatch.setattr(fy_rec, "CHUNK_USERS", chunk)
    monkeypatch.setattr(fy_rec, "RANK_THREADS", threads)
    monkeypatch.setattr(fy_rec, "_cpus", lambda: 4)  # threads even where the test runner is pinned to one CPU
    st, profiles = seeded_world()
    rec = ForYouRecommender(48, embedder="hashing", profile_texts=profiles, **params)
    rec.observe(st, range(0, len(st.posts)), 47)
    rng = np.random.default_rng(0)
    users = np.arange(st.n_users)
    out = []
    for s in range(steps):
        ask = users[(users + s) % 3 != 0]
        feeds = rec.feeds(st, ask, 5, 47, rng)
        out.append([(f.post_ids, f.sources, f.explain) for f in feeds])
        rec.served(
            st,
            47,
            np.repeat(ask, [len(f.post_ids) for f in feeds]),
            np.asarray([p for f in feeds for p in f.post_ids], np.int64),
        )
    out.append(rng.integers(0, 2**62))  # the rng left where one thread leaves it
    return out


@pytest.mark.parametrize("rerank", ["dpp", "slate"])
def test_feeds_ranked_on_threads_equal_one_thread(monkeypatch, rerank):
    wide = {"cold_start_slot_min": 2, "cold_start_slot_max": 9, "cold_start_follower_cap": 6}  # rng draws
    one = _feeds(1, monkeypatch, rerank=rerank, **wide)
    assert sum(len(f[0]) for f in one[0]) > 0
    lifted = [row[4] for f in one[0] for row in f[2]]
    assert any(lifted)  # the cold start lifted something, so its draws mattered
    for threads in (2, 3):
        assert _feeds(threads, monkeypatch, rerank=rerank, **wide) == one


def test_in_turn_runs_blocks_in_chunk_order_whatever_the_threads_do():
    turns = fy_rec._InTurn(4)
    seen: list[int] = []

    def work(i: int) -> None:
        time.sleep(0.01 * (3 - i))  # later chunks arrive first
        with turns.turn(i):
            seen.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert seen == [0, 1, 2, 3]


def test_a_failing_chunk_does_not_leave_the_others_waiting(monkeypatch):
    st, profiles = seeded_world(n_users=120, n_posts=900)
    rec = ForYouRecommender(48, embedder="hashing", profile_texts=profiles)
    rec.observe(st, range(0, len(st.posts)), 47)
    monkeypatch.setattr(fy_rec, "CHUNK_USERS", 30)
    monkeypatch.setattr(fy_rec, "RANK_THREADS", 2)
    monkeypatch.setattr(fy_rec, "_cpus", lambda: 2)
    real = fy_rec.factors.author_diversity
    calls = {"n": 0}

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("chunk failed")
        return real(*a, **k)

    monkeypatch.setattr(fy_rec.factors, "author_diversity", flaky)
    with pytest.raises(RuntimeError, match="chunk failed"):
        rec.feeds(st, np.arange(st.n_users), 5, 47, np.random.default_rng(0))


def test_repost_dedup_alone_keeps_what_the_duplicate_pass_and_it_keep():
    st, _ = seeded_world()
    rng = np.random.default_rng(9)
    users = np.arange(40)
    row = np.sort(rng.integers(0, 40, 1500))
    post = rng.integers(0, len(st.posts), 1500)  # many copies of a post within a user, reposts among them
    c = Candidates(users, row, post, rng.random(1500) < 0.5)
    both = c.take(filters.drop_duplicates(c))
    both = both.take(filters.too_old(st, both, 20 * 3600.0) & filters.own_posts(st, both))
    both = both.take(filters.repost_dedup(st, both))
    one = c.take(filters.too_old(st, c, 20 * 3600.0) & filters.own_posts(st, c))
    one = one.take(filters.repost_dedup(st, one))
    assert len(one) < len(c) and len(np.unique(filters.pair_keys(c.row, c.post))) < len(c)
    assert np.array_equal(one.row, both.row) and np.array_equal(one.post, both.post)
    assert np.array_equal(one.in_network, both.in_network)


def test_only_users_with_feedback_are_visited_and_others_states_ask_everyone():
    st, _ = seeded_world()
    users = np.arange(st.n_users)
    rev = filters.blocked_by(st)
    mask = filters.may_have_feedback(st, st, users, rev)
    has = [bool(st.blocked(u) or st.muted(u) or st.not_interested(u) or rev.get(u)) for u in users.tolist()]
    assert 0 < sum(has) < len(has)
    assert np.all(mask[np.asarray(has)])  # nobody with feedback is skipped

    class Plugin:  # answers the two questions its own way: every user must be asked
        mutes: dict[int, set[int]] = {}

        def blocked(self, user: int) -> set[int]:
            return {0}

        def not_interested(self, user: int) -> set[int]:
            return set()

    assert filters.may_have_feedback(Plugin(), Plugin(), users, {}).all()
    none = filters.negative_feedback_of(object())
    st.mutes = {5: {1}}
    assert filters.may_have_feedback(st, none, users, {7: {2}}).tolist() == [u in (5, 7) for u in users.tolist()]


@pytest.mark.parametrize("kind", ["ties", "inf", "distinct", "int", "uint8", "huge"])
def test_within_rows_equals_a_stable_sort_inside_each_row(kind):
    from socium.recsys.foryou.factors import within_rows

    rng = np.random.default_rng(11)
    row = np.sort(rng.integers(0, 70, 2500))
    key = {
        "ties": rng.integers(0, 5, 2500) * 0.5,  # many equal keys: the lines with ties are re-sorted stably
        "inf": np.where(rng.random(2500) < 0.1, np.inf, rng.random(2500)),  # keys equal to the pad
        "distinct": rng.random(2500),
        "int": rng.integers(0, 40, 2500),
        "uint8": rng.integers(0, 255, 2500).astype(np.uint8),
        "huge": rng.integers(2**61, 2**62, 2500),  # too wide to pack with the column: the general path
    }[kind]
    by_key = np.argsort(key, kind="stable")
    want = by_key[np.argsort(row[by_key], kind="stable")]
    got = within_rows(row, key)
    assert got is not None
    assert np.array_equal(got, want)
