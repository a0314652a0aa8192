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
