"""Backend for OpenAI-compatible HTTP servers: vLLM, llama.cpp's server, OpenAI itself.

Spoken with aiohttp, one :class:`aiohttp.ClientSession` (a pool of keep-alive connections) per
event loop. aiohttp rather than httpx: it is the client vLLM's own serving benchmark drives servers
with, and it costs a tenth of httpx's CPU per call (a bare POST of the same body to the fake
server, 64 in flight, 3 x 4,000 calls each, alternated: aiohttp 0.13-0.16 ms, httpx 0.29
1.5-1.7 ms of client CPU per call; load ~10 on 2 shared cores). HTTP/2, httpx's one extra, is
moot here: vLLM's and llama.cpp's servers speak HTTP/1.1. The official SDK (httpx underneath,
plus pydantic models per response) hid why a connection failed ("Connection error."). The
hand-written HTTP/1.1 client this replaced (``llm/http11.py``, until issue 26) saved ~0.15 ms of
driver CPU per call against an instant fake server, noise against a real server's tens to
hundreds of milliseconds, and gave up what users of a cluster expect from a well-kept client:

- proxies from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``, lower-case too, and
  a proxy's credentials from ``~/.netrc``), read when the backend is built, as the SDK reads them
  when its client is built. Resolved once with aiohttp's own ``get_env_proxy_for_url`` rather than
  with the session's ``trust_env=True``, which looks both the proxy and ``~/.netrc`` up again on a
  worker thread for every request (0.98 against 0.82 ms of driver CPU per activation in
  ``benchmarks/bench_http.py``, one run each at 2,000 agents, load ~11) and, when ``~/.netrc``
  names the server's host, fails every call ("Cannot combine AUTHORIZATION header with AUTH
  argument"), since the key is a header;
- CA bundles: ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` replace the system's trust store when set (as
  httpx does), else the system's store is used (:func:`ssl_context`);
- custom headers (``headers=``, like the SDK's ``default_headers``) and the API key from
  ``api_key_env``, sent as ``Authorization: Bearer``.

aiohttp never retries a POST by itself (it re-sends only idempotent methods on a stale keep-alive
connection) and follows no redirect here: retries are :class:`~socium.llm.wrappers.RetryingBackend`'s,
seeded and the same for every backend. Every response the client cannot use (a truncated or
non-JSON body, a null or missing message, ``usage`` counts that are not non-negative integers, a
dropped connection) becomes a typed failed :class:`~socium.llm.types.LLMResult` that the retry
wrapper treats like a 5xx; no server behaviour raises out of :meth:`OpenAIBackend.generate`. Each
attempt has a total deadline (``timeout_s``: connect, send, wait and read together, aiohttp's
``ClientTimeout(total=...)``), so a server that trickles bytes or never answers cannot stall a run.
Each server spells constrained JSON output differently, hence the per-kind adapter.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import ssl
import time
from collections.abc import Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any, Generic, Literal, TypeVar

import aiohttp
from aiohttp.helpers import BasicAuth, get_env_proxy_for_url
from yarl import URL

from socium.config.llm import url_problem
from socium.errors import ConfigError
from socium.llm.base import LoopLocal, daemon_task
from socium.llm.types import ErrorKind, LLMRequest, LLMResult

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - a core dependency; json is the slower fallback
    _orjson = None  # type: ignore[assignment]

ServerKind = Literal["vllm", "llamacpp", "openai"]
SERVER_KINDS: tuple[str, ...] = ("vllm", "llamacpp", "openai")
_T = TypeVar("_T")


class _Secret(Generic[_T]):
    """Holds the API key (and custom headers, which may carry other credentials) so that no repr,
    log line or pickle of the backend can show it."""

    __slots__ = ("_value",)

    def __init__(self, value: _T) -> None:
        self._value = value

    def reveal(self) -> _T:
        return self._value

    def __repr__(self) -> str:
        return "_Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("API keys are not picklable; read them from the environment in each process")


def response_format_for(server_kind: str, schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``response_format`` that makes this kind of server follow ``schema``.

    vLLM and OpenAI take OpenAI's ``json_schema`` form; llama_cpp.server only reads a schema
    attached to ``json_object``.
    """
    if schema is None:
        return None
    if server_kind in ("vllm", "openai"):
        return {"type": "json_schema", "json_schema": {"name": "action", "schema": schema}}
    if server_kind == "llamacpp":
        return {"type": "json_object", "schema": schema}
    raise ConfigError(f"llm.server_kind: {server_kind!r} is not one of {', '.join(SERVER_KINDS)}")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def classify_status(status: int) -> ErrorKind:
    if status == 429:
        return "rate_limit"
    if status >= 500:
        return "server"
    return "client"


