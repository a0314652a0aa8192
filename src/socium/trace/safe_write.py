"""Files in folders socium owns, never written through a link.

Why: in a shared runs folder a ``.socium.lock`` or ``config.json`` planted as a symlink (or a hard link) to
another user's file made that user's run truncate or overwrite it. Every file socium opens for writing in a
run directory is opened with ``O_NOFOLLOW`` and must be a regular file with one link; every other file it
writes (reports, plots, results) is written beside its name and renamed over it (:func:`replace_file`), into
folders it made itself (:func:`own_folder`).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from socium.errors import RunDirError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def not_ours(path: Path, what: str) -> RunDirError:
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
            raise not_ours(path, "is a symbolic link") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise not_ours(path, "is not a regular file") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        raise not_ours(path, "is not a regular file" if not stat.S_ISREG(st.st_mode) else "has other hard links")
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
