"""A fault-injection OpenAI-compatible server: the loopback fake server, broken on purpose.

Real servers and the proxies in front of them fail in more ways than a clean 5xx: a 200 whose
body is cut off or is an HTML error page, ``usage`` with negative or non-numeric counts, a null
or missing ``message``, a dropped connection, a 429 asking the client to come back tomorrow, a
request that never returns. Each is served here at a configurable rate, so tests (and
``python -m socium.testing.fault_server``, for drills against a real run) can check that every one
of them ends as a typed failed call rather than a dead or silently wrong run.

Which request gets which fault is a pure function of (seed, request content, how many times this
same request was seen), so a run is repeatable whatever order concurrent requests arrive in, and
a retry of a failed request draws again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

from socium.llm.fake_server import FakeOpenAIServer, FakeReply, FakeResponder

#: Every fault kind the server can serve, and what the client receives.
FAULT_KINDS: dict[str, str] = {
    "truncated": "HTTP 200, Content-Length of the whole body, half of it sent, connection closed",
    "non_json": "HTTP 200 with an HTML error page as the body",
    "bad_usage": "HTTP 200, usage.prompt_tokens = -7 and usage.completion_tokens = 'many'",
    "null_content": "HTTP 200, choices[0].message.content is null",
    "no_message": "HTTP 200, choices[0] has no message",
    "close": "the request is read and the connection closed without any answer",
    "rate_limit": "HTTP 429 with Retry-After: 86400",
    "server_error": "HTTP 503",
    "slow": "a well-formed answer after slow_s seconds",
    "hang": "no answer for hang_s seconds (an hour by default), then the connection is closed",
}


class FaultyOpenAIServer(FakeOpenAIServer):
    """:class:`FakeOpenAIServer` that breaks a configurable fraction of its answers.

    ``faults`` maps fault kinds (:data:`FAULT_KINDS`) to rates; their sum must not exceed 1. The
    remaining requests get the responder's normal answer. ``injected`` counts the faults served
    per kind and ``served_ok`` the clean answers, for a test's assertions and a drill's report.
    """

    def __init__(
        self,
        faults: Mapping[str, float] | None = None,
        responder: FakeResponder | None = None,
        *,
        seed: int = 0,
        slow_s: float = 0.5,
        retry_after: str = "86400",
        **kwargs: Any,
    ) -> None:
        super().__init__(responder, **kwargs)
        self.faults: dict[str, float] = {}
        self.set_faults(faults or {})
        self.seed = int(seed)
        self.slow_s = float(slow_s)
        self.retry_after = retry_after
        self.injected: Counter[str] = Counter()
        self.served_ok = 0
        self._seen: Counter[str] = Counter()
        self._fault_lock = threading.Lock()

    def set_faults(self, faults: Mapping[str, float]) -> None:
        """Change the fault rates (a test can break a healthy server mid-run, or heal it)."""
        unknown = sorted(set(faults) - set(FAULT_KINDS))
        if unknown:
            raise ValueError(f"unknown fault kind(s) {unknown}; known: {', '.join(FAULT_KINDS)}")
        bad = {k: v for k, v in faults.items() if not 0.0 <= float(v) <= 1.0}
        if bad or sum(float(v) for v in faults.values()) > 1.0 + 1e-9:
            raise ValueError(f"fault rates must be in [0, 1] and sum to at most 1, got {dict(faults)}")
        self.faults = {k: float(v) for k, v in faults.items() if float(v) > 0}

    def draw(self, body: dict[str, Any]) -> str | None:
        """The fault for this request (None: answer normally); counts it.

        With no fault configured nothing is drawn or remembered: a healthy server costs what the
        plain fake server does (the draw's key is the whole prompt).
        """
        if not self.faults:
            return None
        key = json.dumps([body.get("model"), body.get("messages"), body.get("seed")], sort_keys=True)
        with self._fault_lock:
            n = self._seen[key]
            self._seen[key] = n + 1
        digest = hashlib.sha256(f"{self.seed}|{n}|{key}".encode("utf-8", "surrogatepass")).digest()
        u = int.from_bytes(digest[:8], "little") / 2.0**64
        acc = 0.0
        for kind in FAULT_KINDS:  # fixed order, so a rate table means the same draws everywhere
            acc += self.faults.get(kind, 0.0)
            if u < acc:
                return kind
        return None

    def reply_for(self, body: dict[str, Any]) -> FakeReply:
        kind = self.draw(body)
        with self._fault_lock:
            if kind is None:
                self.served_ok += 1
            else:
                self.injected[kind] += 1
        if kind is None:
            return super().reply_for(body)
        if kind == "rate_limit":
            return FakeReply(status=429, headers={"Retry-After": self.retry_after}, error_message="slow down")
        if kind == "server_error":
            return FakeReply(status=503, error_message="overloaded")
        reply = super().reply_for(body)
        if kind == "slow":
            reply.delay_s += self.slow_s
        else:
            reply.fault = kind
        return reply


def _parse_rates(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        kind, _, rate = item.partition("=")
        out[kind.strip()] = float(rate)
    return out


def server_from_args(argv: list[str] | None = None) -> FaultyOpenAIServer:
    """The server ``main`` runs (not started). It keeps no request bodies (``record=False``): nobody
    reads them in a standalone process, and keeping them made its heap, and with it its collector's
    CPU per request, grow with every request served: 0.29-0.30 -> 0.34-0.35 ms per request from 2,000
    to 10^4 agents in ``benchmarks/bench_http.py`` when it kept them, 0.20 -> 0.19 ms since."""
    ap = argparse.ArgumentParser(
        description="OpenAI-compatible server on 127.0.0.1 that injects faults.",
        epilog="fault kinds: " + "; ".join(f"{k}: {v}" for k, v in FAULT_KINDS.items()),
    )
    ap.add_argument("--port", type=int, default=8099)
    ap.add_argument("--fault", action="append", default=[], metavar="KIND=RATE", help="e.g. truncated=0.1")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--delay-s", type=float, default=0.0)
    ap.add_argument("--hang-s", type=float, default=3600.0, help="how long a 'hang' fault holds its connection")
    ap.add_argument(
        "--batch-limit", type=int, default=None, help="GPU-like: at most this many decode at once; the rest queue"
    )
    ap.add_argument("--slow-s", type=float, default=0.5, help="how late a 'slow' fault answers")
    ap.add_argument(
        "--timeline", action="store_true", help="keep each request's arrival and slot times for GET /timeline"
    )
    a = ap.parse_args(argv)
    return FaultyOpenAIServer(
        _parse_rates(a.fault),
        seed=a.seed,
        port=a.port,
        delay_s=a.delay_s,
        hang_s=a.hang_s,
        slow_s=a.slow_s,
        record=False,
        batch_limit=a.batch_limit,
        timeline=a.timeline,
    )


def main(argv: list[str] | None = None) -> None:
    """Serve faults on a fixed port until interrupted: ``python -m socium.testing.fault_server``."""
    srv = server_from_args(argv)
    srv.start()
    print(f"serving {srv.base_url} with faults {srv.faults}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
        # the drill compares `received` with the trace's sum(attempts): every request must be in the trace
        print(
            f"received {srv.n_requests} requests; served {srv.served_ok} clean answers; faults injected: "
            f"{dict(srv.injected)}",
            flush=True,
        )


if __name__ == "__main__":
    main()
