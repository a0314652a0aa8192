"""How the answer schema's ids moved when the action table replaced the previous narrowing rule.

    python benchmarks/action_schema_drift.py CONFIG OUT_DIR [key.path=value ...]

Runs CONFIG (overrides as ``socium run --set``) and, for every LLM observation, compares the ids each
targeted action is offered now (``answer_validation.state_aware_ids`` over ``Observation.marks``) with the
rule before the table (feed items' liked / disliked / own flags, the followees among the shown users, every
shown id for the rest), applying each dropped or added id to a copy of the platform state. Prints the
counts: an id dropped must be one the platform refuses, an id added one it accepts.
"""

from __future__ import annotations

import collections
import copy
import sys
from typing import Any

import yaml

from socium.agents import perspectives as P
from socium.agents.answer_validation import state_aware_ids
from socium.config.loading import config_from_dict
from socium.core import actions as A
from socium.simulator.simulation import Simulation

STATS: collections.Counter[Any] = collections.Counter()


def previous_rule(o: Any, offered: list[str], st: Any) -> dict[str, set[int]]:
    posts, users, comments = o.shown_posts(), o.shown_users(), o.shown_comments()
    items = (*o.feed, *o.results)
    liked = {it.post_id for it in items if it.liked}
    disliked = {it.post_id for it in items if it.disliked}
    own = {it.post_id for it in items if it.author == o.agent_id}
    for it in items:
        mine = {s.post_id for s in it.shared if s.author == o.agent_id}
        own |= mine | ({it.post_id} if mine else set())
    following = set(st.follows.following_among(o.agent_id, users))
    special = {
        A.LikePost.type_name: posts - liked,
        A.UnlikePost.type_name: liked,
        A.DislikePost.type_name: posts - disliked,
        A.UndoDislikePost.type_name: disliked,
        A.Repost.type_name: posts - own,
        A.Follow.type_name: users - following,
        A.Unfollow.type_name: following,
    }
    shown = {"post": posts, "user": users, "comment": comments}
    return {a: special.get(a, shown[m.target]) for a in offered if (m := A.meta_of(a)).target in shown}


def _accepted(st: Any, agent: int, a: str, i: int) -> bool:
    cls = A.BY_TYPE[a]
    args: dict[str, Any] = {cls.meta.id_field or "": i}
    if cls.text_field:
        args[cls.text_field] = "t"
    return copy.deepcopy(st).apply(agent, cls(**args)).ok


_fill = P.fill_observation


def checked(sim: Any, o: Any, rec: Any) -> None:
    _fill(sim, o, rec)
    offered = sim.cfg.llm_agents.actions
    now = state_aware_ids(o, offered)
    for a, before in previous_rule(o, offered, sim.world.state).items():
        after = set(now.get(a, before))
        STATS["ids before"] += len(before)
        for i in before - after:
            STATS[("dropped", a, "refused" if not _accepted(sim.world.state, o.agent_id, a, i) else "ACCEPTED")] += 1
        for i in after - before:
            STATS[("added", a, "accepted" if _accepted(sim.world.state, o.agent_id, a, i) else "REFUSED")] += 1


def main() -> None:
    cfg_path, out_dir, *sets = sys.argv[1:]
    raw = yaml.safe_load(open(cfg_path, encoding="utf-8"))
    for s in sets:
        key, value = s.split("=", 1)
        d = raw
        *path, last = key.split(".")
        for k in path:
            d = d.setdefault(k, {})
        d[last] = yaml.safe_load(value)
    P.fill_observation = checked  # the simulation binds it when it is built
    Simulation(config_from_dict(raw), out_dir).run()
    for k, v in sorted(STATS.items(), key=str):
        print(k, v)


if __name__ == "__main__":
    main()
