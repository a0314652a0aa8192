"""LLM call measures from the ``llm_calls`` log: counts, tokens, latency, models, engines, quality.

The call log exists only in runs that called a model; callers check :func:`has_calls` (or the
table list) first. Every attempt is a row, failed and retried ones included, so token totals are
what the run cost, not what its answers needed.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from socium.errors import TraceError

Con = duckdb.DuckDBPyConnection

CALL_TABLES = frozenset({"llm_calls"})
"""Tables that hold a call log (names, never values, so they are checked rather than bound)."""


def has_calls(con: Con) -> bool:
    """Whether the run has a call log with at least one row."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    return "llm_calls" in tables and bool(con.execute("SELECT count(*) FROM llm_calls").fetchall()[0][0])


def totals(con: Con) -> dict[str, Any]:
    """Calls, prompt and completion tokens (None without calls, as SQL ``sum``) and mean latency in seconds."""
    r = con.execute(
        "SELECT count(*), sum(prompt_tokens), sum(completion_tokens), avg(latency_s) FROM llm_calls"
    ).fetchall()[0]
    return {"calls": r[0], "prompt_tokens": r[1], "completion_tokens": r[2], "mean_latency_s": r[3]}


def calls_by_model(con: Con) -> dict[str, int]:
    """Calls per model name, most used first."""
    rows = con.execute(
        "SELECT model, count(*) FROM llm_calls WHERE model IS NOT NULL GROUP BY model ORDER BY 2 DESC, 1"
    ).fetchall()
    return {str(m): int(n) for m, n in rows}


def usage_by_model(con: Con) -> dict[Any, dict[str, int]]:
    """Calls and tokens per model (a mixed-model run: what each model did), by model name."""
    rows = con.execute(
        "SELECT model, count(*), sum(prompt_tokens + completion_tokens) FROM llm_calls GROUP BY 1 ORDER BY 1"
    ).fetchall()
    return {m: {"calls": c, "tokens": int(t or 0)} for m, c, t in rows}


def aborted_calls(con: Con) -> int:
    """Calls made in steps that were stopped (server down, budget) and redone on resume."""
    row = con.execute("SELECT count(*) FROM llm_calls WHERE metadata->>'aborted_step' IS NOT NULL").fetchall()
    return int(row[0][0])


#: SQL: a call-log row answered from a stopped step's record on resume (socium.llm.resume_replay): nothing was
#: sent for it, its answer's cost is in the stopped step's row.
REPLAYED = "(outcome = 'ok' AND attempts = 0)"


def spend_by_backend(con: Con, table: str = "llm_calls") -> dict[str, tuple[int, int]]:
    """(attempts, tokens) per backend (``llms`` name, ``default`` for ``llm``), aborted steps included; the
    tokens of answers replayed on resume are counted once, in the stopped step's row."""
    if table not in CALL_TABLES:
        raise TraceError(f"spend_by_backend: {table!r} is not a call log table")
    tokens = f"sum(prompt_tokens + completion_tokens) FILTER (WHERE NOT coalesce({REPLAYED}, false))"
    rows = con.execute(
        f"SELECT coalesce(metadata->>'llm', 'default'), sum(attempts), coalesce({tokens}, 0) FROM {table} GROUP BY 1"
    ).fetchall()
    return {name: (int(c or 0), int(t or 0)) for name, c, t in rows}


def stopped_step_answers(
    con: Con, step: int
) -> list[tuple[str, str | None, int | None, int | None, str | None, int | None]]:
    """(request hash, response, prompt tokens, completion tokens, finish reason, agent id) of every call answered
    in ``step`` of a session that was stopped before committing it (``aborted_step``), in call order: what a
    resume serves instead of asking again (socium.llm.resume_replay)."""
    return con.execute(
        "SELECT request_hash, response, prompt_tokens, completion_tokens, finish_reason, agent_id FROM llm_calls "
        "WHERE outcome = 'ok' AND metadata->>'aborted_step' = CAST(? AS VARCHAR) ORDER BY call_id",
        [int(step)],
    ).fetchall()


def replayed_calls(con: Con) -> int:
    """Calls of committed steps answered from a stopped session's record on resume, not asked again."""
    row = con.execute(f"SELECT count(*) FROM llm_calls WHERE {REPLAYED} AND metadata->>'aborted_step' IS NULL")
    return int(row.fetchall()[0][0])


