"""The platform's in-memory state: users, posts, follows, votes, groups, and the questions asked of them.

Feeds, prompts and moderation read it; actions change it only through :meth:`PlatformState.apply`,
which hands each action to its rule in :mod:`socium.platform.rules` (validated against this state and
applied in full, or rejected with a reason, leaving the state untouched). No LLM, no Ray, no store here.
"""

from __future__ import annotations

import heapq
import re
from array import array
from collections import deque
from collections.abc import Iterable

import numpy as np

from socium.core import actions as A
from socium.platform.adopters import Adopters
from socium.platform.events import StepEvents
from socium.platform.graph import FollowIndex
from socium.platform.marks import ModerationMarks
from socium.platform.posts import COMMENT, ORIGINAL, QUOTE, PostTable
from socium.platform.rules import MARKS, RULES
from socium.platform.text import clean_text

_TOKEN = re.compile(r"\w+", re.UNICODE)


def _tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.lower()) if len(t) > 1}


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
        self._lowered: tuple[list[str], list[str], str] | None = None  # search_user: (names, lowered, joined)
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
        # one int64 key orders as (score, id) both descending (what a lexsort of the two gives): the
        # top k found by a partition, not a sort of the whole window (a trend request per ~13 actions
        # on the OASIS-parity workload sorted every post of the window each time)
        key = score.astype(np.int64, copy=False) * (n - start) + np.arange(n - start)
        if not (self.mod.removed or self.mod.suspended):
            top = np.argpartition(-key, k - 1)[:k] if 0 < k < n - start else np.arange(n - start)
            return [int(i) + start for i in top[np.argsort(-key[top])][:k]]
        return [int(i) + start for i in np.argsort(-key) if not self.hidden(int(i) + start)][:k]

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
        hide = bool(self.mod.removed or self.mod.suspended)
        if len(lists) > 1:  # C-level set intersection: a random query's words rarely meet
            hits = set(lists[0]).intersection(*lists[1:]) if lists[0] else set()
            if not hide:
                return heapq.nlargest(self.search_limit, hits)
            return [h for h in sorted(hits, reverse=True) if not self.hidden(h)][: self.search_limit]
        out: list[int] = []  # one word: its index list is ascending (posts are only appended), newest last
        for h in reversed(lists[0]):
            if not (hide and self.hidden(h)):
                out.append(h)
                if len(out) >= self.search_limit:
                    break
        return out[: self.search_limit]

    def search_user(self, query: str) -> list[int]:
        q = query.strip().lower()
        if not q or self.usernames is None:
            return []
        lowered, every = self._lowered_usernames()
        if q not in every:  # no name holds it (a name holding it is part of the joined text)
            return []
        j = self.joined
        out: list[int] = []
        for i, u in enumerate(lowered):  # first matches in id order, as many as shown
            if q in u and (j is None or j[i]):
                out.append(i)
                if len(out) >= self.search_limit:
                    break
        return out[: self.search_limit]

    def _lowered_usernames(self) -> tuple[list[str], str]:
        """The usernames in lower case and all of them joined, made once per list (lowering all 2,000 on
        every search_user was ~60% of applying the OASIS-parity workload's actions, most of whose queries
        match no name); a list replaced or grown is lowered again."""
        names = self.usernames or []
        got = self._lowered
        if got is None or got[0] is not names or len(got[1]) != len(names):
            lowered = [u.lower() for u in names]
            got = self._lowered = (names, lowered, "\n".join(lowered))
        return got[1], got[2]

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

    def new_post(self, agent: int, kind: int, parent: int, root: int, raw: str) -> A.Outcome:
        """Add a post of ``kind`` (the rules' one way to write one): cleaned, indexed for search, its root's
        adopters updated; an original, quote or comment with no text is refused."""
        ct = clean_text(raw, self.max_post_chars)
        if not ct.text.strip() and kind in (ORIGINAL, QUOTE, COMMENT):
            return A.Outcome(status="invalid", reason="content is empty")
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
