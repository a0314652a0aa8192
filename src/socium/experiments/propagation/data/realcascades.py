"""Real Twitter15 retweet cascades, cleaned in a recorded way, as ground truth for propagation runs.

The Ma et al. (2017) tree files are messy: self-loops, users with several parents, children timed
before their parents, delays of years, sometimes the ``ROOT`` line in the middle of the file. Every
repair is a modelling choice that moves the "real" curves OASIS-style comparisons are scored
against, so each one is counted in a :class:`DefectReport` instead of being silently absorbed.

Node identity is the user ID: in Twitter15 every user appears with exactly one (tweet, delay), so
"distinct users reached" and "nodes reached" coincide (any conflict is counted).
"""

from __future__ import annotations

import csv
import heapq
import math
import os
import re
import sys
import tarfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar, TextIO

import numpy as np
from numpy.typing import NDArray

from socium.data.datadir import data_dir, require
from socium.errors import InputFileError
from socium.experiments.propagation.data.curves import DEFAULT_MINUTES, cascade_curves_from_events

DEFAULT_HORIZON_MIN: float = 30 * 24 * 60.0
"""Thirty days: far beyond the 150-minute comparison window, yet cuts the multi-year outliers."""

ROOT = "ROOT"
_TREE_PREFIX = "twitter15/tree/"
_LABEL_MEMBER = "twitter15/label.txt"
_SIDE_RE = re.compile(r"""^\s*\[\s*(['"])(.*?)\1\s*,\s*(['"])(.*?)\3\s*,\s*(['"]?)(.*?)\5\s*\]\s*$""")
_PathArg = str | os.PathLike[str] | None
_Triple = tuple[str, str, float]


@dataclass(slots=True)
class DefectReport:
    """How many of each known defect a tree had; :attr:`ACTIONS` says what was done about each.

    Every line is either dropped as a defect or is the one edge that brings its child node in, and
    that node is then kept or dropped; :meth:`balanced` checks that the counts add up that way.
    """

    lines: int = 0
    blank_lines: int = 0
    source_rebased: int = 0
    malformed_lines: int = 0
    self_loops: int = 0
    duplicate_edges: int = 0
    multi_parent_nodes: int = 0
    extra_parent_edges: int = 0
    conflicting_node_records: int = 0
    child_before_parent: int = 0
    lines_child_before_parent: int = 0
    orphan_edges: int = 0
    unreachable_nodes: int = 0
    beyond_horizon: int = 0
    under_beyond_horizon: int = 0
    nodes_kept: int = 0

    ACTIONS: ClassVar[dict[str, str]] = {
        "lines": "non-blank lines read (the ROOT line included)",
        "blank_lines": "skipped; not counted in lines",
        "source_rebased": "source delay was not 0: all delays shifted so the source is at 0",
        "malformed_lines": "strict: InputFileError; strict=False: line skipped",
        "self_loops": "line with parent user == child user: dropped",
        "duplicate_edges": "repeat of an earlier parent->child line: dropped",
        "multi_parent_nodes": "nodes with >1 distinct parent: kept the earliest (clamped) one",
        "extra_parent_edges": "the other parent lines of those nodes: dropped",
        "conflicting_node_records": "user seen with another tweet/delay: kept earliest child delay",
        "child_before_parent": "kept node timed before its parent: delay clamped up to parent's",
        "lines_child_before_parent": "non-ROOT lines, child delay < parent's (as cascade_stats.csv)",
        "orphan_edges": "parent never a child: not attached to root (would invent breadth)",
        "unreachable_nodes": "nodes with no path from the source: dropped",
        "beyond_horizon": "nodes whose own delay exceeds the horizon: dropped with their subtree",
        "under_beyond_horizon": "nodes dropped only because an ancestor was beyond the horizon",
        "nodes_kept": "nodes in the cleaned tree, the source included",
    }
    _PARTS: ClassVar[tuple[str, ...]] = (
        "malformed_lines",
        "self_loops",
        "duplicate_edges",
        "extra_parent_edges",
        "nodes_kept",
        "unreachable_nodes",
        "beyond_horizon",
        "under_beyond_horizon",
    )

    def __add__(self, other: DefectReport) -> DefectReport:
        return DefectReport(**{k: v + getattr(other, k) for k, v in self.as_dict().items()})

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def balanced(self) -> bool:
        """``lines == malformed + self-loops + duplicates + extra parents + every child node``."""
        return self.lines == sum(getattr(self, k) for k in self._PARTS)


@dataclass(frozen=True, slots=True)
class CascadeNode:
    parent: str | None
    delay: float  # minutes since the source, rebased and clamped to the parent's delay
    depth: int
    tweet_id: str
    raw_delay: float  # as written in the file, kept so the repairs can be audited


