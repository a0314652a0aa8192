"""The LLM call log, each call with its answer's fate (accepted, retried, rejected, failed)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from socium.trace.queries.explore.common import PAGE, Con, columns, has_table, json_any


@dataclass(frozen=True)
class CallView:
    """One LLM call attempt as logged: the exact prompt messages sent and the raw response."""

    call_id: int
    step: int | None
    agent_id: int | None
    model: str | None
    messages: list[dict[str, Any]]
    response: str | None
    outcome: str | None
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float | None
    fate: str = "accepted"
    """What became of the answer (:data:`FATES`): ``accepted``; ``retried`` (rejected by the parser, asked
    again); ``rejected`` (rejected with no retry left); ``failed`` (no answer: the transport's outcome)."""
    fate_reason: str | None = None
    """The parser's reason for a rejected answer (or the transport's error for a failed call)."""
    retry_call: int | None = None
    """The call that asked again after this one was rejected."""


FATES = ("accepted", "retried", "rejected", "failed")
"""An answer's fate, as the call pages label and filter it."""


_CALL_COLS = (
    "call_id, step, agent_id, model, prompt, response, outcome, error, prompt_tokens, completion_tokens, latency_s, "
    "fate, fate_reason, retry_call"
)


RETRY_REASON = re.compile(
    r"^(?:That answer was invalid: (?P<old>.*?)\. Reply with one valid JSON object\."
    r"|.*?could not be used: (?P<new>.*?)\. Answer again)",
    re.DOTALL,
)
"""The parser's reason inside a retry message: the old wording ("That answer was invalid: R. Reply with one
valid JSON object.") and the new one (:func:`socium.agents.retry.retry_message`)."""


def _fates(con: Con) -> str:
    """SQL of every call with its answer's fate (a CTE body: ``llm_calls`` columns plus fate, fate_reason, retry_call).

    Derived from what the trace already holds, so traces written before it are labelled too: a call was
    **retried** when a later call for the same step and agent sends its prompt again plus an assistant
    turn (its answer) and a retry message (the parser's reason); **rejected** when it is the last answered
    call of an agent-step whose decision (an ``invalid_llm_output`` action) or survey answer (outcome
    ``invalid``) was refused; **failed** when no answer came (the transport's outcome, not ``ok``)."""
    survey_bad = (
        "SELECT step, agent_id, reason FROM surveys WHERE outcome = 'invalid'"
        if "outcome" in columns(con, "surveys")
        else "SELECT NULL::INTEGER step, NULL::BIGINT agent_id, NULL::VARCHAR reason WHERE false"
    )
    return f"""
    c AS (
        SELECT *, json_array_length(prompt) AS n_msgs, coalesce(agent_id, -1) AS who,
            coalesce(TRY_CAST(json_extract(metadata, '$.survey') AS BOOLEAN), false) AS is_survey
        FROM llm_calls
    ),
    retry AS (
        SELECT a.call_id, min(b.call_id) AS retry_call, arg_min(json_extract_string(b.prompt, '$[' || (a.n_msgs + 1)
            || '].content'), b.call_id) AS retry_text
        FROM c a JOIN c b ON b.step = a.step AND b.who = a.who AND b.call_id > a.call_id AND b.n_msgs = a.n_msgs + 2
        WHERE json_extract_string(b.prompt, '$[' || a.n_msgs || '].role') = 'assistant'
            AND json_extract(b.prompt, '$[' || (a.n_msgs - 1) || ']')
                = json_extract(a.prompt, '$[' || (a.n_msgs - 1) || ']')
        GROUP BY a.call_id
    ),
    last_answered AS (
        SELECT step, who, is_survey, max(call_id) AS call_id FROM c WHERE outcome = 'ok' GROUP BY ALL
    ),
    refused AS (
        SELECT step, agent_id AS who, false AS is_survey, any_value(reason) AS reason FROM actions
        WHERE type = 'invalid_llm_output' GROUP BY ALL
        UNION ALL
        SELECT step, agent_id, true, any_value(reason) FROM ({survey_bad}) GROUP BY ALL
    ),
    fated AS (
        SELECT c.*, r.retry_call,
            CASE WHEN coalesce(c.outcome, '') != 'ok' THEN 'failed'
                 WHEN r.retry_call IS NOT NULL THEN 'retried'
                 WHEN l.call_id IS NOT NULL AND f.step IS NOT NULL THEN 'rejected'
                 ELSE 'accepted' END AS fate,
            CASE WHEN coalesce(c.outcome, '') != 'ok' THEN c.error
                 WHEN r.retry_call IS NOT NULL THEN r.retry_text
                 WHEN l.call_id IS NOT NULL THEN f.reason END AS fate_reason
        FROM c LEFT JOIN retry r USING (call_id)
        LEFT JOIN last_answered l ON l.call_id = c.call_id
        LEFT JOIN refused f ON f.step = c.step AND f.who = c.who AND f.is_survey = c.is_survey
    )"""


def _reason(fate: str, text: str | None) -> str | None:
    """The parser's reason out of a retry message (the message itself if its wording is unknown)."""
    if fate != "retried" or text is None:
        return text
    m = RETRY_REASON.match(text)
    return (m.group("old") or m.group("new")) if m else text


def _call(r: tuple[Any, ...]) -> CallView:
    messages = json_any(r[4])
    if not isinstance(messages, list):
        messages = [{"role": "prompt", "content": "" if r[4] is None else str(r[4])}]
    fate = str(r[11] or "accepted")
    response, outcome, error, p_tok, c_tok, latency = r[5:11]
    return CallView(
        int(r[0]), r[1], r[2], r[3], messages, response, outcome, error, p_tok, c_tok, latency,
        fate, _reason(fate, r[12]), r[13],
    )  # fmt: skip


def calls_at(con: Con, agent_id: int, step: int) -> list[CallView]:
    """The LLM calls that decided for the agent at ``step`` (every attempt), in call order: its own, or
    the narrator's call for its group (``metadata.group`` lists the members; the omniscient perspective)."""
    if not has_table(con, "llm_calls"):
        return []
    rows = con.execute(
        f"WITH {_fates(con)} SELECT {_CALL_COLS} FROM fated WHERE step = ? AND (agent_id = ? "
        "OR list_contains(TRY_CAST(json_extract(metadata, '$.group') AS BIGINT[]), ?)) ORDER BY call_id",
        [int(step), int(agent_id), int(agent_id)],
    ).fetchall()
    return [_call(r) for r in rows]


_CALLS_WHERE = (
    "(?::VARCHAR IS NULL OR outcome = ?) AND (?::VARCHAR IS NULL OR model = ?) AND (?::BIGINT IS NULL OR agent_id = ?) "
    "AND (?::DOUBLE IS NULL OR latency_s >= ?) "
    "AND (?::BIGINT IS NULL OR coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0) >= ?)"
)


@dataclass(frozen=True)
class CallFilter:
    """What the call log is narrowed to: the answer's fate, outcome, model, agent, at least this latency (s)
    or tokens."""

    fate: str | None = None
    outcome: str | None = None
    model: str | None = None
    agent_id: int | None = None
    min_latency_s: float | None = None
    min_tokens: int | None = None

    def args(self) -> list[Any]:
        vals = [self.outcome, self.model, self.agent_id, self.min_latency_s, self.min_tokens]
        return [v for v in vals for _ in (0, 1)]

    def where(self) -> str:
        """The WHERE clause over ``fated`` (or ``llm_calls`` when no fate is asked for) for :meth:`args`."""
        return _CALLS_WHERE + (" AND fate = ?" if self.fate is not None else "")

    def all_args(self) -> list[Any]:
        return self.args() + ([self.fate] if self.fate is not None else [])


def calls(con: Con, flt: CallFilter | None = None, *, limit: int = PAGE, offset: int = 0) -> list[CallView]:
    """One page of the call log in call order, narrowed by ``flt``, each call with its answer's fate."""
    if not has_table(con, "llm_calls"):
        return []
    f = flt or CallFilter()
    rows = con.execute(
        f"WITH {_fates(con)} SELECT {_CALL_COLS} FROM fated WHERE {f.where()} ORDER BY call_id LIMIT ? OFFSET ?",
        [*f.all_args(), int(limit), int(offset)],
    ).fetchall()
    return [_call(r) for r in rows]


def call(con: Con, call_id: int) -> CallView | None:
    """One call with its answer's fate (None: no such call)."""
    if not has_table(con, "llm_calls"):
        return None
    rows = con.execute(
        f"WITH {_fates(con)} SELECT {_CALL_COLS} FROM fated WHERE call_id = ?", [int(call_id)]
    ).fetchall()
    return _call(rows[0]) if rows else None


def count_calls(con: Con, flt: CallFilter | None = None) -> int:
    """How many calls :func:`calls` pages through with ``flt`` (0 without a call log)."""
    if not has_table(con, "llm_calls"):
        return 0
    f = flt or CallFilter()
    sql = f"WITH {_fates(con)} SELECT count(*) FROM fated" if f.fate is not None else "SELECT count(*) FROM llm_calls"
    row = con.execute(f"{sql} WHERE {f.where()}", f.all_args()).fetchone()
    return int(row[0]) if row else 0


def call_facets(con: Con) -> tuple[list[str], list[str]]:
    """(outcomes, models) present in the call log, sorted: the calls page's filter choices."""
    if not has_table(con, "llm_calls"):
        return [], []
    outs = [
        str(r[0])
        for r in con.execute("SELECT DISTINCT outcome FROM llm_calls WHERE outcome IS NOT NULL ORDER BY 1").fetchall()
    ]
    models = [
        str(r[0])
        for r in con.execute("SELECT DISTINCT model FROM llm_calls WHERE model IS NOT NULL ORDER BY 1").fetchall()
    ]
    return outs, models
