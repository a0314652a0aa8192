"""The platform's rules: for each action class, whether an action is allowed now and what it changes.

Every action is validated against the current :class:`~socium.platform.state.PlatformState` and either
applied in full (``ok``) or rejected with a reason (``invalid``) leaving the state untouched, so an
agent's mistake is data in the trace rather than a corrupted world. Why apart from the state: the state
is the data and the questions feeds and prompts ask of it; the rules are one function per action class,
registered by :func:`rule`, so a new action is one class in :mod:`socium.core.actions` plus one rule
here. :data:`MARKS` answers ahead of time what the rules check (an answer schema offers an action only
where it would be accepted). With the action table, this is the one module whose messages name actions
(the verbs of "cannot follow yourself"; ``tests/test_core/test_action_names.py`` holds it to that).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np

from socium.core import actions as A
from socium.platform.events import StepEvents
from socium.platform.graph import FollowIndex
from socium.platform.marks import ModerationMarks
from socium.platform.posts import COMMENT, ORIGINAL, QUOTE, REPOST, PostTable
from socium.platform.text import clean_text


class PlatformState(Protocol):
    """What the rules read and change of :class:`socium.platform.state.PlatformState`: named here so the
    rules need not import the state that dispatches to them (the two would be one import circle)."""

    n_users: int
    max_post_chars: int
    allow_self_rating: bool
    step: int
    posts: PostTable
    follows: FollowIndex
    mod: ModerationMarks
    events: StepEvents
    likes: set[tuple[int, int]]
    dislikes: set[tuple[int, int]]
    reposted: set[tuple[int, int]]
    reported: set[tuple[int, int]]
    mutes: dict[int, set[int]]
    blocks: dict[int, set[int]]
    dismissed: dict[int, set[int]]
    comments_of: dict[int, list[int]]
    groups: list[tuple[str, set[int]]]
    group_log: list[deque[tuple[int, int, str]]]
    member_of: dict[int, set[int]]
    joined: np.ndarray | None

    def hidden(self, post: int) -> bool: ...
    def muted(self, user: int) -> set[int]: ...
    def new_post(self, agent: int, kind: int, parent: int, root: int, raw: str) -> A.Outcome: ...
    def search_posts(self, query: str) -> list[int]: ...
    def search_user(self, query: str) -> list[int]: ...
    def trend(self, k: int | None = None) -> list[int]: ...


GROUP_HISTORY = 50  # messages kept per group for observations; the trace keeps all of them

Rule = Callable[[PlatformState, int, Any], A.Outcome]
RULES: dict[type[A.ActionBase], Rule] = {}
"""The platform's rule for each action class (registered by :func:`rule`), so :meth:`PlatformState.apply`
dispatches on the class, never on a name."""


def rule(cls: type[A.ActionBase]) -> Callable[[Rule], Rule]:
    """Register the decorated function as the rule that validates and applies actions of class ``cls``."""

    def register(fn: Rule) -> Rule:
        if cls in RULES:
            raise TypeError(f"action {cls.type_name!r} already has a platform rule")
        RULES[cls] = fn
        return fn

    return register


#: The plain accepted outcome, one frozen instance shared by the rules that return nothing else
#: (building one validates it: ~3 µs per action).
_OK = A.Outcome(status="ok")


# ---- checks the rules share ---------------------------------------------------------------------
def _bad(reason: str) -> A.Outcome:
    return A.Outcome(status="invalid", reason=reason)


def _post_check(st: PlatformState, post_id: int, *, comment: bool | None = None) -> str | None:
    if not st.posts.exists(post_id):
        return f"post {post_id} does not exist"
    if st.hidden(post_id):
        return f"post {post_id} was removed by moderation"
    is_comment = st.posts.get("kind", post_id) == COMMENT
    if comment is True and not is_comment:
        return f"post {post_id} is not a comment"
    if comment is False and is_comment:
        return f"post {post_id} is a comment; use the comment action"
    return None


def _user_check(st: PlatformState, agent: int, user_id: int, verb: str) -> str | None:
    if not (0 <= user_id < st.n_users) or (st.joined is not None and not st.joined[user_id]):
        return f"user {user_id} does not exist"
    if user_id == agent:
        return f"cannot {verb} yourself"
    return None


# ---- one rule per action class ----------------------------------------------------------------
@rule(A.CreatePost)
def _create_post(st: PlatformState, agent: int, a: A.CreatePost) -> A.Outcome:
    return st.new_post(agent, ORIGINAL, -1, -1, a.content)


@rule(A.Repost)
def _repost(st: PlatformState, agent: int, a: A.Repost) -> A.Outcome:
    if err := _post_check(st, a.post_id, comment=False):
        return _bad(err)
    if (agent, a.post_id) in st.reposted:
        return _bad(f"already reposted post {a.post_id}")
    root = st.posts.get("root", a.post_id)
    if st.posts.get("author", root) == agent:
        return _bad("cannot repost your own post")
    out = st.new_post(agent, REPOST, a.post_id, root, "")
    st.reposted.add((agent, a.post_id))
    st.posts.bump("reposts", a.post_id)
    if root != a.post_id:
        st.posts.bump("reposts", root)
    return out


@rule(A.QuotePost)
def _quote_post(st: PlatformState, agent: int, a: A.QuotePost) -> A.Outcome:
    if err := _post_check(st, a.post_id, comment=False):
        return _bad(err)
    out = st.new_post(agent, QUOTE, a.post_id, st.posts.get("root", a.post_id), a.content)
    if out.ok:
        st.posts.bump("reposts", a.post_id)
    return out


def _vote(st: PlatformState, agent: int, post_id: int, comment: bool, up: bool) -> A.Outcome:
    if err := _post_check(st, post_id, comment=comment):
        return _bad(err)
    if not st.allow_self_rating and st.posts.get("author", post_id) == agent:
        return _bad(f"cannot rate your own {'comment' if comment else 'post'} {post_id}")
    key = (agent, post_id)
    mine, other = (st.likes, st.dislikes) if up else (st.dislikes, st.likes)
    if key in mine:
        return _bad(f"already {'liked' if up else 'disliked'} {post_id}")
    if key in other:
        return _bad(f"already {'disliked' if up else 'liked'} {post_id}; undo that first")
    mine.add(key)
    st.posts.bump("likes" if up else "dislikes", post_id)
    if up:
        st.events.likes.append(key)
    return _OK


def _unvote(st: PlatformState, agent: int, post_id: int, up: bool, comment: bool | None = None) -> A.Outcome:
    if err := _post_check(st, post_id, comment=comment):
        return _bad(err)
    mine = st.likes if up else st.dislikes
    if (agent, post_id) not in mine:
        return _bad(f"has not {'liked' if up else 'disliked'} {'comment' if comment else 'post'} {post_id}")
    mine.discard((agent, post_id))
    st.posts.bump("likes" if up else "dislikes", post_id, -1)
    return _OK


@rule(A.LikePost)
def _like_post(st: PlatformState, agent: int, a: A.LikePost) -> A.Outcome:
    return _vote(st, agent, a.post_id, False, True)


@rule(A.DislikePost)
def _dislike_post(st: PlatformState, agent: int, a: A.DislikePost) -> A.Outcome:
    return _vote(st, agent, a.post_id, False, False)


@rule(A.LikeComment)
def _like_comment(st: PlatformState, agent: int, a: A.LikeComment) -> A.Outcome:
    return _vote(st, agent, a.comment_id, True, True)


@rule(A.DislikeComment)
def _dislike_comment(st: PlatformState, agent: int, a: A.DislikeComment) -> A.Outcome:
    return _vote(st, agent, a.comment_id, True, False)


@rule(A.UnlikePost)
def _unlike_post(st: PlatformState, agent: int, a: A.UnlikePost) -> A.Outcome:
    return _unvote(st, agent, a.post_id, True)


@rule(A.UndoDislikePost)
def _undo_dislike_post(st: PlatformState, agent: int, a: A.UndoDislikePost) -> A.Outcome:
    return _unvote(st, agent, a.post_id, False)


@rule(A.UnlikeComment)
def _unlike_comment(st: PlatformState, agent: int, a: A.UnlikeComment) -> A.Outcome:
    return _unvote(st, agent, a.comment_id, True, comment=True)


@rule(A.UndoDislikeComment)
def _undo_dislike_comment(st: PlatformState, agent: int, a: A.UndoDislikeComment) -> A.Outcome:
    return _unvote(st, agent, a.comment_id, False, comment=True)


@rule(A.CreateComment)
def _create_comment(st: PlatformState, agent: int, a: A.CreateComment) -> A.Outcome:
    if err := _post_check(st, a.post_id):
        return _bad(err)
    out = st.new_post(agent, COMMENT, a.post_id, st.posts.get("root", a.post_id), a.content)
    if out.ok:
        st.posts.bump("comments", a.post_id)
        st.comments_of.setdefault(a.post_id, []).append(out.post_id)  # type: ignore[arg-type]
    return out


@rule(A.Follow)
def _follow(st: PlatformState, agent: int, a: A.Follow) -> A.Outcome:
    if err := _user_check(st, agent, a.user_id, "follow"):
        return _bad(err)
    if st.follows.is_following(agent, a.user_id):
        return _bad(f"already following user {a.user_id}")
    if st.blocks and a.user_id in st.blocks.get(agent, ()):
        return _bad(f"you blocked user {a.user_id}")
    if st.blocks and agent in st.blocks.get(a.user_id, ()):
        return _bad(f"user {a.user_id} has blocked you")
    st.follows.add(agent, a.user_id)
    st.events.follows.append((agent, a.user_id, 1))
    return _OK


@rule(A.Unfollow)
def _unfollow(st: PlatformState, agent: int, a: A.Unfollow) -> A.Outcome:
    if err := _user_check(st, agent, a.user_id, "unfollow"):
        return _bad(err)
    if not st.follows.is_following(agent, a.user_id):
        return _bad(f"not following user {a.user_id}")
    st.follows.remove(agent, a.user_id)
    st.events.follows.append((agent, a.user_id, -1))
    return _OK


@rule(A.Mute)
def _mute(st: PlatformState, agent: int, a: A.Mute) -> A.Outcome:
    if err := _user_check(st, agent, a.user_id, "mute"):
        return _bad(err)
    m = st.mutes.setdefault(agent, set())
    if a.user_id in m:
        return _bad(f"already muted user {a.user_id}")
    m.add(a.user_id)
    return _OK


@rule(A.Unmute)
def _unmute(st: PlatformState, agent: int, a: A.Unmute) -> A.Outcome:
    if err := _user_check(st, agent, a.user_id, "unmute"):
        return _bad(err)
    if a.user_id not in st.mutes.get(agent, ()):
        return _bad(f"user {a.user_id} is not muted")
    if a.user_id in st.blocks.get(agent, ()):
        return _bad(f"user {a.user_id} is blocked (and so muted)")
    st.mutes[agent].discard(a.user_id)
    return _OK


@rule(A.Block)
def _block(st: PlatformState, agent: int, a: A.Block) -> A.Outcome:
    """X's block: the two stop following each other, neither may follow the other again, and the
    blocked user's posts leave the blocker's feeds (blocked users are muted, which every recommender
    and search already honours). There is no unblock: no platform socium reproduces offers it to agents."""
    if err := _user_check(st, agent, a.user_id, "block"):
        return _bad(err)
    b = st.blocks.setdefault(agent, set())
    if a.user_id in b:
        return _bad(f"already blocked user {a.user_id}")
    b.add(a.user_id)
    st.mutes.setdefault(agent, set()).add(a.user_id)
    for src, dst in ((agent, a.user_id), (a.user_id, agent)):
        if st.follows.is_following(src, dst):
            st.follows.remove(src, dst)
            st.events.follows.append((src, dst, -1))
    return _OK


@rule(A.NotInterested)
def _not_interested(st: PlatformState, agent: int, a: A.NotInterested) -> A.Outcome:
    """X's "not interested in this post": recorded for the recommender (:meth:`PlatformState.not_interested`)."""
    if err := _post_check(st, a.post_id, comment=False):
        return _bad(err)
    d = st.dismissed.setdefault(agent, set())
    if a.post_id in d:
        return _bad(f"already marked post {a.post_id} not interested")
    d.add(a.post_id)
    return _OK


