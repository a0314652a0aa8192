"""``socium data fetch``: download the registered data sets with pooch, verified, into the data folder.

Why pooch: it is the fetcher SciPy and scikit-image ship their data with; it streams each file to a
temporary name in the target folder, checks its sha256 and only then moves it into place, so a wrong
checksum or a dropped or killed download never leaves a half-written file under the real name.
What this module adds: the registry's metadata printed before anything is downloaded (source, version,
size, licence, citation), one progress bar per data set, sha256 sidecars for files whose hash is
recorded at the first fetch, the decompressed-content check for SNAP, and the Twitter15 trees packed
into the tarball the propagation experiment reads (written to a temporary name, then renamed).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
import pooch
import requests
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from socium.data.datadir import ENV_VAR
from socium.data.registry import DataSet, RemoteFile, mirrored, select
from socium.errors import SociumError

_TAR_MTIME = 1651881600  # 2022-05-07, the Twitter15 commit's date: the packed tarball is the same on every fetch
_POOCH_TMP = re.compile(r"^tmp[a-z0-9_]{8}$")  # tempfile's names, which pooch downloads into


class DataFetchError(SociumError):
    """A file that could not be fetched or did not verify; nothing of it was kept under its name."""


def user_data_dir() -> Path:
    """Where fetched data goes by default: the platform's per-user data folder (platformdirs)."""
    return Path(platformdirs.user_data_dir("socium", appauthor=False))


def default_target() -> Path:
    """``$SOCIUM_DATA_DIR`` when set, else :func:`user_data_dir`."""
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else user_data_dir()


def sha256_of(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def describe(ds: DataSet) -> list[str]:
    """What is printed before ``ds`` is downloaded: what it is, from where, which version, how big, terms."""
    size = f"{ds.size / 1e6:.1f} MB in {len(ds.files)} files" if ds.files else "listed by all_topics.csv"
    lines = [
        f"{ds.name}: {ds.title}",
        f"  source:   {ds.source}",
        f"  version:  {ds.version}",
        f"  size:     {size}",
        f"  licence:  {ds.licence}",
        f"  cite:     {ds.citation}",
    ]
    return lines + [f"  note:     {n}" for n in ds.notes]


class _Bar:
    """The progress object pooch's HTTPDownloader drives (``total``, ``update``, ``reset``, ``close``),
    adding one file's bytes to its data set's rich progress task."""

    def __init__(self, progress: Progress, task: Any) -> None:
        self.progress, self.task, self.total, self._done = progress, task, 0, 0

    def update(self, n: int) -> None:
        self._done += n
        self.progress.advance(self.task, n)

    def reset(self) -> None:
        self.progress.advance(self.task, -self._done)
        self._done = 0

    def close(self) -> None:
        """Nothing to close: the data set's bar outlives its files."""


@dataclass
class FetchReport:
    """What one data set's fetch did (files downloaded, already there, skipped as optional, failures)."""

    name: str
    downloaded: int = 0
    present: int = 0
    errors: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _file_mode() -> int:
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
    os.chmod(tmp.name, _file_mode())
    os.replace(tmp.name, path)


def _check_content(f: RemoteFile, path: Path) -> None:
    if f.content_sha256 is None:
        return
    h = hashlib.sha256()
    try:
        with gzip.open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except (OSError, EOFError) as exc:
        path.unlink(missing_ok=True)
        raise DataFetchError(f"{f.url}: not a readable gzip file ({exc}); nothing kept") from exc
    if h.hexdigest() != f.content_sha256:
        path.unlink(missing_ok=True)
        _sidecar(path).unlink(missing_ok=True)
        raise DataFetchError(
            f"{f.url}: decompressed content has sha256 {h.hexdigest()}, expected {f.content_sha256}; nothing kept"
        )


def fetch_file(f: RemoteFile, root: Path, *, bar: _Bar | None = None, timeout: float = 60.0) -> bool:
    """Fetch one file into ``root`` unless a verified copy is there; True when it was downloaded.

    The expected hash is the registry's, else the sidecar recorded at the first fetch; a file with
    neither gets its sidecar now.
    """
    path = root / f.dest
    side = _sidecar(path)
    known = f.sha256 or (side.read_text(encoding="utf-8").strip() if side.is_file() else None)
    existed = path.is_file() and (known is None or sha256_of(path) == known)
    url = mirrored(f.url)
    try:
        pooch.retrieve(
            url,
            known_hash=f"sha256:{known}" if known else None,
            fname=path.name,
            path=path.parent,
            downloader=pooch.HTTPDownloader(progressbar=bar if bar is not None else False, timeout=timeout),
        )
    except ValueError as exc:  # pooch's hash mismatch: the temporary file is already gone
        raise DataFetchError(f"{url}: sha256 does not match the registry ({known}); nothing kept") from exc
    except requests.RequestException as exc:
        raise DataFetchError(f"{url}: download failed ({type(exc).__name__}: {exc}); nothing kept") from exc
    except OSError as exc:
        raise DataFetchError(f"{path}: cannot write ({exc.strerror or exc}); nothing kept") from exc
    if f.sha256 is None and not side.is_file():
        _write_atomic(side, (sha256_of(path) + "\n").encode())
    _check_content(f, path)
    if not existed:
        os.chmod(path, _file_mode())
    return not existed


def _clean_stale_parts(dirs: Iterable[Path]) -> None:
    """Remove pooch's temporary files left by a download that was killed (never a finished file)."""
    for d in dirs:
        if d.is_dir():
            for p in d.iterdir():
                if p.is_file() and _POOCH_TMP.match(p.name):
                    p.unlink(missing_ok=True)


def pack_ok(ds: DataSet, root: Path) -> bool:
    """Whether ``ds``'s tarball is there and every registered member has its pinned sha256."""
    if ds.pack is None or not (root / ds.pack).is_file():
        return False
    want = {Path(f.dest).relative_to(ds.pack_root or "").as_posix(): f.sha256 for f in ds.files}
    try:
        with tarfile.open(root / ds.pack, "r:gz") as tf:
            for m in tf:
                if m.name in want and m.isfile():
                    fh = tf.extractfile(m)
                    if fh is None or hashlib.sha256(fh.read()).hexdigest() != want.pop(m.name):
                        return False
    except (OSError, tarfile.TarError, EOFError):
        return False
    return not want


def _pack(ds: DataSet, root: Path) -> None:
    """Pack the fetched files into ``ds.pack`` in registry order (temporary name, then rename)."""
    assert ds.pack is not None and ds.pack_root is not None
    base, out = root / ds.pack_root, root / ds.pack
    dirs: set[str] = set()
    with tempfile.NamedTemporaryFile(dir=out.parent, delete=False, prefix=".part-") as raw:
        try:
            with (
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz,
                tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tf,
            ):
                for f in ds.files:
                    rel = Path(f.dest).relative_to(ds.pack_root)
                    for parent in reversed(rel.parents[:-1]):
                        if parent.as_posix() not in dirs:
                            dirs.add(parent.as_posix())
                            info = tarfile.TarInfo(parent.as_posix())
                            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, _TAR_MTIME
                            tf.addfile(info)
                    data = (base / rel).read_bytes()
                    info = tarfile.TarInfo(rel.as_posix())
                    info.size, info.mode, info.mtime = len(data), 0o644, _TAR_MTIME
                    tf.addfile(info, io.BytesIO(data))
        except BaseException:
            os.unlink(raw.name)
            raise
    os.chmod(raw.name, _file_mode())
    os.replace(raw.name, out)
    shutil.rmtree(base)


def fetch_dataset(
    ds: DataSet,
    root: Path,
    *,
    progress: Progress | None = None,
    workers: int = 8,
    timeout: float = 60.0,
) -> FetchReport:
    """Fetch every file of ``ds`` into ``root`` (several at a time), then pack it if the registry says so."""
    report = FetchReport(ds.name)
    if pack_ok(ds, root):
        report.present = len(ds.files)
        return report
    files = ds.all_files(root)
    _clean_stale_parts({(root / f.dest).parent for f in files})
    task = progress.add_task(ds.name, total=ds.size or None) if progress is not None else None
    lock = threading.Lock()

    def one(f: RemoteFile) -> None:
        bar = _Bar(progress, task) if progress is not None else None
        try:
            got = fetch_file(f, root, bar=bar, timeout=timeout)
        except DataFetchError as exc:
            with lock:
                (report.skipped if ds.optional else report.errors).append(str(exc))
            return
        with lock:
            if got:
                report.downloaded += 1
            else:
                report.present += 1

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(one, files))
    if ds.pack is not None and not report.errors:
        _pack(ds, root)
    return report


