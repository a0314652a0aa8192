"""Posts as the platform showed them: the timeline, one post, its cascade, its replies and who was shown it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from socium.trace.queries.explore.common import PAGE, Con, has_table, text_filter


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


_TIMELINE_WHERE = (
    "(?::INTEGER IS NULL OR p.step = ?) AND (?::BIGINT IS NULL OR p.author = ?) "
    "AND (?::VARCHAR IS NULL OR contains(lower(p.content), ?)) AND (?::BOOLEAN OR p.kind != 'comment')"
)


def _timeline_args(step: int | None, author: int | None, text: str | None, comments: bool) -> list[Any]:
    t = text_filter(text)
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
    if has_table(con, "moderation_events"):
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
        "SELECT step, agent_id, type, outcome FROM actions WHERE contains(args, ?) "  # the id's digits: a cheap
        "AND TRY_CAST(json_extract(args, '$.post_id') AS BIGINT) = ? ORDER BY step, seq LIMIT ? OFFSET ?",  # pre-filter
        [str(int(post_id)), int(post_id), int(limit), int(offset)],
    ).fetchall()
