"""``socium data fetch``: download the registered data sets with pooch, verified, into the data folder.

Why pooch: it is the fetcher SciPy and scikit-image ship their data with; it streams each file to a
temporary name in the target folder, checks its sha256 and only then moves it into place, so a wrong
checksum or a dropped or killed download never leaves a half-written file under the real name.
What this module adds: the registry's metadata printed before anything is downloaded (source, version,
size, licence, citation); one progress bar per data set; the downloader of :mod:`socium.data.download`
(the registry's sizes enforced, one deadline for the whole fetch, Ctrl-C stopping every download at
once, redirects only to http(s), each body checked to be the kind of file it should be before any hash
is pinned to it); sha256 sidecars for files whose hash is recorded at the first fetch, written only
after the body verified; a lock, so two fetches into one folder wait for each other instead of deleting
each other's temporary files; the files of a data set that must be packed (Twitter15, CED) packed into
one tarball, byte-identical on every fetch; and failures reported as one line per cause, with the
folders a failed fetch created removed again so they are never listed as found.

One file's verified download is :mod:`socium.data.fetch_file`; the packing, :mod:`socium.data.packing`;
this module runs a whole fetch (lock, worker threads, deadline, Ctrl-C, reports).
"""

from __future__ import annotations

import os
import queue
import re
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock
import platformdirs
import pooch
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from socium.data.datadir import ENV_VAR
from socium.data.download import DataFetchError, DownloadError, Watch, check_mirror, redact
from socium.data.fetch_file import ProgressBar, fetch_file
from socium.data.packing import pack, pack_ok
from socium.data.registry import MIRROR_ENV, DataSet, RemoteFile, select

__all__ = ["DataFetchError", "FetchInterrupted", "FetchReport", "fetch", "fetch_dataset"]

_POOCH_TMP = re.compile(r"^tmp[a-z0-9_]{8}$")  # tempfile's names, which pooch downloads into
DEFAULT_DEADLINE_S = 3600.0  #: the whole fetch; a resumed fetch downloads only what is missing
LOCK_NAME = ".socium-fetch.lock"
_CAUSE_WORDS = {
    "notfound": "not found upstream",
    "checksum": "with a wrong sha256",
    "format": "not the expected kind of file",
    "size": "not the registry's size",
    "broken": "cut off mid-download",
    "stalled": "stalled",
    "http": "refused by the server",
    "refused": "refused",
    "write": "not writable",
}


class FetchInterrupted(DataFetchError):
    """Ctrl-C stopped the fetch; the files verified so far are kept."""


def user_data_dir() -> Path:
    """Where fetched data goes by default: the platform's per-user data folder (platformdirs)."""
    return Path(platformdirs.user_data_dir("socium", appauthor=False))


def default_target() -> Path:
    """``$SOCIUM_DATA_DIR`` when set, else :func:`user_data_dir`."""
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else user_data_dir()


def describe(ds: DataSet) -> list[str]:
    """What is printed before ``ds`` is downloaded: what it is, from where, which version, how big, terms."""
    size = f"{ds.size / 1e6:.1f} MB in {len(ds.files):,} files" if ds.files else "listed by all_topics.csv"
    lines = [
        f"{ds.name}: {ds.title}",
        f"  source:   {ds.source}",
        f"  version:  {ds.version}",
        f"  size:     {size}",
        f"  licence:  {ds.licence}",
        f"  cite:     {ds.citation}",
    ]
    return lines + [f"  note:     {n}" for n in ds.notes]


@dataclass
class FetchReport:
    """What one data set's fetch did (files downloaded, already there, skipped as optional, failures)."""

    name: str
    downloaded: int = 0
    present: int = 0
    errors: list[DownloadError] = field(default_factory=list)
    skipped: list[DownloadError] = field(default_factory=list)
    total: int = 0


def _clean_stale_parts(dirs: Iterable[Path]) -> None:
    """Remove pooch's temporary files left by a download that was killed (never a finished file).

    Only under the fetch lock: another fetch's temporary files are never touched while it runs.
    """
    for d in dirs:
        if d.is_dir():
            for p in d.iterdir():
                if (p.name.startswith(".part-") or _POOCH_TMP.match(p.name)) and p.is_file():
                    p.unlink(missing_ok=True)


