"""What ``socium explore`` shows: one page of a run at a time, seen through each agent's eyes.

Every function here returns one page (``limit``/``offset`` are bound parameters, as are all values),
so opening a 10^5-agent trace reads a few hundred rows, never a whole table. Text fields (posts,
personas, prompts, responses) are agent- or model-written: hostile data that callers must show as
text, never as markup. Optional tables (``llm_calls``, ``memories``, ``moderation_events``,
``interviews``) are absent from some traces; functions reading them return nothing there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import duckdb

from socium.trace.queries.runs import table_names


def _column_order(con: Con, table: str) -> list[str]:
    """A table's columns in order (none when the table is absent); names with a quote are left out."""
    if table not in table_names(con):
        return []
    return [str(r[0]) for r in con.execute(f"DESCRIBE {table}").fetchall() if '"' not in str(r[0])]  # noqa: S608


def _columns(con: Con, table: str) -> set[str]:
    return {str(r[0]) for r in con.execute(f"DESCRIBE {table}").fetchall()} if table in table_names(con) else set()  # noqa: S608 (our table names)


Con = duckdb.DuckDBPyConnection

PAGE = 50
"""Rows per page the explorer asks for unless told otherwise."""


@dataclass(frozen=True)
class PostView:
    """One post as the platform showed it, with its original when it reshares or replies to one."""

    post_id: int
    step: int
    author: int
    username: str | None
    kind: str
    parent_id: int | None
    root_id: int | None
    content: str | None
    parent_author: int | None
    parent_username: str | None
    parent_content: str | None
    up: int
    down: int
    comments: int
    labels: tuple[str, ...]


@dataclass(frozen=True)
class FeedItem:
    """One exposures row (one post in one agent's feed at one step) and the post it shows."""

    rank: int
    post_id: int
    source: str | None
    author: int | None
    username: str | None
    kind: str | None
    content: str | None
    scores: dict[str, Any] = field(default_factory=dict)
    """The exposures row's columns beyond step, agent, post, rank and source (a recommender's scores,
    when it records them; read from the table, so a trace without them has none)."""


EXPOSURE_BASE = ("step", "agent_id", "post_id", "rank", "source")
"""The exposures columns every trace has; any others are shown as the row's scores."""


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


@dataclass(frozen=True)
class ActionView:
    """One action row: what the agent chose, whether the platform applied it, and the agent's reason."""

    seq: int
    origin: str | None
    type: str
    args: dict[str, Any]
    outcome: str | None
    reason: str | None
    post_id: int | None
    rationale: str | None


def _has(con: Con, table: str) -> bool:
    return table in table_names(con)


def _text_filter(text: str | None) -> str | None:
    """A substring to look for (case-insensitive), bounded so a pasted novel cannot become the query."""
    return text.strip()[:200].lower() if text and text.strip() else None


_TIMELINE_WHERE = (
    "(?::INTEGER IS NULL OR p.step = ?) AND (?::BIGINT IS NULL OR p.author = ?) "
    "AND (?::VARCHAR IS NULL OR contains(lower(p.content), ?)) AND (?::BOOLEAN OR p.kind != 'comment')"
)


def _timeline_args(step: int | None, author: int | None, text: str | None, comments: bool) -> list[Any]:
    t = _text_filter(text)
    return [step, step, author, author, t, t, comments]


def timeline(
    con: Con,
    *,
    step: int | None = None,
    author: int | None = None,
    text: str | None = None,
    comments: bool = True,
    limit: int = PAGE,
    offset: int = 0,
) -> list[PostView]:
    """One page of posts, newest first, filtered by step, author and text (a case-insensitive substring)."""
    rows = con.execute(
        "SELECT p.post_id, p.step, p.author, a.username, p.kind, p.parent_id, p.root_id, p.content "
        f"FROM posts p LEFT JOIN agents a ON a.agent_id = p.author WHERE {_TIMELINE_WHERE} "
        "ORDER BY p.step DESC, p.post_id DESC LIMIT ? OFFSET ?",
        [*_timeline_args(step, author, text, comments), int(limit), int(offset)],
    ).fetchall()
    return _decorate(con, rows)


def count_timeline(
    con: Con, *, step: int | None = None, author: int | None = None, text: str | None = None, comments: bool = True
) -> int:
    """How many posts :func:`timeline` pages through with these filters."""
    row = con.execute(
        f"SELECT count(*) FROM posts p WHERE {_TIMELINE_WHERE}", _timeline_args(step, author, text, comments)
    ).fetchone()
    return int(row[0]) if row else 0


