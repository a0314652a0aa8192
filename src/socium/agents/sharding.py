"""How a policy that decides for groups of agents splits a step's active set over Ray shards.

Plain functions over :class:`~socium.core.contracts.Observation`: the policy offers one as its
``partition`` capability, and the Ray executor calls it without knowing what a group is.
"""

from __future__ import annotations

from collections.abc import Sequence

from socium.core.contracts import Observation


def partition_in_groups(observations: Sequence[Observation], n: int, group_size: int) -> list[list[Observation]]:
    """A ``partition`` for policies that decide for consecutive groups of the sorted active set (script
    mode): group j goes whole to shard j mod n. Every group but the last is full, so a shard that
    re-chunks its (still sorted) share by ``group_size`` gets back exactly the groups it was sent."""
    obs = sorted(observations, key=lambda o: o.agent_id)
    out: list[list[Observation]] = [[] for _ in range(n)]
    for j, i in enumerate(range(0, len(obs), group_size)):
        out[j % n].extend(obs[i : i + group_size])
    return out
