"""Starting (or joining) Ray the one way every socium entry point does: sweeps, episodes, Ray executors.

Why: ``ray.init`` prints to the terminal what a researcher need not read on every command (the INFO line
"Started a local Ray instance" and Ray >= 2.5x's notice that token authentication is on, the secure
default), and those lines broke into ``socium sweep``'s progress display and table. Ray's own logging stays
at WARNING, so its real warnings and errors still show; only that one notice is dropped. The notice that
authentication is *disabled* (a real risk) is kept. ``ray_init`` keys set by the user (``logging_level``
included) win over these defaults.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any

#: The notice dropped: it says the secure default is in force and how to turn it off.
TOKEN_AUTH_ENABLED = "Token authentication is enabled for this Ray cluster"
_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"


class _DropAuthEnabledNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return TOKEN_AUTH_ENABLED not in record.getMessage()


_FILTER = _DropAuthEnabledNotice()


def start_ray(**kwargs: Any) -> None:
    """``ray.init(**kwargs)`` with usage stats off, Ray's log level at WARNING and the notice above dropped."""
    import ray  # importing Ray costs about a second: only where it is used

    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    logger = logging.getLogger(_AUTH_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    kwargs.setdefault("logging_level", logging.WARNING)
    before = _sigterm_handler()
    ray.init(**kwargs)
    if callable(before):
        # A local Ray node replaces SIGTERM's handler with its own (drain, kill its processes, sys.exit(1)), so
        # `socium run`'s stop on SIGTERM was lost: the run died with exit -6 and C++ stack lines instead of
        # closing its trace and exiting 143. A handler the caller set is put back; Ray's processes still end
        # with the driver (ray.shutdown when the run closes, and Ray's own atexit hook).
        signal.signal(signal.SIGTERM, before)


def _sigterm_handler() -> Any:
    """SIGTERM's Python handler now, or None outside the main thread (where handlers cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.getsignal(signal.SIGTERM)
