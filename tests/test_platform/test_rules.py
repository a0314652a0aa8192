"""Per-action rules, including every invalid case: an invalid action must change nothing."""

import numpy as np
import pytest

from socium.core import actions as A
from socium.platform.graph import FollowIndex
from socium.platform.state import PlatformState


def make(n=5, preset="x", edges=((1, 0), (2, 0))):
    src = np.array([e[0] for e in edges], dtype=np.int32)
    dst = np.array([e[1] for e in edges], dtype=np.int32)
    st = PlatformState(
        n,
        FollowIndex.from_edges(src, dst, n),
        preset=preset,
        max_post_chars=50,
        usernames=[f"user{i}" for i in range(n)],
    )
    st.begin_step(0, 0.0)
    return st


def snapshot(st):
    p = st.posts
    return (
        len(p),
        [p.col(c).tolist() for c in ("likes", "dislikes", "reposts", "comments", "reports")],
        set(st.likes),
        set(st.dislikes),
        set(st.reported),
        {k: set(v) for k, v in st.mutes.items()},
        st.follows.edges()[0].tolist(),
        st.follows.edges()[1].tolist(),
        [(g[0], set(g[1])) for g in st.groups],
        len(st.events.group_messages),
    )


def assert_invalid(st, agent, action, reason_part):
    before = snapshot(st)
    out = st.apply(agent, action)
    assert out.status == "invalid", out
    assert reason_part in out.reason
    assert snapshot(st) == before


def test_create_post_and_repost_chain():
    st = make()
    p0 = st.apply(0, A.CreatePost(content="hello")).post_id
    r1 = st.apply(1, A.Repost(post_id=p0)).post_id
    r2 = st.apply(2, A.Repost(post_id=r1)).post_id
    assert st.posts.get("root", r2) == p0 and st.posts.get("parent", r2) == r1
    assert st.posts.get("reposts", p0) == 2 and st.adopters[p0] == {0, 1, 2}
    q = st.apply(3, A.QuotePost(post_id=p0, content="so true")).post_id
    assert st.posts.get("kind", q) == 2 and st.posts.get("root", q) == p0
    c = st.apply(4, A.CreateComment(post_id=p0, content="hm")).post_id
    assert st.adopters[p0] == {0, 1, 2, 3}  # a comment is not an adoption
    assert st.adopters.has(p0, 0) and st.adopters.has(p0, 3) and not st.adopters.has(p0, 4)
    assert st.adopters.get(c) == () and not st.adopters.has(c, 4)  # nor is a comment a root anyone adopts
    assert st.apply(0, A.QuotePost(post_id=r1, content="mine")).ok and st.adopters[p0] == {0, 1, 2, 3}
    assert st.recent_posts_of(0, 5) == [p0, len(st.posts) - 1] and st.recent_posts_of(4, 5) == []


def test_post_invalid_cases():
    st = make()
    assert_invalid(st, 0, A.CreatePost(content="   "), "empty")
    assert_invalid(st, 0, A.Repost(post_id=99), "does not exist")
    p0 = st.apply(0, A.CreatePost(content="hello")).post_id
    assert_invalid(st, 0, A.Repost(post_id=p0), "your own")
    st.apply(1, A.Repost(post_id=p0))
    assert_invalid(st, 1, A.Repost(post_id=p0), "already reposted")
    assert_invalid(st, 1, A.QuotePost(post_id=42, content="x"), "does not exist")
    assert_invalid(st, 1, A.QuotePost(post_id=p0, content=""), "empty")
    assert_invalid(st, 9, A.CreatePost(content="x"), "unknown agent")


def test_votes_and_their_invalid_cases():
    st = make()
    p0 = st.apply(0, A.CreatePost(content="hello")).post_id
    assert st.apply(1, A.LikePost(post_id=p0)).ok
    assert_invalid(st, 1, A.LikePost(post_id=p0), "already liked")
    assert_invalid(st, 1, A.DislikePost(post_id=p0), "undo that first")
    assert_invalid(st, 2, A.UnlikePost(post_id=p0), "has not liked")
    assert_invalid(st, 2, A.UndoDislikePost(post_id=p0), "has not disliked")
    assert st.apply(1, A.UnlikePost(post_id=p0)).ok and st.posts.get("likes", p0) == 0
    assert st.apply(2, A.DislikePost(post_id=p0)).ok and st.posts.get("dislikes", p0) == 1
    assert_invalid(st, 2, A.DislikePost(post_id=p0), "already disliked")
    assert st.apply(2, A.UndoDislikePost(post_id=p0)).ok and st.posts.get("dislikes", p0) == 0
    assert_invalid(st, 1, A.LikePost(post_id=123), "does not exist")


def test_comments():
    st = make()
    p0 = st.apply(0, A.CreatePost(content="hello")).post_id
    c = st.apply(1, A.CreateComment(post_id=p0, content="nice")).post_id
    assert st.posts.get("kind", c) == 3 and st.posts.get("comments", p0) == 1
    assert st.apply(2, A.LikeComment(comment_id=c)).ok
    assert st.apply(3, A.DislikeComment(comment_id=c)).ok
    assert_invalid(st, 2, A.LikeComment(comment_id=c), "already liked")
    assert_invalid(st, 2, A.LikeComment(comment_id=p0), "not a comment")
    assert_invalid(st, 2, A.DislikeComment(comment_id=p0), "not a comment")
    assert_invalid(st, 2, A.LikePost(post_id=c), "is a comment")
    assert_invalid(st, 2, A.Repost(post_id=c), "is a comment")
    assert_invalid(st, 2, A.CreateComment(post_id=77, content="x"), "does not exist")
    assert_invalid(st, 2, A.CreateComment(post_id=p0, content=""), "empty")
    assert c not in st.recent_posts_of(1, 100)  # comments are not feed posts


