"""The call log an LLM policy keeps for the driver, and a recorded run's calls read back for replay.

Moved out of :mod:`socium.agents.llm_policy` (which re-exports these names) to keep that module to
the policy itself.
"""

from __future__ import annotations

from socium.llm.cache import MemoryCache
from socium.llm.types import LLMRequest, LLMResult


class RecordingCache(MemoryCache):
    """Serves repeats and remembers each fresh call so the driver can write it with the step."""

    #: Recent answers kept for repeats; older ones live only in the trace (bounded memory per run).
    MAX_ENTRIES = 4096

    def __init__(self) -> None:
        super().__init__(max_entries=self.MAX_ENTRIES)
        self.pending: list[tuple[str, LLMRequest, LLMResult, str]] = []

    def put(self, key, request, result, model, meta=None) -> None:  # type: ignore[override]
        super().put(key, request, result, model, meta)
        self.pending.append((key, request, result, model))

    def drain(self) -> list[tuple[str, LLMRequest, LLMResult, str]]:
        out, self.pending = self.pending, []
        return out


def load_recorded(trace_path: str) -> MemoryCache:
    """The successful calls of a recorded run, as a cache the replay backend answers from."""
    from pathlib import Path

    from socium.trace.store import open_trace, require_store

    con = open_trace(require_store(Path(trace_path)))
    cache = MemoryCache()
    try:
        rows = con.execute(
            "SELECT request_hash, response, prompt_tokens, completion_tokens, finish_reason "
            "FROM llm_calls WHERE outcome = 'ok' ORDER BY call_id"
        ).fetchall()
    finally:
        con.close()
    for key, text, pt, ct, fr in rows:
        cache.put(
            key,
            None,
            LLMResult(
                request_id="recorded",
                text=text or "",
                prompt_tokens=pt or 0,  # type: ignore[arg-type]
                completion_tokens=ct or 0,
                finish_reason=fr,
            ),
            "",
        )
    return cache


def recorded_context(trace_path: str) -> int | None:
    """The context window that bounded a recorded run's narrator prompts (None: none did), so its replay
    splits and trims them the same way and asks exactly the recorded requests."""
    from pathlib import Path

    import duckdb

    from socium.trace.store import require_store

    con = duckdb.connect(str(require_store(Path(trace_path))), read_only=True)
    try:
        sql = "SELECT max(CAST(json_extract(metadata, '$.context_tokens') AS BIGINT)) FROM llm_calls"
        found = con.execute(sql).fetchone()
    finally:
        con.close()
    return None if found is None or found[0] is None else int(found[0])


def recorded_model(trace_path: str) -> str:
    """The model a recorded run called (read from its ``llm_calls``), so replay needs no ``llm.model``."""
    from pathlib import Path

    import duckdb

    from socium.errors import ConfigError
    from socium.trace.store import require_store

    con = duckdb.connect(str(require_store(Path(trace_path))), read_only=True)
    try:
        sql = "SELECT DISTINCT model FROM llm_calls WHERE outcome = 'ok' AND model IS NOT NULL ORDER BY model"
        models = [r[0] for r in con.execute(sql).fetchall()]
    finally:
        con.close()
    if len(models) != 1:
        found = ", ".join(repr(m) for m in models) or "none"
        raise ConfigError(f"llm.model: replay of {trace_path} needs one recorded model, found {found}; set llm.model")
    return str(models[0])