@dataclass(frozen=True)
class CascadeTree:
    """A cleaned cascade; ``nodes`` is in attachment order (source first, then by delay).

    Keys of ``nodes`` are user IDs for Ma et al. trees (one node per user there) and ``node_id`` for
    cascade-format rows, whose users are in ``node_users``."""

    source: str
    root_user: str
    root_tweet_id: str
    nodes: dict[str, CascadeNode]
    defects: DefectReport
    horizon_min: float | None
    node_users: dict[str, str] | None = None
    """User of each node key when keys are not user IDs (cascade-format rows: a user may reshare twice)."""

    def events(self) -> tuple[list[str], NDArray[np.int64], NDArray[np.float64]]:
        """User IDs, parent indices (-1 = source) and delays in the form curves.py consumes."""
        keys = list(self.nodes)
        index = {u: i for i, u in enumerate(keys)}
        parent = np.array([-1 if n.parent is None else index[n.parent] for n in self.nodes.values()], dtype=np.int64)
        users = keys if self.node_users is None else [self.node_users[k] for k in keys]
        return users, parent, np.array([n.delay for n in self.nodes.values()], dtype=np.float64)

    @property
    def max_depth(self) -> int:
        return max(n.depth for n in self.nodes.values())

    @property
    def max_breadth(self) -> int:
        """Largest number of nodes at one depth >= 1 (0 for a lone source), as OASIS counts it."""
        return max(Counter(n.depth for n in self.nodes.values() if n.depth).values(), default=0)


def _parse_line(line: str) -> tuple[_Triple, _Triple] | str:
    """Both ends of one edge line, or the reason it is malformed."""
    sides = [_SIDE_RE.match(side) for side in line.split("->")]
    if len(sides) != 2 or sides[0] is None or sides[1] is None:
        return "expected ['uid', 'tweet_id', 'delay']->['uid', 'tweet_id', 'delay']"
    try:
        (p, c) = ((m[2], m[4], float(m[6])) for m in (sides[0], sides[1]))
    except ValueError:
        return "a delay is not a number"
    if not (math.isfinite(p[2]) and math.isfinite(c[2]) and p[0] and c[0]):
        return "a delay is not finite or a user id is empty"
    return "ROOT cannot be a child" if c[0] == ROOT else (p, c)


def parse_tree(
    lines_or_path: str | os.PathLike[str] | Iterable[str],
    *,
    source: str = "<memory>",
    horizon_min: float | None = DEFAULT_HORIZON_MIN,
    strict: bool = True,
) -> CascadeTree:
    """Parse one Ma et al. tree file (a path; a ``str`` is a path) or its lines into a clean tree.

    Parents are chosen by a Dijkstra-style sweep from the source in order of clamped delay, so a
    node with several parents keeps the earliest one that is itself reachable, no cycle can survive,
    and clamping never reorders what was already placed. Depths are tree depths under that choice,
    not shortest-path depths over all lines. A file without a ``ROOT`` line raises even when
    ``strict=False``: guessing a source would fabricate the very structure being measured.
    """
    if isinstance(lines_or_path, (str, os.PathLike)):
        path = Path(lines_or_path)
        source = str(path) if source == "<memory>" else source
        try:
            lines_or_path = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputFileError(path, None, f"cannot read tree file: {exc}") from exc
    rep = DefectReport()
    root: _Triple | None = None
    seen_edges: set[tuple[str, str]] = set()
    parents: dict[str, list[str]] = {}
    children: dict[str, list[str]] = {}
    child_delay: dict[str, tuple[float, str]] = {}
    first_record: dict[str, tuple[str, float]] = {}
    conflicting: set[str] = set()

    def note(uid: str, tweet: str, delay: float) -> None:
        if first_record.setdefault(uid, (tweet, delay)) != (tweet, delay):
            conflicting.add(uid)

    for lineno, raw in enumerate(lines_or_path, start=1):
        if not raw.strip():
            rep.blank_lines += 1
            continue
        rep.lines += 1
        parsed = _parse_line(raw)
        if not isinstance(parsed, str) and parsed[0][0] == ROOT and root and root[0] != parsed[1][0]:
            parsed = f"second ROOT line (source {parsed[1][0]!r}, already {root[0]!r})"
        if isinstance(parsed, str):
            if strict:
                raise InputFileError(source, lineno, parsed)
            rep.malformed_lines += 1
            continue
        (pu, pt, pd), (cu, ct, cd) = parsed
        note(cu, ct, cd)
        if pu == ROOT:
            root = root or (cu, ct, cd)
        else:
            note(pu, pt, pd)
            if pu == cu:
                rep.self_loops += 1
                continue
            rep.lines_child_before_parent += int(cd < pd)
        if (pu, cu) in seen_edges:
            rep.duplicate_edges += 1
            continue
        seen_edges.add((pu, cu))
        parents.setdefault(cu, []).append(pu)
        children.setdefault(pu, []).append(cu)
        if cu not in child_delay or cd < child_delay[cu][0]:
            child_delay[cu] = (cd, ct)

    if root is None:
        raise InputFileError(source, None, "no ['ROOT', 'ROOT', ...] line: the source is unknown")
    rep.conflicting_node_records = len(conflicting)
    for plist in parents.values():
        if len(plist) > 1:
            rep.multi_parent_nodes += 1
            rep.extra_parent_edges += len(plist) - 1
    rep.orphan_edges = sum(len(k) for p, k in children.items() if p != ROOT and p not in parents)

    # The source's time comes from its ROOT line even if another line claims it earlier; a few
    # files time everything relative to a later retweet, so delays are rebased to the source.
    root_user, origin = root[0], root[2]
    child_delay[root_user] = (origin, root[1])
    rep.source_rebased = int(origin != 0.0)
    eff: dict[str, float] = {root_user: 0.0}
    attach: dict[str, tuple[str | None, int]] = {root_user: (None, 0)}
    heap: list[tuple[float, int, str]] = [(0.0, 0, root_user)]
    while heap:
        d_u, _, u = heapq.heappop(heap)
        for c in children.get(u, ()):
            if c not in attach:
                eff[c] = max(child_delay[c][0] - origin, d_u)
                attach[c] = (u, attach[u][1] + 1)
                heapq.heappush(heap, (eff[c], len(attach), c))

    rep.unreachable_nodes = len(child_delay) - len(attach)
    limit = math.inf if horizon_min is None else horizon_min
    nodes: dict[str, CascadeNode] = {}
    for u, (par, depth) in attach.items():
        raw_d, tweet = child_delay[u]
        if eff[u] > limit:  # eff never decreases down the tree, so whole subtrees go
            rep.beyond_horizon += int(raw_d - origin > limit)
            rep.under_beyond_horizon += int(raw_d - origin <= limit)
            continue
        rep.child_before_parent += int(eff[u] > raw_d - origin)
        nodes[u] = CascadeNode(par, eff[u], depth, tweet, raw_d)
    rep.nodes_kept = len(nodes)
    return CascadeTree(source, root_user, root[1], nodes, rep, horizon_min)


