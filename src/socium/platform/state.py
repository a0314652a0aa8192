"""The platform's in-memory state and the rules that decide whether an action is allowed.

Every action is validated against the current state and either applied in full (``ok``) or
rejected with a reason (``invalid``) leaving the state untouched, so an agent's mistake is data in
the trace rather than a corrupted world. No LLM, no Ray, no store here.
"""

from __future__ import annotations

import re
from array import array
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from socium.core import actions as A
from socium.platform.graph import FollowIndex
from socium.platform.marks import ModerationMarks
from socium.platform.posts import COMMENT, ORIGINAL, QUOTE, REPOST, PostTable
from socium.platform.text import clean_text

_TOKEN = re.compile(r"\w+", re.UNICODE)
GROUP_HISTORY = 50  # messages kept per group for observations; the trace keeps all of them

Rule = Callable[["PlatformState", int, Any], A.Outcome]
RULES: dict[type[A.ActionBase], Rule] = {}
"""The platform's rule for each action class (registered by :func:`rule`), so :meth:`PlatformState.apply`
dispatches on the class, never on a name."""


def rule(cls: type[A.ActionBase]) -> Callable[[Rule], Rule]:
    """Register the decorated method as the rule that validates and applies actions of class ``cls``."""

    def register(fn: Rule) -> Rule:
        if cls in RULES:
            raise TypeError(f"action {cls.type_name!r} already has a platform rule")
        RULES[cls] = fn
        return fn

    return register


def _tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.lower()) if len(t) > 1}


class Adopters:
    """Root post -> users who posted, reposted or quoted it, stored compactly.

    Why not a set per root: every original post is a root adopted by its author, so at 10^5 LLM
    agents a set per post (~220 bytes even with one member) was most of the index's growth per
    step. The author of a root is read from the post table; only the other adopters (reposts and
    quotes, far fewer) are kept as sets.
    """

    __slots__ = ("_more", "_posts")

    def __init__(self, posts: PostTable) -> None:
        self._posts = posts
        self._more: dict[int, set[int]] = {}

    def _author(self, root: int) -> int | None:
        p = self._posts
        if not 0 <= root < len(p) or p.get("kind", root) == COMMENT:
            return None  # comments are never adopted
        return p.get("author", root)

    def add(self, root: int, agent: int) -> None:
        if agent != self._author(root):
            self._more.setdefault(root, set()).add(agent)

    def has(self, root: int, agent: int) -> bool:
        return agent == self._author(root) or agent in self._more.get(root, ())

    def get(self, root: int, default: set[int] | tuple[()] = ()) -> set[int] | tuple[()]:
        """All adopters of ``root`` as a new set (``default`` when it has none)."""
        author = self._author(root)
        more = self._more.get(root, set())
        return ({author} | more if author is not None else set(more)) or default

    def __getitem__(self, root: int) -> set[int]:
        got = self.get(root)
        if not got:
            raise KeyError(root)
        return set(got)


@dataclass
class StepEvents:
    """What changed during the current step, drained by the simulator into the trace."""

    post_flags: dict[int, tuple[bool, bool]] = field(default_factory=dict)
    follows: list[tuple[int, int, int]] = field(default_factory=list)  # (src, dst, +1 follow / -1 unfollow)
    groups: list[tuple[int, int, str]] = field(default_factory=list)  # (group_id, creator, name)
    group_messages: list[tuple[int, int, str]] = field(default_factory=list)  # (group_id, author, text)
    likes: list[tuple[int, int]] = field(
        default_factory=list
    )  # (user, post) up-votes, so recommenders learn incrementally
    first_post: int = 0


