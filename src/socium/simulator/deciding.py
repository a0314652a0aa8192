"""How a batch of observations becomes decisions inside one process: shared by every executor.

Why its own module: the in-process executor and each Ray actor run policies the same way (an async
policy overlapped up to a concurrency, a sync one batched or per agent); :mod:`socium.simulator.executors`
builds the Ray executor on demand, so the helpers both use live here rather than in either of them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, TypeVar

from socium.core.contracts import Decision, Observation
from socium.core.policy import AsyncDecider, PolicyCapabilities

T = TypeVar("T")


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


async def sliced(work: Generator[None, None, T]) -> T:
    """Run a generator that yields between slices of CPU work, one slice per turn of the event loop, so that
    answers arriving meanwhile are read and their slots refilled; its return value."""
    while True:
        try:
            next(work)
        except StopIteration as done:
            return done.value
        await asyncio.sleep(0)


async def decide_overlapped(
    decide_batch: Callable[[list[Observation]], Awaitable[list[Decision]]],
    n_chunks: int,
    prepare: Callable[[int], Generator[None, None, tuple[list[Observation], Any]]],
    collect: Callable[[int, list[Observation], Any, list[Decision]], None],
) -> None:
    """A step's chunks decided with the next chunk's observations built while this one's calls are in flight.

    Why (issue 41, third round): decided one after the other, every chunk of a step began with a ramp (the
    server's slots filling as the first prompts are built) and ended with a tail (the last partial wave, the
    slots emptying one by one), and the next chunk's observations were built with the server idle. Here
    chunk ``i + 1`` is prepared (``prepare(i + 1)``, a generator yielding between slices of observations)
    and its requests join the connection gate while chunk ``i``'s are still out, so the slots it frees are
    refilled from the next chunk: one ramp and one tail per step. At most two chunks are held at once (the
    memory bound of ``executor.step_chunk`` doubles). ``collect(i, observations, extra, decisions)`` is called
    in chunk order, so whatever it accumulates comes out as with one chunk after the other; decisions do not
    depend on when they were made (each call's seed comes from its key, ``llm_calls`` rows are sorted). The
    first exception (or a cancellation) cancels every chunk in flight, waits for them to unwind (each notes
    its requests cut off on the wire) and propagates.
    """
    running: deque[tuple[int, list[Observation], Any, asyncio.Future[list[Decision]]]] = deque()
    try:
        for i in range(n_chunks):
            observations, extra = await sliced(prepare(i))
            running.append((i, observations, extra, asyncio.ensure_future(decide_batch(observations))))
            while len(running) > 1:  # the previous chunk's calls are out; collect it before preparing another
                j, obs, ext, task = running.popleft()
                collect(j, obs, ext, await task)
        while running:
            j, obs, ext, task = running.popleft()
            collect(j, obs, ext, await task)
    except BaseException:
        tasks = [t for *_, t in running]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