class BadResponse(Exception):
    """A 200 response that cannot be used; the message says what is wrong with it."""


def _count(usage: dict[str, Any], name: str) -> int:
    v = usage.get(name, 0)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != v or int(v) != v:
        raise BadResponse(f"usage.{name} is {v!r}, not a non-negative integer")
    return int(v)


def parse_completion(data: Any) -> tuple[str, int, int, str | None]:
    """``(text, prompt_tokens, completion_tokens, finish_reason)`` of a chat.completion body.

    Raises :class:`BadResponse` naming the first thing that makes the body unusable. A missing
    ``usage`` is accepted (some servers omit it) and counts zero tokens; a present one must hold
    non-negative integers, since budgets and the Simulation Card add them up.
    """
    if not isinstance(data, dict):
        raise BadResponse(f"body is a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BadResponse("response has no choices")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise BadResponse("choices[0] is not an object")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise BadResponse("choices[0].message is missing or null")
    text = message.get("content")
    if not isinstance(text, str):
        raise BadResponse(f"choices[0].message.content is {'null' if text is None else type(text).__name__}")
    usage = data.get("usage")
    if usage is None:
        pt = ct = 0
    elif isinstance(usage, dict):
        pt, ct = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    else:
        raise BadResponse(f"usage is a {type(usage).__name__}, not an object")
    finish = choice.get("finish_reason")
    return text, pt, ct, (finish if isinstance(finish, str) else None)


def _loads(raw: bytes) -> Any:
    """A response body parsed: orjson where it accepts the body (what it parses, it parses as ``json``
    does), else ``json``, which also reads what orjson refuses (a lone surrogate escape, NaN, integers
    past 64 bits, UTF-16) and raises the errors :meth:`OpenAIBackend.send` reports."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except ValueError:  # orjson.JSONDecodeError: let json decide, and word the error
            pass
    return json.loads(raw)


def _error_message(body: bytes) -> str:
    """The server's own error message when it sent OpenAI's error shape, else the start of the body."""
    try:
        err = json.loads(body).get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        if isinstance(msg, str) and msg:
            return msg[:300]
    except (ValueError, AttributeError):
        pass
    return body[:200].decode("utf-8", "replace").strip() or "(empty body)"


def _connect_error(exc: BaseException, where: str) -> str:
    """Name the real cause of a failed connect: refused, unreachable, DNS, reset."""
    os_err = getattr(exc, "os_error", None) or exc
    code = getattr(os_err, "errno", None)
    if code == errno.ECONNREFUSED:
        return f"connection refused by {where}"
    if code in (errno.ECONNRESET, errno.EPIPE):
        return f"connection reset by {where}"
    return f"cannot connect to {where}: {os_err}"


def ssl_context() -> ssl.SSLContext:
    """The TLS settings for https servers: ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set (a cluster's
    own CA, as httpx and so ``openai`` read them), else the system's trust store.

    Built once per session, not per connection: loading a CA bundle reads and parses files.
    A variable naming a file or folder that cannot be read is a :class:`ConfigError` naming it,
    rather than every call failing with a certificate error.
    """
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    try:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    except (OSError, ssl.SSLError) as exc:
        where = " and ".join(f"{k}={v!r}" for k, v in (("SSL_CERT_FILE", cafile), ("SSL_CERT_DIR", capath)) if v)
        raise ConfigError(f"cannot load the CA certificates named by {where}: {exc}") from exc


def env_proxy(url: URL) -> tuple[URL | None, BasicAuth | None]:
    """The proxy (and its credentials) the environment names for ``url``; ``(None, None)`` when
    there is none or ``NO_PROXY`` exempts the host."""
    try:
        return get_env_proxy_for_url(url)
    except LookupError:
        return None, None


#: Idle keep-alive connections older than this are closed rather than reused, before a server's own
#: keep-alive timeout (uvicorn's is 5 s, nginx's 75 s) can close one under a request.
KEEPALIVE_S = 4.0


class OpenAIBackend:
    """Chat completions against one OpenAI-compatible endpoint.

    ``headers`` are sent with every request, as the SDK's ``default_headers`` (a gateway's routing
    or tenant header); like the key, no repr shows them. ``max_connections`` caps open connections
    (0: no cap; ``llm.max_concurrency`` bounds calls in flight anyway).
    """

    #: :meth:`send` answers one request on :meth:`session` (what :mod:`socium.llm.call_path` calls).
    SENDS_ONE = True

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        server_kind: ServerKind = "vllm",
        timeout_s: float = 60.0,
        extra_body: dict[str, Any] | None = None,
        max_connections: int = 0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if server_kind not in SERVER_KINDS:
            raise ConfigError(f"llm.server_kind: {server_kind!r} is not one of {', '.join(SERVER_KINDS)}")
        if timeout_s <= 0:
            raise ConfigError(f"llm.timeout_s: must be > 0, got {timeout_s!r}")
        if (problem := url_problem(base_url)) is not None:
            raise ConfigError(f"llm.base_urls: {base_url!r} {problem}")
        key = os.environ.get(api_key_env)
        if not key:
            if server_kind == "openai":
                raise ConfigError(
                    f"llm.api_key_env: environment variable {api_key_env} is not set; the OpenAI API needs a key"
                )
            key = "EMPTY"  # local vLLM / llama.cpp servers accept any key
        self._key = _Secret(key)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.model_name = model
        self.server_kind: str = server_kind
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.extra_body = dict(extra_body or {})
        self.max_connections = int(max_connections)
        self._headers = _Secret(
            {
                "Content-Type": "application/json",
                "Accept": "application/json",
                **{str(k): str(v) for k, v in (headers or {}).items()},
                "Authorization": f"Bearer {key}",
            }
        )
        self._url = URL(self.base_url + "/chat/completions")  # parsed once, not per request
        self._proxy = _Secret(env_proxy(self._url))  # its URL or credentials may hold a password
        self._where = self.base_url.split("://", 1)[-1].split("/", 1)[0]
        self._tokens_key = "max_completion_tokens" if server_kind == "openai" else "max_tokens"
        # Loaded once here (a bad SSL_CERT_FILE fails at set-up, naming it); plain http needs none.
        self._ssl: ssl.SSLContext | bool = ssl_context() if self.base_url.startswith("https:") else True
        self._sessions = LoopLocal(self._make_session)

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r}, "
            f"server_kind={self.server_kind!r}, api_key_env={self.api_key_env!r})"
        )

    def __reduce__(self) -> Any:
        raise TypeError("API keys are not picklable; build the backend in each process from the config")

    def _make_session(self) -> tuple[aiohttp.ClientSession, asyncio.Task[Any]]:
        """One aiohttp session (a pool of keep-alive connections) for the running loop, and the task
        that closes it, closed by :meth:`close` or when that loop shuts down.

        ``asyncio.run`` cancels the tasks still pending when its coroutine ends; the watcher task
        is one of them, and closes the session then, so no open socket is left over from a
        short-lived loop (:func:`~socium.llm.base.run_coro_sync` keeps one loop per thread).
        ``limit=0`` lifts aiohttp's default cap of 100 connections: the concurrency limit wrapper
        (``llm.max_concurrency``) is what bounds calls in flight.
        """
        connector = aiohttp.TCPConnector(
            limit=self.max_connections, limit_per_host=0, keepalive_timeout=KEEPALIVE_S, ssl=self._ssl
        )
        session = aiohttp.ClientSession(
            connector=connector,
            headers=self._headers.reveal(),
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            trust_env=False,  # proxies come from env_proxy(), once (see the module doc)
            raise_for_status=False,
        )
        watcher = daemon_task(_close_at_loop_end(session))
        _WATCHERS.add(watcher)  # held until done: a pending task nobody holds would be collected
        watcher.add_done_callback(_WATCHERS.discard)
        return session, watcher

    def _scrub(self, text: str) -> str:
        """Remove the key from error text, in case a server or proxy echoes request headers."""
        key = self._key.reveal()
        if key and key != "EMPTY" and key in text:
            text = text.replace(key, "***")
        for name, value in self._headers.reveal().items():
            if name.lower() not in ("content-type", "accept") and len(value) >= 8 and value in text:
                text = text.replace(value, "***")
        return text if len(text) <= 500 else text[:500] + "..."

    def request_body(self, req: LLMRequest) -> dict[str, Any]:
        """The JSON body of ``POST /chat/completions`` for one request."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in req.messages],
            "temperature": req.temperature,
            # OpenAI's newer models reject max_tokens; local servers do not all know the new name.
            self._tokens_key: req.max_tokens,
        }
        if req.seed is not None:
            body["seed"] = req.seed
        if req.json_schema is not None:
            body["response_format"] = response_format_for(self.server_kind, req.json_schema)
        if self.extra_body:
            body.update(self.extra_body)
        return body

    def encode_request(self, req: LLMRequest) -> bytes:
        """The request body as UTF-8 JSON bytes.

        ``orjson`` when installed (a core dependency): ~15x less CPU than ``json`` for an action
        schema, which was the largest single cost of a call. It refuses what strict UTF-8 cannot
        carry (a lone surrogate in hostile agent text), and so does anything it cannot encode: then
        ``json`` writes ``\\u`` escapes, so such a request still travels.
        """
        body = self.request_body(req)
        if _orjson is not None:
            try:
                return _orjson.dumps(body)
            except TypeError:
                pass
        return json.dumps(body).encode("ascii")

    def session(self) -> aiohttp.ClientSession:
        """The running loop's session (made on first use)."""
        return self._sessions.get()[0]

    async def send(self, session: aiohttp.ClientSession, req: LLMRequest) -> LLMResult:
        """One request on ``session``: its result, a typed failure for whatever the server did
        (:mod:`socium.llm.call_path` calls it directly, below the connection limit)."""
        t0 = time.perf_counter()

        def fail(msg: str, kind: ErrorKind, retry_after: float | None = None) -> LLMResult:
            return LLMResult.failure(
                req.request_id, self._scrub(msg), kind, retry_after_s=retry_after, latency_s=time.perf_counter() - t0
            )

        try:
            proxy, proxy_auth = self._proxy.reveal()
            async with session.post(
                self._url, data=self.encode_request(req), allow_redirects=False, proxy=proxy, proxy_auth=proxy_auth
            ) as resp:
                raw = await resp.read()
                status = resp.status
                retry_after = resp.headers.get("Retry-After") if status != 200 else None
        except asyncio.TimeoutError:  # aiohttp's own timeout errors derive from it too
            return fail(f"timeout: no complete answer from {self._where} within {self.timeout_s:g}s", "timeout")
        except aiohttp.ServerDisconnectedError:
            return fail(f"{self._where} closed the connection without answering", "connection")
        except aiohttp.ClientPayloadError as exc:
            return fail(f"truncated response body from {self._where}: {exc}", "bad_response")
        except aiohttp.ClientConnectorCertificateError as exc:
            return fail(f"TLS certificate of {self._where} not trusted: {exc.certificate_error}", "connection")
        except aiohttp.ClientConnectorError as exc:  # connecting: refused, unreachable, DNS, TLS
            return fail(_connect_error(exc, self._where), "connection")
        except aiohttp.ClientResponseError as exc:  # not an HTTP answer, or one the parser refused
            return fail(f"unusable response from {self._where}: {exc.message}", "bad_response")
        except OSError as exc:  # reset mid-exchange (aiohttp.ClientOSError is one)
            return fail(_connect_error(exc, self._where), "connection")
        except Exception as exc:  # whatever a server does must end as a typed failure
            return fail(f"unusable response from {self._where}: {type(exc).__name__}: {exc}", "bad_response")
        if status != 200:
            kind = classify_status(status) if status >= 400 else "bad_response"
            return fail(f"HTTP {status}: {_error_message(raw)}", kind, parse_retry_after(retry_after))
        latency = time.perf_counter() - t0
        try:
            text, pt, ct, finish = parse_completion(_loads(raw))
        except BadResponse as exc:
            return fail(f"unusable 200 response: {exc}", "bad_response")
        except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            head = raw[:80].decode("utf-8", "replace")
            return fail(f"unusable 200 response: body is not JSON ({len(raw)} bytes: {head!r})", "bad_response")
        return LLMResult(
            request_id=req.request_id,
            text=text,
            prompt_tokens=pt,
            completion_tokens=ct,
            latency_s=latency,
            finish_reason=finish,
        )

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        session = self._sessions.get()[0]
        if len(requests) == 1:
            return [await self.send(session, requests[0])]
        return list(await asyncio.gather(*(self.send(session, r) for r in requests)))

    def close(self) -> None:
        """Close the sessions of loops still alive; those of finished loops closed with them."""
        sessions = self._sessions.items()
        self._sessions.clear()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for loop, (_session, watcher) in sessions:
            if loop.is_closed() or watcher.done():
                continue
            if loop is running:
                watcher.cancel()  # its finally closes the session
            elif not loop.is_running():
                watcher.cancel()
                try:
                    loop.run_until_complete(asyncio.gather(watcher, return_exceptions=True))
                except Exception:  # best effort; sockets close when collected anyway
                    pass
            else:  # running in another thread
                loop.call_soon_threadsafe(watcher.cancel)


_WATCHERS: set[asyncio.Task[Any]] = set()


async def _close_at_loop_end(session: Any) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        if not session.closed:
            done = session.close()
            if asyncio.iscoroutine(done):
                await done