class PlatformState:
    """Users 0..n-1, posts, follows, mutes, votes, reports and groups under one preset's rules."""

    def __init__(
        self,
        n_users: int,
        follows: FollowIndex,
        preset: str = "x",
        max_post_chars: int = 2000,
        trend_window_steps: int = 24,
        search_limit: int = 10,
        usernames: list[str] | None = None,
        allow_self_rating: bool = True,
    ) -> None:
        self.n_users = n_users
        self.preset = preset
        self.allowed = frozenset(A.PRESET_ACTIONS[preset])
        self.follows = follows
        self.max_post_chars = max_post_chars
        self.trend_window_steps = trend_window_steps
        self.search_limit = search_limit
        self.usernames = usernames
        self.allow_self_rating = allow_self_rating
        self.posts = PostTable()
        self.likes: set[tuple[int, int]] = set()
        self.dislikes: set[tuple[int, int]] = set()
        self.reposted: set[tuple[int, int]] = set()
        self.reported: set[tuple[int, int]] = set()
        self.mutes: dict[int, set[int]] = {}
        self.blocks: dict[int, set[int]] = {}  # agent -> users it blocked (also muted: every feed drops them)
        self.dismissed: dict[int, set[int]] = {}  # agent -> posts it marked not_interested
        self.adopters = Adopters(self.posts)  # root post -> users who posted, reposted or quoted it
        self.comments_of: dict[int, list[int]] = {}  # post -> its comments, oldest first (shown under it)
        self.groups: list[tuple[str, set[int]]] = []
        self.group_log: list[deque[tuple[int, int, str]]] = []  # per group: recent (step, author, text)
        self.member_of: dict[int, set[int]] = {}  # agent -> group ids, so an observation needs no scan
        self.joined: np.ndarray | None = None  # who has signed up (None: everyone; see simulator.signups)
        self._index: dict[str, array[int]] = {}  # token -> post ids (4 bytes each, no int objects)
        self.step = 0
        self.time = 0.0
        self.events = StepEvents()
        self.mod = ModerationMarks()  # labels, removals, suspensions (changed only by socium.moderation)

    # ---- clock and events -------------------------------------------------------------------
    def begin_step(self, step: int, time_s: float) -> None:
        self.step, self.time = step, time_s
        self.events = StepEvents(first_post=len(self.posts))

    # ---- queries used by feeds and policies ------------------------------------------------
    def muted(self, user: int) -> set[int]:
        return self.mutes.get(user, set())

    def blocked(self, user: int) -> set[int]:
        """The users ``user`` blocked (a recommender drops their posts; they are also in :meth:`muted`)."""
        return self.blocks.get(user, set())

    def not_interested(self, user: int) -> set[int]:
        """The post ids ``user`` marked ``not_interested`` (a recommender may down-weight what resembles them)."""
        return self.dismissed.get(user, set())

    def marked(self, agent: int, mark: str, ids: Iterable[int]) -> set[int]:
        """Those of ``ids`` that carry ``mark`` (:data:`socium.core.actions.Mark`) for ``agent``: what the
        rules below read, so an answer schema can offer an action only where it would be accepted."""
        return MARKS[mark](self, agent, ids)

    def _own_chain(self, agent: int, post: int, cols: tuple[np.ndarray, ...] | None = None) -> bool:
        """``post`` or one it shares, up its chain to the root, is ``agent``'s."""
        p = self.posts
        author, kind, parent = cols or (p.col("author"), p.col("kind"), p.col("parent"))
        while True:
            if author[post] == agent:
                return True
            if kind[post] not in (REPOST, QUOTE) or (post := int(parent[post])) < 0:
                return False

    def hidden(self, post: int) -> bool:
        """Removed by moderation (itself or the post it shares) or written by a suspended account."""
        m = self.mod
        if not (m.removed or m.suspended):
            return False
        p = self.posts
        return post in m.removed or p.get("root", post) in m.removed or p.get("author", post) in m.suspended

    def recent_posts_of(self, author: int, k: int) -> list[int]:
        """The last ``k`` feed posts (not comments) of ``author``, oldest first. A scan of the post
        table's columns (no per-author index is kept: nothing on a step's path asks this)."""
        p = self.posts
        ids = np.flatnonzero((p.col("author") == author) & (p.col("kind") != COMMENT))
        return [int(i) for i in ids[-k:]] if k > 0 else []

    def trend(self, k: int | None = None) -> list[int]:
        """Most engaged posts (likes + reposts + comments) of the recent window, ties to newest."""
        k = k or self.search_limit
        start = self.posts.first_in_step(self.step - self.trend_window_steps + 1)
        n = len(self.posts)
        if n == start:
            return []
        p = self.posts
        score = (
            p.col("likes")[start:n]
            + p.col("reposts")[start:n]
            + p.col("comments")[start:n]
            - p.col("dislikes")[start:n]
        )
        ids = np.arange(start, n)
        order = np.lexsort((-ids, -score))
        if not (self.mod.removed or self.mod.suspended):
            return [int(i) for i in ids[order[:k]]]
        return [int(i) for i in ids[order] if not self.hidden(int(i))][:k]

    def groups_of(self, agent: int) -> list[int]:
        return sorted(self.member_of.get(agent, ()))

    def recent_group_messages(self, group_id: int, k: int) -> list[tuple[int, int, str]]:
        """The last ``k`` messages (step, author, text) of a group, oldest first."""
        log = self.group_log[group_id]
        return list(log)[-k:] if k > 0 else []

    def search_posts(self, query: str) -> list[int]:
        toks = _tokens(query)
        if not toks:
            return []
        lists = sorted((self._index.get(t, ()) for t in toks), key=len)
        hits = set(lists[0]).intersection(*lists[1:]) if lists[0] else set()
        return [h for h in sorted(hits, reverse=True) if not self.hidden(h)][: self.search_limit]

    def search_user(self, query: str) -> list[int]:
        q = query.strip().lower()
        if not q or self.usernames is None:
            return []
        j = self.joined
        out = [i for i, u in enumerate(self.usernames) if q in u.lower() and (j is None or j[i])]
        return out[: self.search_limit]

    # ---- applying actions -------------------------------------------------------------------
    def apply(self, agent: int, action: A.Action) -> A.Outcome:
        """Validate ``action`` by ``agent`` against the state; apply it only if valid."""
        if not (0 <= agent < self.n_users):
            return A.Outcome(status="invalid", reason=f"unknown agent {agent}")
        if self.joined is not None and not self.joined[agent]:
            return A.Outcome(status="invalid", reason=f"agent {agent} has not signed up yet")
        if agent in self.mod.suspended:
            return A.Outcome(status="invalid", reason=f"account {agent} is suspended by moderation", code="suspended")
        if action.type not in self.allowed:
            return A.Outcome(
                status="invalid", reason=f"action '{action.type}' is not available on preset '{self.preset}'"
            )
        handler = RULES.get(type(action))
        if handler is None:
            return A.Outcome(status="invalid", reason=f"action '{action.type}' has no platform rule")
        return handler(self, agent, action)

    def _bad(self, reason: str) -> A.Outcome:
        return A.Outcome(status="invalid", reason=reason)

    def _post_check(self, post_id: int, *, comment: bool | None = None) -> str | None:
        if not self.posts.exists(post_id):
            return f"post {post_id} does not exist"
        if self.hidden(post_id):
            return f"post {post_id} was removed by moderation"
        is_comment = self.posts.get("kind", post_id) == COMMENT
        if comment is True and not is_comment:
            return f"post {post_id} is not a comment"
        if comment is False and is_comment:
            return f"post {post_id} is a comment; use the comment action"
        return None

    def _user_check(self, agent: int, user_id: int, verb: str) -> str | None:
        if not (0 <= user_id < self.n_users) or (self.joined is not None and not self.joined[user_id]):
            return f"user {user_id} does not exist"
        if user_id == agent:
            return f"cannot {verb} yourself"
        return None

    def _new_post(self, agent: int, kind: int, parent: int, root: int, raw: str) -> A.Outcome:
        ct = clean_text(raw, self.max_post_chars)
        if not ct.text.strip() and kind in (ORIGINAL, QUOTE, COMMENT):
            return self._bad("content is empty")
        pid = self.posts.add(agent, self.step, self.time, kind, parent, root, ct.text)
        root_id = self.posts.get("root", pid)
        if kind != COMMENT:
            self.adopters.add(root_id, agent)
        for t in _tokens(ct.text):
            if (ids := self._index.get(t)) is None:
                self._index[t] = ids = array("i")
            ids.append(pid)
        if ct.truncated or ct.sanitized:
            self.events.post_flags[pid] = (ct.truncated, ct.sanitized)
        return A.Outcome(status="ok", post_id=pid, truncated=ct.truncated, sanitized=ct.sanitized)

    @rule(A.CreatePost)
    def _do_create_post(self, agent: int, a: A.CreatePost) -> A.Outcome:
        return self._new_post(agent, ORIGINAL, -1, -1, a.content)

    @rule(A.Repost)
    def _do_repost(self, agent: int, a: A.Repost) -> A.Outcome:
        if err := self._post_check(a.post_id, comment=False):
            return self._bad(err)
        if (agent, a.post_id) in self.reposted:
            return self._bad(f"already reposted post {a.post_id}")
        root = self.posts.get("root", a.post_id)
        if self.posts.get("author", root) == agent:
            return self._bad("cannot repost your own post")
        out = self._new_post(agent, REPOST, a.post_id, root, "")
        self.reposted.add((agent, a.post_id))
        self.posts.bump("reposts", a.post_id)
        if root != a.post_id:
            self.posts.bump("reposts", root)
        return out

    @rule(A.QuotePost)
    def _do_quote_post(self, agent: int, a: A.QuotePost) -> A.Outcome:
        if err := self._post_check(a.post_id, comment=False):
            return self._bad(err)
        out = self._new_post(agent, QUOTE, a.post_id, self.posts.get("root", a.post_id), a.content)
        if out.ok:
            self.posts.bump("reposts", a.post_id)
        return out

    def _vote(self, agent: int, post_id: int, comment: bool, up: bool) -> A.Outcome:
        if err := self._post_check(post_id, comment=comment):
            return self._bad(err)
        if not self.allow_self_rating and self.posts.get("author", post_id) == agent:
            return self._bad(f"cannot rate your own {'comment' if comment else 'post'} {post_id}")
        key = (agent, post_id)
        mine, other = (self.likes, self.dislikes) if up else (self.dislikes, self.likes)
        if key in mine:
            return self._bad(f"already {'liked' if up else 'disliked'} {post_id}")
        if key in other:
            return self._bad(f"already {'disliked' if up else 'liked'} {post_id}; undo that first")
        mine.add(key)
        self.posts.bump("likes" if up else "dislikes", post_id)
        if up:
            self.events.likes.append(key)
        return A.Outcome(status="ok")

    def _unvote(self, agent: int, post_id: int, up: bool, comment: bool | None = None) -> A.Outcome:
        if err := self._post_check(post_id, comment=comment):
            return self._bad(err)
        mine = self.likes if up else self.dislikes
        if (agent, post_id) not in mine:
            return self._bad(f"has not {'liked' if up else 'disliked'} {'comment' if comment else 'post'} {post_id}")
        mine.discard((agent, post_id))
        self.posts.bump("likes" if up else "dislikes", post_id, -1)
        return A.Outcome(status="ok")

    @rule(A.LikePost)
    def _do_like_post(self, agent: int, a: A.LikePost) -> A.Outcome:
        return self._vote(agent, a.post_id, False, True)

    @rule(A.DislikePost)
    def _do_dislike_post(self, agent: int, a: A.DislikePost) -> A.Outcome:
        return self._vote(agent, a.post_id, False, False)

    @rule(A.LikeComment)
    def _do_like_comment(self, agent: int, a: A.LikeComment) -> A.Outcome:
        return self._vote(agent, a.comment_id, True, True)

    @rule(A.DislikeComment)
    def _do_dislike_comment(self, agent: int, a: A.DislikeComment) -> A.Outcome:
        return self._vote(agent, a.comment_id, True, False)

    @rule(A.UnlikePost)
    def _do_unlike_post(self, agent: int, a: A.UnlikePost) -> A.Outcome:
        return self._unvote(agent, a.post_id, True)

    @rule(A.UndoDislikePost)
    def _do_undo_dislike_post(self, agent: int, a: A.UndoDislikePost) -> A.Outcome:
        return self._unvote(agent, a.post_id, False)

    @rule(A.UnlikeComment)
    def _do_unlike_comment(self, agent: int, a: A.UnlikeComment) -> A.Outcome:
        return self._unvote(agent, a.comment_id, True, comment=True)

    @rule(A.UndoDislikeComment)
    def _do_undo_dislike_comment(self, agent: int, a: A.UndoDislikeComment) -> A.Outcome:
        return self._unvote(agent, a.comment_id, False, comment=True)

    @rule(A.CreateComment)
    def _do_create_comment(self, agent: int, a: A.CreateComment) -> A.Outcome:
        if err := self._post_check(a.post_id):
            return self._bad(err)
        out = self._new_post(agent, COMMENT, a.post_id, self.posts.get("root", a.post_id), a.content)
        if out.ok:
            self.posts.bump("comments", a.post_id)
            self.comments_of.setdefault(a.post_id, []).append(out.post_id)  # type: ignore[arg-type]
        return out

    @rule(A.Follow)
    def _do_follow(self, agent: int, a: A.Follow) -> A.Outcome:
        if err := self._user_check(agent, a.user_id, "follow"):
            return self._bad(err)
        if self.follows.is_following(agent, a.user_id):
            return self._bad(f"already following user {a.user_id}")
        if self.blocks and a.user_id in self.blocks.get(agent, ()):
            return self._bad(f"you blocked user {a.user_id}")
        if self.blocks and agent in self.blocks.get(a.user_id, ()):
            return self._bad(f"user {a.user_id} has blocked you")
        self.follows.add(agent, a.user_id)
        self.events.follows.append((agent, a.user_id, 1))
        return A.Outcome(status="ok")

    @rule(A.Unfollow)
    def _do_unfollow(self, agent: int, a: A.Unfollow) -> A.Outcome:
        if err := self._user_check(agent, a.user_id, "unfollow"):
            return self._bad(err)
        if not self.follows.is_following(agent, a.user_id):
            return self._bad(f"not following user {a.user_id}")
        self.follows.remove(agent, a.user_id)
        self.events.follows.append((agent, a.user_id, -1))
        return A.Outcome(status="ok")

    @rule(A.Mute)
    def _do_mute(self, agent: int, a: A.Mute) -> A.Outcome:
        if err := self._user_check(agent, a.user_id, "mute"):
            return self._bad(err)
        m = self.mutes.setdefault(agent, set())
        if a.user_id in m:
            return self._bad(f"already muted user {a.user_id}")
        m.add(a.user_id)
        return A.Outcome(status="ok")

    @rule(A.Unmute)
    def _do_unmute(self, agent: int, a: A.Unmute) -> A.Outcome:
        if err := self._user_check(agent, a.user_id, "unmute"):
            return self._bad(err)
        if a.user_id not in self.mutes.get(agent, ()):
            return self._bad(f"user {a.user_id} is not muted")
        if a.user_id in self.blocks.get(agent, ()):
            return self._bad(f"user {a.user_id} is blocked (and so muted)")
        self.mutes[agent].discard(a.user_id)
        return A.Outcome(status="ok")

    @rule(A.Block)
    def _do_block(self, agent: int, a: A.Block) -> A.Outcome:
        """X's block: the two stop following each other, neither may follow the other again, and the
        blocked user's posts leave the blocker's feeds (blocked users are muted, which every recommender
        and search already honours). There is no unblock: no platform socium reproduces offers it to agents."""
        if err := self._user_check(agent, a.user_id, "block"):
            return self._bad(err)
        b = self.blocks.setdefault(agent, set())
        if a.user_id in b:
            return self._bad(f"already blocked user {a.user_id}")
        b.add(a.user_id)
        self.mutes.setdefault(agent, set()).add(a.user_id)
        for src, dst in ((agent, a.user_id), (a.user_id, agent)):
            if self.follows.is_following(src, dst):
                self.follows.remove(src, dst)
                self.events.follows.append((src, dst, -1))
        return A.Outcome(status="ok")

    @rule(A.NotInterested)
    def _do_not_interested(self, agent: int, a: A.NotInterested) -> A.Outcome:
        """X's "not interested in this post": recorded for the recommender (:meth:`not_interested`)."""
        if err := self._post_check(a.post_id, comment=False):
            return self._bad(err)
        d = self.dismissed.setdefault(agent, set())
        if a.post_id in d:
            return self._bad(f"already marked post {a.post_id} not interested")
        d.add(a.post_id)
        return A.Outcome(status="ok")

    @rule(A.SearchPosts)
    def _do_search_posts(self, agent: int, a: A.SearchPosts) -> A.Outcome:
        muted = self.muted(agent)
        hits = [p for p in self.search_posts(a.query[:200]) if self.posts.get("author", p) not in muted]
        return A.Outcome(status="ok", results=tuple(hits))

    @rule(A.SearchUser)
    def _do_search_user(self, agent: int, a: A.SearchUser) -> A.Outcome:
        return A.Outcome(status="ok", results=tuple(self.search_user(a.query[:200])))

    @rule(A.Trend)
    def _do_trend(self, agent: int, a: A.Trend) -> A.Outcome:
        muted = self.muted(agent)
        return A.Outcome(
            status="ok", results=tuple(p for p in self.trend() if self.posts.get("author", p) not in muted)
        )

    @rule(A.Refresh)
    def _do_refresh(self, agent: int, a: A.Refresh) -> A.Outcome:
        return A.Outcome(status="ok")

    @rule(A.ReportPost)
    def _do_report_post(self, agent: int, a: A.ReportPost) -> A.Outcome:
        if err := self._post_check(a.post_id):
            return self._bad(err)
        if (agent, a.post_id) in self.reported:
            return self._bad(f"already reported post {a.post_id}")
        self.reported.add((agent, a.post_id))
        self.posts.bump("reports", a.post_id)
        return A.Outcome(status="ok")

    @rule(A.CreateGroup)
    def _do_create_group(self, agent: int, a: A.CreateGroup) -> A.Outcome:
        name = clean_text(a.name, 100).text.strip()
        if not name:
            return self._bad("group name is empty")
        gid = len(self.groups)
        self.groups.append((name, {agent}))
        self.group_log.append(deque(maxlen=GROUP_HISTORY))
        self.member_of.setdefault(agent, set()).add(gid)
        self.events.groups.append((gid, agent, name))
        return A.Outcome(status="ok", group_id=gid)

    def _group_check(self, group_id: int) -> str | None:
        return None if 0 <= group_id < len(self.groups) else f"group {group_id} does not exist"

    @rule(A.JoinGroup)
    def _do_join_group(self, agent: int, a: A.JoinGroup) -> A.Outcome:
        if err := self._group_check(a.group_id):
            return self._bad(err)
        members = self.groups[a.group_id][1]
        if agent in members:
            return self._bad(f"already a member of group {a.group_id}")
        members.add(agent)
        self.member_of.setdefault(agent, set()).add(a.group_id)
        return A.Outcome(status="ok", group_id=a.group_id)

    @rule(A.LeaveGroup)
    def _do_leave_group(self, agent: int, a: A.LeaveGroup) -> A.Outcome:
        if err := self._group_check(a.group_id):
            return self._bad(err)
        members = self.groups[a.group_id][1]
        if agent not in members:
            return self._bad(f"not a member of group {a.group_id}")
        members.discard(agent)
        self.member_of[agent].discard(a.group_id)
        return A.Outcome(status="ok", group_id=a.group_id)

    @rule(A.SendToGroup)
    def _do_send_to_group(self, agent: int, a: A.SendToGroup) -> A.Outcome:
        if err := self._group_check(a.group_id):
            return self._bad(err)
        if agent not in self.groups[a.group_id][1]:
            return self._bad(f"not a member of group {a.group_id}")
        ct = clean_text(a.content, self.max_post_chars)
        if not ct.text.strip():
            return self._bad("content is empty")
        self.events.group_messages.append((a.group_id, agent, ct.text))
        self.group_log[a.group_id].append((self.step, agent, ct.text))
        return A.Outcome(status="ok", group_id=a.group_id, truncated=ct.truncated, sanitized=ct.sanitized)

    @rule(A.DoNothing)
    def _do_do_nothing(self, agent: int, a: A.DoNothing) -> A.Outcome:
        return A.Outcome(status="ok")


