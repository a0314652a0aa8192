"""One agent through its own eyes (persona, stance, feeds, actions, memories, answers, follow
neighbourhood) and the agents list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from socium.trace.queries.explore.common import PAGE, Con, column_order, has_table, json_obj, text_filter


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
    t = text_filter(text)
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
    calls = "UNION SELECT step FROM llm_calls WHERE agent_id = ?" if has_table(con, "llm_calls") else ""
    args: list[Any] = [int(agent_id), int(agent_id)] + ([int(agent_id)] if calls else [])
    rows = con.execute(
        "SELECT step FROM (SELECT step FROM exposures WHERE agent_id = ? "
        f"UNION SELECT step FROM actions WHERE agent_id = ? AND origin != 'seed' {calls}) "
        "WHERE step IS NOT NULL ORDER BY step LIMIT ? OFFSET ?",
        [*args, int(limit), int(offset)],
    ).fetchall()
    return [int(r[0]) for r in rows]


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


def feed(con: Con, agent_id: int, step: int) -> list[FeedItem]:
    """The agent's feed at ``step``: exactly its exposures rows (a post shown twice is two items), by rank."""
    extra = [c for c in column_order(con, "exposures") if c not in EXPOSURE_BASE]
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


def actions(con: Con, agent_id: int, step: int) -> list[ActionView]:
    """The agent's actions at ``step`` in the order the platform applied them."""
    rows = con.execute(
        "SELECT seq, origin, type, args, outcome, reason, post_id, rationale FROM actions "
        "WHERE agent_id = ? AND step = ? ORDER BY seq",
        [int(agent_id), int(step)],
    ).fetchall()
    return [ActionView(int(r[0]), r[1], str(r[2]), json_obj(r[3]), *r[4:]) for r in rows]


def memories_at(con: Con, agent_id: int, step: int) -> list[tuple[str, str, float | None]]:
    """(kind, text, importance) of the memory entries the agent wrote at ``step`` (memory streams only)."""
    if not has_table(con, "memories"):
        return []
    return con.execute(
        "SELECT kind, text, importance FROM memories WHERE agent_id = ? AND step = ? ORDER BY seq",
        [int(agent_id), int(step)],
    ).fetchall()


def interviews(con: Con, agent_id: int) -> list[tuple[int | None, str, str | None]]:
    """(step, question, answer) of the questions put to the agent, in order."""
    if not has_table(con, "interviews"):
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


_AGENT_WHERE = (
    "(?::VARCHAR IS NULL OR CAST(a.agent_id AS VARCHAR) = ? OR contains(lower(a.username), ?) "
    "OR contains(lower(a.name), ?))"
)

_MEASURES = {
    "stance": "SELECT agent_id, arg_max(stance, step) AS v FROM stances WHERE {ids} GROUP BY 1",
    "activations": "SELECT agent_id, count(DISTINCT step) AS v FROM exposures WHERE {ids} GROUP BY 1",
    "followers": "SELECT agent_id, count(*) FILTER (WHERE ev = 1) AS v FROM (SELECT dst AS agent_id, "
    "arg_max(event, (step, seq)) AS ev FROM follow_events WHERE {dst} GROUP BY src, dst) GROUP BY 1",
    "actions": "SELECT agent_id, count(*) AS v FROM actions WHERE origin != 'seed' AND {ids} GROUP BY 1",
}
"""Each sortable measure of an agent, per agent (``{ids}`` / ``{dst}``: the agents it is computed for)."""


def agent_order(con: Con, text: str | None = None, *, sort: str = "id", descending: bool = False) -> list[int]:
    """Every agent :func:`agents_table` lists with this filter, in its order (ties by id).

    Sorting by a measure computes that one measure for every agent (a scan of its table: 0.3-1 s on a
    10^5-agent trace), so a page that pages through a sorted list keeps this order and asks
    :func:`agent_rows` for each page's rows."""
    col = AGENT_SORTS.get(sort)
    if col is None:
        raise ValueError(f"sort {sort!r} is not one of {', '.join(AGENT_SORTS)}")
    t = text_filter(text)
    way = "DESC" if descending else "ASC"
    if sort == "id":
        sql = f"SELECT a.agent_id FROM agents a WHERE {_AGENT_WHERE} ORDER BY a.agent_id {way}"  # noqa: S608
    else:
        m = _MEASURES[sort].format(ids="true", dst="true")
        base = "coalesce(m.v, a.stance)" if sort == "stance" else "coalesce(m.v, 0)"
        sql = (
            f"SELECT a.agent_id FROM agents a LEFT JOIN ({m}) m USING (agent_id) WHERE {_AGENT_WHERE} "  # noqa: S608
            f"ORDER BY {base} {way} NULLS LAST, a.agent_id"
        )
    return [int(r[0]) for r in con.execute(sql, [t, t, t, t]).fetchall()]


def agent_rows(con: Con, ids: list[int]) -> list[AgentRow]:
    """The agents list's rows of ``ids``, in that order: each measure computed for these agents only."""
    if not ids:
        return []
    inn = "agent_id IN (SELECT unnest(?::BIGINT[]))"
    parts = {k: v.format(ids=inn, dst=inn.replace("agent_id", "dst")) for k, v in _MEASURES.items()}
    rows = con.execute(
        f"WITH st AS ({parts['stance']}), shown AS ({parts['activations']}), fol AS ({parts['followers']}), "  # noqa: S608
        f"acts AS ({parts['actions']}) "
        "SELECT a.agent_id, a.username, a.name, coalesce(st.v, a.stance), coalesce(shown.v, 0), coalesce(fol.v, 0), "
        "coalesce(acts.v, 0) FROM agents a LEFT JOIN st USING (agent_id) LEFT JOIN shown USING (agent_id) "
        "LEFT JOIN fol USING (agent_id) LEFT JOIN acts USING (agent_id) "
        "WHERE a.agent_id IN (SELECT unnest(?::BIGINT[]))",
        [ids, ids, ids, ids, ids],
    ).fetchall()
    by = {
        int(r[0]): AgentRow(int(r[0]), r[1], r[2], None if r[3] is None else float(r[3]), *map(int, r[4:]))
        for r in rows
    }
    return [by[i] for i in ids if i in by]


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
    or name (as :func:`find_agents`) and sorted by one of :data:`AGENT_SORTS` (ties by id): the page's ids
    (:func:`agent_order`), then their rows (:func:`agent_rows`)."""
    if sort == "id":  # the default view: only the page's ids, not the whole order
        t = text_filter(text)
        ids = [
            int(r[0])
            for r in con.execute(
                f"SELECT a.agent_id FROM agents a WHERE {_AGENT_WHERE} "  # noqa: S608
                f"ORDER BY a.agent_id {'DESC' if descending else 'ASC'} LIMIT ? OFFSET ?",
                [t, t, t, t, int(limit), int(offset)],
            ).fetchall()
        ]
    else:
        ids = agent_order(con, text, sort=sort, descending=descending)[int(offset) : int(offset) + int(limit)]
    return agent_rows(con, ids)
