"""The action table (socium.core.actions) against the platform's rules: every row has a rule, the new
OASIS / For You actions behave as their platforms do, the marks the schema reads agree with what the
platform accepts, and the trace's votes view is generated from the table."""

from __future__ import annotations

import copy
import random
from typing import Literal

import duckdb
import pytest
from tests.test_platform.test_rules import assert_invalid, make, snapshot

from socium.core import actions as A
from socium.platform.posts import COMMENT
from socium.platform.rules import MARKS, RULES
from socium.trace.store import _schema_sql


def test_every_action_has_one_platform_rule_and_every_mark_an_answer():
    assert set(RULES) == set(A.ACTION_CLASSES)
    marks = {m for c in A.ACTION_CLASSES for m in c.meta.marks}
    assert marks <= set(MARKS)


def test_a_row_with_a_target_needs_the_argument_and_marks_need_a_target():
    with pytest.raises(TypeError, match="needs a user_id"):

        class Bad(A.ActionBase):  # noqa: F841 -- the definition itself must fail
            meta = A.ActionMeta(target="user")
            type: Literal["bad_one"] = "bad_one"

    with pytest.raises(TypeError, match="marks are kept"):
        A.ActionMeta(target="member_group", excludes=("liked",))
    with pytest.raises(TypeError, match="only a vote"):
        A.ActionMeta(undo=True)


def test_new_actions_are_opt_in_on_both_presets_and_default_offers_are_unchanged():
    new = {"unlike_comment", "undo_dislike_comment", "block", "not_interested"}
    assert new <= set(A.PRESET_ACTIONS["x"]) and new <= set(A.PRESET_ACTIONS["reddit"])
    assert not new & (set(A.DEFAULT_LLM_ACTIONS["x"]) | set(A.DEFAULT_LLM_ACTIONS["reddit"]))
    # the first 24 keep their catalogue order, so an 'x' run offering every action lists them as before
    assert A.ACTION_TYPES[-4:] == ("unlike_comment", "undo_dislike_comment", "block", "not_interested")
    assert A.DEFAULT_LLM_ACTIONS["x"] == (
        "create_post", "repost", "quote_post", "like_post", "dislike_post", "create_comment", "follow", "do_nothing",
    )  # fmt: skip
    assert A.DEFAULT_LLM_ACTIONS["reddit"] == (
        "create_post", "like_post", "dislike_post", "create_comment", "follow", "do_nothing",
    )  # fmt: skip


def _commented():
    st = make()
    pid = st.apply(0, A.CreatePost(content="post")).post_id
    cid = st.apply(1, A.CreateComment(post_id=pid, content="reply")).post_id
    return st, pid, cid


def test_unlike_comment_and_undo_dislike_comment_take_back_only_what_was_done():
    st, pid, cid = _commented()
    assert_invalid(st, 2, A.UnlikeComment(comment_id=cid), "has not liked comment")
    assert_invalid(st, 2, A.UndoDislikeComment(comment_id=cid), "has not disliked comment")
    assert_invalid(st, 2, A.UnlikeComment(comment_id=pid), "is not a comment")  # a post: use unlike_post
    assert st.apply(2, A.LikeComment(comment_id=cid)).ok
    assert st.posts.get("likes", cid) == 1
    assert st.apply(2, A.UnlikeComment(comment_id=cid)).ok
    assert st.posts.get("likes", cid) == 0 and (2, cid) not in st.likes
    assert st.apply(2, A.DislikeComment(comment_id=cid)).ok
    assert_invalid(st, 2, A.LikeComment(comment_id=cid), "undo that first")
    assert st.apply(2, A.UndoDislikeComment(comment_id=cid)).ok
    assert st.posts.get("dislikes", cid) == 0
    assert st.apply(2, A.LikeComment(comment_id=cid)).ok  # free to vote again


def test_block_ends_both_follows_mutes_and_forbids_following_again():
    st = make()  # 1 and 2 follow 0
    assert st.follows.is_following(1, 0)
    assert st.apply(0, A.Follow(user_id=1)).ok
    assert st.apply(0, A.Block(user_id=1)).ok
    assert not st.follows.is_following(1, 0) and not st.follows.is_following(0, 1)
    assert (0, 1, -1) in st.events.follows and (1, 0, -1) in st.events.follows  # recorded as unfollows
    assert st.blocked(0) == {1} and 1 in st.muted(0)  # every feed already drops muted authors
    assert_invalid(st, 0, A.Block(user_id=1), "already blocked")
    assert_invalid(st, 0, A.Follow(user_id=1), "you blocked user 1")
    assert_invalid(st, 1, A.Follow(user_id=0), "user 0 has blocked you")
    assert_invalid(st, 0, A.Unmute(user_id=1), "blocked")
    assert_invalid(st, 0, A.Block(user_id=0), "cannot block yourself")
    assert st.blocked(3) == set()


