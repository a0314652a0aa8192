"""What an agent sees of group chats (OASIS ``listen_from_group``): its groups' recent messages,
and a few groups it could join.

Why a separate small module: the perspective decides *whether* an agent is shown groups; this
decides *what* one group looks like in an observation, bounded so that a busy group cannot blow up
a prompt (``llm_agents.group_messages`` messages per group, ``llm_agents.groups_listed`` groups
offered to join, the newest first).
"""

from __future__ import annotations

from collections.abc import Sequence

from socium.core.contracts import GroupView
from socium.platform.state import PlatformState


def group_views(
    state: PlatformState, agent: int, n_messages: int, n_listed: int, usernames: Sequence[str]
) -> list[GroupView]:
    """The agent's groups (with their last ``n_messages`` messages) then up to ``n_listed`` others."""
    mine = state.groups_of(agent)
    out = []
    for gid in mine:
        name, members = state.groups[gid]
        msgs = [(s, a, usernames[a], text) for s, a, text in state.recent_group_messages(gid, n_messages)]
        out.append(GroupView(gid, name, len(members), True, msgs))
    listed = 0
    mine_set = set(mine)
    for gid in range(len(state.groups) - 1, -1, -1):
        if listed >= n_listed:
            break
        if gid in mine_set:
            continue
        name, members = state.groups[gid]
        out.append(GroupView(gid, name, len(members), False))
        listed += 1
    return out