def _open_tar(tar_path: _PathArg) -> tuple[tarfile.TarFile, Path]:
    path = Path(tar_path or data_dir() / "twitter15" / "twitter15_trees.tar.gz")
    if tar_path is None:
        require(path)  # absent research data: one line naming `socium data fetch twitter15`
    try:
        return tarfile.open(path, "r:gz"), path
    except (OSError, tarfile.TarError) as exc:
        raise InputFileError(path, None, f"cannot open Twitter15 tarball: {exc}") from exc


def _tree_id(name: str) -> str | None:
    ok = name.startswith(_TREE_PREFIX) and name.endswith(".txt")
    return name[len(_TREE_PREFIX) : -4] if ok else None


def _read_member(tf: tarfile.TarFile, path: Path, name: str) -> tuple[str, str]:
    source = f"{path}[{name}]"
    try:
        fh = tf.extractfile(name)
        return fh.read().decode("utf-8") if fh else "", source  # None only for non-files
    except (KeyError, UnicodeDecodeError) as exc:
        raise InputFileError(source, None, f"cannot read from the tarball: {exc!r}") from exc


def load_twitter15(
    tar_path: _PathArg = None,
    ids: Iterable[str] | None = None,
    *,
    horizon_min: float | None = DEFAULT_HORIZON_MIN,
    strict: bool = True,
) -> dict[str, CascadeTree]:
    """Trees keyed by source tweet ID, read straight from the tarball (never unpacked on disk).

    Asking for an ID that is not in the tarball raises, so a typo cannot quietly shrink a sample.
    """
    wanted = None if ids is None else [str(i) for i in ids]
    want_set = None if wanted is None else set(wanted)
    tf, path = _open_tar(tar_path)
    out: dict[str, CascadeTree] = {}
    with tf:
        for member in tf:
            tid = _tree_id(member.name)
            if tid is None or not member.isfile() or (want_set is not None and tid not in want_set):
                continue
            text, source = _read_member(tf, path, member.name)
            out[tid] = parse_tree(text.splitlines(), source=source, horizon_min=horizon_min, strict=strict)
    if wanted is not None:
        missing = [i for i in wanted if i not in out]
        if missing:
            raise InputFileError(path, None, f"no tree for ids {missing[:5]} ({len(missing)} missing)")
        out = {i: out[i] for i in wanted}
    return out


def twitter15_ids(tar_path: _PathArg = None) -> list[str]:
    """Source tweet IDs that have a tree file in the tarball, in archive order."""
    tf, _ = _open_tar(tar_path)
    with tf:
        return [tid for name in tf.getnames() if (tid := _tree_id(name)) is not None]


