"""What the explorer opened: one run, or an experiment folder of runs, each read-only.

Why a class of its own: the web app renders in one thread per browser tab, and a DuckDB connection is
not to be shared across threads; each query takes a cursor (a thread-safe duplicate) of the run's one
read-only connection, opened on first use, so a folder of 500 runs opens none until one is viewed.
A connection nobody has queried for :data:`IDLE_S` seconds is closed again: a read-only connection
holds DuckDB's file lock, so an explorer left open (or whose tab was closed) would otherwise keep
``socium run --resume`` from writing the run.

A live source (:meth:`Source.live`, ``socium run --explore``) reads through a cursor of the running
simulation's own writer connection instead: DuckDB admits one writing process, so the explorer never
opens the file a second time, and its cursor sees committed transactions only (each step is one).
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import duckdb

from socium.errors import SociumError, UsageError
from socium.explore.clock import StepClock
from socium.explore.files import experiment_files
from socium.explore.studies import Study, open_study
from socium.trace.queries.explore import committed_steps, count_timeline, overview, timeline
from socium.trace.store import open_trace

T = TypeVar("T")

TRACE = "trace.duckdb"
MAX_RUNS = 10_000
"""Runs an experiment folder may hold before the explorer refuses it (a wrong folder, e.g. ``/``)."""
MAX_DEPTH = 6
"""Folder levels searched below an experiment folder (designs nest runs/<cell>/<seed>/)."""
IDLE_S = 3.0
"""Seconds a run's read-only connection stays open after its last query (then closed: DuckDB's file
lock would refuse ``socium run --resume`` while it is open; reopening costs milliseconds)."""


MEMO = 8
"""Answers :meth:`Source.memo` keeps (an agents list sorted by a measure: 10^5 ids, a few MB)."""
WARM_ROWS = 20
"""Rows the warm-up asks for: the first page's (:data:`socium.explore.widgets.ROWS`)."""
FINISH_WAIT_S = 30.0
"""Seconds a live run's page waits, between the writer letting go and the file being opened, for the latter."""


def is_trace_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (a symlink to one counts): a FIFO or device named ``trace.duckdb``
    is not a run, and opening one would block the explorer forever."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


