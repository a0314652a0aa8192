"""``search_user`` / ``search_posts`` answer exactly what a plain scan of the state answers (their faster
paths: lowered usernames kept between searches, the newest hits picked without sorting them all)."""

import numpy as np

from socium.core import actions as A
from socium.platform.graph import FollowIndex
from socium.platform.state import PlatformState


def make(names: list[str], search_limit: int = 3) -> PlatformState:
    n = len(names)
    st = PlatformState(
        n,
        FollowIndex.from_edges(np.array([], dtype=np.int32), np.array([], dtype=np.int32), n),
        search_limit=search_limit,
        usernames=names,
    )
    st.begin_step(0, 0.0)
    return st


def scan_users(st: PlatformState, query: str) -> list[int]:
    q = query.strip().lower()
    j = st.joined
    names = st.usernames or []
    return [i for i, u in enumerate(names) if q and q in u.lower() and (j is None or j[i])][: st.search_limit]


def test_search_user_is_the_first_matches_in_id_order_case_insensitive() -> None:
    names = ["Alice", "bob", "ALina", "carl", "alfred", "Malia", "al"]
    st = make(names)
    for q in ("al", " AL ", "bob", "zed", "", "a"):
        assert st.search_user(q) == scan_users(st, q), q
    assert st.search_user("al") == [0, 2, 4]  # limit 3: the first three in id order


def test_search_user_sees_who_joined_and_a_replaced_list() -> None:
    st = make(["al1", "al2", "al3", "al4", "al5"])
    assert st.search_user("al") == [0, 1, 2]
    st.joined = np.array([False, True, False, True, True])
    assert st.search_user("al") == [1, 3, 4] == scan_users(st, "al")
    st.joined = None
    st.usernames = ["bo", "AL", "bo", "bo", "xal"]  # a new list: lowered again, not the old one reused
    assert st.search_user("al") == [1, 4] == scan_users(st, "al")
    st.search_limit = 1
    assert st.search_user("bo") == [0]


def test_search_posts_is_the_newest_hits_without_and_with_hidden_posts() -> None:
    st = make([f"u{i}" for i in range(3)], search_limit=4)
    for i in range(12):
        out = st.apply(i % 3, A.CreatePost(content=f"bike lanes post {i}" + (" parking" if i % 2 else "")))
        assert out.status == "ok", out
    assert st.search_posts("bike") == [11, 10, 9, 8]
    assert st.search_posts("parking bike") == [11, 9, 7, 5]
    assert st.search_posts("nothing") == []
    st.mod.removed.update({11, 9})
    assert st.search_posts("parking bike") == [7, 5, 3, 1]
    assert st.search_posts("bike") == [10, 8, 7, 6]


def reference_trend(st: PlatformState, k: int) -> list[int]:
    """The whole window sorted by (score, id), both descending, then the hidden left out."""
    p, n = st.posts, len(st.posts)
    start = p.first_in_step(st.step - st.trend_window_steps + 1)
    score = (
        p.col("likes")[start:n] + p.col("reposts")[start:n] + p.col("comments")[start:n] - p.col("dislikes")[start:n]
    )
    ids = np.arange(start, n)
    return [int(i) for i in ids[np.lexsort((-ids, -score))] if not st.hidden(int(i))][:k]


def test_trend_is_the_top_scores_ties_to_newest_with_and_without_hidden_posts() -> None:
    st = make([f"u{i}" for i in range(4)], search_limit=5)
    rng = np.random.default_rng(7)
    for i in range(40):
        assert st.apply(i % 4, A.CreatePost(content=f"post {i}")).status == "ok"
    for pid in range(40):  # few distinct scores, so many ties; some negative
        for col in ("likes", "reposts", "comments", "dislikes"):
            st.posts.set(col, pid, int(rng.integers(0, 3)))
    for k in (1, 5, 39, 40, 60):
        assert st.trend(k) == reference_trend(st, k), k
    assert len(st.trend(5)) == 5 and len(st.trend(60)) == 40
    st.mod.removed.update(st.trend(3)[:2])
    for k in (1, 5, 60):
        assert st.trend(k) == reference_trend(st, k), k


def test_search_posts_with_a_rare_and_a_common_word() -> None:
    st = make([f"u{i}" for i in range(3)], search_limit=3)
    for i in range(30):
        word = " rare" if i in (2, 17, 29) else ""
        assert st.apply(i % 3, A.CreatePost(content=f"common words {i}{word}")).status == "ok"
    assert st.search_posts("rare common") == [29, 17, 2]
    assert st.search_posts("common") == [29, 28, 27]
    assert st.search_posts("rare nowhere") == []