LABELS = ("non-rumor", "false", "true", "unverified")


def normalise_label(label: str | None) -> str | None:
    """One vocabulary for veracity labels: Twitter15 writes ``false``, OASIS's list ``False``; some
    copies spell ``non-rumour`` or ``non_rumor``. Unknown labels are kept, lower-cased."""
    if label is None or not str(label).strip():
        return None
    key = str(label).strip().lower().replace("_", "-").replace(" ", "-").replace("rumour", "rumor")
    return key


def load_labels(tar_path: _PathArg = None) -> dict[str, str]:
    """Veracity label (``non-rumor``/``false``/``true``/``unverified``) by source tweet ID."""
    tf, path = _open_tar(tar_path)
    with tf:
        text, source = _read_member(tf, path, _LABEL_MEMBER)
    labels: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        label, sep, tid = line.strip().partition(":")
        if sep and label and tid.isdigit():
            labels[tid] = normalise_label(label) or label
        elif line.strip():
            raise InputFileError(source, lineno, f"expected 'label:tweet_id', got {line!r}")
    return labels


def oasis_cascade_ids(path: _PathArg = None, *, available: Iterable[str] | None = None) -> list[str]:
    """Source IDs of OASIS's 198 cascades that come from Twitter15 and have a tree here.

    ``available`` defaults to the tree IDs in the tarball; the intersection guards against a
    cascade OASIS lists under Twitter15 whose tree this copy lacks.
    """
    csv_path = (
        Path(path)
        if path is not None
        else require(data_dir() / "oasis-reference" / "twitter_dataset" / "all_topics.csv")
    )
    try:
        with csv_path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise InputFileError(csv_path, None, f"cannot read OASIS topic list: {exc}") from exc
    if rows and not {"id", "source"} <= set(rows[0]):
        raise InputFileError(csv_path, 1, "header lacks the 'id' and 'source' columns")
    have = set(twitter15_ids() if available is None else (str(a) for a in available))
    picked = (r["id"].strip() for r in rows if r["source"].strip() == "twitter15")
    return list(dict.fromkeys(t for t in picked if t in have))


def real_curves(tree: CascadeTree, minutes: int = DEFAULT_MINUTES) -> dict[str, NDArray[np.int64]]:
    """Per-minute scale, depth and max breadth of a real tree, via the simulator's code path."""
    _, parent, delay = tree.events()
    return cascade_curves_from_events(parent, delay, minutes)


def earliest_users(tree: CascadeTree, max_users: int | None) -> list[str]:
    """Users ordered by (delay, attachment order); a prefix is always a connected subtree."""
    users = list(tree.nodes)
    delays = [tree.nodes[u].delay for u in users]
    order = sorted(range(len(users)), key=lambda i: (delays[i], i))
    ranked = [users[i] for i in order]
    return ranked if max_users is None else ranked[:max_users]


def subtree_curves(tree: CascadeTree, users: list[str], minutes: int) -> dict[str, np.ndarray]:
    """Real curves of the cascade restricted to ``users`` (a prefix from :func:`earliest_users`)."""
    idx = {u: i for i, u in enumerate(users)}
    parent = [-1 if (p := tree.nodes[u].parent) is None else idx[p] for u in users]
    return cascade_curves_from_events(
        np.array(parent, dtype=np.int64), np.array([tree.nodes[u].delay for u in users]), minutes
    )


def defect_summary(
    tar_path: _PathArg = None,
    *,
    horizon_min: float | None = DEFAULT_HORIZON_MIN,
    trees: Sequence[CascadeTree] | None = None,
    file: TextIO | None = None,
) -> DefectReport:
    """Total defects over all trees, printed (to ``file``, default stdout) with the fixes applied.

    Parses with ``strict=False`` so one bad line cannot hide the counts of everything else.
    """
    if trees is None:
        trees = list(load_twitter15(tar_path, horizon_min=horizon_min, strict=False).values())
    total = DefectReport()
    touched: Counter[str] = Counter()
    for t in trees:
        total = total + t.defects
        touched.update(k for k, v in t.defects.as_dict().items() if v > 0)
    out = sys.stdout if file is None else file  # looked up per call so redirection works
    print(f"defects over {len(trees)} trees (horizon {horizon_min} min)", file=out)
    print(f"{'defect':<26}{'count':>9}{'trees':>7}  action", file=out)
    for k, v in total.as_dict().items():
        print(f"{k:<26}{v:>9}{touched[k]:>7}  {DefectReport.ACTIONS[k]}", file=out)
    print(f"balanced (lines = dropped + kept): {total.balanced()}", file=out)
    return total


if __name__ == "__main__":
    defect_summary()
