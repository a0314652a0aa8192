"""How a batch of observations becomes decisions inside one process: shared by every executor.

Why its own module: the in-process executor and each Ray actor run policies the same way (an async
policy overlapped up to a concurrency, a sync one batched or per agent); :mod:`socium.simulator.executors`
builds the Ray executor on demand, so the helpers both use live here rather than in either of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from socium.core.contracts import Decision, Observation
from socium.core.policy import AsyncDecider, PolicyCapabilities


async def adecide_all(
    policy: AsyncDecider,
    observations: Sequence[Observation],
    concurrency: int,
    limit: asyncio.Semaphore | None = None,
    finished: list[Decision] | None = None,
) -> list[Decision]:
    """``policy.adecide`` over all observations with at most ``concurrency`` in flight.

    A fixed pool of ``concurrency`` workers pulls from a shared index rather than one task per
    observation: 10^5 pending coroutines would cost hundreds of MB, a pool costs ``concurrency``.
    ``limit``, when given, is shared by several concurrent calls (a Ray actor receiving a shard in
    chunks) so that all of them together stay within ``concurrency``. Results keep the
    observations' order; the first exception cancels the rest and propagates. ``finished``, when given, gets
    each decision as it is made, so a caller cut off mid-batch still holds the calls of those made.
    """
    obs = list(observations)
    out: list[Decision | None] = [None] * len(obs)
    next_i = 0

    async def worker() -> None:
        nonlocal next_i
        while next_i < len(obs):
            i = next_i
            next_i += 1
            if limit is None:
                out[i] = await policy.adecide(obs[i])
            else:
                async with limit:
                    out[i] = await policy.adecide(obs[i])
            if finished is not None:
                finished.append(out[i])  # type: ignore[arg-type]

    tasks = [asyncio.ensure_future(worker()) for _ in range(max(1, min(concurrency, len(obs))))]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return [d for d in out if d is not None]


def decide_sync(caps: PolicyCapabilities, observations: Sequence[Observation]) -> list[Decision]:
    """A synchronous policy's decisions: ``decide_batch`` when it has one, else ``decide`` per agent."""
    if caps.batch is not None:
        return list(caps.batch.decide_batch(list(observations)))
    return [caps.policy.decide(o) for o in observations]
