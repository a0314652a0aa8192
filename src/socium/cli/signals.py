"""A first SIGTERM or SIGINT as an exception that unwinds, so every long command ends with a line, not -15.

Why: SIGTERM's default ends Python at once, with nothing printed and no ``finally`` run: ``socium experiment``
and ``socium report`` stopped by a scheduler exited -15 with no line (``socium run`` had its own handler; it
is this one, shared).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGINT arrived: unwind (the simulation closes its trace and lock), then say how to go on.

    A :class:`KeyboardInterrupt`, not an ``Exception``: the handler runs wherever the main thread is, often
    inside the event loop that waits for the model server, and both asyncio and uvloop log and swallow any
    other exception raised in a loop callback (the stop was lost: the run went on to its end). These two
    they re-raise, and the requests left in flight are cancelled on the way out and logged with the
    aborted step (``socium.llm.interrupted``).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn the first SIGTERM or SIGINT into :class:`Stopped`.

    Why: SIGTERM's default ends Python at once, with nothing printed (a killed run left an empty log) and
    no ``finally`` run. The handlers go back to the defaults when the first signal comes, so a second
    Ctrl-C or kill stops at once. Outside the main thread (signals cannot be set there) nothing changes.
    Code the exception passes through may turn it into its own error (DuckDB, interrupted mid-insert,
    raises ``RuntimeError: Query interrupted``: a traceback and exit 1): once a signal came, whatever
    leaves the block is the stop.
    """
    sigs = (signal.SIGTERM, signal.SIGINT)
    old: dict[int, Any] = {}
    got: list[int] = []

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)

    def handler(signum: int, frame: Any) -> None:
        restore()
        got.append(signum)
        raise Stopped(signum)

    previous_hook, previous_excepthook = sys.unraisablehook, sys.excepthook

    def unraisable(args: Any) -> None:
        """A stop raised where no exception can leave (uvloop's C callbacks, such as the one that hands
        back a ``getaddrinfo`` answer, or a ``__del__``) is printed as "Exception ignored in" with a
        traceback, and lost: the run went on until its requests timed out (seen under load 20). Such a
        stop ends the running loop instead, as :func:`socium.llm.base.new_event_loop`'s handler does for
        the loop's own callbacks, and what leaves the block is then the stop."""
        if not (got and isinstance(args.exc_value, KeyboardInterrupt)):
            previous_hook(args)
            return
        try:
            asyncio.get_running_loop().stop()
        except RuntimeError:  # no loop here: the stop is lost where it was raised; say so as before
            previous_hook(args)

    def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        """Cython prints such a stop's traceback (``sys.excepthook``) before it hands it to the unraisable
        hook: quiet after a signal, since the run ends with its own line."""
        if not (got and isinstance(value, KeyboardInterrupt)):
            previous_excepthook(kind, value, tb)

    try:
        for s in sigs:
            old[s] = signal.signal(s, handler)
    except ValueError:  # not the main thread
        restore()
        old.clear()
    if old:
        sys.unraisablehook, sys.excepthook = unraisable, excepthook
    try:
        yield
    except Stopped:
        raise
    except BaseException as exc:
        if got:  # the stop, turned into another error on the way (DuckDB's "Query interrupted" RuntimeError)
            raise Stopped(got[0]) from exc
        raise
    finally:
        restore()
        if old:
            sys.unraisablehook, sys.excepthook = previous_hook, previous_excepthook