def _decorate(con: Con, rows: list[tuple[Any, ...]]) -> list[PostView]:
    """Add originals, vote and comment counts and moderation labels to a page of posts (that page only)."""
    if not rows:
        return []
    ids = [int(r[0]) for r in rows]
    parents = [int(r[5]) for r in rows if r[5] is not None]
    orig = {
        int(p): (a, u, c)
        for p, a, u, c in con.execute(
            "SELECT p.post_id, p.author, a.username, p.content FROM posts p "
            "LEFT JOIN agents a ON a.agent_id = p.author WHERE p.post_id IN (SELECT unnest(?::BIGINT[]))",
            [parents],
        ).fetchall()
    }
    votes = {
        int(t): (int(u), int(d))
        for t, u, d in con.execute(
            "SELECT target, count(*) FILTER (WHERE delta > 0), count(*) FILTER (WHERE delta < 0) FROM votes "
            "WHERE target IN (SELECT unnest(?::BIGINT[])) GROUP BY target",
            [ids],
        ).fetchall()
    }
    comments = {
        int(p): int(n)
        for p, n in con.execute(
            "SELECT parent_id, count(*) FROM posts WHERE kind = 'comment' "
            "AND parent_id IN (SELECT unnest(?::BIGINT[])) GROUP BY parent_id",
            [ids],
        ).fetchall()
    }
    labels: dict[int, list[str]] = {}
    if _has(con, "moderation_events"):
        for p, ev in con.execute(
            "SELECT DISTINCT post_id, event FROM moderation_events WHERE post_id IN (SELECT unnest(?::BIGINT[])) "
            "ORDER BY 1, 2",
            [ids],
        ).fetchall():
            labels.setdefault(int(p), []).append(str(ev))
    out = []
    for pid, step, author, user, kind, parent, root, content in rows:
        pa, pu, pc = orig.get(int(parent), (None, None, None)) if parent is not None else (None, None, None)
        up, down = votes.get(int(pid), (0, 0))
        out.append(
            PostView(
                int(pid),
                int(step),
                int(author),
                user,
                str(kind),
                parent,
                root,
                content,
                pa,
                pu,
                pc,
                up,
                down,
                comments.get(int(pid), 0),
                tuple(labels.get(int(pid), ())),
            )  # fmt: skip
        )
    return out


def post(con: Con, post_id: int) -> PostView | None:
    """One post with its original, votes, comment count and labels (None: no such post)."""
    rows = con.execute(
        "SELECT p.post_id, p.step, p.author, a.username, p.kind, p.parent_id, p.root_id, p.content "
        "FROM posts p LEFT JOIN agents a ON a.agent_id = p.author WHERE p.post_id = ?",
        [int(post_id)],
    ).fetchall()
    got = _decorate(con, rows)
    return got[0] if got else None


def cascade(
    con: Con, root_id: int, *, until: int | None = None, limit: int = PAGE, offset: int = 0
) -> list[tuple[int, int, int, int, int]]:
    """(post, parent post, author, step, depth) of a cascade's nodes in the order they happened (root first),
    as it stood at step ``until`` (None: at the end of the run)."""
    return con.execute(
        "SELECT c.post_id, coalesce(p.parent_id, -1), c.author, c.step, c.depth FROM cascade_nodes c "
        "JOIN posts p USING (post_id) WHERE c.root_id = ? AND (?::INTEGER IS NULL OR c.step <= ?) "
        "ORDER BY c.step, c.depth, c.post_id LIMIT ? OFFSET ?",
        [int(root_id), until, until, int(limit), int(offset)],
    ).fetchall()


def cascade_size_by_step(con: Con, root_id: int) -> list[tuple[int, int]]:
    """(step, nodes so far) of one cascade: how it grew over time."""
    rows = con.execute(
        "SELECT step, sum(count(*)) OVER (ORDER BY step) FROM cascade_nodes WHERE root_id = ? GROUP BY step "
        "ORDER BY step",
        [int(root_id)],
    ).fetchall()
    return [(int(s), int(n)) for s, n in rows]


