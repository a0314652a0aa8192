"""The call log an LLM policy keeps for the driver, and a recorded run's calls read back for replay.

Moved out of :mod:`socium.agents.llm_policy` (which re-exports these names) to keep that module to
the policy itself.
"""

from __future__ import annotations

from socium.errors import ConfigError
from socium.llm.cache import MemoryCache
from socium.llm.types import LLMRequest, LLMResult
from socium.trace.queries.calls import recorded_answers, recorded_models
from socium.trace.queries.calls import recorded_context as context_of
from socium.trace.queries.runs import open_run
from socium.trace.store import open_trace, require_store


class RecordingCache(MemoryCache):
    """Serves repeats and remembers each fresh call so the driver can write it with the step."""

    #: Recent answers kept for repeats; older ones live only in the trace (bounded memory per run).
    MAX_ENTRIES = 4096

    def __init__(self) -> None:
        super().__init__(max_entries=self.MAX_ENTRIES)
        self.pending: list[tuple[str, LLMRequest, LLMResult, str]] = []

    def put(self, key, request, result, model, meta=None) -> None:
        super().put(key, request, result, model, meta)
        self.pending.append((key, request, result, model))

    def drain(self) -> list[tuple[str, LLMRequest, LLMResult, str]]:
        out, self.pending = self.pending, []
        return out


def load_recorded(trace_path: str) -> MemoryCache:
    """The successful calls of a recorded run, as a cache the replay backend answers from."""
    from pathlib import Path

    con = open_trace(require_store(Path(trace_path)))
    cache = MemoryCache()
    try:
        rows = recorded_answers(con)
    finally:
        con.close()
    for key, text, pt, ct, fr in rows:
        cache.put(
            key,
            None,  # type: ignore[arg-type]  # MemoryCache.put does not keep the request; none is recorded
            LLMResult(
                request_id="recorded",
                text=text or "",
                prompt_tokens=pt or 0,
                completion_tokens=ct or 0,
                finish_reason=fr,
            ),
            "",
        )
    return cache


def recorded_context(trace_path: str) -> int | None:
    """The context window that bounded a recorded run's narrator prompts (None: none did), so its replay
    splits and trims them the same way and asks exactly the recorded requests."""
    with open_run(trace_path) as con:
        return context_of(con)


def recorded_model(trace_path: str) -> str:
    """The model a recorded run called (read from its ``llm_calls``), so replay needs no ``llm.model``."""
    with open_run(trace_path) as con:
        models = recorded_models(con)
    if len(models) != 1:
        found = ", ".join(repr(m) for m in models) or "none"
        raise ConfigError(f"llm.model: replay of {trace_path} needs one recorded model, found {found}; set llm.model")
    return str(models[0])
