"""A lean HTTP/1.1 client for the LLM hot path: ``POST`` JSON to one origin over pooled keep-alive
connections, one request per connection at a time.

Why not aiohttp: for every call it built a request object, a response object, header multidicts,
a timer context and a payload wrapper, and ran its own connector bookkeeping: ~0.3 ms of CPU per
call on the 2-core development machine, a third of the driver's whole cost per activation against
an instant server (``benchmarks/bench_http.py`` prints the split). What the simulator needs is
narrow: send a prebuilt byte string, read back a status, a few headers and a ``Content-Length``
(or chunked, or read-to-close) body, and tell apart every way that can fail, because each failure
becomes a typed result (:mod:`socium.llm.openai_compat`). TLS comes from asyncio's own transports.

Failures raised by :meth:`Pool.post`:
- :class:`OSError` while connecting (refused, unreachable, DNS, TLS handshake);
- :class:`asyncio.TimeoutError` when the whole exchange (connect, send, wait, read) passes its
  deadline; the connection is then dropped, since its answer may still arrive;
- :class:`HTTPFailure` with ``kind`` ``"disconnected"`` (closed before any byte of an answer),
  ``"truncated"`` (closed mid-answer) or ``"protocol"`` (not an HTTP/1.x answer).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any
from urllib.parse import urlsplit

#: Largest response head (status line + headers) accepted; a server sending more is broken.
MAX_HEAD = 64 * 1024


class HTTPFailure(Exception):
    """The server broke the exchange; ``kind`` says how, ``cause`` holds the socket error if any."""

    def __init__(self, kind: str, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.cause = cause


class Response:
    """Status, headers (names lower-cased) and body of one answer."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


_HEAD, _LENGTH, _CHUNKED, _TO_CLOSE = 0, 1, 2, 3


