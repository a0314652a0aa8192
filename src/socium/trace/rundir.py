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

import errno
import json
import os
import socket
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from socium.errors import InputFileError, RunDirError, SociumError

LOCK_NAME = ".socium.lock"
# Everything socium itself writes into a run directory; anything else is the user's.
#: The model calls of interviews not stored in the trace (``socium interview`` without ``--record``), one JSON
#: object a line: they were made, so they are kept where a user finds them and count against the run's budget.
INTERVIEW_LOG = "interview_calls.jsonl"
OWN_FILES = frozenset({LOCK_NAME, "trace.duckdb", "trace.duckdb.wal", "config.json", "report", INTERVIEW_LOG})
# Deleted by --force before a fresh run (never the lock file: it is held while deleting).
REPLACED_BY_FORCE = ("trace.duckdb", "trace.duckdb.wal", "config.json", INTERVIEW_LOG)

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


# ---- run-folder files: never written through a link -------------------------------------------------------
# Why: in a shared runs folder a ``.socium.lock`` or ``config.json`` planted as a symlink (or a hard link) to
# another user's file made that user's run truncate or overwrite it. Every file socium opens for writing in a
# run directory is opened with ``O_NOFOLLOW`` and must be a regular file with one link.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _not_ours(path: Path, what: str) -> RunDirError:
    return RunDirError(
        f"{path}: {what}; socium writes only regular files it made in a run directory "
        "(remove it, or choose another --out)"
    )