def replies(con: Con, post_id: int, *, limit: int = PAGE, offset: int = 0) -> list[PostView]:
    """Comments on a post, oldest first."""
    rows = con.execute(
        "SELECT p.post_id, p.step, p.author, a.username, p.kind, p.parent_id, p.root_id, p.content "
        "FROM posts p LEFT JOIN agents a ON a.agent_id = p.author WHERE p.parent_id = ? AND p.kind = 'comment' "
        "ORDER BY p.step, p.post_id LIMIT ? OFFSET ?",
        [int(post_id), int(limit), int(offset)],
    ).fetchall()
    return _decorate(con, rows)


RESHARES = ("repost", "quote")
"""Post kinds that show the original they reshare (the prompt renders a repost as its original)."""


def reshares(con: Con, post_id: int) -> list[int]:
    """Ids of the reposts and quotes of a post: each shows the post to whoever is shown it."""
    rows = con.execute(
        "SELECT post_id FROM posts WHERE parent_id = ? AND kind IN (SELECT unnest(?::VARCHAR[])) ORDER BY post_id",
        [int(post_id), list(RESHARES)],
    ).fetchall()
    return [int(r[0]) for r in rows]


def exposed_to(
    con: Con, post_id: int, *, limit: int = PAGE, offset: int = 0
) -> list[tuple[int, int, int, str | None, int | None, str | None]]:
    """(step, agent, rank, feed source, via post, via kind) of every time the post was in someone's feed,
    in step order: directly (via None) or through one of its reposts or quotes (via that post's id and kind)."""
    ids = [int(post_id), *reshares(con, post_id)]
    return con.execute(
        "SELECT e.step, e.agent_id, e.rank, e.source, CASE WHEN e.post_id = ? THEN NULL ELSE e.post_id END, "
        "CASE WHEN e.post_id = ? THEN NULL ELSE p.kind END FROM exposures e JOIN posts p USING (post_id) "
        "WHERE e.post_id IN (SELECT unnest(?::BIGINT[])) "
        "ORDER BY e.step, e.agent_id, e.rank, e.post_id LIMIT ? OFFSET ?",
        [int(post_id), int(post_id), ids, int(limit), int(offset)],
    ).fetchall()


def exposure_sources(con: Con, post_id: int) -> dict[str, int]:
    """Times the post was shown, by feed source ('unknown' where none was recorded); times it was shown
    through a repost or quote are counted apart, as ``via repost`` / ``via quote``."""
    ids = [int(post_id), *reshares(con, post_id)]
    rows = con.execute(
        "SELECT CASE WHEN e.post_id = ? THEN coalesce(e.source, 'unknown') ELSE 'via ' || p.kind END, count(*) "
        "FROM exposures e JOIN posts p USING (post_id) WHERE e.post_id IN (SELECT unnest(?::BIGINT[])) "
        "GROUP BY 1 ORDER BY 2 DESC, 1",
        [int(post_id), ids],
    ).fetchall()
    return {str(s): int(n) for s, n in rows}


def acted_on(con: Con, post_id: int, *, limit: int = PAGE, offset: int = 0) -> list[tuple[int, int, str, str | None]]:
    """(step, agent, action type, outcome) of every action that targeted the post, in order."""
    return con.execute(
        "SELECT step, agent_id, type, outcome FROM actions "
        "WHERE TRY_CAST(json_extract(args, '$.post_id') AS BIGINT) = ? ORDER BY step, seq LIMIT ? OFFSET ?",
        [int(post_id), int(limit), int(offset)],
    ).fetchall()


def agent(con: Con, agent_id: int) -> dict[str, Any] | None:
    """An agent's persona row (name, username, bio, interests, initial stance, goal) and role, or None."""
    cur = con.execute(
        "SELECT agent_id, name, username, bio, interests, stance, goal FROM agents WHERE agent_id = ?", [int(agent_id)]
    )
    row = cur.fetchone()
    if row is None:
        return None
    out = dict(zip([d[0] for d in cur.description], row))
    role = con.execute("SELECT role FROM agent_roles WHERE agent_id = ?", [int(agent_id)]).fetchone()
    out["role"] = role[0] if role else "ordinary"
    return out


def find_agents(con: Con, text: str | None = None, *, limit: int = PAGE, offset: int = 0) -> list[tuple[int, str, str]]:
    """(id, username, name) of agents whose id, username or name matches ``text``, by id."""
    t = _text_filter(text)
    return con.execute(
        "SELECT agent_id, username, name FROM agents WHERE ?::VARCHAR IS NULL OR CAST(agent_id AS VARCHAR) = ? "
        "OR contains(lower(username), ?) OR contains(lower(name), ?) ORDER BY agent_id LIMIT ? OFFSET ?",
        [t, t, t, t, int(limit), int(offset)],
    ).fetchall()


