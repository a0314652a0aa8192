"""Model-free stand-ins for LLM policies: same async shape, fixed latency, deterministic actions.

``SleepyPolicy`` behaves like an LLM agent as far as an executor can tell (``adecide`` awaits for
``delay_s``, as a server round trip would) while its actions are those of the seeded random null
model, a pure function of the observation and ``agent_rng(seed, POLICY, agent_id, step)``. That
makes it the yardstick for executor tests and benchmarks: throughput can be compared with the
bound ``actors * concurrency / delay_s`` and traces must be identical however agents are sharded.

``stall_file`` is a failure drill: while that file exists, the first actor to decide for an agent
at ``stall_step`` writes its pid next to it (``<stall_file>.pid``) and hangs, so a test can kill
exactly that process in the middle of a step.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from socium.agents.rules import RandomPolicy
from socium.config.agents import PolicyConfig
from socium.core.contracts import Decision, Observation


class SleepyPolicy:
    """Fake LLM agent: ``delay_s`` of latency per decision, random-null-model actions."""

    def __init__(
        self,
        delay_s: float,
        seed: int,
        *,
        p_post: float = 0.2,
        p_like: float = 0.2,
        p_repost: float = 0.1,
        stall_file: str | None = None,
        stall_step: int = 1,
        stall_s: float = 120.0,
    ) -> None:
        self.delay_s = delay_s
        self.seed = seed
        self.inner = RandomPolicy(PolicyConfig(kind="random", p_post=p_post, p_like=p_like, p_repost=p_repost), seed)
        self.stall_file = stall_file
        self.stall_step = stall_step
        self.stall_s = stall_s

    def _claim_stall(self, obs: Observation) -> bool:
        """True for exactly one caller per drill: the flag exists and we created the pid file."""
        if self.stall_file is None or obs.step != self.stall_step or not os.path.exists(self.stall_file):
            return False
        try:
            fd = os.open(f"{self.stall_file}.pid", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True

    def decide(self, obs: Observation) -> Decision:
        if self._claim_stall(obs):
            _wait_gone(self.stall_file, self.stall_s)
        if self.delay_s:
            time.sleep(self.delay_s)
        return self.inner.decide(obs)

    async def adecide(self, obs: Observation) -> Decision:
        if self._claim_stall(obs):
            deadline = time.monotonic() + self.stall_s
            while self.stall_file and os.path.exists(self.stall_file) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return self.inner.decide(obs)


def _wait_gone(path: str | None, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while path and Path(path).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
