"""The run directory: one writer at a time, and never a folder socium did not make.

Why a lock of our own: DuckDB's file lock only covers ``trace.duckdb`` while it is open, so it
cannot stop a second ``socium run --force`` from deleting the file (and its WAL) under a live
writer, and when it does refuse it says ``IOException: Could not set lock``. An exclusive
``flock`` on ``RUN_DIR/.socium.lock`` is taken before anything in the directory is read, deleted
or written, and held until the run closes. The kernel drops it when its process dies (even on
SIGKILL), so a lock file left behind by a dead process is stale by construction: the next run takes
it over and says whose it was. The file holds the owner's pid, host and start time so a refused
run can name the holder.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from socium.errors import RunDirError
from socium.trace.safe_write import not_ours, open_run_file

LOCK_NAME = ".socium.lock"
# Everything socium itself writes into a run directory; anything else is the user's.
#: The model calls of interviews not stored in the trace (``socium interview`` without ``--record``), one JSON
#: object a line: they were made, so they are kept where a user finds them and count against the run's budget.
INTERVIEW_LOG = "interview_calls.jsonl"
SLOTS_FILE = "llm_slots.json"  # how busy the connection limit kept its slots (socium.simulator.llm_health)
OWN_FILES = frozenset(
    {LOCK_NAME, "trace.duckdb", "trace.duckdb.wal", "config.json", "report", INTERVIEW_LOG, SLOTS_FILE}
)
# Deleted by --force before a fresh run (never the lock file: it is held while deleting).
REPLACED_BY_FORCE = ("trace.duckdb", "trace.duckdb.wal", "config.json", INTERVIEW_LOG, SLOTS_FILE)

try:  # POSIX; on other systems the directory is not locked (documented in docs/reliability.md)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


class RunDirLock:
    """An exclusive, process-wide lock on one run directory (``RUN_DIR/.socium.lock``)."""

    def __init__(self, run_dir: str | Path, instead: str = "or choose another --out") -> None:
        self.run_dir = Path(run_dir)
        self.instead = instead  # what the refusal suggests beside waiting (a command without --out says its own)
        self.path = self.run_dir / LOCK_NAME
        self._fh: Any = None
        self.stale_owner: dict[str, Any] | None = None
        self.existed = False  # whether the lock file was there before this process made it

    @property
    def held(self) -> bool:
        return self._fh is not None

    def acquire(self) -> RunDirLock:
        """Take the lock or raise :class:`RunDirError` naming the process that holds it."""
        if self._fh is not None:
            return self
        for _attempt in range(10):
            self.existed = os.path.lexists(self.path)
            fh = open_run_file(self.path)  # never through a symlink: a planted link must not truncate its target
            if fcntl is None:
                break
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = _read_owner(fh)
                fh.close()
                raise RunDirError(
                    f"{self.run_dir} is in use by {describe_owner(owner)}; wait for it to finish, "
                    f"or stop it, {self.instead}"
                ) from None
            if _same_file(fh, self.path):
                break
            fh.close()  # a failed start unlinked the file we opened: lock the one now at the path
        else:  # pragma: no cover
            raise RunDirError(f"{self.run_dir}: could not lock {LOCK_NAME} (it keeps being replaced)")
        previous = _read_owner(fh)
        if previous:
            self.stale_owner = previous  # its process is gone (else flock would have failed)
        fh.seek(0)
        fh.truncate()
        json.dump(owner_record(), fh)
        fh.flush()
        self._fh = fh
        return self

    def release(self) -> None:
        """Drop the lock; the file stays (deleting it would race with a process about to lock it)."""
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            fh.seek(0)
            fh.truncate()
            fh.flush()
        finally:
            fh.close()  # closing the descriptor releases the flock

    def __enter__(self) -> RunDirLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:  # a Simulation dropped without close() must not keep its directory
        try:
            self.release()
        except Exception:
            pass


# What an episodes / group-episodes run writes into its directory (the rest is the user's).
EPISODE_FILES = frozenset(
    {LOCK_NAME, "episodes.duckdb", "episodes.duckdb.wal", "group_episodes.duckdb", "group_episodes.duckdb.wal"}
    | {"config.json", "summary.json", "summary.md", "plots"}
)


@contextmanager
def locked_out_dir(out: Path, note: Callable[[str], None] | None = None, force: bool = False) -> Iterator[RunDirLock]:
    """Create ``out`` if needed and hold its lock for the block (episodes and group-episodes runs).

    The same rules as ``socium run``: a second invocation on one ``--out`` (``--force`` included) is
    refused, naming the holder, before it opens, deletes or writes anything there; a folder holding
    files socium did not write is refused without ``force``. ``note`` hears about a stale lock taken
    over from a dead process.
    """
    check_out_path(out)
    out.mkdir(parents=True, exist_ok=True)
    with RunDirLock(out) as lock:
        if lock.stale_owner and note is not None:
            note(f"took over a stale lock left by {describe_owner(lock.stale_owner)}")
        has_db = any((out / n).exists() for n in EPISODE_FILES if n.endswith(".duckdb"))
        if not force and not has_db:  # a folder with its database is a run's (user files beside it were --forced)
            try:
                refuse_foreign(out, lock_is_ours=lock.existed, own=EPISODE_FILES)
            except RunDirError:
                if not lock.existed:
                    lock.path.unlink(missing_ok=True)  # leave the user's folder as it was
                raise
        yield lock


def check_run_files(run_dir: Path, names: tuple[str, ...] = REPLACED_BY_FORCE) -> None:
    """Refuse a run directory whose trace, WAL or config is a symlink or not a regular file (DuckDB opens the
    trace by path, so it is checked here before DuckDB ever follows it)."""
    for name in names:
        path = run_dir / name
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise not_ours(path, "is a symbolic link")
        if not stat.S_ISREG(st.st_mode):
            raise not_ours(path, "is not a regular file")


def refuse_run_file(out: Path) -> None:
    """``--out`` of any command may not name a run's own files (``query --out RUN/trace.duckdb`` overwrote
    the trace it was querying): a name socium writes in a folder that holds a run or episodes database."""
    target = Path(os.path.abspath(out))
    try:
        target = target.resolve()
    except (OSError, RuntimeError):
        pass
    folder = target.parent
    if target.name in OWN_FILES | EPISODE_FILES and any(
        (folder / n).exists() for n in ("trace.duckdb", "episodes.duckdb", "group_episodes.duckdb")
    ):
        raise RunDirError(
            f"--out {out}: is a file of the run in {folder}; socium never overwrites it, choose another path"
        )


def _same_file(fh: Any, path: Path) -> bool:
    try:
        a, b = os.fstat(fh.fileno()), os.stat(path)
    except OSError:
        return False
    return (a.st_ino, a.st_dev) == (b.st_ino, b.st_dev)


def owner_record() -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "argv": " ".join(sys.argv)[:300],
        "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def describe_owner(owner: dict[str, Any] | None) -> str:
    if not owner:
        return "another process (it has not written its pid yet)"
    return f"pid {owner.get('pid')} on host {owner.get('host')} (since {owner.get('since')}: {owner.get('argv', '')})"


def _read_owner(fh: Any) -> dict[str, Any] | None:
    try:
        fh.seek(0)
        text = fh.read()
        data = json.loads(text) if text.strip() else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def check_out_path(run_dir: Path) -> None:
    """Refuse, before anything is built, an ``--out`` that can never be a run directory."""
    try:
        str(run_dir).encode("utf-8")
    except UnicodeEncodeError as exc:  # bytes from argv that are not UTF-8: DuckDB cannot open such a path
        bad = ord(str(run_dir)[exc.start]) & 0xFF
        raise RunDirError(
            f"--out {os.fsencode(run_dir).decode('utf-8', 'backslashreplace')}: the path is not UTF-8 text "
            f"(byte 0x{bad:02x} at character {exc.start}); choose a path of UTF-8 characters"
        ) from None
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"--out {run_dir}: exists and is not a directory")
    for parent in run_dir.parents:
        if parent.exists():
            if not parent.is_dir():
                raise RunDirError(f"--out {run_dir}: {parent} is not a directory")
            break


def foreign_entries(run_dir: Path, lock_is_ours: bool = True, own: frozenset[str] = OWN_FILES) -> list[str]:
    """Entries of ``run_dir`` socium did not write (empty for a new or socium-made directory).

    A directory counts as socium's when it holds a trace or a lock file an earlier run left
    (``lock_is_ours=False`` when this process just created it); in any other non-empty folder even a
    ``config.json`` is the user's, and overwriting it would destroy their file.
    """
    if not run_dir.is_dir():
        return []
    names = sorted(p.name for p in run_dir.iterdir())
    ours = (lock_is_ours and LOCK_NAME in names) or any(n.endswith(".duckdb") and n in own for n in names)
    return [n for n in names if n != LOCK_NAME and (not ours or n not in own)]


def refuse_foreign(run_dir: Path, lock_is_ours: bool = True, own: frozenset[str] = OWN_FILES) -> None:
    foreign = foreign_entries(run_dir, lock_is_ours, own)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise RunDirError(
            f"{run_dir} holds files socium did not write ({shown}); choose an empty or new --out, "
            "or pass --force to write the run beside them"
        )


def default_out(name: str, tail: str = "") -> Path:
    """``runs/<name><tail>``, the folder a run writes to when no ``--out`` (or ``out:``) is given.

    Why a check here and not on ``name`` itself: a name is a label (reports show it, HTML-escaped, and
    it may hold any text), but as the default folder an empty name, a ``/`` or ``..`` put the run
    somewhere else than runs/ (``name: ../../x`` wrote outside it) and a NUL byte was ``ValueError:
    embedded null byte`` as a traceback.
    """
    bad = sorted({repr(c) for c in name if c in "/\\" or not c.isprintable()})
    if not name.strip() or name.strip() in (".", "..") or bad:
        why = f"holds {', '.join(bad)}" if bad else "is blank or a dot name"
        raise RunDirError(
            f"name {name!r} {why}, so it cannot be the default folder runs/<name>{tail or ''}; "
            "change name or pass --out"
        )
    return Path("runs") / f"{name}{tail}"


def write_out_file(path: Path, text: str) -> Path:
    """Write a result file the user named with ``--out`` (a fit, pooled seeds): a folder or an unwritable
    place there is one :class:`RunDirError` naming it, not ``IsADirectoryError``'s traceback."""
    if path.is_dir():
        raise RunDirError(f"--out {path}: is a directory, expected a file path")
    refuse_run_file(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RunDirError(f"--out {path}: cannot write: {exc.strerror or exc}") from None
    return path
