"""The one cascade row format every reader produces, its validation, and its conversion to trees.

Why a format of its own: the forecast, the fit and the CV must read anyone's cascades (Twitter15/16 tree
files, CED's Weibo reposts, a user's CSV), and each source's quirks must end at its reader. A reader turns
its source into one :data:`SCHEMA` table; :func:`cascade_table` checks every row before anything is built,
so a bad row is one ``error:`` line naming the file, line (or row) and column, and nothing half-loads.

One row per node (docs/data.md, "Cascade format"):

* ``cascade_id``: the cascade (the source post's id);
* ``node_id``: this reshare, unique within its cascade;
* ``parent_id``: the node it was reshared from; empty for the source (exactly one per cascade);
* ``user_id``: who reshared (a user may appear under several nodes);
* ``time_s``: seconds after the source (the source at 0; never before its parent's time).

Optional per-cascade columns, constant within a cascade (blank cells take the cascade's value):
``label`` (e.g. a veracity label), ``source_user`` (must be the source row's ``user_id`` when given),
``posted_at`` (when the source was posted: ISO 8601, or Unix seconds; UTC).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from socium.errors import InputFileError
from socium.experiments.propagation.data.realcascades import CascadeNode, CascadeTree, DefectReport

REQUIRED = ("cascade_id", "node_id", "parent_id", "user_id", "time_s")
OPTIONAL = ("label", "source_user", "posted_at")
COLUMNS = REQUIRED + OPTIONAL
SCHEMA = pa.schema(
    [
        pa.field("cascade_id", pa.string(), nullable=False),
        pa.field("node_id", pa.string(), nullable=False),
        pa.field("parent_id", pa.string()),
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("time_s", pa.float64(), nullable=False),
        pa.field("label", pa.string()),
        pa.field("source_user", pa.string()),
        pa.field("posted_at", pa.timestamp("s", tz="UTC")),
    ]
)
"""Every reader's output; the optional columns are present and null where a source lacks them."""
FILE_SUFFIXES = (".csv", ".parquet", ".jsonl", ".ndjson")
"""Files read as rows of the format (a ``.txt`` file is a Ma et al. tree file)."""

Where = Callable[[int], tuple[int | None, str]]
"""Row index -> (line for :class:`InputFileError`, extra place words such as ``row 7``)."""


def _lines_from(first: int) -> Where:
    return lambda i: (first + i, "")


def _rows_only(i: int) -> tuple[int | None, str]:
    return None, f"row {i + 1}"


def _text(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float) and v.is_integer():  # JSON 123.0 ids from a numeric column
        return str(int(v))
    return str(v).strip()