def stance_over_time(con: Con, agent_id: int) -> list[tuple[int, float]]:
    """(step, stance) from set-up (step -1, the initial stance) through each recorded change."""
    first = con.execute("SELECT stance FROM agents WHERE agent_id = ?", [int(agent_id)]).fetchone()
    rows = con.execute("SELECT step, stance FROM stances WHERE agent_id = ? ORDER BY step", [int(agent_id)]).fetchall()
    head = [(-1, float(first[0]))] if first and first[0] is not None else []
    return head + [(int(s), float(v)) for s, v in rows]


def activation_steps(con: Con, agent_id: int, *, limit: int = PAGE, offset: int = 0) -> list[int]:
    """Steps at which the agent was shown a feed, acted or was called, in order."""
    calls = "UNION SELECT step FROM llm_calls WHERE agent_id = ?" if _has(con, "llm_calls") else ""
    args: list[Any] = [int(agent_id), int(agent_id)] + ([int(agent_id)] if calls else [])
    rows = con.execute(
        "SELECT step FROM (SELECT step FROM exposures WHERE agent_id = ? "
        f"UNION SELECT step FROM actions WHERE agent_id = ? AND origin != 'seed' {calls}) "
        "WHERE step IS NOT NULL ORDER BY step LIMIT ? OFFSET ?",
        [*args, int(limit), int(offset)],
    ).fetchall()
    return [int(r[0]) for r in rows]


def feed(con: Con, agent_id: int, step: int) -> list[FeedItem]:
    """The agent's feed at ``step``: exactly its exposures rows (a post shown twice is two items), by rank."""
    extra = [c for c in _column_order(con, "exposures") if c not in EXPOSURE_BASE]
    more = "".join(f', e."{c}"' for c in extra)  # names from the table's own catalogue, quoted
    rows = con.execute(
        f"SELECT e.rank, e.post_id, e.source, p.author, a.username, p.kind, p.content{more} FROM exposures e "  # noqa: S608
        "LEFT JOIN posts p USING (post_id) LEFT JOIN agents a ON a.agent_id = p.author "
        "WHERE e.agent_id = ? AND e.step = ? ORDER BY e.rank, e.post_id",
        [int(agent_id), int(step)],
    ).fetchall()
    return [
        FeedItem(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], r[6], dict(zip(extra, r[7:], strict=True))) for r in rows
    ]


def actions(con: Con, agent_id: int, step: int) -> list[ActionView]:
    """The agent's actions at ``step`` in the order the platform applied them."""
    rows = con.execute(
        "SELECT seq, origin, type, args, outcome, reason, post_id, rationale FROM actions "
        "WHERE agent_id = ? AND step = ? ORDER BY seq",
        [int(agent_id), int(step)],
    ).fetchall()
    return [ActionView(int(r[0]), r[1], str(r[2]), _json_obj(r[3]), *r[4:]) for r in rows]


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
        if "outcome" in _columns(con, "surveys")
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
    messages = _json_any(r[4])
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
    if not _has(con, "llm_calls"):
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
    if not _has(con, "llm_calls"):
        return []
    f = flt or CallFilter()
    rows = con.execute(
        f"WITH {_fates(con)} SELECT {_CALL_COLS} FROM fated WHERE {f.where()} ORDER BY call_id LIMIT ? OFFSET ?",
        [*f.all_args(), int(limit), int(offset)],
    ).fetchall()
    return [_call(r) for r in rows]


def call(con: Con, call_id: int) -> CallView | None:
    """One call with its answer's fate (None: no such call)."""
    if not _has(con, "llm_calls"):
        return None
    rows = con.execute(
        f"WITH {_fates(con)} SELECT {_CALL_COLS} FROM fated WHERE call_id = ?", [int(call_id)]
    ).fetchall()
    return _call(rows[0]) if rows else None


def count_calls(con: Con, flt: CallFilter | None = None) -> int:
    """How many calls :func:`calls` pages through with ``flt`` (0 without a call log)."""
    if not _has(con, "llm_calls"):
        return 0
    f = flt or CallFilter()
    sql = f"WITH {_fates(con)} SELECT count(*) FROM fated" if f.fate is not None else "SELECT count(*) FROM llm_calls"
    row = con.execute(f"{sql} WHERE {f.where()}", f.all_args()).fetchone()
    return int(row[0]) if row else 0


