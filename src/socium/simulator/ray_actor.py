"""The Ray actor that holds one shard's policy, and how a stopped driver gets back every call it made.

Why its own module: the actor runs in another process with its own life (created, killed, re-created by
the driver in :mod:`socium.simulator.ray_executor`); what it promises the driver is stated here once.

The stop protocol (issue 36 item 16). A step's LLM calls reach the trace only through the driver, and a
stopped driver (SIGTERM, Ctrl-C, an error in another shard) used to lose those made inside actors: 48 of
1,419 requests a server received were in no trace, and a first salvage (``ray.cancel`` the shards, then ask
each actor for its calls) still lost 6-18 requests in each of 10 drill stops (``benchmarks/drill_ray_signal.py``).
Measured why: the calls of shards already read were looked for in ``Decision.meta`` (they travel in
``Decision.calls``), and ``ray.cancel`` drops the result of a ``decide`` that finished before the cancel
reached it, calls included. Now each ``decide`` carries its batch number and nothing is cancelled from outside:

- the driver sends :meth:`ShardActor.stop` with the batch number to every actor still deciding, then
  reads every pending ``decide`` (a bounded wait);
- ``stop`` cancels the actor's own work for that batch; the work unwinds inside the actor (each request
  on the wire becomes an ``interrupted`` row, ``socium.llm.interrupted``), and ``decide`` then *returns*
  a :class:`ShardAnswer` whose ``stopped`` holds every call the shard made: those of decisions already
  made and those the policy still holds (``drain_calls``);
- a ``decide`` that finished before the stop arrived returns its decisions as usual, calls inside; one
  that had not started yet (its arguments still in transit) returns at once with nothing asked.

So every pending ``decide`` answers exactly once, with all of its calls, whatever the timing; the only
loss left is an actor that dies, or does not answer within the bound, and the driver says so by shard.
A policy's ``adecide_batch`` must leave no task of its own running when it is cancelled (the calls of
such a task would land after the answer was sent).
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import ray

from socium.core.contracts import Decision
from socium.core.policy import Policy, capabilities_of
from socium.errors import ExecutorError
from socium.llm.resume_replay import StoppedAnswers, serving
from socium.simulator.deciding import adecide_all, decide_sync
from socium.simulator.ray_wire import pack_decisions, unpack_observations
from socium.simulator.step_gc import step_gc


@dataclass(frozen=True)
class ActorContext:
    """What an actor tells its policy about where it runs (passed to ``policy.for_actor``)."""

    shard: int
    n_shards: int
    seed: int
    concurrency: int
    base_urls: list[str] = field(default_factory=list)
    num_gpus: float = 0.0


def shard_urls(urls: Sequence[str], shard: int, n_shards: int) -> list[str]:
    """The servers one actor talks to: with more servers than actors each actor gets every
    ``n_shards``-th URL (its own disjoint share, round-robined by the backend); with fewer, actors
    are spread over the servers ``shard mod len(urls)`` so load stays balanced."""
    if not urls:
        return []
    if len(urls) >= n_shards:
        return list(urls[shard::n_shards])
    return [urls[shard % len(urls)]]


class ShardAnswer(NamedTuple):
    """One shard's answer to one ``decide``."""

    decisions: list[tuple]  # packed (socium.simulator.ray_wire); empty when stopped
    rows: dict[str, Any]  # rows the policy drained (``drain_rows``)
    stopped: list[Any] | None  # None: decided in full; else every call made before the driver's stop


