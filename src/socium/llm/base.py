"""The backend protocol every model, wrapper and test double speaks.

Batched and async because the simulator asks hundreds of agents at once per step and remote
servers only reach their throughput with many requests in flight; a sync bridge exists for the
CLI, interviews and tests that are not inside an event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import os
import threading
import weakref
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from socium.errors import LLMError
from socium.llm.types import LLMRequest, LLMResult

T = TypeVar("T")


@runtime_checkable
class LLMBackend(Protocol):
    """Anything that turns a batch of requests into a same-length, same-order list of results.

    A failed request yields a result with ``error`` set; only budget exhaustion
    (:class:`~socium.errors.BudgetExceeded`) and replay misses raise, because those mean the run
    must stop rather than carry on with a gap.
    """

    @property
    def model_name(self) -> str:
        """The model answering (part of every cache key); read-only, so wrappers may derive it."""
        ...

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]: ...

    def close(self) -> None: ...


_THREAD = threading.local()
_DAEMONS: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()


def daemon_task(coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    """A task that lives as long as its loop (a connection pool's closer), not cancelled between
    :func:`run_coro_sync` calls the way a finished call's leftover tasks are."""
    task = asyncio.get_running_loop().create_task(coro)
    _DAEMONS.add(task)
    return task


#: ``SOCIUM_EVENT_LOOP=asyncio`` keeps asyncio's own loop even where uvloop is installed.
EVENT_LOOP_ENV = "SOCIUM_EVENT_LOOP"


def _uvloop() -> Any:
    """The uvloop module when it is installed, works here and is not switched off; else None."""
    if os.environ.get(EVENT_LOOP_ENV, "").strip().lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:  # not installed (Windows has no wheel): asyncio's own loop, same behaviour
        return None
    return uvloop


def event_loop_kind() -> str:
    """Which event loop :func:`new_event_loop` makes, as recorded in a run's metadata and card:
    ``"uvloop X.Y.Z"`` or ``"asyncio"``. Timings differ between the two; traces do not."""
    uv = _uvloop()
    return "asyncio" if uv is None else f"uvloop {getattr(uv, '__version__', '?')}"


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A loop for the simulator's LLM calls: uvloop's where available, else asyncio's.

    Why uvloop: against a fast server the HTTP exchange's syscalls and asyncio's per-call objects
    were the largest part of the driver's CPU per activation (~0.19 ms of ~0.8 ms, docs/inference.md);
    uvloop's transports and futures in C cut the bare exchange to about half. It is optional:
    nothing in socium depends on which loop runs, so its absence only costs speed.
    """
    uv = _uvloop()
    loop = asyncio.new_event_loop() if uv is None else uv.new_event_loop()
    loop.set_exception_handler(_quiet_interrupts)
    return loop


def _quiet_interrupts(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's error log, without the stop signal's own exception.

    Why: the SIGTERM / Ctrl-C handler raises a ``KeyboardInterrupt`` wherever the main thread is; inside one
    of the loop's callbacks (aiohttp's ``data_received`` or ``write_bytes`` under uvloop) the loop also logs
    it ("Fatal error on transport", "Task exception was never retrieved") with a whole traceback, though the
    run stops cleanly and says so in one line (4 of 18 stopped runs printed one). Where the loop swallowed
    the stop there (a transport's fatal-error path), the loop is stopped, so ``run_until_complete`` raises
    and the stop is not lost (1 of 16 stopped runs here ran on to its end, exit 0). Anything else is logged
    as the loop always does."""
    if isinstance(context.get("exception"), KeyboardInterrupt):
        loop.stop()
        return
    loop.default_exception_handler(context)


def _run_on_new_loop(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on a loop from :func:`new_event_loop` (``asyncio.run`` takes no loop before 3.12)."""
    loop = new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            _cancel_leftovers(loop, keep_daemons=False)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop = getattr(_THREAD, "loop", None)
    if loop is None or loop.is_closed():
        loop = _THREAD.loop = new_event_loop()
        atexit.register(_close_loop, loop)
    return loop


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """At exit: let daemon tasks (pool closers) finish their ``finally``, then close the loop."""
    if loop.is_closed() or loop.is_running():
        return
    try:
        _cancel_leftovers(loop, keep_daemons=False)
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


def run_coro_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, even when this thread already runs a loop.

    Not inside a loop, the coroutine runs on this thread's own long-lived loop, so HTTP connection
    pools and loop-bound primitives survive from one simulation step to the next (``asyncio.run``
    would make and tear down a loop, and reconnect, every step; on Python 3.11 it also formats the
    repr of the whole finished result when it restores its SIGINT handler, about 0.1 s for a step of
    2,000 decisions). Tasks the coroutine left running are cancelled afterwards, as ``asyncio.run``
    does. ``asyncio.run`` refuses to nest (Jupyter, async test frameworks, a sync call made from
    inside a simulator coroutine), so in that case the coroutine gets its own loop in a worker thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop = _thread_loop()
        try:
            return loop.run_until_complete(coro)
        finally:
            _cancel_leftovers(loop)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="socium-llm-sync") as pool:
        # with this thread's context: what the caller is serving (a resumed step's answers) holds there too
        return pool.submit(contextvars.copy_context().run, _run_on_new_loop, coro).result()


def _cancel_leftovers(loop: asyncio.AbstractEventLoop, keep_daemons: bool = True) -> None:
    left = [t for t in asyncio.all_tasks(loop) if not t.done() and not (keep_daemons and t in _DAEMONS)]
    if not left:
        return
    for t in left:
        t.cancel()
    loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))


def generate_sync(backend: LLMBackend, requests: Sequence[LLMRequest]) -> list[LLMResult]:
    """Blocking ``backend.generate``; see :func:`run_coro_sync` for why it works inside a loop."""
    return run_coro_sync(backend.generate(list(requests)))


def check_results(requests: Sequence[LLMRequest], results: Sequence[LLMResult], who: object) -> list[LLMResult]:
    """Guard the one-result-per-request-in-order contract at wrapper boundaries.

    A backend that drops or reorders results would silently attach answers to the wrong agents;
    failing loudly here is cheaper than debugging a corrupted trace.
    """
    results = list(results)
    if len(results) != len(requests):
        raise LLMError(f"{who!r} returned {len(results)} results for {len(requests)} requests")
    for req, res in zip(requests, results):
        if res.request_id != req.request_id:
            raise LLMError(f"{who!r} returned result {res.request_id!r} where {req.request_id!r} was expected")
    return results


class BackendWrapper:
    """Base for wrappers: delegates the model name and closing to the wrapped backend."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        return await self.inner.generate(requests)

    def close(self) -> None:
        self.inner.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


class LoopLocal:
    """Holds one object per event loop.

    asyncio primitives and HTTP connection pools are bound to the loop that first used them, and
    :func:`generate_sync` may run a batch on another loop (a worker thread's); one object per loop
    avoids "attached to a different loop" errors. Entries vanish with their loop (the one last asked
    for is held until another loop asks, or :meth:`clear`).

    The last loop's object is answered without the lock and the weak-key lookup (each builds a weak
    reference): two look-ups per LLM call (its connection gate and its session).
    """

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._values: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop], Any] | None = None

    def get(self) -> Any:
        loop = asyncio.get_running_loop()
        last = self._last  # one read: another thread may replace it meanwhile
        if last is not None and last[0]() is loop:
            return last[1]
        with self._lock:
            if loop not in self._values:
                self._values[loop] = self._factory()
            value = self._values[loop]
            self._last = (weakref.ref(loop), value)
            return value

    def items(self) -> list[tuple[asyncio.AbstractEventLoop, Any]]:
        with self._lock:
            return list(self._values.items())

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._last = None