def _open_fd(path: Path, flags: int) -> int:
    """``os.open`` with no-follow semantics; the descriptor of a regular, singly linked file, else RunDirError."""
    try:
        fd = os.open(path, flags | _NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _not_ours(path, "is a symbolic link") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise _not_ours(path, "is not a regular file") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        raise _not_ours(path, "is not a regular file" if not stat.S_ISREG(st.st_mode) else "has other hard links")
    return fd


def open_run_file(path: Path) -> Any:
    """Open (creating it) a run-directory file for reading and writing, refusing links and non-regular files."""
    return os.fdopen(_open_fd(path, os.O_RDWR | os.O_CREAT), "r+", encoding="utf-8")


def write_run_file(path: Path, text: str) -> None:
    """Replace the contents of a run-directory file (``config.json``) without following a link to elsewhere.

    Truncated only after the checks, so a refused file is left exactly as it was."""
    fd = _open_fd(path, os.O_WRONLY | os.O_CREAT)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.truncate(0)
        fh.write(text)


def append_run_file(path: Path, text: str) -> None:
    """Append to a run-directory file (``interview_calls.jsonl``), creating it, without following a link."""
    with os.fdopen(_open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a", encoding="utf-8") as fh:
        fh.write(text)


def replace_file(path: Path, data: str | bytes) -> Path:
    """Write ``data`` as the file ``path`` by writing a new file beside it and renaming it over the name.

    Why: ``path.write_text`` opens the name and so writes through whatever it is. A planted symlink
    (``RUN/report/index.html -> ~/.bashrc``) had its target overwritten, and ``query --out`` naming a hard
    link to a trace truncated the trace. A rename replaces the directory entry only: a link there is
    replaced, its target (or the other names of a hard-linked file) keeps its bytes. It is also atomic: a
    reader never sees half a file, and a failed write leaves the old one. An unwritable place is one
    :class:`RunDirError` naming it.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            os.fchmod(fd, 0o644 & ~_UMASK)  # what write_text would have made
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
            os.replace(name, path)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise RunDirError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


def _read_umask() -> int:
    mask = os.umask(0o022)  # read once, at import (umask can only be read by setting it; not thread-safe later)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def own_folder(folder: Path, named: bool = False) -> Path:
    """Create (or reuse) a folder socium fills itself (``report/``, ``plots/``, ``inputs/``), never a link.

    A ``report`` symlink planted in a run folder made ``socium report`` write its pages into the folder
    it named; a link is refused by name (socium does not delete what it did not make), and every file
    written inside goes through :func:`replace_file`. A read-only parent is one ``error:`` line. ``named``: the
    user named this folder (``--out``), so a link there is theirs to follow."""
    try:
        st = folder.lstat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise RunDirError(f"{folder}: cannot read: {exc.strerror or exc}") from None
    if st is not None and named and stat.S_ISLNK(st.st_mode) and folder.is_dir():
        return folder
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise RunDirError(
                f"{folder}: is a symbolic link; socium never writes through a link "
                "(remove the link, and socium makes the folder)"
            )
        if not stat.S_ISDIR(st.st_mode):
            raise RunDirError(f"{folder}: is a file; socium needs it to be a folder (move the file away)")
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"{folder}: cannot create the folder: {exc.strerror or exc}") from None
    return folder


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
            raise _not_ours(path, "is a symbolic link")
        if not stat.S_ISREG(st.st_mode):
            raise _not_ours(path, "is not a regular file")


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


# ---- what a folder holds, for errors that say what to do instead -----------------------------------------
def _trace_facts(db: Path) -> tuple[int | None, int | None, str | None]:
    """(last committed step, the steps its own config runs to, its config hash) of a trace; Nones where
    the trace cannot tell (corrupt, killed before the set-up committed)."""
    import duckdb  # imported only when a trace is read

    from socium.trace.store import open_trace  # lazy: duckdb; rundir is on CLI start-up

    try:
        con = open_trace(db)
    except SociumError:
        return None, None, None
    try:
        (last,) = con.execute("SELECT max(step) FROM steps").fetchone() or (None,)
        row = con.execute("SELECT config, config_hash FROM runs LIMIT 1").fetchone()
    except duckdb.Error:  # no schema yet (killed before it was made), or not a socium trace
        return None, None, None
    finally:
        con.close()
    steps = None
    if row is not None:
        try:
            steps = int(json.loads(row[0]).get("steps"))
        except (TypeError, ValueError, AttributeError):
            steps = None
    return (None if last is None else int(last)), steps, (None if row is None else str(row[1]))


def last_committed_step(run_dir: str | Path) -> int | None:
    """The last step the run's trace committed (-1: only the set-up); None without a readable trace."""
    db = Path(run_dir) / "trace.duckdb"
    return _trace_facts(db)[0] if db.is_file() else None


def held_run_error(run_dir: Path, config_hash: str) -> RunDirError:
    """The refusal for a fresh run into a folder that already holds a run, saying what to do instead.

    Why its own steps: a finished 24-step run targeted by a 48-step config was called "unfinished (use
    --resume)" because it was measured against the new config, and following that advice then failed
    (another config is another world). Finished or not is judged by the run's own recorded ``steps``, and
    the way on depends on whether the new config is the same world (hash without ``steps``).
    """
    last, steps, recorded = _trace_facts(run_dir / "trace.duckdb")
    elsewhere = "pass --force to overwrite it, or choose another --out"
    if last is None or steps is None:
        return RunDirError(f"{run_dir} already holds a trace with no readable set-up; {elsewhere}")
    done = f"{last + 1} of {steps} steps committed"
    if recorded != config_hash:
        state = "a finished run" if last >= steps - 1 else "an unfinished run"
        return RunDirError(f"{run_dir} already holds {state} of another config ({done}); {elsewhere}")
    if last >= steps - 1:
        return RunDirError(
            f"{run_dir} already holds a finished run of this config ({done}); extend it with "
            f"`socium run --resume --out {run_dir} --steps N`, or {elsewhere}"
        )
    return RunDirError(
        f"{run_dir} already holds an unfinished run of this config ({done}); continue it with "
        f"`socium run --resume --out {run_dir}`, or {elsewhere}"
    )


def out_dir_error(run_dir: Path, exc: OSError) -> RunDirError | None:
    """One line for a run directory that cannot be created or written (``--out /proc/foo/bar`` was a
    60-line traceback); None when ``exc`` is about another file, which the caller must not mislabel."""
    if exc.filename is None:
        return None
    failed = Path(exc.filename)
    if failed != run_dir and failed not in run_dir.parents and failed.parent != run_dir:
        return None
    return RunDirError(f"--out {run_dir}: cannot create or write {failed}: {exc.strerror or exc}; choose another --out")


def runs_below(folder: Path, limit: int = 5, depth: int = 3) -> tuple[list[Path], int]:
    """Run directories (holding ``trace.duckdb``) at most ``depth`` levels below ``folder``: the first
    ``limit`` in name order, and how many there are in all."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        if len(here.relative_to(folder).parts) >= depth:
            dirs.clear()
        dirs.sort()
        if here != folder and "trace.duckdb" in files:
            found.append(here)
    found.sort()
    return found[:limit], len(found)


def not_a_run_hint(path: Path, command: str) -> str | None:
    """What to do when ``path`` is a folder socium wrote but not a run: an experiment, sweep or
    sensitivity folder (its runs are below it) or an episodes folder. None when it is none of these."""
    if not path.is_dir() or (path / "trace.duckdb").exists():
        return None
    if any((path / n).exists() for n in ("episodes.duckdb", "group_episodes.duckdb")):
        return f"{path} is an episodes folder, not a run; `socium report {path}` summarises it"
    shown, total = runs_below(path)
    if not shown:
        return None
    more = f" and {total - len(shown)} more" if total > len(shown) else ""
    names = ", ".join(str(p) for p in shown) + more
    whole = f", or `socium report {path}` for the whole experiment" if (path / "results.json").exists() else ""
    return (
        f"{path} is not a run but holds {total} run{'s' * (total != 1)}: {names}; "
        f"`socium {command} {shown[0]}` for one of them{whole}"
    )


def read_json_file(p: Path, key: str) -> dict[str, Any]:
    """A JSON object socium wrote (``results.json``, ``sensitivity.json``, ``summary.json``), holding ``key``.

    A file cut off mid-write or edited by hand is an :class:`InputFileError` naming file and line, not
    json's or a ``KeyError`` traceback from whichever reader touched it first.
    """
    try:
        res = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(p, None, f"cannot read: {exc}") from None
    except json.JSONDecodeError as exc:  # a run cut off while writing it, or a hand edit
        raise InputFileError(p, exc.lineno, f"not valid JSON ({exc.msg}); rerun to rewrite it") from None
    if not isinstance(res, dict) or key not in res:
        raise InputFileError(p, None, f"not a socium {p.name} (no {key!r} at its top level)")
    return res