@dataclass
class Source:
    """The run directories under one path, by label (their path relative to it; "." for a lone run)."""

    root: Path
    runs: dict[str, Path]
    _cons: dict[str, duckdb.DuckDBPyConnection] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    live_steps: int | None = None
    """A live run's planned steps (None: a finished run, opened read-only)."""
    _reader: duckdb.DuckDBPyConnection | None = None
    _busy: dict[str, int] = field(default_factory=dict)
    _last: dict[str, float] = field(default_factory=dict)
    _reaper: threading.Thread | None = None
    files: list[str] = field(default_factory=list)
    """The experiment's own report and results files (:func:`socium.explore.files.experiment_files`)."""
    study: Study | None = None
    """An emulator-only study (a forecast folder, a counterfactual experiment): its cascades have pages."""
    finished: str | None = None
    """A live run that has ended: how ("exit status 0"); its pages then read the finished trace."""
    _finished: threading.Event = field(default_factory=threading.Event)
    _memo: dict[tuple[Any, ...], Any] = field(default_factory=dict)

    @classmethod
    def live(cls, con: duckdb.DuckDBPyConnection, run_dir: str | Path, steps: int) -> Source:
        """The run being written through ``con`` (its writer's connection) as a lone run of ``steps`` planned steps.

        Call it in the writer's thread between two writes: it takes the one cursor it reads through from
        ``con`` here, because DuckDB refuses (rather than waits for) two calls at once on one connection,
        so no later call may touch the writer's. Call :meth:`detach` before the writer closes ``con``
        (closing it closes this cursor, and refuses while a query runs on it)."""
        root = Path(run_dir).expanduser().resolve()
        return cls(root, {".": root}, live_steps=int(steps), _reader=con.cursor())

    @property
    def is_live(self) -> bool:
        return self.live_steps is not None

    @property
    def is_experiment(self) -> bool:
        return not (len(self.runs) == 1 and "." in self.runs)

    def labels(self) -> list[str]:
        return list(self.runs)

    @contextmanager
    def cursor(self, label: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor on run ``label``'s trace, read-only; an unknown label is a UsageError naming it.

        A live run's queries take turns on its one reader cursor (one researcher watching; a query takes
        milliseconds), so :meth:`detach` can wait for the one in flight and the writer can then close."""
        if label not in self.runs:
            raise UsageError(f"{self.root}: no run {label!r} here")
        if self.is_live and self.finished is None:
            if self._reader is None:  # the run is closing its trace: its file opens in a moment (:meth:`finish`)
                self._finished.wait(FINISH_WAIT_S)
        if self.is_live and self.finished is None:
            with self._lock:
                if self._reader is None:
                    raise UsageError(
                        f"{self.root}: the run has ended and its live explorer with it; "
                        f"`socium explore {self.root}` opens the trace"
                    )
                yield self._reader
            return
        with self._lock:
            con = self._cons.get(label)
            if con is None:
                con = self._cons[label] = open_trace(self.runs[label] / TRACE, read_only=True)
            cur = con.cursor()
            self._busy[label] = self._busy.get(label, 0) + 1
            self._start_reaper()
        try:
            yield cur
        finally:
            cur.close()
            with self._lock:
                self._busy[label] -= 1
                self._last[label] = time.monotonic()

    def _start_reaper(self) -> None:
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(target=self._reap, name="socium-explore-idle", daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        """Close connections idle for :data:`IDLE_S` (none in use); the thread ends when none is open."""
        while True:
            time.sleep(IDLE_S / 3)
            with self._lock:
                self.close_idle(IDLE_S)
                if not self._cons:
                    self._reaper = None
                    return

    def close_idle(self, idle_s: float) -> None:
        """Close every connection no query holds that was last used ``idle_s`` seconds ago or more
        (call with the lock held)."""
        now = time.monotonic()
        for label in [k for k, c in self._cons.items() if not self._busy.get(k)]:
            if now - self._last.get(label, 0.0) >= idle_s:
                self._cons.pop(label).close()

    def finish(self, how: str) -> None:
        """A live run has ended (``how``: "exit status 0") and closed its trace: let go of the writer's
        connection and read the finished file from now on, so open pages stay readable."""
        self.detach()
        with self._lock:
            self.finished = how
        self._finished.set()

    def detach(self) -> None:
        """A live source lets go of the writer's connection (after the query in flight, if any): its pages
        then say the run has ended. The writer closes its connection only after this."""
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def view(self, index: int) -> RunView:
        """Run ``index`` (in :meth:`labels` order) with its platform preset; a bad index is a UsageError."""
        labels = self.labels()
        if not 0 <= index < len(labels):
            raise UsageError(f"no run {index} here: runs are numbered 0 to {len(labels) - 1}")
        bare = RunView(self, labels[index], index)
        info = bare(overview)
        return RunView(self, labels[index], index, info["preset"], StepClock.of(info["config"]))

    def version(self, label: str) -> tuple[Any, ...]:
        """What changes when run ``label``'s trace does: a live run's committed steps; else its files' sizes
        and times (a finished run may be resumed once the explorer lets go of it)."""
        if self.is_live and self.finished is None:
            with self.cursor(label) as cur:
                return ("live", committed_steps(cur))
        out: list[Any] = []
        for name in (TRACE, TRACE + ".wal"):
            try:
                st = (self.runs[label] / name).stat()
                out += [st.st_size, st.st_mtime_ns]
            except OSError:
                out += [None, None]
        return tuple(out)

    def memo(self, label: str, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """``compute()`` for run ``label`` once per version of its trace (:meth:`version`): what a page
        pages through but costs a scan to build (a sorted agents list), kept for its next pages. At most
        :data:`MEMO` answers are kept."""
        k = (label, self.version(label), *key)
        with self._lock:
            if k in self._memo:
                return cast(T, self._memo[k])
        got = compute()
        with self._lock:
            self._memo[k] = got
            while len(self._memo) > MEMO:
                self._memo.pop(next(iter(self._memo)))
        return got

    def warm(self) -> None:
        """Run the first page's queries once, so the first browser does not wait for DuckDB's first query in
        this process (loading its catalog and JSON functions: 0.4-0.6 s at load 20, then 0.02 s); called from
        a thread while the browser still loads Solara's scripts (2-3 s). A trace that cannot be read is left
        to the page, which says why."""
        try:
            if self.runs and not self.is_experiment:
                run = self.view(0)
                run(timeline, limit=WARM_ROWS)
                run(count_timeline)
            else:
                for i in range(min(len(self.runs), WARM_ROWS)):
                    self.view(i)
        except (SociumError, duckdb.Error):
            return

    def close(self) -> None:
        self.detach()
        with self._lock:
            for con in self._cons.values():
                con.close()
            self._cons.clear()


def find_runs(root: Path) -> dict[str, Path]:
    """Run directories (holding ``trace.duckdb``) at or under ``root``, sorted by relative path."""
    if is_trace_file(root / TRACE):
        return {".": root}
    found: dict[str, Path] = {}
    base = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if TRACE in filenames and is_trace_file(here / TRACE):
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
    if root.name == TRACE and root.exists() and not root.is_dir():
        if not is_trace_file(root):
            raise UsageError(f"{path}: not a regular file (a FIFO or device is not a trace)")
        root = root.parent
    if not root.is_dir():
        raise UsageError(f"{path}: no such run or experiment folder")
    runs = find_runs(root)
    files = experiment_files(root)
    if not runs and not files:
        raise UsageError(
            f"{path}: no run here (no {TRACE} at or below it, {MAX_DEPTH} levels deep) and no experiment results"
        )
    return Source(root, runs, files=files, study=open_study(root))


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
    clock: StepClock = field(default_factory=StepClock)
    """When each step happened (:meth:`when` labels a step with it)."""

    @property
    def base(self) -> str:
        return f"/run/{self.index}"

    def when(self, step: int | None) -> str:
        """A step as the pages label it: ``step 3 · day 1 12:00`` (simulated time)."""
        return self.clock.label(step)

    def memo(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """:meth:`Source.memo` for this run."""
        return self.source.memo(self.label, key, compute)

    def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self.source.cursor(self.label) as cur:
            return fn(cur, *args, **kwargs)