def _posted(v: Any) -> dt.datetime | None | str:
    """A ``posted_at`` cell as a UTC datetime, None when blank, or why it is not one."""
    if isinstance(v, dt.datetime):
        return v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)
    s = _text(v)
    if not s:
        return None
    try:
        return dt.datetime.fromtimestamp(float(s), dt.timezone.utc)
    except (ValueError, OverflowError, OSError):
        pass
    try:
        t = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return f"posted_at {s!r} is neither ISO 8601 nor Unix seconds"
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def cascade_table(columns: Mapping[str, Sequence[Any]], *, source: str | Path, where: Where | None = None) -> pa.Table:
    """Check every row of ``columns`` (name -> cells) and return them as a :data:`SCHEMA` table.

    Raises :class:`InputFileError` at the first bad row, naming ``source``, its line (``where``; default
    ``row N``) and the column: a missing or unknown column, an empty id, a time that is not a finite
    number >= 0, a duplicate node, a cascade without exactly one source or whose source is not at 0, an
    unknown parent, a child timed before its parent, a cycle, or a per-cascade column that varies.
    """
    src, place = str(source), where or _rows_only

    def fail(i: int | None, col: str, why: str) -> InputFileError:
        line, extra = place(i) if i is not None else (None, "")
        return InputFileError(src, line, f"{extra + ': ' if extra else ''}column {col!r}: {why}")

    missing = [c for c in REQUIRED if c not in columns]
    unknown = [c for c in columns if c not in COLUMNS]
    if missing or unknown:
        what = f"missing column {missing[0]!r}" if missing else f"unknown column {unknown[0]!r}"
        raise InputFileError(src, None, f"{what}; the cascade format has {', '.join(COLUMNS)} (docs/data.md)")
    n = len(columns["cascade_id"])
    if any(len(v) != n for v in columns.values()):
        raise InputFileError(src, None, "columns of unequal length")
    cid = [_text(v) for v in columns["cascade_id"]]
    nid = [_text(v) for v in columns["node_id"]]
    pid = [_text(v) for v in columns["parent_id"]]
    uid = [_text(v) for v in columns["user_id"]]
    times: list[float] = []
    for i in range(n):
        for col, vals in (("cascade_id", cid), ("node_id", nid), ("user_id", uid)):
            if not vals[i]:
                raise fail(i, col, "empty")
        raw = columns["time_s"][i]
        try:
            t = float(_text(raw)) if not isinstance(raw, (int, float)) else float(raw)
        except ValueError:
            raise fail(i, "time_s", f"{_text(raw)!r} is not a number") from None
        if not math.isfinite(t) or t < 0:
            raise fail(i, "time_s", f"{t} is not a finite time >= 0 (seconds after the source)")
        times.append(t)

    rows_of: dict[str, dict[str, int]] = {}  # cascade -> node -> row
    for i in range(n):
        nodes = rows_of.setdefault(cid[i], {})
        if nid[i] in nodes:
            raise fail(
                i, "node_id", f"duplicate node {nid[i]!r} in cascade {cid[i]!r} (first at {_at(place, nodes[nid[i]])})"
            )
        nodes[nid[i]] = i

    extra: dict[str, list[Any]] = {c: [None] * n for c in OPTIONAL}
    for c, nodes in rows_of.items():
        roots = [i for i in nodes.values() if not pid[i]]
        if len(roots) != 1:
            i = roots[1] if roots else min(nodes.values())
            why = "second source (empty parent_id)" if roots else "no source (a row with empty parent_id)"
            raise fail(i, "parent_id", f"cascade {c!r} has {why}")
        root = roots[0]
        if times[root] != 0.0:
            raise fail(root, "time_s", f"the source of cascade {c!r} is at {times[root]}, not 0")
        for i in sorted(nodes.values()):
            if i == root:
                continue
            p = nodes.get(pid[i])
            if p is None:
                raise fail(i, "parent_id", f"unknown parent {pid[i]!r} in cascade {c!r}")
            if times[i] < times[p]:
                raise fail(
                    i, "time_s", f"{times[i]} is before its parent {pid[i]!r} ({times[p]}): time must not decrease"
                )
        _check_acyclic(c, nodes, pid, fail)
        for col in OPTIONAL:
            if col not in columns:
                continue
            cells = {i: columns[col][i] for i in nodes.values()}
            val = _cascade_value(c, col, cells, fail)
            if col == "source_user" and val is not None and val != uid[root]:
                raise fail(root, "source_user", f"{val!r} is not the source row's user_id {uid[root]!r}")
            for i in nodes.values():
                extra[col][i] = val
    data = {"cascade_id": cid, "node_id": nid, "parent_id": [p or None for p in pid], "user_id": uid, "time_s": times}
    data.update(extra)
    return pa.Table.from_pydict(data, schema=SCHEMA)


def _at(place: Where, i: int) -> str:
    line, extra = place(i)
    return extra or f"line {line}"


