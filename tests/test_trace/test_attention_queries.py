"""Attention measures (out-of-network share, cross-stance exposure, impressions, Gini, cascade sizes) on a
hand-built trace whose answers are counted by hand in the comments."""

from pathlib import Path

import numpy as np
import pytest

from socium.trace.queries import attention as Q
from socium.trace.store import TraceStore

# agent: stance (None: no side; agent 4 only comments)
STANCES = {0: 0.5, 1: -0.4, 2: 0.2, 3: None, 4: -0.1}
# (step, seq, src, dst, event): 0 and 2 follow 1 and 0 from the start; 0 unfollows 1 at step 1 (its step-1
# feed was built before, so 1 is still followed then); 3 follows 2 at step 1 (counts from step 2).
FOLLOWS = [(-1, 0, 0, 1, 1), (-1, 1, 2, 0, 1), (1, 0, 0, 1, -1), (1, 1, 3, 2, 1)]
# (post_id, step, author, kind, parent, root)
POSTS = [
    (0, 0, 1, "original", None, 0),
    (1, 0, 0, "original", None, 1),
    (2, 1, 2, "repost", 0, 0),
    (3, 1, 3, "original", None, 3),
    (4, 1, 4, "comment", 0, 0),
]
# (step, viewer, post, rank): classification by hand
EXPOSURES = [
    (1, 0, 0, 0),  # 0 sees 1's post, still followed at step 1: in; stances + / -: cross
    (1, 0, 0, 3),  # the same post twice in one feed: one exposure
    (1, 0, 1, 1),  # own post
    (1, 2, 1, 0),  # 2 follows 0: in; + / +: same
    (2, 0, 2, 0),  # 2's repost, 0 never followed 2: out; + / +: same
    (2, 0, 0, 1),  # 1's post after the unfollow: out; cross
    (1, 3, 2, 0),  # 3 followed 2 during step 1: not yet: out; 3 has no stance: unknown
    (2, 3, 2, 0),  # now followed: in; unknown
    (1, 3, 3, 1),  # own post
]


@pytest.fixture()
def con(tmp_path: Path):
    store = TraceStore(tmp_path / "trace.duckdb")
    store.append_rows(
        {
            "agents": {"agent_id": list(STANCES), "stance": list(STANCES.values())},
            "follow_events": {k: [r[i] for r in FOLLOWS] for i, k in enumerate(("step", "seq", "src", "dst", "event"))},
            "posts": {
                k: [r[i] for r in POSTS]
                for i, k in enumerate(("post_id", "step", "author", "kind", "parent_id", "root_id"))
            },
            "exposures": {
                **{k: [r[i] for r in EXPOSURES] for i, k in enumerate(("step", "agent_id", "post_id", "rank"))},
                "source": ["in_network"] * len(EXPOSURES),  # the recommender's label is not what decides
            },
            "steps": {"step": [0, 1, 2]},
        }
    )
    yield store.con
    store.close()


def test_network_origin_follows_the_graph_at_feed_time(con) -> None:
    got = Q.network_origin(con)
    assert (got.in_network, got.out_of_network, got.own) == (3, 3, 2)
    assert got.oon_share == pytest.approx(0.5)


def test_cross_stance_by_assigned_sign(con) -> None:
    got = Q.cross_stance(con)
    assert (got.same, got.cross, got.unknown) == (2, 2, 2)
    assert got.cross_share == pytest.approx(0.5)


def test_impressions_per_author_and_post_leave_out_own_views_and_comments(con) -> None:
    # authors 0, 1, 2, 3 (4 only commented): 0 seen once by 2; 1 twice by 0; 2 three times; 3 only by itself
    assert Q.impressions(con, "author").tolist() == [1, 2, 3, 0]
    # posts 0, 1, 2, 3 (comment 4 is never a feed item)
    assert Q.impressions(con, "post").tolist() == [2, 1, 3, 0]


def test_gini_known_values() -> None:
    assert Q.gini([1, 2, 3, 0]) == pytest.approx(10 / 24)  # sorted 0,1,2,3: (-3*0 - 1 + 2 + 9) / (4 * 6)
    assert Q.gini([4, 4, 4]) == pytest.approx(0.0)
    assert Q.gini([0, 0, 5]) == pytest.approx(2 / 3)  # one unit has everything: (n - 1) / n
    assert Q.gini([]) is None and Q.gini(np.zeros(3)) is None
    with pytest.raises(ValueError):
        Q.gini([-1, 2])


def test_cascade_size_counts_leave_comments_out(con) -> None:
    # post 0 reshared once (the comment is a reply, not a node): size 2; posts 1 and 3 alone
    assert Q.cascade_size_counts(con) == {1: 2, 2: 1}


def test_empty_run_has_no_shares(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "empty.duckdb")
    try:
        assert Q.network_origin(store.con).oon_share is None
        assert Q.cross_stance(store.con).cross_share is None
        assert Q.impressions(store.con).size == 0
        assert Q.cascade_size_counts(store.con) == {}
    finally:
        store.close()
