"""The inputs of ``socium validate``'s stylized facts, read from one run's trace in one pass per table.

Returned as numpy columns so validation can pool runs and compute distributions (cascade sizes,
inter-activity times, reciprocity, engagement inequality) without touching the schema.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb
import numpy as np

from socium.core import actions as A

Con = duckdb.DuckDBPyConnection


def stylized_inputs(con: Con) -> dict[str, Any]:
    """Posts, applied policy actions with their time, live follow edges, stances, post likes, feed size.

    Keys: ``posts`` (post_id, parent_id, root_id, kind, author, time_s; ordered by post id),
    ``acts`` (agent_id, sim_time_s of every applied non-seed action), ``n_agents``, ``follows``
    (src, dst of edges still standing), ``stance`` (initial, by agent id), ``last`` (agent_id, s: the
    stance after each agent's last change), ``likes`` (target, c: crowd likes and dislikes per post)
    and ``k`` (the recommender's feed size, -1 when the config has none).
    """
    posts = con.execute(
        "SELECT post_id, parent_id, root_id, kind, author, time_s FROM posts ORDER BY post_id"
    ).fetchnumpy()
    acts = con.execute(
        "SELECT a.agent_id, s.sim_time_s FROM actions a JOIN steps s USING (step) "
        "WHERE a.origin != 'seed' AND a.outcome = 'ok'"
    ).fetchnumpy()
    row = con.execute("SELECT count(*) FROM agents").fetchone()
    fol = con.execute("SELECT src, dst FROM follows WHERE end_step IS NULL").fetchnumpy()
    stance = con.execute("SELECT agent_id, stance FROM agents ORDER BY agent_id").fetchnumpy()["stance"]
    last = con.execute("SELECT agent_id, arg_max(stance, step) AS s FROM stances GROUP BY agent_id").fetchnumpy()
    eng = con.execute(
        "SELECT target, count(*) AS c FROM votes WHERE delta > 0 AND origin != 'seed' "
        "AND list_contains(?, type) GROUP BY target",
        [list(A.POST_VOTES)],
    ).fetchnumpy()
    k = con.execute("SELECT json_extract(config, '$.recsys.k') FROM runs").fetchone()
    return {
        "posts": posts,
        "acts": acts,
        "n_agents": int(row[0]) if row else 0,
        "follows": fol,
        "stance": np.asarray(stance, float),
        "last": last,
        "likes": eng,
        "k": json.loads(k[0]) if k and k[0] is not None else -1,
    }