def _check_acyclic(c: str, nodes: dict[str, int], pid: list[str], fail: Callable[..., InputFileError]) -> None:
    """Every node's parent chain reaches the source; else the first row on a cycle is named."""
    ok: set[int] = set()
    for start in sorted(nodes.values()):
        path: list[int] = []
        on_path: set[int] = set()
        i = start
        while i not in ok and pid[i]:
            if i in on_path:
                raise fail(min(path[path.index(i) :]), "parent_id", f"cycle in cascade {c!r} through node {pid[i]!r}")
            path.append(i)
            on_path.add(i)
            i = nodes[pid[i]]
        ok.update(path)
        ok.add(i)


def _cascade_value(c: str, col: str, vals: dict[int, Any], fail: Callable[..., InputFileError]) -> Any:
    """The one value of a per-cascade column in cascade ``c`` (blank cells take it); None when all blank."""
    found: tuple[int, Any] | None = None
    for i in sorted(vals):
        v = _posted(vals[i]) if col == "posted_at" else (_text(vals[i]) or None)
        if isinstance(v, str) and col == "posted_at":
            raise fail(i, col, v)
        if v is None:
            continue
        if found is None:
            found = (i, v)
        elif v != found[1]:
            raise fail(i, col, f"{v!r} differs from {found[1]!r} earlier in cascade {c!r}: it is per-cascade")
    return None if found is None else found[1]


