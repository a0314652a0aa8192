"""One registered file, in place and verified: kept when its copy checks out, else downloaded with pooch.

Why its own module: what makes one file trustworthy (the registry's sha256, or the one recorded at the
first fetch in a ``.sha256`` sidecar written only after the body verified; a body that is the kind of
file it should be before any hash is pinned to it; the process umask's mode, not tempfile's 0600) is
apart from how a whole fetch is run (:mod:`socium.data.fetch`: lock, threads, deadline, reports).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import pooch
from rich.progress import Progress

from socium.data.download import DownloadError, HttpDownload, Watch
from socium.data.formats import BodyError, check_body
from socium.data.registry import RemoteFile, mirrored


def sha256_of(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class ProgressBar:
    """One file's bytes added to its data set's rich progress task (and taken back if the file fails)."""

    def __init__(self, progress: Progress, task: Any) -> None:
        self.progress, self.task, self._done = progress, task, 0

    def update(self, n: int) -> None:
        self._done += n
        self.progress.advance(self.task, n)

    def reset(self) -> None:
        self.progress.advance(self.task, -self._done)
        self._done = 0


def file_mode() -> int:
    """The mode a new file gets under the process umask: temporary files are made 0600, and a data
    folder shared on a cluster must stay readable by whoever the umask allows."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _write_atomic(path: Path, data: bytes) -> None:
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, prefix=".part-") as tmp:
        tmp.write(data)
    os.chmod(tmp.name, file_mode())
    os.replace(tmp.name, path)


def _body_ok(f: RemoteFile, path: Path) -> bool:
    try:
        check_body(path, f.dest, columns=f.columns, content_sha256=f.content_sha256)
    except (BodyError, OSError):
        return False
    return True


def _known_hash(f: RemoteFile, path: Path) -> str | None:
    """The sha256 ``path`` must have: the registry's, else the one recorded at the first fetch (a sidecar).

    A file whose decompressed content is pinned has no recorded hash to hold it to: its content decides
    (a sidecar left by a corrupt download can then never refuse the genuine file). A file on disk that is
    not the kind of file it should be (an HTML page pinned by an older socium) is removed with its sidecar.
    """
    if f.sha256 is not None:
        return f.sha256
    side = _sidecar(path)
    if f.content_sha256 is not None:
        return None
    if path.is_file() and not _body_ok(f, path):
        path.unlink(missing_ok=True)
        side.unlink(missing_ok=True)
        return None
    return side.read_text(encoding="utf-8").strip() if side.is_file() else None


def fetch_file(f: RemoteFile, root: Path, watch: Watch, *, bar: ProgressBar | None = None) -> bool:
    """Fetch one file into ``root`` unless a verified copy is there; True when it was downloaded.

    Raises :class:`DownloadError` (nothing of the failed body is kept under the file's name).
    """
    path = root / f.dest
    url = mirrored(f.url)
    watch.check()
    try:
        known = _known_hash(f, path)
        if path.is_file():
            if known is not None and sha256_of(path) == known:
                return False
            if known is None and _body_ok(f, path):
                _record(f, path)
                return False
            if known is None:
                path.unlink()  # not the file it should be: pooch would keep a file it has no hash for
        downloader = HttpDownload(
            watch,
            f.dest,
            size=f.size,
            max_size=f.max_size,
            columns=f.columns,
            content_sha256=f.content_sha256,
            progress=bar.update if bar is not None else None,
        )
        try:
            pooch.retrieve(
                url,
                known_hash=f"sha256:{known}" if known else None,
                fname=path.name,
                path=path.parent,
                downloader=downloader,
            )
        except ValueError as exc:  # pooch's hash mismatch (the downloader raises no ValueError)
            if f.sha256:
                where = "the registry's"
            else:  # trust on first use: say how to accept a file that really changed upstream
                where = f"the one recorded at the first fetch; delete {_sidecar(path)} to accept the new file"
            raise DownloadError("checksum", f"{url}: sha256 does not match {where} ({known}); nothing kept") from exc
        _record(f, path)
        os.chmod(path, file_mode())
    except OSError as exc:
        raise DownloadError("write", f"{path}: cannot write ({exc.strerror or exc}); nothing kept") from exc
    except DownloadError:
        if bar is not None:
            bar.reset()
        raise
    return True


def _record(f: RemoteFile, path: Path) -> None:
    """Write (or correct) the sidecar of a file the registry gives no sha256 for, after it verified."""
    if f.sha256 is not None:
        return
    side, digest = _sidecar(path), sha256_of(path)
    if not side.is_file() or side.read_text(encoding="utf-8").strip() != digest:
        _write_atomic(side, (digest + "\n").encode())
