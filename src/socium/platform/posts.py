"""Columnar post storage: numpy columns so recommenders can rank 10^5 posts without Python loops.

Prompts, rules and the trace read posts one at a time instead (a feed item, a chain walk, a step's
new rows): for them the table keeps read-only ``memoryview`` s of the same columns (:attr:`PostTable.ints`),
since indexing a numpy array for one Python int costs ~5x a memoryview's (``int(a[i])`` builds a numpy
scalar first): ~90 such reads per activation were ~20% of building an LLM agent's observation.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

KIND_NAMES = ("original", "repost", "quote", "comment")
ORIGINAL, REPOST, QUOTE, COMMENT = 0, 1, 2, 3

_INT_COLS = (
    "author",
    "step",
    "kind",
    "parent",
    "root",
    "likes",
    "dislikes",
    "reposts",
    "comments",
    "reports",
    "veracity",
)  # veracity: index into socium.config.moderation.VERACITY (0 unknown)


class PostInts(NamedTuple):
    """Read-only memoryviews of the integer columns (and the time): ``ints.author[pid]`` is a Python int.

    Valid until the table grows: take it when reading, do not keep it across :meth:`PostTable.add`.
    """

    author: memoryview
    step: memoryview
    kind: memoryview
    parent: memoryview
    root: memoryview
    likes: memoryview
    dislikes: memoryview
    reposts: memoryview
    comments: memoryview
    reports: memoryview
    veracity: memoryview
    time: memoryview


class PostTable:
    """Append-only posts; post id == row index, so ids are dense and assigned deterministically."""

    def __init__(self, capacity: int = 1024) -> None:
        self._n = 0
        self._cap = capacity
        self._cols: dict[str, np.ndarray] = {c: np.zeros(capacity, dtype=np.int64) for c in _INT_COLS}
        self._time = np.zeros(capacity, dtype=np.float64)
        self.text: list[str] = []
        self._views()

    def _views(self) -> None:
        cols = [self._cols[c] for c in _INT_COLS]
        self.ints = PostInts(*(a.data.toreadonly() for a in (*cols, self._time)))
        self._mv: dict[str, memoryview] = self.ints._asdict()

    def __getstate__(self) -> dict[str, Any]:  # memoryviews do not pickle: rebuilt from the columns
        return {k: v for k, v in self.__dict__.items() if k not in ("ints", "_mv")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._views()

    def __len__(self) -> int:
        return self._n

    def _grow(self) -> None:
        self._cap *= 2
        for c, arr in self._cols.items():
            new = np.zeros(self._cap, dtype=arr.dtype)
            new[: self._n] = arr[: self._n]
            self._cols[c] = new
        t = np.zeros(self._cap, dtype=np.float64)
        t[: self._n] = self._time[: self._n]
        self._time = t
        self._views()

    def add(self, author: int, step: int, time: float, kind: int, parent: int, root: int, text: str) -> int:
        if self._n == self._cap:
            self._grow()
        i = self._n
        c = self._cols
        c["author"][i], c["step"][i], c["kind"][i], c["parent"][i] = author, step, kind, parent
        c["root"][i] = i if root < 0 else root
        self._time[i] = time
        self.text.append(text)
        self._n += 1
        return i

    def col(self, name: str) -> np.ndarray:
        """A read-only view of one column over the stored posts."""
        arr = self._time if name == "time" else self._cols[name]
        view = arr[: self._n]
        view.flags.writeable = False
        return view

    def get(self, name: str, i: int) -> int:
        return self._mv[name][i]

    def set(self, name: str, i: int, value: int) -> None:
        self._cols[name][i] = value

    def bump(self, name: str, i: int, delta: int = 1) -> None:
        self._cols[name][i] += delta

    def exists(self, i: int) -> bool:
        return 0 <= i < self._n

    def first_in_step(self, step: int) -> int:
        """Index of the first post created at or after ``step`` (posts are appended in step order)."""
        return int(np.searchsorted(self._cols["step"][: self._n], step, side="left"))
