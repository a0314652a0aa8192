"""A minimal OpenAI-compatible HTTP server on loopback.

Drives :class:`~socium.llm.openai_compat.OpenAIBackend` end to end (real HTTP, the official
client, headers, status codes, Retry-After, timeouts) without a model or network access.
Threaded so concurrent requests really overlap, as they do against vLLM.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union

import numpy as np

from .schema_sample import sample_from_schema


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


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, False)

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # client gave up (timeout test); nothing to do

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": self.server.owner.model, "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
            return
        owner = self.server.owner
        owner._record(body, {k.lower(): v for k, v in self.headers.items()})
        reply = owner.reply_for(body)
        delay = owner.delay_s + reply.delay_s
        if delay > 0:
            owner._sleep(delay)
        if reply.fault == "hang":
            owner._sleep(owner.hang_s)
            self.close_connection = True
            return
        if reply.fault == "close":  # read the request, answer nothing, drop the connection
            self.close_connection = True
            return
        if reply.status != 200:
            self._send_json(
                reply.status,
                {"error": {"message": reply.error_message, "type": "fake_error", "code": reply.status}},
                reply.headers,
            )
            return
        payload = completion_payload(body, reply, owner.model, next(owner._ids))
        if reply.fault is None:
            self._send_json(200, payload, reply.headers)
        else:
            self._send_broken(reply.fault, payload)

    def _send_broken(self, fault: str, payload: dict[str, Any]) -> None:
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
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            if fault == "truncated":  # promise the whole body, send half, hang up
                self.wfile.write(data[: len(data) // 2])
                self.close_connection = True
            else:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many concurrent connections from one benchmark must not be refused
    owner: FakeOpenAIServer


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
    ) -> None:
        self.responder: FakeResponder = responder or default_responder
        # Tests read ``requests``; a simulation on ``llm.backend: fake`` must not keep every body
        # (measured: the largest Python growth per step at 10^3 LLM agents in bench_scale.py).
        self.record = record
        self.n_requests = 0
        self.delay_s = float(delay_s)
        self.model = model
        self.hang_s = float(hang_s)
        self._port = int(port)
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def reply_for(self, body: dict[str, Any]) -> FakeReply:
        """What to answer ``body``: the responder's reply (subclasses inject faults here)."""
        try:
            answer = self.responder(body)
        except Exception as exc:  # noqa: BLE001 - a broken responder is a 500, as on a real server
            answer = FakeReply(status=500, error_message=f"responder failed: {exc}")
        return answer if isinstance(answer, FakeReply) else FakeReply(text=answer)

    def _sleep(self, seconds: float) -> None:
        """Sleep, but wake when the server stops (a hanging handler must not outlive its test)."""
        self._stopping.wait(seconds)

    def _track(self, conn: socket.socket, alive: bool) -> None:
        with self._lock:
            (self._conns.add if alive else self._conns.discard)(conn)

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.n_requests += 1
            if self.record:
                self.requests.append(body)
                self.headers.append(headers)

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _Server(("127.0.0.1", self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:  # a stopped server drops its keep-alive connections too, as a dead one would
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