# ---- file readers -----------------------------------------------------------------------------------
def read_csv(path: str | Path) -> pa.Table:
    """A CSV file with a header line; line numbers in errors are the file's (header = line 1)."""
    p = Path(path)
    try:
        with p.open(newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if not header:
                raise InputFileError(p, 1, "empty file: expected a header line")
            header = [h.strip() for h in header]
            cols: dict[str, list[Any]] = {h: [] for h in header}
            lines: list[int] = []
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    raise InputFileError(p, reader.line_num, f"{len(row)} fields, the header has {len(header)}")
                lines.append(reader.line_num)
                for h, cell in zip(header, row):
                    cols[h].append(cell)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputFileError(p, None, f"cannot read CSV: {exc}") from None
    return cascade_table(cols, source=p, where=lambda i: (lines[i], ""))


def read_jsonl(path: str | Path) -> pa.Table:
    """One JSON object per line (blank lines skipped); errors name the file's line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(p, None, f"cannot read JSONL: {exc}") from None
    cols: dict[str, list[Any]] = {}
    lines: list[int] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(p, lineno, f"not JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise InputFileError(p, lineno, "expected one JSON object per line")
        for k in obj:
            cols.setdefault(k, [None] * len(lines))
        for k, vals in cols.items():
            vals.append(obj.get(k))
        lines.append(lineno)
    if not lines:
        raise InputFileError(p, None, "no rows")
    return cascade_table(cols, source=p, where=lambda i: (lines[i], ""))


def read_parquet(path: str | Path) -> pa.Table:
    """A Parquet file with the format's columns; errors name the row (Parquet has no lines)."""
    p = Path(path)
    try:
        t = pq.read_table(p)
    except (OSError, pa.ArrowException) as exc:
        raise InputFileError(p, None, f"cannot read Parquet: {exc}") from None
    return cascade_table(t.to_pydict(), source=p)


def write_parquet(table: pa.Table, path: str | Path) -> Path:
    """Write a cascade table (e.g. a converted data set) so :func:`read_parquet` reads it back as is."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.cast(SCHEMA), p)
    return p


# ---- trees <-> table ------------------------------------------------------------------------------
def table_from_trees(
    trees: Mapping[str, CascadeTree],
    *,
    labels: Mapping[str, str] | None = None,
    posted_at: Mapping[str, dt.datetime] | None = None,
) -> pa.Table:
    """Cleaned trees (e.g. :func:`~socium.experiments.propagation.data.realcascades.load_twitter15`'s) as rows.

    Trees from the Ma et al. reader are already repaired (children clamped to their parent), so the rows
    always pass :func:`cascade_table`; delays in minutes become ``time_s``.
    """
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    for cid, tree in trees.items():
        users = tree.node_users or {}
        label = (labels or {}).get(cid)
        when = (posted_at or {}).get(cid)
        for key, node in tree.nodes.items():
            cols["cascade_id"].append(cid)
            cols["node_id"].append(key)
            cols["parent_id"].append(node.parent)
            cols["user_id"].append(users.get(key, key))
            cols["time_s"].append(node.delay * 60.0)
            cols["label"].append(label)
            cols["source_user"].append(tree.root_user)
            cols["posted_at"].append(when)
    return pa.Table.from_pydict(cols, schema=SCHEMA)


def cascade_ids(table: pa.Table) -> list[str]:
    """Cascade ids in order of first appearance."""
    return list(dict.fromkeys(table.column("cascade_id").to_pylist()))


def cascade_info(table: pa.Table) -> dict[str, dict[str, Any]]:
    """Per-cascade columns by cascade id: ``label``, ``source_user``, ``posted_at`` (None where absent), ``n``."""
    out: dict[str, dict[str, Any]] = {}
    cols = table.select(["cascade_id", *OPTIONAL]).to_pydict()
    for i, c in enumerate(cols["cascade_id"]):
        entry = out.setdefault(c, {"n": 0, **{k: cols[k][i] for k in OPTIONAL}})
        entry["n"] += 1
    return out


def limit_cascades(table: pa.Table, limit: int | None) -> pa.Table:
    """The rows of the first ``limit`` cascades (in order of first appearance); all when None."""
    if limit is None:
        return table
    keep = set(cascade_ids(table)[: max(limit, 0)])
    mask = pa.array([c in keep for c in table.column("cascade_id").to_pylist()])
    return table.filter(mask)


def cascade_trees(table: pa.Table, *, source: str = "<table>") -> dict[str, CascadeTree]:
    """One :class:`CascadeTree` per cascade of a :data:`SCHEMA` table, in order of first appearance.

    Nodes are keyed by ``node_id`` (a user may reshare twice) with :attr:`CascadeTree.node_users` giving
    each node's user, so the fit's per-user effects see users; delays are minutes. Nodes are ordered by
    (time, depth, row), so a parent always precedes its children and the earliest-first prefix the
    forecast observes is a subtree. The table is assumed valid (:func:`cascade_table` made it).
    """
    cols = table.select(list(REQUIRED)).to_pydict()
    by: dict[str, list[int]] = {}
    for i, c in enumerate(cols["cascade_id"]):
        by.setdefault(c, []).append(i)
    out: dict[str, CascadeTree] = {}
    for c, rows in by.items():
        node = {cols["node_id"][i]: i for i in rows}
        depth: dict[int, int] = {}
        for i in rows:
            chain = []
            j = i
            while j not in depth and cols["parent_id"][j] is not None:
                chain.append(j)
                j = node[cols["parent_id"][j]]
            base = depth.setdefault(j, 0)
            for k, jj in enumerate(reversed(chain), start=1):
                depth[jj] = base + k
        order = sorted(rows, key=lambda i: (cols["time_s"][i], depth[i], i))
        nodes: dict[str, CascadeNode] = {}
        users: dict[str, str] = {}
        for i in order:
            key, minutes = cols["node_id"][i], cols["time_s"][i] / 60.0
            nodes[key] = CascadeNode(cols["parent_id"][i], minutes, depth[i], key, minutes)
            users[key] = cols["user_id"][i]
        root = order[0]
        rep = DefectReport(lines=len(rows), nodes_kept=len(rows))
        out[c] = CascadeTree(f"{source}[{c}]", cols["user_id"][root], cols["node_id"][root], nodes, rep, None, users)
    return out


def iter_files(folder: Path) -> Iterable[Path]:
    """Files of a folder the format readers take, sorted by name."""
    return sorted(f for f in folder.iterdir() if f.is_file() and f.suffix.lower() in FILE_SUFFIXES)
