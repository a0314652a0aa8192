"""Where policies run. The driver only sees ``run(observations) -> decisions`` sorted by agent id, so
in-process and Ray-sharded execution produce the same trace.

Why this is enough for determinism: a policy is a pure function of its ``Observation`` and the
per-(agent, step) stream ``agent_rng(seed, POLICY, agent_id, step)``; neither depends on which
process evaluates it or in what order, and the driver sorts decisions by agent id before it
applies them. An executor therefore only decides *where* and *how concurrently* ``decide`` runs.

The Ray executor lives in :mod:`socium.simulator.ray_executor` and is imported lazily by
:func:`make_executor`, so ``import socium`` never imports Ray.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from socium.core.contracts import Decision, Observation

if TYPE_CHECKING:
    from socium.config import ExecutorConfig


class Executor(Protocol):
    def run(self, observations: Sequence[Observation]) -> list[Decision]:
        """Decisions for every observation, sorted by agent id."""

    def close(self) -> None: ...


async def adecide_all(
    policy: Any, observations: Sequence[Observation], concurrency: int, limit: asyncio.Semaphore | None = None
) -> list[Decision]:
    """``policy.adecide`` over all observations with at most ``concurrency`` in flight.

    A fixed pool of ``concurrency`` workers pulls from a shared index rather than one task per
    observation: 10^5 pending coroutines would cost hundreds of MB, a pool costs ``concurrency``.
    ``limit``, when given, is shared by several concurrent calls (a Ray actor receiving a shard in
    chunks) so that all of them together stay within ``concurrency``. Results keep the
    observations' order; the first exception cancels the rest and propagates.
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

    tasks = [asyncio.ensure_future(worker()) for _ in range(max(1, min(concurrency, len(obs))))]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return [d for d in out if d is not None]


def decide_sync(policy: Any, observations: Sequence[Observation]) -> list[Decision]:
    """A synchronous policy's decisions: ``decide_batch`` when it has one, else ``decide`` per agent."""
    batch = getattr(policy, "decide_batch", None)
    if batch is not None:
        return list(batch(list(observations)))
    return [policy.decide(o) for o in observations]


def _running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class InProcessExecutor:
    """Runs the policy in the driver process: the default for small runs and tests.

    A policy with ``decide_batch`` batches itself; one with only ``adecide`` (an LLM policy) has
    its calls overlapped on a private event loop up to ``concurrency``; otherwise ``decide`` per agent.
    """

    def __init__(self, policy: Any, concurrency: int = 16) -> None:
        self.policy = policy
        self.concurrency = concurrency

    def run(self, observations: Sequence[Observation]) -> list[Decision]:
        policy = self.policy
        if not hasattr(policy, "decide_batch") and hasattr(policy, "adecide") and not _running_loop():
            decisions = asyncio.run(adecide_all(policy, observations, self.concurrency))
        else:
            decisions = decide_sync(policy, observations)
        return sorted(decisions, key=lambda d: d.agent_id)

    def close(self) -> None:
        close = getattr(self.policy, "close", None)
        if close:
            close()


def make_executor(cfg: ExecutorConfig, policy: Any, seed: int) -> Executor:
    """The executor a run's ``executor:`` section asks for (Ray imported only when chosen)."""
    if cfg.kind == "ray":
        from socium.simulator.ray_executor import RayExecutor

        return RayExecutor(cfg, policy, seed)
    return InProcessExecutor(policy, concurrency=cfg.concurrency_per_actor)
