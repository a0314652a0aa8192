"""CPython's cyclic garbage collector while a step runs (the driver's step, a Ray actor's shard).

Why: a step allocates many containers (observations, prompts' parts, requests, results, decisions)
that all stay alive until the step ends, and creates almost no cyclic garbage (the collector freed 0
objects in the timed steps of ``benchmarks/bench_http.py``). With CPython's default thresholds
(700, 10, 10) the collector runs often, and each middle- or old-generation pass walks everything the
step holds so far, so its cost per activation grows with the number of active agents: driver CPU per
activation +19% from 2,000 to 10^4 agents with the defaults against +2% with the collector off.

So, while a step runs:

- the young threshold is at least :data:`STEP_GC_GEN0` (young collections still run and still free
  short-lived cycles). CPython counts it in tracked containers allocated less those freed, and a young
  pass walks every young container still alive: ~40 per observation and ~15 per call in flight, all
  alive until their chunk of the step is decided. So a young pass during a chunk walks the chunk, and
  its cost does not shrink with a higher threshold until the threshold exceeds what a chunk holds (at
  10,000 or 100,000: 35-50 µs per activation at 2,000 agents; at 200,000 no pass falls inside a chunk
  of the default 1,024 and the collector's CPU fell to ~1.5 µs per activation). The price: cyclic
  garbage made during a step (none in normal runs: 0 objects collected in the timed steps) can reach
  ~200,000 containers before a young pass frees it, instead of 10,000;
- the middle threshold is at least :data:`STEP_GC_GEN1`, so middle and full collections wait for the
  end of the step, when the step's temporaries are gone, instead of walking them mid-step (at 10^4
  agents they cost ~30-40 µs per activation there, ~6 at 2,000); a step of more than ~10^5
  activations (``STEP_GC_GEN0 x STEP_GC_GEN1`` = 10^7 containers) still gets one, which bounds the
  cyclic garbage a step can hold;
- afterwards the user's thresholds come back, and if a middle collection fell due during the step it
  runs then (``gc.collect(1)``), so cycles are collected as often as before in steps and CPython's own
  rule still decides when a full collection runs.

The collector is never enabled when the user disabled it, a threshold is never lowered, and
overlapping uses (a Ray actor deciding several chunks of a step at once) restore the thresholds
when the last one ends.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

#: Young-generation threshold while a step runs (CPython's default: 700): above what a chunk of
#: ``executor.step_chunk`` = 1,024 LLM activations holds (see the module docstring).
STEP_GC_GEN0 = 200_000
#: Middle-generation threshold while a step runs (young collections between middle ones; default 10).
STEP_GC_GEN1 = 50

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()


def _enter() -> None:
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            if _saved[0] > 0:  # 0: the user turned automatic collection off
                gc.set_threshold(max(_saved[0], STEP_GC_GEN0), max(_saved[1], STEP_GC_GEN1), *_saved[2:])
        _depth += 1


def _exit() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth:
            return
        gc.set_threshold(*_saved)
        due = gc.isenabled() and _saved[0] > 0 and gc.get_count()[1] > _saved[1]
    if due:
        gc.collect(1)


@contextlib.contextmanager
def step_gc() -> Iterator[None]:
    """Raised collector thresholds for one step, restored (and an overdue middle collection run) after."""
    _enter()
    try:
        yield
    finally:
        _exit()
