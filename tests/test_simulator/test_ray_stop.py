"""Issue 36 item 16: a stopped Ray run loses none of the calls made inside its actors.

Before: a SIGTERM mid-step lost the calls of shards that had already answered (their decisions were read but
their calls looked for in the wrong place, or their result was dropped by ``ray.cancel``) and sometimes those
cut off on the wire: 6-16 of ~16 requests per stop were in no trace (measured, ``benchmarks/drill_ray_signal.py``).
Now the driver stops each shard still deciding, which hands back every call it made
(``socium.simulator.ray_actor``). The end-to-end test is made deterministic by its server, not by timing: the
requests of one shard hang until the run is stopped, so that shard *must* be cut off, while the other shard's
requests are answered at once; the signal comes only once the server holds exactly the requests the reference
run says the step makes.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from socium.core.contracts import Decision, Observation


# ---- the actor's stop protocol, without Ray (deterministic: the event loop's order only) ----------------
class _HangingPolicy:
    """Answers agent 0 at once, hangs on every other agent; notes a cut-off call as it unwinds (as the
    connection-limit layer does, ``socium.llm.interrupted``)."""

    def __init__(self) -> None:
        self.pending: list[Any] = []
        self.asked = 0
        self.hung = asyncio.Event()

    def decide(self, obs: Observation) -> Decision:
        return Decision(obs.agent_id, [])

    async def adecide_batch(self, observations: list[Observation]) -> list[Decision]:
        self.asked += len(observations)

        async def one(o: Observation) -> Decision:
            if o.agent_id == 0:
                self.pending.append(("answered", o.agent_id))
                return Decision(o.agent_id, [])
            try:
                self.hung.set()
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                await asyncio.sleep(0)  # unwinding takes turns of the loop
                self.pending.append(("interrupted", o.agent_id))
                raise
            raise AssertionError("unreachable")

        return list(await asyncio.gather(*(one(o) for o in observations)))

    def drain_calls(self) -> list[Any]:
        out, self.pending = self.pending, []
        return out


def _obs(*ids: int) -> list[Observation]:
    return [Observation(agent_id=i, step=0, time_s=0.0, hour=8, feed=[]) for i in ids]


@pytest.fixture
def actor_of():
    pytest.importorskip("ray")
    from socium.simulator.ray_actor import ActorContext, ShardActor

    made = []

    def make(policy: Any) -> Any:
        made.append(ShardActor(policy, ActorContext(shard=0, n_shards=1, seed=1, concurrency=4)))
        return made[-1]

    yield make
    gc.unfreeze()  # the actor froze the collector's view of this process


def test_a_stopped_shard_returns_every_call_it_made_answered_and_cut_off(actor_of) -> None:
    from socium.simulator.ray_wire import pack_observations

    policy = _HangingPolicy()
    actor = actor_of(policy)

    async def scenario() -> tuple[Any, int]:
        decide = asyncio.ensure_future(actor.decide(pack_observations(_obs(0, 1, 2)), None, 7))
        await policy.hung.wait()
        cut = await actor.stop(7)
        return await decide, cut

    answer, cut = asyncio.run(scenario())
    assert cut == 1 and answer.decisions == [] and answer.stopped is not None
    assert sorted(answer.stopped) == [("answered", 0), ("interrupted", 1), ("interrupted", 2)]
    assert policy.pending == []  # handed over once, not left for a later drain


def test_a_stop_that_overtakes_its_decide_asks_nothing_and_later_batches_run(actor_of) -> None:
    from socium.simulator.ray_wire import pack_observations, unpack_decisions

    class Quick(_HangingPolicy):
        async def adecide_batch(self, observations: list[Observation]) -> list[Decision]:
            self.asked += len(observations)
            return [Decision(o.agent_id, []) for o in observations]

    policy = Quick()
    actor = actor_of(policy)
    assert asyncio.run(actor.stop(3)) == 0
    stopped = asyncio.run(actor.decide(pack_observations(_obs(0, 1)), None, 3))  # its arguments came late
    assert stopped.stopped == [] and policy.asked == 0
    done = asyncio.run(actor.decide(pack_observations(_obs(4, 5)), None, 4))  # the next batch is not stopped
    assert done.stopped is None and [d.agent_id for d in unpack_decisions(done.decisions)] == [4, 5]
    assert asyncio.run(actor.stop(4)) == 0  # finished before the stop: its answer already holds everything


def test_a_cancelled_batch_waits_for_its_started_tasks_to_unwind() -> None:
    """``started_in_slices`` cancelled between two slices left its started tasks unwinding after it had
    raised: their cut-off calls reached the call log after the stopped shard had handed it over."""
    from socium.agents.llm_policy import START_SLICE, started_in_slices

    started: list[int] = []
    unwound: list[int] = []

    async def fn(x: int) -> int:
        started.append(x)
        try:
            await asyncio.Event().wait()
        finally:
            for _ in range(3):
                await asyncio.sleep(0)
            unwound.append(x)
        return x

    async def scenario() -> None:
        batch = asyncio.ensure_future(started_in_slices(fn, range(START_SLICE * 10)))
        while len(started) < START_SLICE:  # the first slice runs; the batch is between slices
            await asyncio.sleep(0)
        assert not batch.done()
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch
        assert sorted(unwound) == sorted(started), (len(unwound), len(started))

    asyncio.run(scenario())
