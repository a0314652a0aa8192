"""What the explorer opened: one run, or an experiment folder of runs, each read-only.

Why a class of its own: the web app renders in one thread per browser tab, and a DuckDB connection is
not to be shared across threads; each query takes a cursor (a thread-safe duplicate) of the run's one
read-only connection, opened on first use, so a folder of 500 runs opens none until one is viewed.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from socium.errors import UsageError
from socium.trace.queries.explore import overview
from socium.trace.store import open_trace

T = TypeVar("T")

TRACE = "trace.duckdb"
MAX_RUNS = 10_000
"""Runs an experiment folder may hold before the explorer refuses it (a wrong folder, e.g. ``/``)."""
MAX_DEPTH = 6
"""Folder levels searched below an experiment folder (designs nest runs/<cell>/<seed>/)."""


@dataclass
class Source:
    """The run directories under one path, by label (their path relative to it; "." for a lone run)."""

    root: Path
    runs: dict[str, Path]
    _cons: dict[str, duckdb.DuckDBPyConnection] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def is_experiment(self) -> bool:
        return not (len(self.runs) == 1 and "." in self.runs)

    def labels(self) -> list[str]:
        return list(self.runs)

    @contextmanager
    def cursor(self, label: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor on run ``label``'s trace, read-only; an unknown label is a UsageError naming it."""
        if label not in self.runs:
            raise UsageError(f"{self.root}: no run {label!r} here")
        with self._lock:
            con = self._cons.get(label)
            if con is None:
                con = self._cons[label] = open_trace(self.runs[label] / TRACE, read_only=True)
            cur = con.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def view(self, index: int) -> RunView:
        """Run ``index`` (in :meth:`labels` order) with its platform preset; a bad index is a UsageError."""
        labels = self.labels()
        if not 0 <= index < len(labels):
            raise UsageError(f"no run {index} here: runs are numbered 0 to {len(labels) - 1}")
        bare = RunView(self, labels[index], index)
        return RunView(self, labels[index], index, bare(overview)["preset"])

    def close(self) -> None:
        with self._lock:
            for con in self._cons.values():
                con.close()
            self._cons.clear()


def find_runs(root: Path) -> dict[str, Path]:
    """Run directories (holding ``trace.duckdb``) at or under ``root``, sorted by relative path."""
    if (root / TRACE).is_file():
        return {".": root}
    found: dict[str, Path] = {}
    base = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if TRACE in filenames:
            found[here.relative_to(root).as_posix()] = here
            dirnames.clear()  # a run holds no runs
        elif len(here.parts) - base >= MAX_DEPTH:
            dirnames.clear()
        dirnames.sort()
        if len(found) > MAX_RUNS:
            raise UsageError(f"{root}: more than {MAX_RUNS} runs below it; open one experiment or run folder")
    return dict(sorted(found.items()))


def open_source(path: str | Path) -> Source:
    """The runs at ``path`` (a run directory, its ``trace.duckdb``, or an experiment folder)."""
    root = Path(path).expanduser().resolve()
    if root.is_file() and root.name == TRACE:
        root = root.parent
    if not root.is_dir():
        raise UsageError(f"{path}: no such run or experiment folder")
    runs = find_runs(root)
    if not runs:
        raise UsageError(f"{path}: no run here (no {TRACE} at or below it, {MAX_DEPTH} levels deep)")
    return Source(root, runs)


def flat(config: Any, prefix: str = "") -> dict[str, Any]:
    """A config as dotted keys (``recsys.kind``) to scalar JSON values: what an override names."""
    if isinstance(config, dict):
        out: dict[str, Any] = {}
        for k, v in config.items():
            out.update(flat(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): json.dumps(config, sort_keys=True) if isinstance(config, list) else config}


def overrides(base: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The dotted keys where ``config`` differs from ``base`` (the experiment's first run), with its values:
    top-level keys first (``seed``, ``steps``), and keys it leaves unset (a section it has no use for) left out."""
    a, b = flat(base), flat(config)
    keys = [k for k in set(a) | set(b) if a.get(k) != b.get(k) and b.get(k) is not None]
    return {k: b[k] for k in sorted(keys, key=lambda k: (k.count("."), k))}


@dataclass(frozen=True)
class RunView:
    """One run as the pages see it: queries run on a fresh cursor each (components render later, in any
    thread, so none holds a cursor), the URL prefix of its pages, and its platform preset."""

    source: Source
    label: str
    index: int
    preset: str | None = None

    @property
    def base(self) -> str:
        return f"/run/{self.index}"

    def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self.source.cursor(self.label) as cur:
            return fn(cur, *args, **kwargs)
