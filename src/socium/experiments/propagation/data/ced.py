"""Weibo repost cascades of CED (Song et al. 2018) read into socium's cascade rows, every repair counted.

CED (``thunlp/Chinese_Rumor_Dataset``, ``CED_Dataset/``) holds, per cascade, the original microblog
(``original-microblog/<n>_<mid>_<uid>.json``) and a JSON list of its reposts and comments
(``rumor-repost/`` or ``non-rumor-repost/``, same file name; the folder is the label). The data set does
**not** tell reposts from comments: every item with a ``parent`` is read as a reshare, so "size" here is
reposts and comments together (the items are ~95% of the original's reported repost count, so they are
mostly reposts). What is read, and why each choice:

* **Time zone.** An item's ``date`` ("YYYY-MM-DD HH:MM:SS") is Beijing time (UTC+8) without a zone: read
  as UTC, the first item comes 8.0 h after the original's Unix ``time`` in the median cascade (and within
  the first minutes once 8 h are taken off). So ``time_s = date - 8 h - original time``.
* **Source time.** 87 originals carry no Unix ``time`` but a text one with its zone
  ("Sat Jun 29 12:40:09 +0800 2013"): parsed with the zone (``source_time_text``). 9 of those are posted on
  or after 2013-07-01: the folder's cut is by Unix time only, so ``posted_before`` drops them here
  (``posted_after_cutoff``), keeping the held-back half out of every fit. A cascade with no usable source
  time is dropped (``source_time_missing``): its delays would be invented.
* **Dates without a year.** 74 items upstream (55 in the shared folder) carry "MM月DD日 HH:MM" (Weibo's
  display form for a date in the current year; minute resolution). The year is inferred as the first
  occurrence of that month and day at or after the source (``date_year_inferred``); all of them fall
  weeks to years after the source, far beyond any observation window used here.
* **Parents.** ``parent`` is the ``mid`` reposted (empty: the original), so reposts of reposts form a tree.
  A parent that is not in the cascade drops the item with its subtree (``unknown_parent``: attaching it to
  the source would invent breadth); a repeated ``mid`` keeps the first (``duplicate_items``); an item timed
  before its parent is clamped up to the parent's time (``child_before_parent``), as for Twitter15.
* **Before the source.** An item up to :data:`CLOCK_SLACK_S` before the original is clamped to time 0
  (``before_source_clamped``: clock noise); one further before is impossible for a repost and is dropped with
  its subtree (``before_source_dropped``; one item, 42 h early).
* **The crawl's ~1,000 cap.** No cascade is truncated inside: the data set holds only originals with fewer
  than 1,000 reported reposts at crawl time (largest file: 959 items), so the cap is a selection of which
  cascades exist, not a cut of their ends. Size distributions are censored from above at ~1,000 (as
  Twitter15's are by its own crawl); ``reported_reposts`` is kept per cascade so it can be stated.

Bad or odd rows never stop the data set: each kind is counted in :class:`CEDReport`, the rest is read.
Node ids are ``mid``s (a user may repost twice); ``user_id`` is the ``uid``.
"""

from __future__ import annotations

import json
import math
import re
import tarfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from socium.data.datadir import data_dir, require
from socium.errors import InputFileError
from socium.experiments.propagation.data.realcascades import (
    DEFAULT_HORIZON_MIN,
    CascadeNode,
    CascadeTree,
    DefectReport,
)

UTC = timezone.utc
CUTOFF = datetime(2013, 7, 1, tzinfo=UTC)
"""Cascades posted on or after this are held back for evaluation: nothing is fitted or tuned on them."""
BEIJING = timedelta(hours=8)
CLOCK_SLACK_S = 60.0
"""Items at most this many seconds before their original are clock noise (clamped); earlier ones are dropped."""
LABELS = {"rumor-repost": "rumor", "non-rumor-repost": "non-rumor"}
_FULL = "%Y-%m-%d %H:%M:%S"
_PARTIAL = re.compile(r"^\s*(\d{1,2})月(\d{1,2})日\s+(\d{1,2}):(\d{2})\s*$")
_NAME = re.compile(r"^(\d+)_([^_/]+)_([^_/]+)\.json$")

