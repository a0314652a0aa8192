"""Backend for OpenAI-compatible HTTP servers: vLLM, llama.cpp's server, OpenAI itself.

The official client is used with its own retries off: retry policy lives in
:class:`~socium.llm.wrappers.RetryingBackend` so it is seeded, observable and the same for every
backend. Each server spells constrained JSON output differently, hence the per-kind adapter.
"""

from __future__ import annotations

import asyncio
import os
import time
from email.utils import parsedate_to_datetime
from typing import Any, Literal, Sequence

from ..errors import ConfigError, LLMError
from .base import LoopLocal
from .types import ErrorKind, LLMRequest, LLMResult

ServerKind = Literal["vllm", "llamacpp", "openai"]
SERVER_KINDS: tuple[str, ...] = ("vllm", "llamacpp", "openai")


class _Secret:
    """Holds the API key so that no repr, log line or pickle of the backend can show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
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


class OpenAIBackend:
    """Chat completions against one OpenAI-compatible endpoint."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        server_kind: ServerKind = "vllm",
        timeout_s: float = 60.0,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        if server_kind not in SERVER_KINDS:
            raise ConfigError(f"llm.server_kind: {server_kind!r} is not one of {', '.join(SERVER_KINDS)}")
        if timeout_s <= 0:
            raise ConfigError(f"llm.timeout_s: must be > 0, got {timeout_s!r}")
        try:
            import openai  # noqa: F401  (fail at construction, not mid-run)
        except ImportError as exc:  # pragma: no cover - openai is a core dependency
            raise LLMError("the 'openai' package is required for the openai backend: pip install openai") from exc
        key = os.environ.get(api_key_env)
        if not key:
            if server_kind == "openai":
                raise ConfigError(
                    f"llm.api_key_env: environment variable {api_key_env} is not set; "
                    "the OpenAI API needs a key"
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
        self._clients = LoopLocal(self._make_client)
        self._closing: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r}, "
            f"server_kind={self.server_kind!r}, api_key_env={self.api_key_env!r})"
        )

    def _make_client(self) -> Any:
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            api_key=self._key.reveal(), base_url=self.base_url, max_retries=0, timeout=self.timeout_s
        )

    def _scrub(self, text: str) -> str:
        """Remove the key from error text, in case a server or proxy echoes request headers."""
        key = self._key.reveal()
        if key and key != "EMPTY" and key in text:
            text = text.replace(key, "***")
        return text if len(text) <= 500 else text[:500] + "..."

    def request_kwargs(self, req: LLMRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for one request."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in req.messages],
            "temperature": req.temperature,
        }
        # OpenAI's newer models reject max_tokens; local servers do not all know the new name.
        kwargs["max_completion_tokens" if self.server_kind == "openai" else "max_tokens"] = req.max_tokens
        if req.seed is not None:
            kwargs["seed"] = req.seed
        fmt = response_format_for(self.server_kind, req.json_schema)
        if fmt is not None:
            kwargs["response_format"] = fmt
        if self.extra_body:
            kwargs["extra_body"] = dict(self.extra_body)
        return kwargs

    async def _one(self, client: Any, req: LLMRequest) -> LLMResult:
        import openai

        t0 = time.perf_counter()

        def fail(msg: str, kind: ErrorKind, retry_after: float | None = None) -> LLMResult:
            return LLMResult.failure(
                req.request_id,
                self._scrub(msg),
                kind,
                retry_after_s=retry_after,
                latency_s=time.perf_counter() - t0,
            )

        try:
            resp = await client.chat.completions.create(**self.request_kwargs(req))
        except openai.APITimeoutError:
            return fail(f"timeout after {self.timeout_s:g}s", "timeout")
        except openai.APIConnectionError as exc:
            return fail(f"connection error: {exc}", "connection")
        except openai.APIStatusError as exc:
            status = exc.status_code
            retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
            return fail(f"HTTP {status}: {exc.message}", classify_status(status), retry_after)
        except openai.OpenAIError as exc:
            return fail(f"{type(exc).__name__}: {exc}", "other")
        latency = time.perf_counter() - t0
        if not getattr(resp, "choices", None):
            return fail("response has no choices", "server")
        choice = resp.choices[0]
        usage = getattr(resp, "usage", None)
        return LLMResult(
            request_id=req.request_id,
            text=(choice.message.content or "") if choice.message is not None else "",
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_s=latency,
            finish_reason=choice.finish_reason,
        )

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        client = self._clients.get()
        return list(await asyncio.gather(*(self._one(client, r) for r in requests)))

    def close(self) -> None:
        """Close the HTTP clients of loops still alive; those of finished loops die with them."""
        clients = self._clients.items()
        self._clients.clear()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for loop, client in clients:
            if loop.is_closed():
                continue
            if loop is running:
                task = loop.create_task(client.close())
                self._closing.add(task)  # keep a reference until done, or the task may be collected
                task.add_done_callback(self._closing.discard)
            elif not loop.is_running():
                try:
                    loop.run_until_complete(client.close())
                except Exception:  # noqa: BLE001 - best effort; sockets close when collected anyway
                    pass
