"""Result caches: the memory of what the model already answered.

The DuckDB cache doubles as the run's LLM call log (table ``llm_calls``): every fresh call is
written with its trace context, and only successful rows are ever served back, so a rerun or a
:class:`~socium.llm.replay.ReplayBackend` reproduces the answers the run actually used.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Protocol, runtime_checkable

from socium.llm.types import LLMRequest, LLMResult


@runtime_checkable
class ResultCache(Protocol):
    """Where :class:`~socium.llm.wrappers.CachingBackend` looks up and stores answers.

    ``put`` receives every fresh result, failures included, so a cache may log them; ``get`` must
    only ever return successful ones.
    """

    def get(self, key: str) -> LLMResult | None: ...

    def put(
        self, key: str, request: LLMRequest, result: LLMResult, model: str, meta: Mapping[str, Any] | None = None
    ) -> None: ...


def get_many(cache: ResultCache, keys: Sequence[str]) -> dict[str, LLMResult]:
    """Batch lookup, using the cache's own ``get_many`` when it has one (one query per batch)."""
    fn = getattr(cache, "get_many", None)
    if fn is not None:
        return dict(fn(keys))
    out: dict[str, LLMResult] = {}
    for k in dict.fromkeys(keys):
        hit = cache.get(k)
        if hit is not None:
            out[k] = hit
    return out


def put_many(
    cache: ResultCache,
    rows: Sequence[tuple[str, LLMRequest, LLMResult]],
    model: str,
    meta: Mapping[str, Any] | None = None,
) -> None:
    fn = getattr(cache, "put_many", None)
    if fn is not None:
        fn(rows, model, meta)
        return
    for key, req, res in rows:
        cache.put(key, req, res, model, meta)


class MemoryCache:
    """Successful results by request hash; for tests, replay and single-process runs.

    ``max_entries`` bounds it as an LRU: a run's cache serves repeats of recent identical requests,
    and keeping every answer of a 10^5-agent run in RAM would grow without bound (the trace already
    keeps them all). ``None``: unbounded (a replayed run must find every recorded answer).
    """

    def __init__(self, max_entries: int | None = None) -> None:
        self._data: OrderedDict[str, LLMResult] = OrderedDict()
        self.max_entries = max_entries
        self.puts = 0

    def get(self, key: str) -> LLMResult | None:
        res = self._data.get(key)
        if res is not None and self.max_entries is not None:
            self._data.move_to_end(key)
        return res

    def put(
        self, key: str, request: LLMRequest, result: LLMResult, model: str, meta: Mapping[str, Any] | None = None
    ) -> None:
        self.puts += 1
        if result.ok and key not in self._data:
            self._data[key] = result
            if self.max_entries is not None and len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

LLM_CALLS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("call_id", "BIGINT"),  # creation order, 0.., continues across resumes
    ("step", "BIGINT"),
    ("agent_id", "BIGINT"),
    ("perspective", "VARCHAR"),
    ("request_id", "VARCHAR"),
    ("request_hash", "VARCHAR"),
    ("model", "VARCHAR"),
    ("params", "JSON"),  # max_tokens, temperature, seed, json_schema
    ("prompt", "JSON"),  # [{"role", "content"}, ...]
    ("response", "VARCHAR"),
    ("prompt_tokens", "BIGINT"),
    ("completion_tokens", "BIGINT"),
    ("latency_s", "DOUBLE"),
    ("finish_reason", "VARCHAR"),
    ("outcome", "VARCHAR"),  # 'ok' or the error kind
    ("error", "VARCHAR"),
    ("attempts", "BIGINT"),
    ("metadata", "JSON"),  # request metadata plus the wrapper's meta
    ("created_at", "TIMESTAMPTZ"),  # wall clock; volatile, call_id is the reproducible order
)


def llm_calls_ddl(table: str = "llm_calls") -> str:
    """``CREATE TABLE IF NOT EXISTS`` for the call log (for stores that register their tables)."""
    if not _IDENT.match(table):
        raise ValueError(f"table name {table!r} is not a plain identifier")
    cols = ", ".join(f"{name} {typ}" for name, typ in LLM_CALLS_COLUMNS)
    return f"CREATE TABLE IF NOT EXISTS {table} ({cols})"