SCHEMA = pa.schema(
    [
        ("cascade_id", pa.string()),
        ("node_id", pa.string()),
        ("parent_id", pa.string()),
        ("user_id", pa.string()),
        ("time_s", pa.float64()),
        ("label", pa.string()),
        ("source_user", pa.string()),
        ("posted_at", pa.timestamp("s", tz="UTC")),
    ]
)
"""The cascade row format (one row per node, the source first with an empty parent) plus the per-cascade
columns ``label``, ``source_user`` and ``posted_at``, repeated on every row of a cascade."""


@dataclass(slots=True)
class CEDReport:
    """How many cascades and items each rule touched; :attr:`ACTIONS` says what was done."""

    cascades_read: int = 0
    cascades_kept: int = 0
    no_repost_file: int = 0
    unreadable_files: int = 0
    source_time_text: int = 0
    source_time_missing: int = 0
    posted_after_cutoff: int = 0
    items: int = 0
    malformed_items: int = 0
    duplicate_items: int = 0
    date_year_inferred: int = 0
    date_unparseable: int = 0
    unknown_parent: int = 0
    before_source_clamped: int = 0
    before_source_dropped: int = 0
    under_dropped: int = 0
    child_before_parent: int = 0
    nodes_kept: int = 0
    max_reported_reposts: int = 0
    max_items: int = 0

    ACTIONS: ClassVar[dict[str, str]] = {
        "cascades_read": "original microblogs read",
        "cascades_kept": "cascades in the output",
        "no_repost_file": "original without a repost/comment file: dropped",
        "unreadable_files": "file that is not valid JSON of the expected shape: its cascade dropped",
        "source_time_text": "original timed by a text date with zone (no Unix time): parsed, kept",
        "source_time_missing": "original with no usable time: cascade dropped",
        "posted_after_cutoff": "posted on/after posted_before (held-back evaluation half): cascade dropped",
        "items": "repost/comment items read in kept cascades",
        "malformed_items": "item without mid/date or not an object: dropped with its subtree",
        "duplicate_items": "repeat of an earlier mid: dropped",
        "date_year_inferred": "'MM月DD日 HH:MM' date: year = first such date at/after the source, kept",
        "date_unparseable": "date in neither form: dropped with its subtree",
        "unknown_parent": "parent mid not in the cascade: dropped with its subtree",
        "before_source_clamped": f"timed <= {CLOCK_SLACK_S:.0f} s before the original: clamped to 0",
        "before_source_dropped": f"timed > {CLOCK_SLACK_S:.0f} s before the original: dropped with its subtree",
        "under_dropped": "items dropped only because an ancestor was dropped (or in a parent cycle)",
        "child_before_parent": "timed before its parent: clamped up to the parent's time",
        "nodes_kept": "nodes in the output, sources included",
        "max_reported_reposts": "largest repost count an original reports (the crawl's selection cap)",
        "max_items": "largest number of items in one cascade file",
    }

    def __add__(self, other: CEDReport) -> CEDReport:
        a, b = self.as_dict(), other.as_dict()
        return CEDReport(**{k: (max(v, b[k]) if k.startswith("max_") else v + b[k]) for k, v in a.items()})

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def balanced(self) -> bool:
        """Every item read is either dropped for one reason or kept (``nodes_kept`` counts sources too)."""
        dropped = (
            self.malformed_items
            + self.duplicate_items
            + self.date_unparseable
            + self.unknown_parent
            + self.before_source_dropped
            + self.under_dropped
        )
        return self.items == dropped + self.nodes_kept - self.cascades_kept


@dataclass
class CEDCascade:
    """One cascade before it becomes rows: the source and its kept items in time order."""

    cascade_id: str
    label: str
    source_user: str
    posted_at: float  # Unix seconds (UTC)
    reported_reposts: int
    nodes: list[tuple[str, str, str, float]] = field(default_factory=list)  # node, parent, user, time_s


def _source_time(raw: Any) -> tuple[float | None, bool]:
    """Unix seconds of an original's ``time`` and whether it came from the text form."""
    if isinstance(raw, bool):
        return None, False
    if isinstance(raw, (int, float)) and math.isfinite(raw) and raw > 0:
        return float(raw), False
    if isinstance(raw, str) and raw.strip():
        try:
            return datetime.strptime(raw.strip(), "%a %b %d %H:%M:%S %z %Y").timestamp(), True
        except ValueError:
            return None, False
    return None, False


