"""One file over HTTP(S) for ``socium data fetch``, with the limits pooch's own HTTPDownloader lacks.

Why not ``pooch.HTTPDownloader``: it has no size cap (a 400 MB body was downloaded for a 32 KB file, an
endless body fills the disk), no overall deadline (a slow-loris mirror ran for days), cannot be cancelled
from another thread (Ctrl-C was ignored while the worker threads read on), follows a redirect anywhere, and
its errors are urllib3's multi-line reprs, repeated per file. This module keeps pooch's contract (a
downloader is a callable ``(url, output_file, pooch)`` writing one temporary file that pooch then checks
and renames) and adds, per fetch, a :class:`Watch`: a deadline, a cancel that shuts the sockets being read
so blocked reads end at once, and the hosts found unreachable, so the other files for that host fail in
one line instead of each waiting out its own timeout. Everything that goes wrong becomes one
:class:`DownloadError` with a ``cause`` the caller groups by, its URLs stripped of any credentials.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import urllib3

from socium.data.formats import BodyError, check_body
from socium.errors import SociumError

CONNECT_TIMEOUT_S = 15.0
STALL_S = 30.0  #: a read that gets no byte for this long fails (the deadline bounds a trickle)
STALLS_PER_HOST = 3  #: after this many stalled files a host is given up for the rest of the fetch
MAX_REDIRECTS = 5
MAX_UNSIZED = 64 << 20  #: the cap on a file the registry gives no size for
CHUNK = 1 << 13  # small enough that a body cut or stalled part-way has bytes on disk (tests watch them)

_USERINFO = re.compile(r"(?<=//)[^/\s]*@")  # greedy: a password with a raw "@" is hidden whole


class DataFetchError(SociumError):
    """A file that could not be fetched or did not verify; nothing of it was kept under its name."""


class DownloadError(DataFetchError):
    """One file's failure; ``cause`` says what kind (the fetch reports one line per cause and host)."""

    def __init__(self, cause: str, message: str, host: str | None = None) -> None:
        super().__init__(redact(message))
        self.cause, self.host = cause, host


