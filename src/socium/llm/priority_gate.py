"""A concurrency gate where a retry goes before first attempts.

Why: the connection limit (``llm.max_concurrency``) was an :class:`asyncio.Semaphore`, a first-come queue. A
retry joined it behind every first attempt already waiting, so with a step of thousands of requests the queue
outlasted ``llm.request_deadline_s`` and a request died after 2 attempts of its 4, while requests that had
never been tried held the slots. Here a waiting retry is handed the next free slot before any waiting first
attempt: a request that has started is finished first, which is also what bounds its wall time.

A retry is marked by :data:`RETRYING` (a :class:`~contextvars.ContextVar` the retry layer sets around its
re-sends; the layers between it and the gate need not know). Slots are handed straight to the next waiter
on release, so a newcomer never overtakes a waiter of its own class.

``longest_first``: waiting first attempts are served largest ``size`` first (ties in arrival order), a
step's requests then go out as in longest-processing-time-first scheduling, so the step's last wave is its
shortest calls rather than a long straggler with the other slots empty (``llm.request_order``).

Refills go before answers (issue 41, third round): a slot released is handed to a waiter, which sends
its (already built) request when it next runs; the releaser, which still has the answer to parse and
validate, calls :func:`refills_sent` first. That moves it behind every waiter handed a slot up to its
own release, so when a whole wave of answers lands in one turn of the loop (a GPU server decodes a
batch together), all the freed slots are refilled before any of the wave's answers is parsed, instead
of after all of them.

``meter`` (:class:`~socium.llm.slot_meter.SlotMeter`): told when the number of slots held changes (a slot
taken from ``free`` or given back to it; a slot handed from one holder to a waiter is no change), so a run
can say per step how busy the limit kept its slots.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import weakref
from collections import deque
from contextvars import ContextVar

from socium.llm.slot_meter import SlotMeter

#: True while the retry layer re-sends a request (read by :class:`PriorityGate`).
RETRYING: ContextVar[bool] = ContextVar("socium_retrying", default=False)


class _Handoffs:
    """Per event loop: slots handed to waiters (all gates of the loop) and how many of those waiters have
    run since, with the callers of :func:`refills_sent` waiting for a count."""

    __slots__ = ("handed", "resumed", "waiting")

    def __init__(self) -> None:
        self.handed = 0
        self.resumed = 0
        self.waiting: deque[tuple[int, asyncio.Future[None]]] = deque()  # (target, waiter), targets ascending

    def resume(self) -> None:
        self.resumed += 1
        while self.waiting and self.waiting[0][0] <= self.resumed:
            fut = self.waiting.popleft()[1]
            if not fut.done():
                fut.set_result(None)


_HANDOFFS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Handoffs] = weakref.WeakKeyDictionary()


def _handoffs() -> _Handoffs:
    loop = asyncio.get_running_loop()
    got = _HANDOFFS.get(loop)
    if got is None:
        got = _HANDOFFS[loop] = _Handoffs()
    return got


async def refills_sent() -> None:
    """Return once every waiter handed a slot so far (by any gate of this loop) has run, i.e. has sent
    its request or passed the slot on; at once when none is pending. Called by whoever freed a slot
    before the CPU work its answer needs, so a freed slot is refilled before more answers are parsed."""
    h = _HANDOFFS.get(asyncio.get_running_loop())
    if h is None or h.resumed >= h.handed:
        return
    fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    h.waiting.append((h.handed, fut))
    await fut
    # one more turn: aiohttp (Python < 3.12) writes a request's body from a task it starts as it sends, which
    # runs in the turn after the waiter did; the last waiter to run woke us before starting its own
    await asyncio.sleep(0)


class PriorityGate:
    """At most ``slots`` holders; waiting retries are served before waiting first attempts, each FIFO (first
    attempts largest ``size`` first with ``longest_first``)."""

    def __init__(self, slots: int, longest_first: bool = False, meter: SlotMeter | None = None) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self.free = slots
        self.longest_first = longest_first
        self.meter = meter
        self._retries: deque[asyncio.Future[None]] = deque()
        self._firsts: deque[asyncio.Future[None]] = deque()
        self._sized: list[tuple[int, int, asyncio.Future[None]]] = []  # longest_first: (-size, arrival, waiter)
        self._arrival = itertools.count()

    @property
    def waiting(self) -> tuple[int, int]:
        """(retries, first attempts) waiting for a slot (a cancelled sized waiter counts until skipped)."""
        return len(self._retries), len(self._firsts) + len(self._sized)

    async def acquire(self, retry: bool | None = None, size: int = 0) -> None:
        retry = RETRYING.get() if retry is None else retry
        ahead = self._retries or (not retry and (self._firsts or self._sized))
        if self.free > 0 and not ahead:
            self.free -= 1
            if self.meter is not None:
                self.meter.up()
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if retry:
            self._retries.append(fut)
        elif self.longest_first:
            heapq.heappush(self._sized, (-size, next(self._arrival), fut))
        else:
            self._firsts.append(fut)
        try:
            await fut
        except BaseException:
            if fut.done() and not fut.cancelled():
                _handoffs().resume()  # it has run (cut off): it no longer holds up refills_sent
                self.release()  # the slot was handed over as the waiter was cancelled: pass it on
            else:  # a cancelled sized waiter stays in its heap: release() skips waiters already done
                for queue in (self._retries, self._firsts):
                    try:
                        queue.remove(fut)
                    except ValueError:
                        pass
            raise
        _handoffs().resume()

    def release(self) -> None:
        for queue in (self._retries, self._firsts):
            while queue:
                fut = queue.popleft()
                if not fut.done():
                    self._hand(fut)  # the slot goes straight to this waiter
                    return
        while self._sized:
            fut = heapq.heappop(self._sized)[2]
            if not fut.done():
                self._hand(fut)
                return
        self.free += 1
        if self.meter is not None:
            self.meter.down()

    @staticmethod
    def _hand(fut: asyncio.Future[None]) -> None:
        _handoffs().handed += 1
        fut.set_result(None)

    async def __aenter__(self) -> PriorityGate:
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()