def _item_time(date: str, posted_at: float) -> tuple[float | None, bool]:
    """Unix seconds of an item's Beijing-time ``date`` and whether its year was inferred."""
    try:
        local = datetime.strptime(date.strip(), _FULL)
        return (local.replace(tzinfo=UTC) - BEIJING).timestamp(), False
    except ValueError:
        pass
    m = _PARTIAL.match(date)
    if not m:
        return None, False
    month, day, hour, minute = (int(x) for x in m.groups())
    source_local = datetime.fromtimestamp(posted_at, UTC) + BEIJING
    for year in range(source_local.year, source_local.year + 4):
        try:
            local = datetime(year, month, day, hour, minute, tzinfo=UTC)
        except ValueError:  # 02月29日 in a common year
            continue
        t = (local - BEIJING).timestamp()
        if t >= posted_at - 60.0:  # minute resolution: the source's own minute counts as "at"
            return t, True
    return None, False


def build_cascade(
    cascade_id: str,
    label: str,
    source_user: str,
    original: dict[str, Any],
    items: Any,
    report: CEDReport,
) -> CEDCascade | None:
    """One cascade from its parsed original and item list; counts every repair in ``report``.

    Returns None (counted) when the source time is unusable. Items are attached from the source outwards,
    so an item whose ancestor was dropped goes too (``under_dropped``), and no cycle can survive.
    """
    posted, from_text = _source_time(original.get("time"))
    if posted is None:
        report.source_time_missing += 1
        return None
    report.source_time_text += int(from_text)
    reported = original.get("reposts")
    reported = int(reported) if isinstance(reported, (int, float)) and not isinstance(reported, bool) else 0
    report.max_reported_reposts = max(report.max_reported_reposts, reported)
    src = cascade_id
    items = items if isinstance(items, list) else []
    report.items += len(items)
    report.max_items = max(report.max_items, len(items))
    recs: dict[str, tuple[str, str, float]] = {}  # mid -> parent mid ('' = source), uid, time_s
    bad: set[str] = set()
    for it in items:
        mid = it.get("mid") if isinstance(it, dict) else None
        if not isinstance(mid, str) or not mid or not isinstance(it.get("date"), str) or mid == src:
            report.malformed_items += 1
            continue
        if mid in recs or mid in bad:
            report.duplicate_items += 1
            continue
        t, inferred = _item_time(it["date"], posted)
        if t is None:
            report.date_unparseable += 1
            bad.add(mid)
            continue
        report.date_year_inferred += int(inferred)
        dt = t - posted
        if dt < -CLOCK_SLACK_S:
            report.before_source_dropped += 1
            bad.add(mid)
            continue
        if dt < 0:
            report.before_source_clamped += 1
            dt = 0.0
        parent = it.get("parent") if isinstance(it.get("parent"), str) else ""
        recs[mid] = (parent, str(it.get("uid") or ""), dt)
    children: dict[str, list[str]] = {}
    for mid, (parent, _, _) in recs.items():
        children.setdefault(parent or src, []).append(mid)
    for p, kids in children.items():
        if p != src and p not in recs and p not in bad:
            report.unknown_parent += len(kids)
    # Attach from the source outwards (breadth-first: parents before children); clamp to the parent.
    t_of: dict[str, float] = {src: 0.0}
    out = CEDCascade(cascade_id, label, source_user, posted, reported, [(src, "", source_user, 0.0)])
    frontier = [src]
    while frontier:
        nxt = []
        for p in frontier:
            for c in children.get(p, ()):
                _, uid, dt = recs[c]
                if dt < t_of[p]:
                    report.child_before_parent += 1
                    dt = t_of[p]
                t_of[c] = dt
                out.nodes.append((c, p, uid, dt))
                nxt.append(c)
        frontier = nxt
    known_orphans = sum(len(k) for p, k in children.items() if p != src and p not in recs and p not in bad)
    report.under_dropped += len(recs) - (len(out.nodes) - 1) - known_orphans
    out.nodes.sort(key=lambda r: (r[3], r[0] != src))
    report.nodes_kept += len(out.nodes)
    report.cascades_kept += 1
    return out