def _new_dirs(root: Path, files: Iterable[RemoteFile], extra: Iterable[str] = ()) -> list[Path]:
    """The folders a fetch of ``files`` would create under ``root`` that do not exist yet (deepest first)."""
    out: set[Path] = set()
    for rel in [f.dest for f in files] + list(extra):
        for parent in Path(rel).parents[:-1]:
            if not (root / parent).exists():
                out.add(root / parent)
    return sorted(out, key=lambda p: len(p.parts), reverse=True)


def _remove_empty(dirs: Iterable[Path]) -> None:
    """Remove the folders of ``dirs`` that are empty (deepest first), so none is listed as found."""
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            pass  # not empty (or already gone): kept


def _run_all(files: list[RemoteFile], work: Callable[[RemoteFile], None], workers: int, watch: Watch) -> None:
    """Run ``work`` on every file in daemon threads; Ctrl-C cancels them all at once.

    Why not ThreadPoolExecutor: its threads are joined at interpreter exit and each one sat in a blocked
    read, so Ctrl-C left the fetch running for minutes. Here the main thread only waits; on Ctrl-C it
    cancels the watch (which shuts the sockets being read), gives the workers a moment to remove their
    temporary files, and returns; a worker still blocked is a daemon and dies with the process.
    """
    todo: queue.SimpleQueue[RemoteFile] = queue.SimpleQueue()
    for f in files:
        todo.put(f)

    n = max(1, min(workers, len(files)))
    done = threading.Semaphore(0)  # one release per finished worker

    def loop() -> None:
        try:
            while True:
                try:
                    f = todo.get_nowait()
                except queue.Empty:
                    return
                work(f)
        finally:
            watch.end_thread()
            done.release()

    # Waiting on a semaphore, not Thread.join: a join interrupted by Ctrl-C can mark a live thread as
    # stopped (CPython 3.11's bpo-45274 handling), and the wait for the cancelled workers then returned at
    # once, before they removed their temporary files.
    # The threads are started inside the try: a Ctrl-C while they start (a loaded machine takes a while)
    # must wait for those already downloading too, or the process ended with their temporary files left.
    started = finished = 0
    watch.polled = True
    try:
        for i in range(n):
            started += 1
            threading.Thread(target=loop, name=f"socium-fetch-{i}", daemon=True).start()
        while finished < started:
            if done.acquire(timeout=0.2):
                finished += 1
            elif watch.reason == "interrupted":
                raise KeyboardInterrupt  # Ctrl-C, raised here rather than wherever the signal landed
    except KeyboardInterrupt:
        watch.cancel("interrupted")
        end = time.monotonic() + 3.0
        while finished < started and done.acquire(timeout=max(0.0, end - time.monotonic())):
            finished += 1
        raise
    finally:
        watch.polled = False


def fetch_dataset(
    ds: DataSet,
    root: Path,
    watch: Watch,
    *,
    progress: Progress | None = None,
    workers: int = 8,
) -> FetchReport:
    """Fetch every file of ``ds`` into ``root`` (several at a time), then pack it if the registry says so."""
    report = FetchReport(ds.name)
    if pack_ok(ds, root):
        report.present = report.total = len(ds.files)
        return report
    files = list(ds.all_files(root))
    report.total = len(files)
    made = _new_dirs(root, files, [ds.pack] if ds.pack else [])
    _clean_stale_parts({(root / f.dest).parent for f in files})
    task = progress.add_task(ds.name, total=ds.size or None) if progress is not None else None
    lock = threading.Lock()

    def one(f: RemoteFile) -> None:
        bar = ProgressBar(progress, task) if progress is not None else None
        try:
            got = fetch_file(f, root, watch, bar=bar)
        except DownloadError as exc:
            with lock:
                (report.skipped if ds.optional and exc.cause == "notfound" else report.errors).append(exc)
            return
        except Exception as exc:  # noqa: BLE001 - a bug must fail its file, not silently end a worker thread
            with lock:
                report.errors.append(DownloadError("bug", f"{f.dest}: {type(exc).__name__}: {exc}"))
            return
        with lock:
            if got:
                report.downloaded += 1
            else:
                report.present += 1

    try:
        _run_all(files, one, workers, watch)
        if ds.pack is not None and not report.errors:
            pack(ds, root)
    finally:
        _remove_empty(made)
    return report


