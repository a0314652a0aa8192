"""A run as a whole: its header (name, seed, sizes), progress, and the numbers the run's charts draw."""

from __future__ import annotations

from typing import Any

from socium.trace.queries.explore.calls import count_calls
from socium.trace.queries.explore.common import Con, json_obj


def committed_steps(con: Con) -> int:
    """Steps committed so far (0..N-1): a live run's progress. A step's rows and its ``steps`` row are
    one transaction, so a reader never sees part of a step."""
    row = con.execute("SELECT count(*) FROM steps WHERE step >= 0").fetchone()
    return int(row[0]) if row else 0


def overview(con: Con) -> dict[str, Any]:
    """Name, seed, perspective, preset, agents, posts, committed steps and calls: the header of every page."""
    run = con.execute("SELECT name, seed, perspective, config FROM runs LIMIT 1").fetchone()
    cfg = json_obj(run[3]) if run else {}
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
    """The ``n`` largest cascades' (step, nodes so far), by root post, largest first: how the biggest ones
    grew (one scan of ``cascade_nodes``, as :func:`~socium.trace.queries.explore.posts.cascade_size_by_step`
    counts each)."""
    rows = con.execute(
        "WITH top AS (SELECT root_id, count(*) AS size FROM cascade_nodes GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ?) "
        "SELECT c.root_id, c.step, sum(count(*)) OVER (PARTITION BY c.root_id ORDER BY c.step), any_value(t.size) "
        "FROM cascade_nodes c JOIN top t USING (root_id) GROUP BY c.root_id, c.step "
        "ORDER BY 4 DESC, 1, 2",
        [int(n)],
    ).fetchall()
    out: dict[int, list[tuple[int, int]]] = {}
    for root, step, total, _ in rows:
        out.setdefault(int(root), []).append((int(step), int(total)))
    return out
