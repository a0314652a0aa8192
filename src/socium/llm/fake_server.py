"""A minimal OpenAI-compatible HTTP server on loopback.

Drives :class:`~socium.llm.openai_compat.OpenAIBackend` end to end (real HTTP, headers, status
codes, Retry-After, timeouts, broken answers) without a model or network access. It serves HTTP/1.1
keep-alive from one asyncio event loop in a background thread: concurrent requests overlap (a
delayed answer is an ``asyncio.sleep``, not a parked thread), and one request costs well under a
millisecond of CPU, so that in benchmarks on a small machine the stand-in server is not what is
measured. (The threaded ``http.server`` it replaced cost ~0.7 ms per request and ran one thread per
keep-alive connection.) Responders run on that loop and must be quick.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import hashlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Union

import numpy as np

from socium.llm.schema_sample import sample_from_schema


@dataclass
class FakeReply:
    """What the fake server answers to one call: a completion text or an HTTP error."""

    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    finish_reason: str = "stop"
    error_message: str = "fake error"
    #: A broken 200 answer (see ``socium.testing.fault_server.FAULT_KINDS``): truncated, non_json,
    #: bad_usage, null_content, no_message, close, hang. None: a well-formed answer.
    fault: str | None = None


FakeResponder = Callable[[dict[str, Any]], Union[str, FakeReply]]


def schema_from_body(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asked for, in either the vLLM/OpenAI or the llama.cpp spelling."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    if fmt.get("type") == "json_object":
        return fmt.get("schema")
    return None


def default_responder(body: dict[str, Any]) -> str:
    """Schema-valid JSON when a schema was sent, else a fixed sentence; seeded by the prompt."""
    schema = schema_from_body(body)
    prompt = json.dumps(body.get("messages", []), sort_keys=True)
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "little"))
    if schema is None:
        return "This is a fake completion."
    return json.dumps(sample_from_schema(schema, rng))


def _words(text: str) -> int:
    return len(text.split())


def completion_payload(body: dict[str, Any], reply: FakeReply, model: str, n: int) -> dict[str, Any]:
    """A well-formed chat.completion for ``reply`` (tokens counted as whitespace words)."""
    prompt_tokens = sum(_words(str(m.get("content", ""))) for m in body.get("messages", []))
    completion_tokens = _words(reply.text)
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", model),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


#: When the request being answered arrived (the timeline's first time; subclasses keep ``_decode(delay)``).
_ARRIVED: contextvars.ContextVar[float] = contextvars.ContextVar("fake_server_arrived", default=0.0)


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class FakeOpenAIServer:
    """POST /v1/chat/completions on 127.0.0.1 with a configurable responder and delay.

    ``responder(body) -> str | FakeReply`` sees the parsed request body. ``requests`` and
    ``headers`` (names lower-cased) record what arrived, for assertions. Use as a context manager.
    """

    def __init__(
        self,
        responder: FakeResponder | None = None,
        *,
        delay_s: float = 0.0,
        model: str = "fake-model",
        port: int = 0,
        hang_s: float = 3600.0,
        record: bool = True,
        batch_limit: int | None = None,
        timeline: bool = False,
    ) -> None:
        """``batch_limit``: a GPU-like server (see :meth:`_decode`); None: every request answers after
        ``delay_s`` however many are in flight (unbounded parallelism, the instant-server default).
        ``timeline``: keep each request's (arrived, slot taken, slot freed) times for ``GET /timeline``."""
        if batch_limit is not None and batch_limit < 1:
            raise ValueError(f"batch_limit: must be at least 1, got {batch_limit}")
        self.batch_limit = batch_limit
        self._slots: asyncio.Semaphore | None = None  # made on the server's loop
        self._decoding = 0  # requests being answered now (holding a slot)
        self._since = time.monotonic()  # last change of _decoding
        self.busy_slot_s = 0.0  # integral of _decoding over time
        self.idle_s = 0.0  # time with nothing being answered, since start
        # (arrived, slot taken, slot freed) per request, monotonic s; read and emptied by GET /timeline
        self.timeline: list[tuple[float, float, float]] | None = [] if timeline else None
        self.responder: FakeResponder = responder or default_responder
        # Tests read ``requests``; a simulation on ``llm.backend: fake`` must not keep every body
        # (measured: the largest Python growth per step at 10^3 LLM agents in bench_scale.py).
        self.record = record
        self.n_requests = 0
        self.delay_s = float(delay_s)
        self.model = model
        self.hang_s = float(hang_s)
        self._port = int(port)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._bound_port = 0
        self._handlers: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._sleepers: set[asyncio.Future[None]] = set()
        self._stopping = False

    def reply_for(self, body: dict[str, Any]) -> FakeReply:
        """What to answer ``body``: the responder's reply (subclasses inject faults here)."""
        try:
            answer = self.responder(body)
        except Exception as exc:  # a broken responder is a 500, as on a real server
            answer = FakeReply(status=500, error_message=f"responder failed: {exc}")
        return answer if isinstance(answer, FakeReply) else FakeReply(text=answer)

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.n_requests += 1
            if self.record:
                self.requests.append(body)
                self.headers.append(headers)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return self._bound_port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        if self._server is not None:
            return self
        ready: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="fake-openai-server", daemon=True)
        self._thread.start()
        self._bound_port = ready.result(timeout=30)  # a port in use raises here, in the caller
        return self

    def _serve(self, ready: concurrent.futures.Future[int]) -> None:
        loop = asyncio.new_event_loop()
        try:
            server = loop.run_until_complete(
                asyncio.start_server(self._connection, "127.0.0.1", self._port, backlog=2048)
            )
        except BaseException as exc:  # handed to start()'s caller
            loop.close()
            ready.set_exception(exc)
            return
        self._loop, self._server = loop, server
        if self.batch_limit is not None:
            self._slots = asyncio.Semaphore(self.batch_limit)
        self._since = time.monotonic()
        ready.set_result(int(server.sockets[0].getsockname()[1]))
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake when the server stops (a hanging handler must not outlive its test)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        timer = loop.call_later(seconds, _wake, fut)
        self._sleepers.add(fut)
        try:
            await fut
        finally:
            timer.cancel()
            self._sleepers.discard(fut)

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._stopping = True
        self._server.close()
        for w in list(self._writers):  # a stopped server drops its keep-alive connections, as a dead one would
            w.transport.abort()
        for fut in list(self._sleepers):
            _wake(fut)
        handlers = list(self._handlers)
        if handlers:  # they end on their own now; cancelling would make asyncio log each one
            await asyncio.wait(handlers, timeout=5)

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or self._server is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(timeout=10)
            self._loop = self._server = self._thread = None
            self._stopping = False

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- HTTP/1.1 --------------------------------------------------------------------------------
    def _note(self, change: int) -> None:
        """Account the time since the last change at the old number decoding (server loop only)."""
        now = time.monotonic()
        dt, self._since = now - self._since, now
        if self._decoding == 0:
            self.idle_s += dt
        self.busy_slot_s += self._decoding * dt
        self._decoding += change

    def utilisation(self) -> dict[str, float]:
        """Counters read over ``GET /metrics`` (JSON): requests, slot-seconds busy, seconds idle, now
        decoding. The difference of two readings gives a window's idle share (``idle_s / wall``) and
        occupancy (``busy_slot_s / (batch_limit x wall)``), measured where the work is done."""
        self._note(0)
        return {
            "requests": float(self.n_requests),
            "busy_slot_s": self.busy_slot_s,
            "idle_s": self.idle_s,
            "decoding": float(self._decoding),
            "batch_limit": float(self.batch_limit or 0),
            "monotonic": self._since,
        }

    def drain_timeline(self) -> list[tuple[float, float, float]]:
        """The requests' (arrived, slot taken, slot freed) times kept since the last call (``GET /timeline``):
        where a benchmark tells a slot left empty by the client (freed, not yet refilled) from one
        waiting for the server."""
        got, self.timeline = self.timeline or [], [] if self.timeline is not None else None
        return got

    async def _decode(self, delay: float) -> None:
        """Hold a slot while a request is answered. With ``batch_limit`` B, like a GPU server's
        continuous batching, up to B requests decode together in ``delay`` each (throughput grows with
        what is in flight: k / delay for k <= B), the rest queue in arrival order for a slot (B / delay)."""
        if self._slots is not None:
            await self._slots.acquire()
        self._note(+1)
        taken = self._since
        try:
            if delay > 0:
                await self._sleep(delay)
        finally:
            self._note(-1)
            if self.timeline is not None:
                self.timeline.append((_ARRIVED.get() or taken, taken, self._since))
            if self._slots is not None:
                self._slots.release()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:  # asyncio already does this for TCP; stated so a change there cannot add Nagle's ~40 ms
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, _, rest = lines[0].partition(" ")
                path = rest.rpartition(" ")[0] or rest
                headers = {}
                for line in lines[1:]:
                    name, sep, value = line.partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    self._send(writer, 411, {"error": {"message": "send Content-Length", "type": "invalid_request"}})
                    return
                try:
                    length = int(headers.get("content-length") or 0)
                    raw = await reader.readexactly(length) if length > 0 else b""
                except ValueError:
                    self._send(writer, 400, {"error": {"message": "bad Content-Length", "type": "invalid_request"}})
                    return
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                keep = await self._answer(method, path, headers, raw, writer)
                if not keep or headers.get("connection", "").lower() == "close":
                    return
                try:
                    await writer.drain()
                except ConnectionError:
                    return
        finally:
            self._handlers.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _answer(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; False when the connection must be closed afterwards."""
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET":
            if route.endswith("/models"):
                self._send(writer, 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]})
            elif route.endswith("/metrics"):
                self._send(writer, 200, self.utilisation())
            elif route.endswith("/timeline") and self.timeline is not None:
                self._send(writer, 200, {"requests": self.drain_timeline()})
            else:
                self._send(writer, 404, {"error": {"message": "not found", "type": "not_found"}})
            return True
        if not route.endswith("/chat/completions"):
            self._send(writer, 404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return True
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(writer, 400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
            return True
        _ARRIVED.set(time.monotonic())  # each connection's handler is a task: its own context
        self._record(body, headers)
        reply = self.reply_for(body)
        await self._decode(self.delay_s + reply.delay_s)
        if self._stopping:
            return False
        if reply.fault == "hang":
            await self._sleep(self.hang_s)
            return False
        if reply.fault == "close":  # read the request, answer nothing, drop the connection
            return False
        if reply.status != 200:
            error = {"message": reply.error_message, "type": "fake_error", "code": reply.status}
            self._send(writer, reply.status, {"error": error}, reply.headers)
            return True
        payload = completion_payload(body, reply, self.model, next(self._ids))
        if reply.fault is None:
            self._send(writer, 200, payload, reply.headers)
            return True
        return self._send_broken(writer, reply.fault, payload)

    @staticmethod
    def _send(
        writer: asyncio.StreamWriter,
        status: int,
        payload: dict[str, Any] | bytes,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
        length: int | None = None,
    ) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Unknown"
        head = [
            f"HTTP/1.1 {status} {reason}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(data) if length is None else length}",
        ]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)

    def _send_broken(self, writer: asyncio.StreamWriter, fault: str, payload: dict[str, Any]) -> bool:
        """A 200 answer that no client can use, in one of the ways real servers and proxies break."""
        choice = payload["choices"][0]
        content_type = "application/json"
        if fault == "null_content":
            choice["message"]["content"] = None
        elif fault == "no_message":
            del choice["message"]
        elif fault == "bad_usage":
            payload["usage"] = {"prompt_tokens": -7, "completion_tokens": "many", "total_tokens": None}
        data = json.dumps(payload).encode("utf-8")
        if fault == "non_json":
            data, content_type = b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"
        if fault == "truncated":  # promise the whole body, send half, hang up
            self._send(writer, 200, data[: len(data) // 2], content_type=content_type, length=len(data))
            return False
        self._send(writer, 200, data, content_type=content_type)
        return True
