"""The factory that turns a run config's ``llm`` section into a backend stack.

One place decides how wrappers compose, so every entry point (CLI, experiments, interviews) gets
the same caching, retry, breaker, budget and accounting behaviour from the same few settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from socium.config.llm import LLMConfig
from socium.errors import ConfigError
from socium.llm.base import BackendWrapper, LLMBackend
from socium.llm.cache import ResultCache
from socium.llm.embedded import EmbeddedBackend
from socium.llm.fake_server import FakeOpenAIServer
from socium.llm.model_free import RandomBackend, ScriptedBackend
from socium.llm.replay import ReplayBackend
from socium.llm.resume_replay import ResumeReplay
from socium.llm.usage import MeteredBackend, UsageStats
from socium.llm.vllm_engine import VLLMBackend
from socium.llm.wrappers import (
    BudgetLedger,
    CachingBackend,
    CircuitBreaker,
    ConcurrencyLimit,
    RetryingBackend,
    RoundRobinBackend,
    TokenBudget,
)


class _OwnsServer(BackendWrapper):
    """Stops the fake server it started when the backend is closed."""

    def __init__(self, inner: LLMBackend, server: Any) -> None:
        super().__init__(inner)
        self.server = server

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self.server.stop()


def _base_backend(cfg: LLMConfig) -> tuple[LLMBackend, bool]:
    """The model-facing backend, and whether it talks HTTP (and so wants a concurrency limit)."""
    if cfg.backend == "openai":
        from socium.llm.openai_compat import OpenAIBackend  # lazy: aiohttp, for HTTP backends only

        assert cfg.model is not None
        backends: list[LLMBackend] = [
            OpenAIBackend(
                url, cfg.model, api_key_env=cfg.api_key_env, server_kind=cfg.server_kind, timeout_s=cfg.timeout_s
            )
            for url in cfg.base_urls
        ]
        return (backends[0] if len(backends) == 1 else RoundRobinBackend(backends)), True
    if cfg.backend == "fake":
        from socium.llm.openai_compat import OpenAIBackend  # lazy: aiohttp, for HTTP backends only

        server = FakeOpenAIServer(delay_s=cfg.fake_delay_s, model=cfg.model or "fake-model", record=False).start()
        inner = OpenAIBackend(
            server.base_url,
            cfg.model or "fake-model",
            api_key_env=cfg.api_key_env,
            server_kind=cfg.server_kind if cfg.server_kind != "openai" else "vllm",
            timeout_s=cfg.timeout_s,
        )
        return _OwnsServer(inner, server), True
    if cfg.backend == "embedded":
        return EmbeddedBackend(
            cfg.model_path,
            model=cfg.model,
            n_ctx=cfg.n_ctx,
            n_threads=cfg.n_threads,
            n_parallel=cfg.n_parallel,
            chat_format=cfg.chat_format,
            seed=cfg.seed,
            model_name=cfg.model if cfg.model_path else None,
            reproducible=cfg.reproducible,
        ), False
    if cfg.backend == "vllm":
        assert cfg.model is not None
        return VLLMBackend(cfg.model, **cfg.vllm_engine_kwargs), False
    if cfg.backend == "scripted":
        return ScriptedBackend(cfg.scripted_responses, model_name=cfg.model or "scripted"), False
    if cfg.backend == "random":
        return RandomBackend(seed=cfg.seed, model_name=cfg.model or "random"), False
    raise ConfigError(f"llm.backend: {cfg.backend!r} cannot be built here")  # pragma: no cover


def build_backend(
    cfg: LLMConfig | Mapping[str, Any] | None,
    *,
    cache: ResultCache | None = None,
    stats: UsageStats | None = None,
    ledger: BudgetLedger | None = None,
    typed_budget: bool = False,
) -> LLMBackend:
    """Compose the backend stack a config asks for.

    From the outside in: usage accounting, cache (when ``cache`` is given and ``cfg.cache``), a resumed
    step's recorded answers (:mod:`socium.llm.resume_replay`; inert outside that step), retries,
    token/call budget (inside the retries, so every attempt is reserved and counted), circuit breaker,
    concurrency limit (HTTP only), the model backend (round-robin over several base_urls). ``replay``
    reads answers from ``cache`` and needs it. ``ledger`` carries calls and tokens already spent (a
    resumed run's trace); ``typed_budget`` turns a refused request into a ``budget`` failed result
    instead of :class:`~socium.errors.BudgetExceeded` (the simulator's choice: it stops the step after
    recording the calls already made).
    Find a layer afterwards with :func:`socium.llm.wrappers.find_wrapper`.
    """
    cfg = LLMConfig.parse(cfg)
    if cfg.backend == "replay":
        if cache is None:
            raise ConfigError("llm.backend: 'replay' needs the recorded run's call log (no cache was given)")
        if not cfg.model:
            raise ConfigError(
                "llm.model: 'replay' needs the recording run's model name, part of every cache key "
                "(runs read it from the replayed trace; set it when building a backend directly)"
            )
        return MeteredBackend(ReplayBackend(cache, cfg.model), stats)
    backend, is_http = _base_backend(cfg)
    if is_http:
        backend = ConcurrencyLimit(backend, cfg.max_concurrency, cfg.request_order == "longest_first")
    if cfg.circuit_breaker_threshold is not None:
        backend = CircuitBreaker(backend, cfg.circuit_breaker_threshold, cfg.circuit_breaker_reset_s)
    if cfg.token_budget is not None or cfg.call_budget is not None:
        if ledger is None:
            ledger = BudgetLedger(cfg.token_budget, cfg.call_budget)
        backend = TokenBudget(backend, ledger=ledger, typed=typed_budget)
    if cfg.retries > 0:
        backend = RetryingBackend(
            backend,
            max_attempts=cfg.retries + 1,
            base_delay_s=cfg.retry_base_delay_s,
            max_delay_s=cfg.retry_max_delay_s,
            seed=cfg.seed,
            deadline_s=cfg.request_deadline_s,
            # HTTP requests retry on their own; not with an untyped budget, which refuses a whole batch up front
            per_request=is_http and (typed_budget or (cfg.token_budget is None and cfg.call_budget is None)),
        )
    if cache is not None and cfg.cache:  # a resumed step's answered calls come from the trace (resume_replay)
        backend = CachingBackend(ResumeReplay(backend), cache)
    return MeteredBackend(backend, stats)
