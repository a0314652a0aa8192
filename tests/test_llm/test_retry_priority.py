"""Issue 36 item 16: a retry waited in the same queue as first attempts, so behind a long queue a request died
after 2 of its attempts (``request_deadline_s`` passed while it waited for a connection slot). A waiting
retry now gets the next free slot before any waiting first attempt."""

from __future__ import annotations

import asyncio

import pytest

from socium.llm.base import LLMBackend
from socium.llm.priority_gate import PriorityGate
from socium.llm.types import LLMRequest, LLMResult
from socium.llm.wrappers import ConcurrencyLimit, RetryingBackend


class _Server(LLMBackend):
    """One answer per 10 ms of (virtual) service; the first attempt of ``flaky`` fails with a timeout."""

    model_name = "m"

    def __init__(self, flaky: str) -> None:
        self.flaky = flaky
        self.order: list[str] = []

    async def generate(self, requests):  # type: ignore[override]
        out = []
        for r in requests:
            self.order.append(r.request_id)
            await asyncio.sleep(0.01)
            if r.request_id == self.flaky and self.order.count(r.request_id) == 1:
                out.append(LLMResult.failure(r.request_id, "read timeout", "timeout"))
            else:
                out.append(LLMResult(request_id=r.request_id, text="{}"))
        return out

    def close(self) -> None:
        pass


def _req(i: int) -> LLMRequest:
    from socium.llm.types import user_request

    return user_request(f"q{i}", "hi")


def test_a_retry_is_sent_before_queued_first_attempts_and_meets_its_deadline() -> None:
    server = _Server(flaky="q0")
    # one slot, 40 requests queued: the queue is 0.4 s long, the deadline 0.2 s, the retry's backoff 0
    be = RetryingBackend(
        ConcurrencyLimit(server, 1), max_attempts=3, base_delay_s=0.0, deadline_s=0.2, per_request=True
    )

    async def go() -> list[LLMResult]:
        return list(await be.generate([_req(i) for i in range(40)]))

    res = asyncio.run(go())
    assert all(r.ok for r in res), [r.error for r in res if not r.ok]  # q0's retry made it within its deadline
    assert server.order.index("q0", 1) <= 3  # q0's retry went right after the slot freed, not at the queue's end
    assert res[0].attempts == 2


def test_priority_gate_serves_retries_first_and_survives_cancellation() -> None:
    async def go() -> list[str]:
        gate = PriorityGate(1)
        served: list[str] = []
        await gate.acquire(retry=False)

        async def waiter(name: str, retry: bool) -> None:
            await gate.acquire(retry=retry)
            served.append(name)
            gate.release()

        tasks = [asyncio.create_task(waiter(n, r)) for n, r in (("f1", False), ("f2", False), ("r1", True))]
        cancelled = asyncio.create_task(waiter("gone", True))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.sleep(0)
        assert gate.waiting == (1, 2)
        gate.release()
        await asyncio.gather(*tasks)
        assert gate.free == 1 and gate.waiting == (0, 0)
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        return served

    assert asyncio.run(go()) == ["r1", "f1", "f2"]