def summarize(errors: list[DownloadError]) -> list[str]:
    """One phrase per cause (and host, for an unreachable one): how many files, the first message."""
    groups: dict[tuple[str, str | None], list[DownloadError]] = {}
    for e in errors:
        groups.setdefault((e.cause, e.host if e.cause == "unreachable" else None), []).append(e)
    out = []
    for (cause, _), errs in groups.items():
        if cause in ("unreachable", "deadline", "interrupted"):
            out.append(f"{errs[0]} ({len(errs):,} file(s) not fetched)")
        elif len(errs) == 1:
            out.append(str(errs[0]))
        else:
            words = _CAUSE_WORDS.get(cause, cause)
            out.append(f"{len(errs):,} file(s) {words}, e.g. {errs[0]}")
    return out


def _check_target(target: Path) -> None:
    """Refuse, in one line, a data folder that is a file, a device, or cannot be created or written."""
    named = f" ({ENV_VAR})" if os.environ.get(ENV_VAR) else ""
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise DataFetchError(f"{target}{named}: cannot use it as the data folder ({exc.strerror or exc})") from exc
    if st is not None and not stat.S_ISDIR(st.st_mode):
        kind = "a file" if stat.S_ISREG(st.st_mode) else "not a folder (a device, pipe or socket)"
        raise DataFetchError(f"{target}{named}: is {kind}, not a folder; name a folder for the data")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataFetchError(f"{target}{named}: cannot create the data folder ({exc.strerror or exc})") from exc
    if not os.access(target, os.W_OK | os.X_OK):
        raise DataFetchError(f"{target}{named}: the data folder is not writable")


def _lock(target: Path, watch: Watch, say: Callable[[str], None]) -> filelock.BaseFileLock:
    """Hold the data folder's fetch lock, waiting (within the deadline) for a fetch already running there."""
    lock = filelock.FileLock(str(target / LOCK_NAME))
    try:
        lock.acquire(timeout=0.05)
        return lock
    except filelock.Timeout:
        say(f"waiting for another `socium data fetch` into {target} to finish ...")
    except OSError as exc:
        raise DataFetchError(f"{target}: cannot lock the data folder ({exc.strerror or exc})") from exc
    while True:  # in slices, so that a Ctrl-C whose exception was lost still ends the wait
        if watch.reason == "interrupted":
            raise KeyboardInterrupt
        try:
            lock.acquire(timeout=min(0.2, max(0.0, watch.deadline - time.monotonic())))
            return lock
        except filelock.Timeout as exc:
            if time.monotonic() >= watch.deadline:
                raise DataFetchError(
                    f"{target}: another `socium data fetch` held the folder past the deadline "
                    f"({watch.deadline_s:.0f} s)"
                ) from exc