def _members(path: Path) -> Iterator[tuple[str, bytes]]:
    """(path inside ``CED_Dataset``, bytes) of every JSON file in a CED tarball or unpacked folder."""
    if path.is_dir():
        base = path / "CED_Dataset" if (path / "CED_Dataset").is_dir() else path
        for f in sorted(base.glob("*/*.json")):
            yield f"{f.parent.name}/{f.name}", f.read_bytes()
        return
    try:
        tf = tarfile.open(path, "r:*")
    except (OSError, tarfile.TarError) as exc:
        raise InputFileError(path, None, f"cannot open CED archive: {exc}") from exc
    with tf:
        for m in tf:
            if not m.isfile() or not m.name.endswith(".json"):
                continue
            parts = m.name.split("/")
            fh = tf.extractfile(m)
            if fh is not None and len(parts) >= 2:
                yield f"{parts[-2]}/{parts[-1]}", fh.read()


def default_path() -> Path:
    """The CED data in the data folder: an unpacked ``ced/CED_Dataset``, else ``socium data fetch ced``'s
    ``ced/ced.tar.gz`` (all cascades: the reader's ``posted_before`` keeps the later ones out), else the
    shared folder's ``ced/ced_before_2013-07.tar.gz``; none: the missing-data error naming the fetch."""
    root = data_dir() / "ced"
    if (root / "CED_Dataset").is_dir():
        return root
    for name in ("ced.tar.gz", "ced_before_2013-07.tar.gz"):
        if (root / name).is_file():
            return root / name
    return require(root / "ced.tar.gz")


def read_ced_cascades(
    path: str | Path | None = None,
    *,
    posted_before: datetime | None = CUTOFF,
    ids: Iterable[str] | None = None,
) -> tuple[list[CEDCascade], CEDReport]:
    """Every readable CED cascade (sorted by posting time, then id) and the counts of what was repaired.

    ``posted_before`` (default 2013-07-01 UTC) drops later cascades, counted; None keeps all. ``ids``
    (cascade ids = the original's ``mid``) restricts the read; an id that is not there raises.
    """
    p = Path(path) if path is not None else default_path()
    if not p.exists():
        raise InputFileError(p, None, "no CED data here (a CED_Dataset folder or its tarball)")
    want = None if ids is None else {str(i) for i in ids}
    originals: dict[str, tuple[str, str, Any]] = {}  # file name -> (mid, uid, original)
    reposts: dict[str, tuple[str, Any]] = {}  # file name -> (label, items)
    rep = CEDReport()
    for rel, data in _members(p):
        folder, name = rel.split("/")
        m = _NAME.match(name)
        if m is None or (folder != "original-microblog" and folder not in LABELS):
            continue
        if want is not None and m[2] not in want:
            continue
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            obj = None
        if folder == "original-microblog":
            originals[name] = (m[2], m[3], obj)
        else:
            reposts[name] = (LABELS[folder], obj)
    cut = None if posted_before is None else posted_before.timestamp()
    out: list[CEDCascade] = []
    for name, (mid, uid, original) in originals.items():
        rep.cascades_read += 1
        if name not in reposts:
            rep.no_repost_file += 1
            continue
        label, items = reposts[name]
        if not isinstance(original, dict) or not isinstance(items, list):
            rep.unreadable_files += 1
            continue
        posted, _ = _source_time(original.get("time"))
        if cut is not None and posted is not None and posted >= cut:
            rep.posted_after_cutoff += 1
            continue
        one = CEDReport()
        c = build_cascade(mid, label, uid, original, items, one)
        rep = rep + one
        if c is not None:
            out.append(c)
    if want is not None:
        missing = sorted(want - {c.cascade_id for c in out})
        if missing:
            raise InputFileError(p, None, f"no usable CED cascade for ids {missing[:5]} ({len(missing)} missing)")
    out.sort(key=lambda c: (c.posted_at, c.cascade_id))
    return out, rep