class _Connection(asyncio.Protocol):
    """One keep-alive connection; parses the answer to the request in flight as bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[Response] | None = None
        self.closed = False
        self.keep = False
        self._buf = bytearray()
        self._state = _HEAD
        self._status = 0
        self._headers: dict[str, str] = {}
        self._length = 0
        self._got_bytes = False

    # -- asyncio.Protocol --
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.waiter is None or self.waiter.done():  # bytes nobody asked for: the server is confused
            self.closed = True
            if self.transport is not None:
                self.transport.abort()
            return
        self._got_bytes = True
        self._buf += data
        try:
            self._parse()
        except HTTPFailure as exc:
            self._fail(exc)

    def eof_received(self) -> bool:
        return False  # close; connection_lost decides what the missing rest means

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        w = self.waiter
        if w is None or w.done():
            return
        if self._state == _TO_CLOSE and exc is None:
            self._finish(bytes(self._buf))
        elif not self._got_bytes:
            w.set_exception(HTTPFailure("disconnected", "closed the connection without answering", exc))
        else:
            got = len(self._buf)
            if self._state == _HEAD:
                what = f"{got} bytes of the response head"
            else:
                what = f"{got}{f' of {self._length}' if self._state == _LENGTH else ''} body bytes"
            w.set_exception(HTTPFailure("truncated", f"connection closed after {what}", exc))

    # -- one exchange --
    def begin(self, waiter: asyncio.Future[Response]) -> None:
        self.waiter = waiter
        self._buf.clear()
        self._state = _HEAD
        self._got_bytes = False
        self.keep = False

    def _fail(self, exc: HTTPFailure) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)
        if self.transport is not None:
            self.transport.abort()

    def _finish(self, body: bytes) -> None:
        if self._buf and self._state != _TO_CLOSE:
            self.keep = False  # bytes after the answer: do not trust this connection again
        assert self.waiter is not None
        self.waiter.set_result(Response(self._status, self._headers, body))

    def _parse(self) -> None:
        buf = self._buf
        if self._state == _HEAD:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise HTTPFailure("protocol", f"response head longer than {MAX_HEAD} bytes")
                return
            lines = buf[:end].decode("latin-1").split("\r\n")
            del buf[: end + 4]
            version, _, rest = lines[0].partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise HTTPFailure("protocol", f"not an HTTP/1.x response: {lines[0][:80]!r}")
            status = int(code)
            if 100 <= status < 200:  # interim answer (100 Continue): the real one follows
                self._parse()
                return
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            self._status, self._headers = status, headers
            self.keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._state = _CHUNKED
            elif "content-length" in headers:
                try:
                    self._length = int(headers["content-length"])
                except ValueError:
                    raise HTTPFailure("protocol", f"bad Content-Length {headers['content-length']!r}") from None
                if self._length < 0:
                    raise HTTPFailure("protocol", f"bad Content-Length {self._length}")
                self._state = _LENGTH
            elif status in (204, 304):
                self._length, self._state = 0, _LENGTH
            else:
                self._state, self.keep = _TO_CLOSE, False
                return
        if self._state == _LENGTH:
            if len(buf) >= self._length:
                body = bytes(buf[: self._length])
                del buf[: self._length]
                self._finish(body)
        elif self._state == _CHUNKED:
            whole = _dechunk(buf)
            if whole is not None:
                self._finish(whole)


def _dechunk(buf: bytearray) -> bytes | None:
    """The body of a complete chunked message at the start of ``buf`` (consumed), None if incomplete."""
    out = bytearray()
    pos = 0
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size_text = bytes(buf[pos:eol]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise HTTPFailure("protocol", f"bad chunk size {size_text[:20]!r}") from None
        pos = eol + 2
        if size == 0:
            while True:  # trailer lines, up to an empty one
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    return None
                empty = eol == pos
                pos = eol + 2
                if empty:
                    del buf[:pos]
                    return bytes(out)
        if len(buf) < pos + size + 2:
            return None
        out += buf[pos : pos + size]
        pos += size + 2


def _usable(conn: _Connection) -> bool:
    """Open as far as this side knows: a peer's close seen by the loop marks the transport closing
    at once, before ``connection_lost`` runs (a server gone between two steps)."""
    return not conn.closed and conn.transport is not None and not conn.transport.is_closing()


def _expire(conn: _Connection, waiter: asyncio.Future[Response]) -> None:
    if not waiter.done():
        waiter.set_exception(asyncio.TimeoutError())
    conn.closed = True
    if conn.transport is not None:
        conn.transport.abort()


class Pool:
    """Keep-alive connections to the origin of ``url`` on the running loop; ``post`` sends to its path.

    ``headers`` are sent with every request (with ``Host`` and ``Content-Length``); they are held in
    prebuilt bytes that no repr shows. ``limit`` caps open connections (0: no cap). Idle connections
    older than ``keepalive_s`` are closed rather than reused, before a server's own keep-alive timeout
    can close one under a request.
    """

    def __init__(self, url: str, headers: dict[str, str], *, limit: int = 0, keepalive_s: float = 15.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.host = parts.hostname
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        default_port = self.port == (443 if self.tls else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        netloc = host if default_port else f"{host}:{self.port}"
        lines = [f"POST {path} HTTP/1.1", f"Host: {netloc}", *(f"{k}: {v}" for k, v in headers.items())]
        self._head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
        self.keepalive_s = keepalive_s
        self._idle: list[tuple[_Connection, float]] = []
        self._open: set[_Connection] = set()
        self._limit = asyncio.Semaphore(limit) if limit > 0 else None
        self._ssl: ssl.SSLContext | None = None
        self.closed = False

    def __repr__(self) -> str:
        return f"Pool({'https' if self.tls else 'http'}://{self.host}:{self.port}, {len(self._open)} open)"

    def __reduce__(self) -> Any:
        raise TypeError("connection pools are not picklable")

    async def post(self, body: bytes, timeout: float) -> Response:
        """Send ``body`` and return the answer, whatever its status; see the module doc for failures."""
        if self._limit is None:
            return await self._post(body, timeout)
        async with self._limit:
            return await self._post(body, timeout)

    async def _post(self, body: bytes, timeout: float) -> Response:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        conn = self._take_idle(loop.time())
        if conn is None:
            conn = await self._connect(deadline)
        waiter: asyncio.Future[Response] = loop.create_future()
        conn.begin(waiter)
        timer = loop.call_at(deadline, _expire, conn, waiter)
        try:
            assert conn.transport is not None
            conn.transport.write(self._head + b"%d\r\n\r\n" % len(body) + body)
            resp = await waiter
        except BaseException:  # timeout, broken answer, or the caller cancelled: drop the connection
            conn.closed = True
            if conn.transport is not None:
                conn.transport.abort()
            self._open.discard(conn)
            raise
        finally:
            timer.cancel()
        conn.waiter = None
        if conn.keep and not conn.closed and not self.closed:
            self._idle.append((conn, loop.time()))
        else:
            self._drop(conn)
        return resp

    def _take_idle(self, now: float) -> _Connection | None:
        idle = self._idle
        while idle and (not _usable(idle[0][0]) or now - idle[0][1] > self.keepalive_s):
            self._drop(idle.pop(0)[0])
        while idle:
            conn, _ = idle.pop()  # the most recently used: warmest, least likely closed by the server
            if _usable(conn):
                return conn
            self._drop(conn)
        return None

    async def _connect(self, deadline: float) -> _Connection:
        loop = asyncio.get_running_loop()
        ctx = None
        if self.tls:
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            ctx = self._ssl
        make = loop.create_connection(_Connection, self.host, self.port, ssl=ctx)
        _, conn = await asyncio.wait_for(make, max(0.0, deadline - loop.time()))
        if self.closed:
            conn.closed = True
            assert conn.transport is not None
            conn.transport.close()
            raise HTTPFailure("disconnected", "the client was closed")
        self._open.add(conn)
        return conn

    def _drop(self, conn: _Connection) -> None:
        self._open.discard(conn)
        conn.closed = True
        if conn.transport is not None and not conn.transport.is_closing():
            conn.transport.close()

    def close(self) -> None:
        """Close every connection, idle or busy (a busy request then fails as disconnected)."""
        self.closed = True
        self._idle.clear()
        for conn in list(self._open):
            self._drop(conn)