def call_facets(con: Con) -> tuple[list[str], list[str]]:
    """(outcomes, models) present in the call log, sorted: the calls page's filter choices."""
    if not _has(con, "llm_calls"):
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


def memories_at(con: Con, agent_id: int, step: int) -> list[tuple[str, str, float | None]]:
    """(kind, text, importance) of the memory entries the agent wrote at ``step`` (memory streams only)."""
    if not _has(con, "memories"):
        return []
    return con.execute(
        "SELECT kind, text, importance FROM memories WHERE agent_id = ? AND step = ? ORDER BY seq",
        [int(agent_id), int(step)],
    ).fetchall()


def interviews(con: Con, agent_id: int) -> list[tuple[int | None, str, str | None]]:
    """(step, question, answer) of the questions put to the agent, in order."""
    if not _has(con, "interviews"):
        return []
    return con.execute(
        "SELECT step, question, answer FROM interviews WHERE agent_id = ? ORDER BY step NULLS LAST, call_id",
        [int(agent_id)],
    ).fetchall()


def surveys(con: Con, agent_id: int) -> list[dict[str, Any]]:
    """The agent's survey answers in order (step, question, answer, value; outcome and reason where the
    trace has those columns)."""
    cur = con.execute("SELECT * FROM surveys WHERE agent_id = ? ORDER BY step", [int(agent_id)])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def committed_steps(con: Con) -> int:
    """Steps committed so far (0..N-1): a live run's progress. A step's rows and its ``steps`` row are
    one transaction, so a reader never sees part of a step."""
    row = con.execute("SELECT count(*) FROM steps WHERE step >= 0").fetchone()
    return int(row[0]) if row else 0


def overview(con: Con) -> dict[str, Any]:
    """Name, seed, perspective, preset, agents, posts, committed steps and calls: the header of every page."""
    run = con.execute("SELECT name, seed, perspective, config FROM runs LIMIT 1").fetchone()
    cfg = _json_obj(run[3]) if run else {}
    counts = con.execute(
        "SELECT (SELECT count(*) FROM agents), (SELECT count(*) FROM posts), "
        "(SELECT count(*) FROM steps WHERE step >= 0)"
    ).fetchone()
    n_agents, n_posts, n_steps = counts if counts else (0, 0, 0)
    platform = cfg.get("platform")
    return {
        "name": run[0] if run else None,
        "seed": run[1] if run else None,
        "perspective": run[2] if run else None,
        "preset": platform.get("preset") if isinstance(platform, dict) else None,
        "agents": int(n_agents),
        "posts": int(n_posts),
        "steps": int(n_steps),
        "calls": count_calls(con),
        "config": cfg,
    }


def _json_any(text: Any) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _json_obj(text: Any) -> dict[str, Any]:
    got = _json_any(text)
    return got if isinstance(got, dict) else {}


def activity_by_step(con: Con) -> list[tuple[int, float, int, int, int]]:
    """(step, simulated time in hours at which it ran, active agents, actions, posts) of every committed step."""
    rows = con.execute(
        "SELECT step, sim_time_s, n_active, n_actions, n_posts FROM steps WHERE step >= 0 ORDER BY step"
    ).fetchall()
    return [(int(s), float(t or 0) / 3600, int(a or 0), int(n or 0), int(p or 0)) for s, t, a, n, p in rows]


def stance_by_step(con: Con) -> list[tuple[int, list[float], float]]:
    """(step, [10th, 25th, 50th, 75th, 90th percentile], mean) of every agent's stance as it stood at the end
    of each committed step (its set-up stance until its first change): the distribution over time."""
    rows = con.execute(
        "WITH s AS (SELECT step FROM steps WHERE step >= 0), "
        "ch AS (SELECT agent_id, step, stance FROM stances UNION ALL "
        "       SELECT agent_id, -1, stance FROM agents WHERE stance IS NOT NULL), "
        "latest AS (SELECT s.step, c.agent_id, arg_max(c.stance, c.step) AS st FROM s JOIN ch c ON c.step <= s.step "
        "           GROUP BY ALL) "
        "SELECT step, quantile_cont(st, [0.1, 0.25, 0.5, 0.75, 0.9]), avg(st) FROM latest GROUP BY step ORDER BY step"
    ).fetchall()
    return [(int(s), [float(v) for v in qs], float(m)) for s, qs, m in rows]


