"""Where a GPU-like server's slot time goes during one LLM phase (``bench_http.py --inflight N``).

The fake server (``--timeline``) keeps each request's (arrived, slot taken, slot freed) times on the
machine's monotonic clock, which the driver shares. Over one phase ``[t0, t1]`` with ``B`` slots the
capacity is ``B x (t1 - t0)`` slot-seconds, and what was not busy splits into:

- **lead**: from ``t0`` to the first request's arrival (feeds, the first observations and prompt);
- **ramp**: from then until ``B`` requests are decoding for the first time or the first slot frees,
  whichever is first (the first wave being built and sent);
- **steady**: from then until the phase's last request arrives: a slot freed and not yet refilled,
  or never filled, i.e. the driver was busy elsewhere (parsing other answers, building prompts,
  observing) or had no CPU (on a loaded machine);
- **tail**: from the last arrival to ``t1``: nothing left to send, the slots drain one by one (the
  last partial wave), then the driver reads the last answers.

Also the mean refill gap: per request after the ramp, the time from a slot freeing to the next arrival.
"""

from __future__ import annotations

from typing import Any


def decompose(reqs: list[tuple[float, float, float]], t0: float, t1: float, slots: int) -> dict[str, Any]:
    """Shares of the phase's slot capacity: busy, ramp / steady / tail idle; their durations (s)."""
    span = max(1e-9, t1 - t0)
    cap = slots * span
    reqs = [r for r in reqs if r[2] > t0 and r[1] < t1]
    if not reqs:
        return {"busy": 0.0, "lead": 1.0, "ramp": 0.0, "steady": 0.0, "tail": 0.0, "lead_s": span, "ramp_s": 0.0,
                "tail_s": 0.0, "gap_ms": 0.0, "n": 0}  # fmt: skip
    events = sorted([(max(t0, r[1]), 1) for r in reqs] + [(min(t1, r[2]), -1) for r in reqs])
    first_arrival = max(t0, min(r[0] for r in reqs))
    last_arrival = max(first_arrival, max(r[0] for r in reqs))
    first_free = min(r[2] for r in reqs)
    full_at, n = None, 0
    for t, d in events:
        n += d
        if n >= slots:
            full_at = t
            break
    ramp_end = min(x for x in (full_at, first_free, last_arrival) if x is not None)
    edges = (("lead", t0, first_arrival), ("ramp", first_arrival, ramp_end), ("steady", ramp_end, last_arrival),
             ("tail", last_arrival, t1))  # fmt: skip
    idle = {part: 0.0 for part, *_ in edges}
    n, prev = 0, t0
    for t, d in [*events, (t1, 0)]:
        for part, lo, hi in edges:  # idle slot-seconds of [prev, t) at n decoding, split at the edges
            x, y = max(prev, lo), min(t, hi)
            if y > x:
                idle[part] += (slots - n) * (y - x)
        n += d
        prev = max(prev, t)
    full_at = ramp_end
    busy = sum(min(t1, r[2]) - max(t0, r[1]) for r in reqs)
    # the refill gap: a slot freed at f and the next request to arrive after it (steady part only)
    frees = sorted(r[2] for r in reqs if full_at is not None and full_at <= r[2] < last_arrival)
    arrivals = sorted(r[0] for r in reqs if full_at is not None and r[0] >= full_at)
    gaps, j = [], 0
    for f in frees:
        while j < len(arrivals) and arrivals[j] < f:
            j += 1
        if j == len(arrivals):
            break
        gaps.append(arrivals[j] - f)
        j += 1
    return {
        "busy": busy / cap,
        **{k: v / cap for k, v in idle.items()},
        "lead_s": first_arrival - t0,
        "ramp_s": ramp_end - first_arrival,
        "tail_s": t1 - max(last_arrival, t0),
        "gap_ms": 1e3 * sum(gaps) / len(gaps) if gaps else 0.0,
        "n": len(reqs),
    }


def summary(parts: list[dict[str, Any]]) -> str:
    """One line over a run's phases (sums weighted by each phase's length are not needed: the phases of
    a bench_http run are alike, so the mean of their shares is shown)."""
    if not parts:
        return ""
    keys = ("busy", "lead", "ramp", "steady", "tail", "lead_s", "ramp_s", "tail_s", "gap_ms")
    m = {k: sum(p.get(k, 0.0) for p in parts) / len(parts) for k in keys}
    return (f"slot time busy {m['busy']:.0%}, idle: lead {m['lead']:.0%} ({1e3 * m['lead_s']:.0f} ms), ramp "
            f"{m['ramp']:.0%} ({1e3 * m['ramp_s']:.0f} ms), steady "
            f"{m['steady']:.0%} (refill gap {m['gap_ms']:.1f} ms), tail {m['tail']:.0%} "
            f"({1e3 * m['tail_s']:.0f} ms); {len(parts)} phases")  # fmt: skip