def redact(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by ``***`` (a mirror's user:password)."""
    return _USERINFO.sub("***@", text)


def check_mirror(base: str, env: str) -> None:
    """Refuse a mirror that is not an ``http(s)://host/...`` URL, saying so (not as a checksum mismatch)."""
    shown = redact(base)
    try:
        parts = urlsplit(base)
        _ = parts.port  # a malformed port raises here
    except ValueError as exc:
        raise DataFetchError(f"{env}={shown}: not a valid URL ({exc})") from exc
    if parts.scheme not in ("http", "https"):
        what = f"scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        raise DataFetchError(
            f"{env}={shown}: only http:// and https:// mirrors are fetched from ({what}); "
            "give a base URL like https://mirror.example/socium-data"
        )
    if not parts.hostname:
        raise DataFetchError(f"{env}={shown}: no host in the URL; give a base URL like https://mirror.example/data")


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception urllib3/requests wrapped (``MaxRetryError.reason``, ``__cause__``, args)."""
    seen: set[int] = set()
    cur: BaseException = exc
    while id(cur) not in seen:
        seen.add(id(cur))
        nxt = getattr(cur, "reason", None)
        if not isinstance(nxt, BaseException):
            nxt = next((a for a in cur.args if isinstance(a, BaseException)), None)
        if nxt is None:
            nxt = cur.__cause__ or cur.__context__
        if nxt is None:
            break
        cur = nxt
    return cur


def _chain_names(exc: BaseException) -> set[str]:
    """The class names along an exception's chain (``reason``, ``__cause__``, ``__context__``)."""
    names = set()
    cur: BaseException | None = exc
    for _ in range(12):
        if cur is None:
            break
        names.add(type(cur).__name__)
        inner = getattr(cur, "reason", None)
        cur = inner if isinstance(inner, BaseException) else cur.__cause__ or cur.__context__
    return names


#: failures to open a connection at all: the host (or the way to it) is down, so its other files are not tried
_CONNECT_FAILURES = {
    "NewConnectionError",
    "NameResolutionError",
    "ConnectTimeoutError",
    "ConnectTimeout",
    "ProxyError",
    "SSLError",
    "ConnectionRefusedError",
    "gaierror",
}


def is_connect_failure(exc: BaseException) -> bool:
    """Whether ``exc`` means no connection could be made (not one connection that broke)."""
    return bool(_chain_names(exc) & _CONNECT_FAILURES)


def why_unreachable(exc: BaseException) -> str:
    """A few words for why a connection failed, from the exception chain (never urllib3's whole repr)."""
    names = _chain_names(exc)
    root = _root_cause(exc)
    if "ProxyError" in names:
        return "the proxy refused or dropped the connection (HTTP(S)_PROXY is set)"
    if "NameResolutionError" in names or isinstance(root, socket.gaierror):
        return "its name does not resolve"
    if isinstance(root, ConnectionRefusedError):
        return "connection refused"
    if "ConnectTimeout" in names or "ConnectTimeoutError" in names:
        return f"no answer within {CONNECT_TIMEOUT_S:.0f} s"
    if "SSLError" in names:
        return "TLS handshake failed"
    text = str(root).strip().splitlines()[0] if str(root).strip() else type(root).__name__
    return redact(text)[:160]


def _shutdown(resp: requests.Response) -> None:
    """Shut the socket ``resp`` is read from, so a read blocked in another thread returns now."""
    raw = getattr(resp, "raw", None)
    conn = getattr(raw, "connection", None) or getattr(raw, "_connection", None)
    # urllib3 2 hands the socket to http.client's response (conn.sock is then None): response -> buffered
    # reader -> SocketIO -> socket; both paths are tried, and a body already read has neither
    sockio = getattr(getattr(getattr(raw, "_fp", None), "fp", None), "raw", None)
    for sock in (getattr(sockio, "_sock", None), getattr(conn, "sock", None)):
        if isinstance(sock, socket.socket):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Watch:
    """What one fetch's downloads share: the deadline, the cancel, the hosts given up, the sessions.

    A watchdog thread polls the deadline; :meth:`cancel` (Ctrl-C, the deadline) shuts the socket of every
    body being read, so no worker waits out a stalled read before it notices.
    """

    def __init__(self, deadline_s: float, *, mirror: str | None = None) -> None:
        self.deadline_s = deadline_s
        self.deadline = time.monotonic() + deadline_s
        self.mirror = mirror
        self.reason: str | None = None
        #: the main thread is in a wait that polls ``reason``: Ctrl-C then only cancels, raising nothing inside
        #: threading's own lock handling (an exception landing there can leave a lock held for good)
        self.polled = False
        self._lock = threading.RLock()  # re-entrant: Ctrl-C's handler cancels from the main thread
        self._active: set[requests.Response] = set()
        self._dead: dict[str, DownloadError] = {}
        self._stalls: Counter[str] = Counter()
        self._local = threading.local()
        self._stop = threading.Event()
        self._dog = threading.Thread(target=self._watchdog, name="socium-fetch-deadline", daemon=True)
        self._dog.start()

    def close(self) -> None:
        self._stop.set()

    def _watchdog(self) -> None:
        while not self._stop.wait(0.2):
            if time.monotonic() > self.deadline:
                self.cancel("deadline")
                return

    def cancel(self, reason: str) -> None:
        """Stop every download: ``reason`` is ``"interrupted"`` or ``"deadline"``."""
        with self._lock:
            if self.reason is None:
                self.reason = reason
            active = list(self._active)
        for resp in active:
            _shutdown(resp)

    def check(self, host: str | None = None) -> None:
        """Raise if the fetch was cancelled or ``host`` was given up."""
        if self.reason == "deadline":
            raise DownloadError(
                "deadline",
                f"the fetch's deadline of {self.deadline_s:.0f} s passed; the files verified so far are kept: "
                "fetch again to resume, or give more time with --deadline",
            )
        if self.reason is not None:
            raise DownloadError("interrupted", "interrupted")
        if host is not None and host in self._dead:
            raise self._dead[host]

    def unreachable(self, host: str, exc: BaseException) -> DownloadError:
        """The one error every remaining file of ``host`` fails with, naming the cause and what to do."""
        with self._lock:
            if host not in self._dead:
                if self.mirror:
                    why = why_unreachable(exc)
                    msg = f"cannot reach the mirror {redact(self.mirror)}: {why}; check SOCIUM_DATA_MIRROR"
                else:
                    msg = (
                        f"cannot reach {host}: {why_unreachable(exc)}; offline? set SOCIUM_DATA_MIRROR to a mirror "
                        "(docs/data.md)"
                    )
                self._dead[host] = DownloadError("unreachable", msg, host)
            return self._dead[host]

    def stalled(self, host: str, url: str) -> DownloadError:
        with self._lock:
            self._stalls[host] += 1
            n = self._stalls[host]
        err = DownloadError("stalled", f"{url}: no data for {STALL_S:.0f} s", host)
        if n >= STALLS_PER_HOST:
            with self._lock:
                self._dead.setdefault(
                    host,
                    DownloadError("unreachable", f"{host} stalled ({n} files got no data for {STALL_S:.0f} s)", host),
                )
        return err

    def session(self) -> requests.Session:
        """This thread's session (``requests.Session`` is not meant to be shared across threads)."""
        s = getattr(self._local, "session", None)
        if s is None:
            s = self._local.session = requests.Session()
        return s

    def end_thread(self) -> None:
        """Close this thread's session (its pooled connections) when the thread has no more files."""
        s = getattr(self._local, "session", None)
        if s is not None:
            s.close()
            self._local.session = None

    def track(self, resp: requests.Response, on: bool) -> None:
        with self._lock:
            if on:
                self._active.add(resp)
            else:
                self._active.discard(resp)
        if on and self.reason is not None:
            _shutdown(resp)


class HttpDownload:
    """The downloader pooch calls for one file: caps, deadline, redirects checked, the body's format checked."""

    def __init__(
        self,
        watch: Watch,
        dest: str,
        *,
        size: int | None = None,
        max_size: int | None = None,
        columns: tuple[str, ...] = (),
        content_sha256: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.watch, self.dest, self.size = watch, dest, size
        self.cap = size if size is not None else (max_size or MAX_UNSIZED)
        self.columns, self.content_sha256, self.progress = columns, content_sha256, progress

    def _get(self, url: str) -> requests.Response:
        """GET ``url`` following at most :data:`MAX_REDIRECTS` redirects, each to an http(s) URL only."""
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            host = urlsplit(current).netloc
            self.watch.check(host)
            try:
                resp = self.watch.session().get(
                    current, stream=True, timeout=(CONNECT_TIMEOUT_S, STALL_S), allow_redirects=False
                )
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
                self.watch.check()
                if isinstance(exc, requests.exceptions.ReadTimeout):
                    raise self.watch.stalled(host, current) from exc
                if is_connect_failure(exc):
                    raise self.watch.unreachable(host, exc) from exc
                raise DownloadError("broken", f"{current}: the connection broke ({why_unreachable(exc)})") from exc
            except requests.RequestException as exc:  # InvalidURL, InvalidSchema...: what it is, not a checksum
                raise DownloadError("refused", f"{current}: cannot be fetched ({type(exc).__name__}: {exc})") from exc
            if not resp.is_redirect:
                return resp
            target = urljoin(current, resp.headers.get("location", ""))
            resp.close()
            scheme = urlsplit(target).scheme
            if scheme not in ("http", "https"):
                raise DownloadError(
                    "refused", f"{url}: redirected to {target}, which is not http(s); refused (nothing fetched)"
                )
            current = target
        raise DownloadError("refused", f"{url}: more than {MAX_REDIRECTS} redirects; refused")

    def __call__(self, url: str, output_file: str, pooch: Any = None) -> None:  # noqa: ARG002 - pooch's signature
        resp = self._get(url)
        host = urlsplit(resp.url or url).netloc
        with resp:
            if resp.status_code in (404, 410):
                raise DownloadError("notfound", f"{url}: not found (HTTP {resp.status_code})")
            if resp.status_code != 200:
                raise DownloadError("http", f"{url}: HTTP {resp.status_code} {resp.reason}")
            ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype == "text/html" and not self.dest.endswith((".html", ".htm")):
                raise DownloadError(
                    "format", f"{url}: the server sent an HTML page, not {Path(self.dest).name}; refused"
                )
            announced = resp.headers.get("content-length", "")
            if announced.isdigit() and int(announced) > self.cap:
                raise DownloadError("size", f"{url}: announces {int(announced):,} bytes, {self._cap_text()}; refused")
            got = self._stream(resp, output_file, url, host)
        if self.size is not None and got != self.size:
            raise DownloadError("size", f"{url}: {got:,} bytes, the registry says {self.size:,}; refused")
        try:
            check_body(Path(output_file), self.dest, columns=self.columns, content_sha256=self.content_sha256)
        except BodyError as exc:
            raise DownloadError("format", f"{url}: {exc}; refused") from exc

    def _cap_text(self) -> str:
        if self.size is not None:
            return f"the registry says {self.size:,}"
        return f"over the {self.cap:,}-byte cap for a file of unknown size"

    def _stream(self, resp: requests.Response, output_file: str, url: str, host: str) -> int:
        got = 0
        self.watch.track(resp, True)
        try:
            with open(output_file, "wb") as out:
                for chunk in resp.iter_content(CHUNK):
                    self.watch.check()
                    got += len(chunk)
                    if got > self.cap:
                        raise DownloadError("size", f"{url}: the body runs past {self._cap_text()}; refused")
                    out.write(chunk)
                    if self.progress is not None:
                        self.progress(len(chunk))
        except (requests.RequestException, urllib3.exceptions.HTTPError, ConnectionError) as exc:
            self.watch.check()  # a cancel shut the socket: say that, not "connection broken"
            if isinstance(exc, requests.exceptions.ConnectionError) and "Read timed out" in str(exc):
                raise self.watch.stalled(host, url) from exc
            raise DownloadError("broken", f"{url}: the connection broke mid-download ({type(exc).__name__})") from exc
        finally:
            self.watch.track(resp, False)
        self.watch.check()
        return got