@rule(A.SearchPosts)
def _search_posts(st: PlatformState, agent: int, a: A.SearchPosts) -> A.Outcome:
    muted = st.muted(agent)
    hits = [p for p in st.search_posts(a.query[:200]) if st.posts.get("author", p) not in muted]
    return A.Outcome(status="ok", results=tuple(hits))


@rule(A.SearchUser)
def _search_user(st: PlatformState, agent: int, a: A.SearchUser) -> A.Outcome:
    return A.Outcome(status="ok", results=tuple(st.search_user(a.query[:200])))


@rule(A.Trend)
def _trend(st: PlatformState, agent: int, a: A.Trend) -> A.Outcome:
    muted = st.muted(agent)
    return A.Outcome(status="ok", results=tuple(p for p in st.trend() if st.posts.get("author", p) not in muted))


@rule(A.Refresh)
def _refresh(st: PlatformState, agent: int, a: A.Refresh) -> A.Outcome:
    return _OK


@rule(A.ReportPost)
def _report_post(st: PlatformState, agent: int, a: A.ReportPost) -> A.Outcome:
    if err := _post_check(st, a.post_id):
        return _bad(err)
    if (agent, a.post_id) in st.reported:
        return _bad(f"already reported post {a.post_id}")
    st.reported.add((agent, a.post_id))
    st.posts.bump("reports", a.post_id)
    return _OK