def _as_int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _jsonable(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class DuckDBCache:
    """The ``llm_calls`` table of a DuckDB connection as a result cache and call log.

    Values only ever travel as bound parameters or an Arrow table scan, never as SQL text: prompts
    are arbitrary user and model text. The table name is checked against an identifier pattern
    since identifiers cannot be bound.
    """

    def __init__(self, con: Any, table: str = "llm_calls") -> None:
        ddl = llm_calls_ddl(table)
        self.con = con
        self.table = table
        self._lock = threading.Lock()
        with self._lock:
            self.con.execute(ddl)
            row = self.con.execute(f"SELECT coalesce(max(call_id), -1) + 1 FROM {table}").fetchone()
        self._next_id = int(row[0]) if row else 0

    def _row(
        self,
        call_id: int,
        key: str,
        req: LLMRequest,
        res: LLMResult,
        model: str,
        meta: Mapping[str, Any] | None,
        now: datetime,
    ) -> tuple[Any, ...]:
        md = req.metadata
        merged = dict(md)
        if meta:
            merged.update(meta)
        return (
            call_id,
            _as_int(md.get("step")),
            _as_int(md.get("agent_id")),
            None if md.get("perspective") is None else str(md.get("perspective")),
            req.request_id,
            key,
            model,
            _jsonable(req.params()),
            _jsonable([{"role": m.role, "content": m.content} for m in req.messages]),
            res.text if res.ok else None,
            res.prompt_tokens,
            res.completion_tokens,
            res.latency_s,
            res.finish_reason,
            "ok" if res.ok else (res.error_kind or "other"),
            res.error,
            res.attempts,
            _jsonable(merged),
            now,
        )

    def put(
        self, key: str, request: LLMRequest, result: LLMResult, model: str, meta: Mapping[str, Any] | None = None
    ) -> None:
        self.put_many([(key, request, result)], model, meta)

    def put_many(
        self, rows: Iterable[tuple[str, LLMRequest, LLMResult]], model: str, meta: Mapping[str, Any] | None = None
    ) -> None:
        rows = list(rows)
        if not rows:
            return
        with self._lock:
            first = self._next_id
            self._next_id += len(rows)
            now = datetime.now(timezone.utc)
            data = [self._row(first + i, k, q, r, model, meta, now) for i, (k, q, r) in enumerate(rows)]
            names = [n for n, _ in LLM_CALLS_COLUMNS]
            if len(data) == 1:
                marks = ", ".join("?" for _ in names)
                self.con.execute(f"INSERT INTO {self.table} VALUES ({marks})", list(data[0]))
                return
            import pyarrow as pa

            arrow_types = {
                "BIGINT": pa.int64(),
                "VARCHAR": pa.string(),
                "JSON": pa.string(),
                "DOUBLE": pa.float64(),
                "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
            }
            columns = list(zip(*data))
            batch = pa.table(
                {n: pa.array(list(col), type=arrow_types[t]) for (n, t), col in zip(LLM_CALLS_COLUMNS, columns)}
            )
            self.con.register("_socium_llm_calls_batch", batch)
            try:
                self.con.execute(f"INSERT INTO {self.table} SELECT {', '.join(names)} FROM _socium_llm_calls_batch")
            finally:
                self.con.unregister("_socium_llm_calls_batch")

    def _result(self, row: Sequence[Any]) -> LLMResult:
        _, text, p, c, lat, fin = row
        return LLMResult(
            request_id="",
            text=text or "",
            prompt_tokens=int(p or 0),
            completion_tokens=int(c or 0),
            latency_s=float(lat or 0.0),
            finish_reason=fin,
        )

    def get(self, key: str) -> LLMResult | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, LLMResult]:
        """First successful answer per key, in one query for the whole batch."""
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        with self._lock:
            rows = self.con.execute(
                f"""
                SELECT request_hash, response, prompt_tokens, completion_tokens, latency_s, finish_reason
                FROM {self.table}
                WHERE outcome = 'ok' AND request_hash IN (SELECT unnest(?::VARCHAR[]))
                QUALIFY row_number() OVER (PARTITION BY request_hash ORDER BY call_id) = 1
                """,
                [keys],
            ).fetchall()
        return {r[0]: self._result(r) for r in rows}

    def count(self) -> int:
        with self._lock:
            row = self.con.execute(f"SELECT count(*) FROM {self.table}").fetchone()
        return int(row[0]) if row else 0