def _pairs(pairs_of: Callable[[PlatformState], set[tuple[int, int]]]) -> Callable[..., set[int]]:
    def marked(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
        pairs = pairs_of(st)
        return {i for i in ids if (agent, i) in pairs} if pairs else set()

    return marked


def _own_authored(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    if st.allow_self_rating:
        return set()
    author = st.posts.col("author")
    return {i for i in ids if author[i] == agent}


def _comments(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    kind = st.posts.col("kind")
    return {i for i in ids if kind[i] == COMMENT}


def _hidden(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    return {i for i in ids if st.hidden(i)} if st.mod.removed or st.mod.suspended else set()


def _own_chains(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    cols = (st.posts.col("author"), st.posts.col("kind"), st.posts.col("parent"))
    return {i for i in ids if st._own_chain(agent, i, cols)}


def _blocked_by(st: PlatformState, agent: int, ids: Iterable[int]) -> set[int]:
    return {i for i in ids if agent in st.blocks.get(i, ())} if st.blocks else set()


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
    "following": lambda st, agent, ids: set(st.follows.following_among(agent, ids)),
    "muted": _among(lambda st, agent: st.mutes.get(agent)),
    "blocked": _among(lambda st, agent: st.blocks.get(agent)),
    "blocked_by": _blocked_by,
}
"""How the platform answers each mark: the same facts its rules above check."""