def cascade_rows(cascades: Iterable[CEDCascade]) -> pa.Table:
    """The cascades as one table in :data:`SCHEMA` (the documented cascade row format)."""
    cols: dict[str, list[Any]] = {f.name: [] for f in SCHEMA}
    for c in cascades:
        posted = datetime.fromtimestamp(int(c.posted_at), UTC)
        for node, parent, user, t in c.nodes:
            cols["cascade_id"].append(c.cascade_id)
            cols["node_id"].append(node)
            cols["parent_id"].append(parent or None)
            cols["user_id"].append(user)
            cols["time_s"].append(t)
            cols["label"].append(c.label)
            cols["source_user"].append(c.source_user)
            cols["posted_at"].append(posted)
    return pa.table(cols, schema=SCHEMA)


def read_ced(
    path: str | Path | None = None, *, posted_before: datetime | None = CUTOFF, ids: Iterable[str] | None = None
) -> tuple[pa.Table, CEDReport]:
    """CED as cascade rows (:data:`SCHEMA`) with the repair counts; see :func:`read_ced_cascades`."""
    cascades, rep = read_ced_cascades(path, posted_before=posted_before, ids=ids)
    return cascade_rows(cascades), rep


def read_ced_source(limit: int | None = None) -> pa.Table:
    """The ``ced`` data set of the cascade-source registry: the first ``limit`` cascades in posting order
    (all when None), posted before 2013-07-01; the repair counts are in :func:`read_ced`'s report."""
    cascades, _ = read_ced_cascades(posted_before=CUTOFF)
    return cascade_rows(cascades if limit is None else cascades[: max(limit, 0)])


def to_tree(c: CEDCascade, horizon_min: float | None = DEFAULT_HORIZON_MIN) -> CascadeTree:
    """The cascade as the propagation code's :class:`CascadeTree` (minutes; node ids are ``mid``s).

    Nodes later than ``horizon_min`` go with their subtree, counted in the tree's ``DefectReport`` as
    Twitter15's are; the repairs above are in the :class:`CEDReport`, not repeated here.
    """
    limit = math.inf if horizon_min is None else horizon_min
    nodes: dict[str, CascadeNode] = {}
    rep = DefectReport(lines=len(c.nodes))
    depth: dict[str, int] = {}
    for node, parent, _, t in c.nodes:  # time order, parents first (children are clamped to parents)
        d = 0 if not parent else depth.get(parent, -1) + 1
        if parent and parent not in nodes:
            rep.under_beyond_horizon += int(parent in depth)
            depth[node] = d
            continue
        depth[node] = d
        if t / 60.0 > limit:
            rep.beyond_horizon += 1
            continue
        nodes[node] = CascadeNode(parent or None, t / 60.0, d, node, t / 60.0)
    rep.nodes_kept = len(nodes)
    users = {node: user for node, _, user, _ in c.nodes if node in nodes}
    return CascadeTree(f"ced:{c.cascade_id}", c.source_user, c.cascade_id, nodes, rep, horizon_min, users)


def load_ced(
    path: str | Path | None = None,
    ids: Iterable[str] | None = None,
    *,
    posted_before: datetime | None = CUTOFF,
    horizon_min: float | None = DEFAULT_HORIZON_MIN,
) -> tuple[dict[str, CascadeTree], dict[str, dict[str, Any]], CEDReport]:
    """Trees keyed by cascade id (posting order), per-cascade facts (label, posted_at, reported reposts)
    and the repair counts: what the propagation study reads."""
    cascades, rep = read_ced_cascades(path, posted_before=posted_before, ids=ids)
    trees = {c.cascade_id: to_tree(c, horizon_min) for c in cascades}
    info = {
        c.cascade_id: {
            "label": c.label,
            "posted_at": datetime.fromtimestamp(c.posted_at, UTC).isoformat(),
            "reported_reposts": c.reported_reposts,
            "source_user": c.source_user,
        }
        for c in cascades
    }
    return trees, info, rep


def summary_lines(rep: CEDReport) -> list[str]:
    """The repair counts as printable lines (one per rule, with its action)."""
    return [f"{k:<24}{v:>9}  {CEDReport.ACTIONS[k]}" for k, v in rep.as_dict().items()] + [
        f"balanced (items = dropped + kept): {rep.balanced()}"
    ]


def label_counts(info: dict[str, dict[str, Any]]) -> dict[str, int]:
    return dict(Counter(v["label"] for v in info.values()))
