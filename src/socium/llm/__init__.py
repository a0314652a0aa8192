"""LLM backends and the wrappers that make them dependable at simulation scale.

Heavy or optional backends (embedded llama.cpp, vLLM, HTTP) are imported lazily so that
``import socium.llm`` stays cheap and works without their extras installed.
"""

from __future__ import annotations

from typing import Any

from socium.config.llm import LLMConfig
from socium.llm.base import BackendWrapper, LLMBackend, generate_sync, run_coro_sync
from socium.llm.cache import DuckDBCache, MemoryCache, ResultCache
from socium.llm.factory import build_backend
from socium.llm.parsing import parse_json_lenient
from socium.llm.replay import ReplayBackend
from socium.llm.types import RETRYABLE_KINDS, ChatMessage, LLMRequest, LLMResult, user_request
from socium.llm.wrappers import (
    BudgetLedger,
    CachingBackend,
    CircuitBreaker,
    ConcurrencyLimit,
    MeteredBackend,
    RetryingBackend,
    RoundRobinBackend,
    TokenBudget,
    UsageStats,
    find_wrapper,
)

_LAZY = {
    "OpenAIBackend": ".openai_compat",
    "EmbeddedBackend": ".embedded",
    "VLLMBackend": ".vllm_engine",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "RETRYABLE_KINDS",
    "BackendWrapper",
    "BudgetLedger",
    "CachingBackend",
    "ChatMessage",
    "CircuitBreaker",
    "ConcurrencyLimit",
    "DuckDBCache",
    "EmbeddedBackend",
    "LLMBackend",
    "LLMConfig",
    "LLMRequest",
    "LLMResult",
    "MemoryCache",
    "MeteredBackend",
    "OpenAIBackend",
    "ReplayBackend",
    "ResultCache",
    "RetryingBackend",
    "RoundRobinBackend",
    "TokenBudget",
    "UsageStats",
    "VLLMBackend",
    "build_backend",
    "find_wrapper",
    "generate_sync",
    "parse_json_lenient",
    "run_coro_sync",
    "user_request",
]