def top_cascades_by_step(con: Con, n: int = 5) -> dict[int, list[tuple[int, int]]]:
    """The ``n`` largest cascades' (step, nodes so far), by root post: how the biggest ones grew."""
    roots = [
        int(r[0])
        for r in con.execute(
            "SELECT root_id FROM cascade_nodes GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT ?", [int(n)]
        ).fetchall()
    ]
    return {r: cascade_size_by_step(con, r) for r in roots}


def neighbourhood(con: Con, agent_id: int, most: int = 40) -> tuple[list[int], list[int]]:
    """(followees, followers) of an agent at the end of the run (follow events replayed: the last event of
    each pair wins; 1 follows, else unfollows), at most ``most`` of each, by id."""

    def side(mine: str, theirs: str) -> list[int]:
        rows = con.execute(
            f"SELECT {theirs} FROM follow_events WHERE {mine} = ? GROUP BY {theirs} "  # noqa: S608 (our column names)
            f"HAVING arg_max(event, (step, seq)) = 1 ORDER BY {theirs} LIMIT ?",
            [int(agent_id), int(most)],
        ).fetchall()
        return [int(r[0]) for r in rows]

    return side("src", "dst"), side("dst", "src")


AGENT_SORTS = {
    "id": "agent_id",
    "stance": "stance",
    "activations": "activations",
    "followers": "followers",
    "actions": "n_actions",
}
"""The agents list's sort keys (label: column); nothing else reaches the ORDER BY."""


@dataclass(frozen=True)
class AgentRow:
    """One agent in the agents list: who, its stance at the end of the run, steps it was activated (shown
    a feed), followers at the end, actions taken (seed posts left out)."""

    agent_id: int
    username: str | None
    name: str | None
    stance: float | None
    activations: int
    followers: int
    n_actions: int


def agents_table(
    con: Con,
    text: str | None = None,
    *,
    sort: str = "id",
    descending: bool = False,
    limit: int = PAGE,
    offset: int = 0,
) -> list[AgentRow]:
    """One page of agents with their stance, activations, followers and actions, filtered by id, username
    or name (as :func:`find_agents`) and sorted by one of :data:`AGENT_SORTS` (ties by id)."""
    col = AGENT_SORTS.get(sort)
    if col is None:
        raise ValueError(f"sort {sort!r} is not one of {', '.join(AGENT_SORTS)}")
    t = _text_filter(text)
    order = f"{col} {'DESC' if descending else 'ASC'} NULLS LAST, agent_id"
    rows = con.execute(
        "WITH st AS (SELECT agent_id, arg_max(stance, step) AS s FROM stances GROUP BY 1), "
        "acts AS (SELECT agent_id, count(*) AS n FROM actions WHERE origin != 'seed' GROUP BY 1), "
        "pairs AS (SELECT dst, arg_max(event, (step, seq)) AS ev FROM follow_events GROUP BY src, dst), "
        "fol AS (SELECT dst AS agent_id, count(*) FILTER (WHERE ev = 1) AS n FROM pairs GROUP BY 1), "
        "shown AS (SELECT agent_id, count(DISTINCT step) AS n FROM exposures GROUP BY 1), "
        "t AS (SELECT a.agent_id, a.username, a.name, coalesce(st.s, a.stance) AS stance, "
        "      coalesce(shown.n, 0) AS activations, coalesce(fol.n, 0) AS followers, coalesce(acts.n, 0) AS n_actions "
        "      FROM agents a LEFT JOIN st USING (agent_id) LEFT JOIN acts USING (agent_id) "
        "      LEFT JOIN fol USING (agent_id) LEFT JOIN shown USING (agent_id) "
        "      WHERE ?::VARCHAR IS NULL OR CAST(a.agent_id AS VARCHAR) = ? OR contains(lower(a.username), ?) "
        "      OR contains(lower(a.name), ?)) "
        f"SELECT * FROM t ORDER BY {order} LIMIT ? OFFSET ?",  # noqa: S608 (order from AGENT_SORTS)
        [t, t, t, t, int(limit), int(offset)],
    ).fetchall()
    return [AgentRow(int(r[0]), r[1], r[2], None if r[3] is None else float(r[3]), *map(int, r[4:])) for r in rows]