class ShardActor:
    """Holds one shard's policy; runs its observations. Created through ``ray.remote`` below."""

    def __init__(self, policy: Policy, ctx: ActorContext) -> None:
        shipped = capabilities_of(policy)
        self.policy = shipped.actor_local.for_actor(ctx) if shipped.actor_local is not None else policy
        self.caps = capabilities_of(self.policy) if self.policy is not policy else shipped
        self.ctx = ctx
        self._limit: asyncio.Semaphore | None = None  # shared by the chunks of a step; made on the actor's loop
        self._stopped_upto = -1  # batches numbered up to this one were stopped by the driver
        self._work: dict[asyncio.Task[Any], int] = {}  # running work -> its batch number
        # The policy lives as long as the actor: out of the collector's view, as the driver's world is
        # after it is built (Simulation.__init__), so full collections do not walk it every time.
        gc.collect()
        gc.freeze()

    async def info(self) -> dict[str, Any]:
        """Where this actor runs: pid, node id and host (tests kill the pid; docs show placement)."""
        return {
            "shard": self.ctx.shard,
            "pid": os.getpid(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "host": socket.gethostname(),
        }

    async def decide(
        self, packed: list[tuple], allowance: Any = None, batch: int = 0, answers: StoppedAnswers | None = None
    ) -> ShardAnswer:
        """One shard's step: packed observations in, packed decisions (and any drained rows) out.

        ``allowance``: this shard's share of the run's budgets for the step (``policy.shard_allowances``).
        ``batch``: the driver's number for this ``run``; :meth:`stop` names it. ``answers``: on resume, what
        the stopped step's calls for this shard's agents were answered (served, not asked again:
        :mod:`socium.llm.resume_replay`).
        """
        if batch <= self._stopped_upto:  # the stop overtook this message: nothing was asked
            return ShardAnswer([], {}, [])
        finished: list[Decision] = []  # decisions made so far (the adecide path), for a stop
        with serving(answers):  # the task (and every task it starts) keeps them: it copies this context
            work = asyncio.ensure_future(self._decide(packed, allowance, finished))
        self._work[work] = batch
        try:
            return await work
        except asyncio.CancelledError:
            if not work.cancelled() or batch > self._stopped_upto:
                raise  # cancelled from outside (not by the driver's stop): nothing to hand over
            calls = [c for d in finished for c in d.calls]
            if self.caps.calls is not None:  # answered and interrupted alike (socium.llm.interrupted)
                calls += self.caps.calls.drain_calls()
            return ShardAnswer([], {}, calls)
        finally:
            del self._work[work]

    async def _decide(self, packed: list[tuple], allowance: Any, finished: list[Decision]) -> ShardAnswer:
        caps = self.caps
        if allowance is not None:
            if caps.shard_budgets is None:
                raise ExecutorError(f"shard {self.ctx.shard}: a budget share was sent to a policy that keeps none")
            caps.shard_budgets.set_allowance(allowance, f"Ray shard {self.ctx.shard} of {self.ctx.n_shards}")
        with step_gc():  # as in the driver's step (socium.simulator.step_gc)
            observations = unpack_observations(packed)
            if caps.adecide_batch is not None:
                decisions = list(await caps.adecide_batch.adecide_batch(observations))
            elif caps.adecide is not None:
                if self._limit is None:
                    self._limit = asyncio.Semaphore(self.ctx.concurrency)
                decisions = await adecide_all(caps.adecide, observations, self.ctx.concurrency, self._limit, finished)
            else:
                decisions = decide_sync(caps, observations)
            return ShardAnswer(pack_decisions(decisions), caps.rows.drain_rows() if caps.rows is not None else {}, None)

    async def stop(self, batch: int) -> int:
        """The driver was stopped while batch ``batch`` was being decided: cut this actor's work on it (and
        refuse it, should it not have started), so its ``decide`` returns the calls made. Returns how many
        running ``decide`` s were cut."""
        self._stopped_upto = max(self._stopped_upto, batch)
        cut = [t for t, b in self._work.items() if b <= batch and not t.done()]
        for t in cut:
            t.cancel()
        return len(cut)

    async def close(self) -> None:
        if self.caps.closer is not None:
            self.caps.closer.close()


RemoteShardActor = ray.remote(ShardActor)


__all__ = ["ActorContext", "RemoteShardActor", "ShardActor", "ShardAnswer", "shard_urls"]