@rule(A.CreateGroup)
def _create_group(st: PlatformState, agent: int, a: A.CreateGroup) -> A.Outcome:
    name = clean_text(a.name, 100).text.strip()
    if not name:
        return _bad("group name is empty")
    gid = len(st.groups)
    st.groups.append((name, {agent}))
    st.group_log.append(deque(maxlen=GROUP_HISTORY))
    st.member_of.setdefault(agent, set()).add(gid)
    st.events.groups.append((gid, agent, name))
    return A.Outcome(status="ok", group_id=gid)


def _group_check(st: PlatformState, group_id: int) -> str | None:
    return None if 0 <= group_id < len(st.groups) else f"group {group_id} does not exist"


@rule(A.JoinGroup)
def _join_group(st: PlatformState, agent: int, a: A.JoinGroup) -> A.Outcome:
    if err := _group_check(st, a.group_id):
        return _bad(err)
    members = st.groups[a.group_id][1]
    if agent in members:
        return _bad(f"already a member of group {a.group_id}")
    members.add(agent)
    st.member_of.setdefault(agent, set()).add(a.group_id)
    return A.Outcome(status="ok", group_id=a.group_id)


@rule(A.LeaveGroup)
def _leave_group(st: PlatformState, agent: int, a: A.LeaveGroup) -> A.Outcome:
    if err := _group_check(st, a.group_id):
        return _bad(err)
    members = st.groups[a.group_id][1]
    if agent not in members:
        return _bad(f"not a member of group {a.group_id}")
    members.discard(agent)
    st.member_of[agent].discard(a.group_id)
    return A.Outcome(status="ok", group_id=a.group_id)