def test_follow_unfollow_mute():
    st = make()
    assert st.apply(3, A.Follow(user_id=0)).ok and st.follows.is_following(3, 0)
    assert_invalid(st, 3, A.Follow(user_id=0), "already following")
    assert_invalid(st, 3, A.Follow(user_id=3), "yourself")
    assert_invalid(st, 3, A.Follow(user_id=17), "does not exist")
    assert st.apply(3, A.Unfollow(user_id=0)).ok and not st.follows.is_following(3, 0)
    assert_invalid(st, 3, A.Unfollow(user_id=0), "not following")
    assert st.events.follows == [(3, 0, 1), (3, 0, -1)]
    assert st.apply(3, A.Mute(user_id=1)).ok
    assert_invalid(st, 3, A.Mute(user_id=1), "already muted")
    assert_invalid(st, 3, A.Mute(user_id=3), "yourself")
    assert st.apply(3, A.Unmute(user_id=1)).ok
    assert_invalid(st, 3, A.Unmute(user_id=1), "not muted")
    assert_invalid(st, 3, A.Unmute(user_id=3), "yourself")


def test_report_search_trend_refresh_nothing():
    st = make()
    p0 = st.apply(0, A.CreatePost(content="Football final tonight")).post_id
    p1 = st.apply(1, A.CreatePost(content="cooking pasta tonight")).post_id
    assert st.apply(2, A.ReportPost(post_id=p0, reason="spam")).ok
    assert_invalid(st, 2, A.ReportPost(post_id=p0), "already reported")
    assert_invalid(st, 2, A.ReportPost(post_id=55), "does not exist")
    assert st.apply(3, A.SearchPosts(query="football")).results == (p0,)
    assert set(st.apply(3, A.SearchPosts(query="tonight")).results) == {p0, p1}
    st.apply(3, A.Mute(user_id=0))
    assert st.apply(3, A.SearchPosts(query="football")).results == ()
    assert st.apply(3, A.SearchUser(query="user4")).results == (4,)
    st.apply(4, A.LikePost(post_id=p1))
    assert st.apply(2, A.Trend()).results[0] == p1
    assert st.apply(2, A.Refresh()).ok and st.apply(2, A.DoNothing()).ok


def test_groups():
    st = make()
    g = st.apply(0, A.CreateGroup(name="club")).group_id
    assert_invalid(st, 0, A.CreateGroup(name="  "), "empty")
    assert_invalid(st, 0, A.JoinGroup(group_id=g), "already a member")
    assert_invalid(st, 1, A.JoinGroup(group_id=9), "does not exist")
    assert_invalid(st, 1, A.SendToGroup(group_id=g, content="hi"), "not a member")
    assert_invalid(st, 1, A.LeaveGroup(group_id=g), "not a member")
    assert st.apply(1, A.JoinGroup(group_id=g)).ok
    assert st.apply(1, A.SendToGroup(group_id=g, content="hi")).ok
    assert_invalid(st, 1, A.SendToGroup(group_id=g, content=""), "empty")
    assert_invalid(st, 1, A.SendToGroup(group_id=5, content="x"), "does not exist")
    assert st.apply(1, A.LeaveGroup(group_id=g)).ok
    assert_invalid(st, 1, A.LeaveGroup(group_id=g), "not a member")


def test_reddit_preset_rejects_reposts_and_groups():
    st = make(preset="reddit")
    p0 = st.apply(0, A.CreatePost(content="hello")).post_id
    assert_invalid(st, 1, A.Repost(post_id=p0), "not available on preset 'reddit'")
    assert_invalid(st, 1, A.CreateGroup(name="g"), "not available")


def test_action_union_parses_and_rejects():
    a = A.parse_action({"type": "like_post", "post_id": 3})
    assert isinstance(a, A.LikePost)
    with pytest.raises(Exception):
        A.parse_action({"type": "like_post", "post_id": 3, "extra": 1})
    with pytest.raises(Exception):
        A.parse_action({"type": "teleport"})
    for cls in A.ACTION_CLASSES:  # every row of the table is in the union, under its own discriminator
        args = {
            f: (0 if info.annotation in (int, "int") else "x") for f, info in cls.model_fields.items() if f != "type"
        }
        assert type(A.parse_action({"type": cls.type_name, **args})) is cls
    assert len(set(A.ACTION_TYPES)) == len(A.ACTION_TYPES) == len(A.ACTION_CLASSES)


def test_text_is_truncated_and_sanitised():
    st = make()
    out = st.apply(0, A.CreatePost(content="x" * 500))
    assert out.truncated and len(st.posts.text[out.post_id]) == 50
    out = st.apply(0, A.CreatePost(content="a\x00b\ud800c"))
    assert out.sanitized and "\x00" not in st.posts.text[out.post_id]
    st.posts.text[out.post_id].encode("utf-8")


def test_self_rating_can_be_forbidden():
    st = PlatformState(
        3, FollowIndex.from_edges(np.array([], np.int64), np.array([], np.int64), 3), allow_self_rating=False
    )
    pid = st.apply(0, A.CreatePost(content="mine")).post_id
    assert_invalid(st, 0, A.LikePost(post_id=pid), "cannot rate your own post")
    assert st.apply(1, A.LikePost(post_id=pid)).ok