def test_not_interested_is_recorded_once_per_post_for_the_recommender():
    st, pid, cid = _commented()
    assert st.apply(2, A.NotInterested(post_id=pid)).ok
    assert st.not_interested(2) == {pid} and st.not_interested(3) == set()
    assert_invalid(st, 2, A.NotInterested(post_id=pid), "already marked")
    assert_invalid(st, 2, A.NotInterested(post_id=cid), "is a comment")


def test_a_preset_refuses_what_it_does_not_list_and_the_reason_names_it():
    st = make(preset="reddit")
    p0 = st.apply(0, A.CreatePost(content="hello")).post_id
    before = snapshot(st)
    out = st.apply(1, A.QuotePost(post_id=p0, content="q"))
    assert not out.ok and "quote_post" in (out.reason or "") and snapshot(st) == before


def _random_world(seed: int):
    """A small world after a few hundred random actions: votes, follows, mutes, blocks, reposts, comments."""
    rng = random.Random(seed)
    st = make(n=6, edges=((1, 0), (2, 0), (3, 1), (0, 2)))
    st.allow_self_rating = seed % 2 == 0
    for _ in range(300):
        agent, n = rng.randrange(6), len(st.posts)
        pid, uid = rng.randrange(max(n, 1)), rng.randrange(6)
        cls = rng.choice([c for c in A.ACTION_CLASSES if c.meta.target in ("post", "comment", "user", "none")])
        args = {"content": "t", "query": "t", "name": "g"}
        if cls.meta.id_field:
            args[cls.meta.id_field] = uid if cls.meta.target == "user" else pid
        fields = {k: v for k, v in args.items() if k in cls.model_fields}
        st.apply(agent, cls(**fields))
    if seed % 3 == 0:
        st.mod.removed.add(0)
    return st


@pytest.mark.parametrize("seed", range(6))
def test_the_marks_offer_exactly_what_the_platform_accepts(seed):
    """For every agent, targeted action and id: offered by the marks iff the platform accepts it. One
    deliberate exception: reposting a post whose chain holds the agent's own (non-root) post is accepted
    but not offered (the schema has always kept agents from resharing their own posts)."""
    st = _random_world(seed)
    posts = set(range(len(st.posts)))
    comments = {i for i in posts if st.posts.get("kind", i) == COMMENT}
    for agent in range(6):
        users = set(range(6)) - {agent}
        for cls in A.ACTION_CLASSES:
            meta = cls.meta
            if not meta.marks:
                continue
            ids = {"user": users, "post": posts, "comment": comments}[meta.target]
            marks = {m: st.marked(agent, m, ids) for m in meta.marks}
            offered = set(ids)
            for m in meta.requires:
                offered &= marks[m]
            for m in meta.excludes:
                offered -= marks[m]
            for i in ids:
                trial = copy.deepcopy(st)
                args = {meta.id_field: i, **({"content": "t"} if cls.text_field == "content" else {})}
                accepted = trial.apply(agent, cls(**args)).ok
                if cls is A.Repost and not accepted:
                    assert i not in offered, (agent, cls.type_name, i)
                elif cls is A.Repost:
                    assert i in offered or st.marked(agent, "own_chain", [i]), (agent, i)
                else:
                    assert (i in offered) == accepted, (agent, cls.type_name, i)


def test_the_votes_view_is_generated_from_the_table():
    con = duckdb.connect()
    con.execute(_schema_sql())
    rows = [(t, i) for i, t in enumerate(A.ACTION_TYPES)]
    con.executemany(
        "INSERT INTO actions (step, agent_id, seq, origin, type, args, outcome) VALUES (0, 1, ?, 'llm', ?, ?, 'ok')",
        [(i, t, '{"post_id": 7}' if "post" in t else '{"comment_id": 8}') for t, i in rows],
    )
    got = dict(con.execute("SELECT type, delta FROM votes").fetchall())
    assert got == {c.type_name: c.meta.vote for c in A.ACTION_CLASSES if c.meta.vote}
    assert got["unlike_comment"] == -1 and got["undo_dislike_comment"] == 1
    assert {"block", "not_interested", "repost"}.isdisjoint(got)