@rule(A.SendToGroup)
def _send_to_group(st: PlatformState, agent: int, a: A.SendToGroup) -> A.Outcome:
    if err := _group_check(st, a.group_id):
        return _bad(err)
    if agent not in st.groups[a.group_id][1]:
        return _bad(f"not a member of group {a.group_id}")
    ct = clean_text(a.content, st.max_post_chars)
    if not ct.text.strip():
        return _bad("content is empty")
    st.events.group_messages.append((a.group_id, agent, ct.text))
    st.group_log[a.group_id].append((st.step, agent, ct.text))
    return A.Outcome(status="ok", group_id=a.group_id, truncated=ct.truncated, sanitized=ct.sanitized)


@rule(A.DoNothing)
def _do_nothing(st: PlatformState, agent: int, a: A.DoNothing) -> A.Outcome:
    return _OK


# ---- marks: what the rules check, asked ahead ---------------------------------------------------
def _pairs(pairs_of: Callable[[PlatformState], set[tuple[int, int]]]) -> Callable[..., set[int]]:
    def marked(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
        pairs = pairs_of(st)
        return {i for i in ids if (agent, i) in pairs} if pairs else set()

    return marked


def _own_authored(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    if st.allow_self_rating:
        return set()
    author = st.posts.ints.author
    return {i for i in ids if author[i] == agent}


def _comments(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    kind = st.posts.ints.kind
    return {i for i in ids if kind[i] == COMMENT}


def _hidden(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    return {i for i in ids if st.hidden(i)} if st.mod.removed or st.mod.suspended else set()


def _own_chains(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    """The ids whose post, or one it shares up its chain to the root, is ``agent``'s (a walk per id,
    written out in one loop: a prompt shows ~10 posts, and a call per id was a third of the cost)."""
    v = st.posts.ints
    author, kind, parent = v.author, v.kind, v.parent
    out = set()
    for i in ids:
        post = i
        while True:
            if author[post] == agent:
                out.add(i)
                break
            if kind[post] not in (REPOST, QUOTE) or (post := parent[post]) < 0:
                break
    return out


def _blocked_by(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    return {i for i in ids if agent in st.blocks.get(i, ())} if st.blocks else set()


def _following(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    return set(st.follows.following_among(agent, ids))


def _among(of: Callable[[PlatformState, int], set[int] | None]) -> Callable[..., set[int]]:
    def marked(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
        mine = of(st, agent)
        return set(ids) & mine if mine else set()

    return marked


MARKS: dict[str, Callable[[PlatformState, int, Iterable[int]], set[int]]] = {
    "liked": _pairs(lambda st: st.likes),
    "disliked": _pairs(lambda st: st.dislikes),
    "unratable": _own_authored,
    "comment": _comments,
    "hidden": _hidden,
    "own_chain": _own_chains,
    "reposted": _pairs(lambda st: st.reposted),
    "reported": _pairs(lambda st: st.reported),
    "not_interested": _among(lambda st, agent: st.dismissed.get(agent)),
    "following": _following,
    "muted": _among(lambda st, agent: st.mutes.get(agent)),
    "blocked": _among(lambda st, agent: st.blocks.get(agent)),
    "blocked_by": _blocked_by,
}
"""How the platform answers each mark: the same facts the rules above check."""
