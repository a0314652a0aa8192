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
from typing import TYPE_CHECKING, Protocol

from socium.core.contracts import Decision, Observation
from socium.core.policy import Policy, PolicyCapabilities, capabilities_of
from socium.simulator.deciding import adecide_all, decide_sync

if TYPE_CHECKING:
    from socium.config.executor import ExecutorConfig


class Executor(Protocol):
    def run(self, observations: Sequence[Observation]) -> list[Decision]:
        """Decisions for every observation, sorted by agent id."""

    def close(self) -> None: ...


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

    def __init__(self, policy: Policy, concurrency: int = 16, caps: PolicyCapabilities | None = None) -> None:
        self.policy = policy
        self.concurrency = concurrency
        self._caps = caps  # the driver's record; found on first use when built without one

    @property
    def caps(self) -> PolicyCapabilities:
        if self._caps is None:
            self._caps = capabilities_of(self.policy)
        return self._caps

    def run(self, observations: Sequence[Observation]) -> list[Decision]:
        caps = self.caps
        if caps.batch is None and caps.adecide is not None and not _running_loop():
            decisions = asyncio.run(adecide_all(caps.adecide, observations, self.concurrency))
        else:
            decisions = decide_sync(caps, observations)
        return sorted(decisions, key=lambda d: d.agent_id)

    def close(self) -> None:
        if self.caps.closer is not None:
            self.caps.closer.close()


def make_executor(cfg: ExecutorConfig, policy: Policy, seed: int, caps: PolicyCapabilities | None = None) -> Executor:
    """The executor a run's ``executor:`` section asks for (Ray imported only when chosen); ``caps``:
    the policy's capabilities when the caller already has them (found on first use otherwise)."""
    if cfg.kind == "ray":
        from socium.simulator.ray_executor import RayExecutor  # lazy: ray, only when chosen

        return RayExecutor(cfg, policy, seed, caps)
    return InProcessExecutor(policy, concurrency=cfg.concurrency_per_actor, caps=caps)
