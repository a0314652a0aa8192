"""Who adopted each cascade root (posted, reposted or quoted it), kept compactly for the platform state."""

from __future__ import annotations

from socium.platform.posts import COMMENT, PostTable


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
        if not 0 <= root < len(p):
            return None
        v = p.ints
        return None if v.kind[root] == COMMENT else v.author[root]  # comments are never adopted

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