def usage_per_step(con: Con) -> list[tuple[int, int, int, int, float | None, float | None]]:
    """(step, calls, prompt tokens, completion tokens, median latency, 90th percentile latency) per step."""
    rows = con.execute(
        "SELECT step, count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), "
        "quantile_cont(latency_s, 0.5), quantile_cont(latency_s, 0.9) FROM llm_calls "
        "GROUP BY step ORDER BY step"
    ).fetchall()
    return [tuple(r) for r in rows]


def engines(con: Con) -> list[tuple[int | None, str, dict[str, Any]]]:
    """(first step served, llm name, engine description) per in-process engine started, in step order."""
    rows = con.execute("SELECT step, llm, engine FROM llm_engines ORDER BY step NULLS LAST").fetchall()
    return [(step, llm, json.loads(engine)) for step, llm, engine in rows]


def reason_cost(con: Con) -> dict[str, Any]:
    """What ``llm_agents.record_reason`` cost: each answer's completion tokens shared out by characters
    between its ``reason`` and the rest (an estimate: the tokenizer is the server's, not ours)."""
    r = con.execute(
        "SELECT count(*), sum(completion_tokens * length(why) / greatest(length(response), 1)) FROM ("
        "  SELECT completion_tokens, response, json_extract_string(response, '$.reason') AS why FROM llm_calls"
        "  WHERE outcome = 'ok' AND json_valid(response)) WHERE why IS NOT NULL"
    ).fetchall()[0]
    return {"answers_with_reason": int(r[0]), "estimated_completion_tokens": round(float(r[1] or 0.0), 1)}


def narrator_quality(con: Con) -> dict[str, Any]:
    """How well the omniscient narrator kept to its per-member schema: of the agent-steps it wrote, how
    many ended invalid (skipped, another member's ids, an action not offered) after its one re-ask, and
    how many failed at the server instead."""
    r = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE outcome = 'invalid_llm_output' AND reason LIKE 'narrator output:%'),"
        " count(*) FILTER (WHERE outcome = 'invalid_llm_output' AND reason LIKE 'backend error%')"
        " FROM (SELECT DISTINCT ON (step, agent_id) step, agent_id, outcome, reason FROM actions"
        "       WHERE origin IN ('llm', 'policy') ORDER BY step, agent_id, seq)"
    ).fetchall()[0]
    calls = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE metadata->>'attempt' = '1') FROM llm_calls "
        "WHERE metadata->>'group' IS NOT NULL"
    ).fetchall()[0]
    n = int(r[0])
    return {
        "agent_steps": n,
        "invalid": int(r[1]),
        "invalid_rate": round(int(r[1]) / n, 4) if n else 0.0,
        "backend_failures": int(r[2]),
        "narrator_calls": int(calls[0]),
        "reask_calls": int(calls[1]),
    }


def step_prompts(con: Con) -> list[tuple[int, int, str, str | None]]:
    """(step, agent, prompt messages JSON, metadata JSON) of every call made in a step."""
    return con.execute("SELECT step, agent_id, prompt, metadata FROM llm_calls WHERE step IS NOT NULL").fetchall()


def next_call_id(con: Con) -> int:
    """The id the next appended call gets (ids are dense from 0 in a trace)."""
    return int(con.execute("SELECT coalesce(max(call_id), -1) + 1 FROM llm_calls").fetchall()[0][0])


def recorded_answers(con: Con) -> list[tuple[str, str | None, int | None, int | None, str | None]]:
    """(request hash, response, prompt tokens, completion tokens, finish reason) of every successful
    call in call order: what a replay of the run answers from."""
    return con.execute(
        "SELECT request_hash, response, prompt_tokens, completion_tokens, finish_reason "
        "FROM llm_calls WHERE outcome = 'ok' ORDER BY call_id"
    ).fetchall()


def recorded_context(con: Con) -> int | None:
    """The largest context window that bounded a narrator prompt (None: none did)."""
    found = con.execute(
        "SELECT max(CAST(json_extract(metadata, '$.context_tokens') AS BIGINT)) FROM llm_calls"
    ).fetchone()
    return None if found is None or found[0] is None else int(found[0])


def recorded_models(con: Con) -> list[str]:
    """The models that answered the run's successful calls, sorted."""
    rows = con.execute(
        "SELECT DISTINCT model FROM llm_calls WHERE outcome = 'ok' AND model IS NOT NULL ORDER BY model"
    ).fetchall()
    return [r[0] for r in rows]