def fetch(
    names: Iterable[str] = (),
    root: Path | None = None,
    *,
    say: Callable[[str], None] = print,
    show_progress: bool = True,
    workers: int = 8,
    deadline: float = DEFAULT_DEADLINE_S,
    sets: list[DataSet] | None = None,
) -> list[FetchReport]:
    """Fetch the named data sets (all when none) into ``root`` (default :func:`default_target`).

    ``deadline`` bounds the whole fetch, in seconds. Raises :class:`DataFetchError` (one line: each cause
    of failure, with how many files it hit) after trying every file, :class:`FetchInterrupted` on Ctrl-C.
    """
    chosen = sets if sets is not None else select(tuple(names))
    mirror = os.environ.get(MIRROR_ENV, "")
    if mirror:
        check_mirror(mirror, MIRROR_ENV)
    target = (root or default_target()).expanduser()
    _check_target(target)
    pooch.get_logger().setLevel("WARNING")
    say(f"data folder: {target}" + (f"  (mirror: {redact(mirror)})" if mirror else ""))
    watch = Watch(deadline, mirror=mirror or None)
    reports: list[FetchReport] = []
    try:
        with _cancel_on_sigint(watch):
            lock = _lock(target, watch, say)
            try:
                _fetch_all(chosen, target, watch, reports, say=say, show_progress=show_progress, workers=workers)
            finally:
                lock.release()
        if watch.reason == "interrupted":  # Ctrl-C came, but its KeyboardInterrupt was lost on the way
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        watch.cancel("interrupted")
        raise FetchInterrupted(
            "interrupted; the files verified so far are kept: `socium data fetch` again resumes"
        ) from None
    finally:
        watch.close()
    failed = [(r, r.errors) for r in reports if r.errors]
    if failed:
        parts = [
            f"{r.name}: {len(errs):,} of {r.total:,} file(s) failed: " + "; ".join(summarize(errs))
            for r, errs in failed
        ]
        raise DataFetchError(" | ".join(parts))
    return reports


@contextmanager
def _cancel_on_sigint(watch: Watch) -> Iterator[None]:
    """While the fetch runs, Ctrl-C cancels the watch itself, then raises ``KeyboardInterrupt`` as usual.

    Why: Python's default handler only raises, in the main thread, wherever it happens to be; everything
    else hung on that exception reaching ``_run_all``. Raised inside a finalizer it would be printed as
    "Exception ignored" and lost, and the fetch would wait out a stalled read. (The 30 s stops seen in CI
    had another cause: the test harness's worker held SIGINT ignored, which its child inherited; see the
    SIG_IGN rule below.) Cancelling in the handler first means a lost exception loses nothing: the workers
    stop at once and the main thread's waits poll ``watch.reason``.
    While the workers run (``watch.polled``) it raises nothing: the wait raises the KeyboardInterrupt
    itself, never from inside a lock's acquire or release. The previous handler is put back at the first
    Ctrl-C, so a second one stops at once. Outside the main thread, or where SIGINT is ignored (as the
    process was started), nothing changes.
    """

    def handler(signum: int, frame: Any) -> None:
        try:
            watch.cancel("interrupted")
        finally:
            signal.signal(signal.SIGINT, previous)
        if not watch.polled:
            raise KeyboardInterrupt

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started with Ctrl-C ignored (e.g. `cmd &` in sh):
        yield  # so it stays; a POSIX program does not take back what its parent chose to ignore
        return
    try:
        previous = signal.signal(signal.SIGINT, handler) or signal.default_int_handler  # None: set from C
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is handler:
            signal.signal(signal.SIGINT, previous)


def _fetch_all(
    chosen: list[DataSet],
    target: Path,
    watch: Watch,
    reports: list[FetchReport],
    *,
    say: Callable[[str], None],
    show_progress: bool,
    workers: int,
) -> None:
    progress = (
        Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
        if show_progress
        else None
    )
    for ds in chosen:
        for line in describe(ds):
            say(line)
        try:
            if progress is not None:
                with progress:
                    reports.append(fetch_dataset(ds, target, watch, progress=progress, workers=workers))
            else:
                reports.append(fetch_dataset(ds, target, watch, workers=workers))
        except OSError as exc:  # packing: a full disk, a folder made read-only under us
            raise DataFetchError(f"{ds.name}: cannot write in {target} ({exc.strerror or exc})") from exc
        r = reports[-1]
        say(f"  -> {r.downloaded:,} downloaded, {r.present:,} already there and verified" + _tail(r))
        for line in summarize(r.skipped):
            say(f"     skipped: {line}")
        for line in summarize(r.errors):
            say(f"     FAILED: {line}")
        if r.errors and ds.pack is not None:
            say(f"     not packed into {ds.pack}: the verified files are kept for the next fetch to complete")
        if watch.reason is not None:
            break  # deadline or Ctrl-C: the other data sets are not started


def _tail(r: FetchReport) -> str:
    out = f", {len(r.skipped):,} not available upstream (skipped)" if r.skipped else ""
    return out + (f", {len(r.errors):,} FAILED" if r.errors else "")
