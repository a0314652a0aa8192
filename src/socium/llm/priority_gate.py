"""A concurrency gate where a retry goes before first attempts.

Why: the connection limit (``llm.max_concurrency``) was an :class:`asyncio.Semaphore`, a first-come queue. A
retry joined it behind every first attempt already waiting, so with a step of thousands of requests the queue
outlasted ``llm.request_deadline_s`` and a request died after 2 attempts of its 4, while requests that had
never been tried held the slots. Here a waiting retry is handed the next free slot before any waiting first
attempt: a request that has started is finished first, which is also what bounds its wall time.

A retry is marked by :data:`RETRYING` (a :class:`~contextvars.ContextVar` the retry layer sets around its
re-sends; the layers between it and the gate need not know). Slots are handed straight to the next waiter
on release, so a newcomer never overtakes a waiter of its own class.
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextvars import ContextVar

#: True while the retry layer re-sends a request (read by :class:`PriorityGate`).
RETRYING: ContextVar[bool] = ContextVar("socium_retrying", default=False)


class PriorityGate:
    """At most ``slots`` holders; waiting retries are served before waiting first attempts, each FIFO."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self.free = slots
        self._retries: deque[asyncio.Future[None]] = deque()
        self._firsts: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> tuple[int, int]:
        """(retries, first attempts) waiting for a slot."""
        return len(self._retries), len(self._firsts)

    async def acquire(self, retry: bool | None = None) -> None:
        retry = RETRYING.get() if retry is None else retry
        queue = self._retries if retry else self._firsts
        ahead = self._retries or (not retry and self._firsts)
        if self.free > 0 and not ahead:
            self.free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(fut)
        try:
            await fut
        except BaseException:
            if fut.done() and not fut.cancelled():
                self.release()  # the slot was handed over as the waiter was cancelled: pass it on
            else:
                try:
                    queue.remove(fut)
                except ValueError:
                    pass
            raise

    def release(self) -> None:
        for queue in (self._retries, self._firsts):
            while queue:
                fut = queue.popleft()
                if not fut.done():
                    fut.set_result(None)  # the slot goes straight to this waiter
                    return
        self.free += 1

    async def __aenter__(self) -> PriorityGate:
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()