def fetch(
    names: Iterable[str] = (),
    root: Path | None = None,
    *,
    say: Callable[[str], None] = print,
    show_progress: bool = True,
    workers: int = 8,
    timeout: float = 60.0,
    sets: list[DataSet] | None = None,
) -> list[FetchReport]:
    """Fetch the named data sets (all when none) into ``root`` (default :func:`default_target`).

    Raises :class:`DataFetchError` naming every file that failed, after trying all of them.
    """
    chosen = sets if sets is not None else select(tuple(names))
    target = (root or default_target()).expanduser()
    target.mkdir(parents=True, exist_ok=True)
    pooch.get_logger().setLevel("WARNING")
    say(f"data folder: {target}")
    reports: list[FetchReport] = []
    progress = (
        Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
        if show_progress
        else None
    )
    for ds in chosen:
        for line in describe(ds):
            say(line)
        if progress is not None:
            with progress:
                reports.append(fetch_dataset(ds, target, progress=progress, workers=workers, timeout=timeout))
        else:
            reports.append(fetch_dataset(ds, target, workers=workers, timeout=timeout))
        r = reports[-1]
        say(f"  -> {r.downloaded} downloaded, {r.present} already there and verified" + _tail(r))
    errors = [e for r in reports for e in r.errors]
    if errors:
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise DataFetchError(f"{len(errors)} file(s) failed: " + "; ".join(errors[:5]) + more)
    return reports


def _tail(r: FetchReport) -> str:
    out = f", {len(r.skipped)} not available upstream (skipped)" if r.skipped else ""
    return out + (f", {len(r.errors)} FAILED" if r.errors else "")
