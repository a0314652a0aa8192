"""Where policies run. The driver only sees ``run(observations) -> decisions`` sorted by agent id, so
in-process and Ray-sharded execution produce the same trace."""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from socium.agents.observation import Decision, Observation


class Executor(Protocol):
    def run(self, observations: Sequence[Observation]) -> list[Decision]:
        """Decisions for every observation, sorted by agent id."""

    def close(self) -> None: ...


class InProcessExecutor:
    """Runs the policy in the driver process: the default for small runs and tests."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def run(self, observations: Sequence[Observation]) -> list[Decision]:
        batch = getattr(self.policy, "decide_batch", None)
        decisions = batch(list(observations)) if batch else [self.policy.decide(o) for o in observations]
        return sorted(decisions, key=lambda d: d.agent_id)

    def close(self) -> None:
        close = getattr(self.policy, "close", None)
        if close:
            close()
