"""Issue 41 item 3: ``llm.request_order: longest_first`` hands a free connection slot to the longest prompt
waiting, so a step's last wave holds its shortest calls; the requests and their answers are unchanged."""

from __future__ import annotations

import asyncio

import pytest

from socium.config.loading import config_from_dict
from socium.llm.base import LLMBackend
from socium.llm.factory import build_backend
from socium.llm.priority_gate import PriorityGate
from socium.llm.types import LLMRequest, LLMResult, user_request
from socium.llm.wrappers import ConcurrencyLimit, find_wrapper


def test_longest_first_gate_serves_retries_then_the_largest_waiter_and_skips_the_cancelled() -> None:
    async def go() -> tuple[list[str], PriorityGate]:
        gate = PriorityGate(1, longest_first=True)
        served: list[str] = []
        await gate.acquire(retry=False)

        async def waiter(name: str, size: int, retry: bool = False) -> None:
            await gate.acquire(retry=retry, size=size)
            served.append(name)
            gate.release()

        specs = [("s3", 3), ("s10a", 10), ("s1", 1), ("s10b", 10)]
        tasks = [asyncio.create_task(waiter(n, k)) for n, k in specs]
        tasks.append(asyncio.create_task(waiter("retry", 0, retry=True)))
        gone = asyncio.create_task(waiter("gone", 99))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
        gate.release()
        await asyncio.gather(*tasks)
        with pytest.raises(asyncio.CancelledError):
            await gone
        return served, gate

    served, gate = asyncio.run(go())
    assert served == ["retry", "s10a", "s10b", "s3", "s1"]  # ties keep their arrival order
    assert gate.free == 1 and gate.waiting == (0, 0)


class _Server(LLMBackend):
    """Answers each request after a virtual 5 ms, with text that depends on the request alone."""

    model_name = "m"

    def __init__(self) -> None:
        self.order: list[str] = []

    async def generate(self, requests):  # type: ignore[override]
        out = []
        for r in requests:
            self.order.append(r.request_id)
            await asyncio.sleep(0.005)
            out.append(LLMResult(request_id=r.request_id, text=f"{len(r.messages[-1].content)}"))
        return out

    def close(self) -> None:
        pass


def _reqs() -> list[LLMRequest]:
    lengths = [5, 40, 12, 40, 1, 30, 7, 25]
    return [user_request(f"q{i}", "x" * n) for i, n in enumerate(lengths)]


@pytest.mark.parametrize("longest", [False, True])
def test_concurrency_limit_sends_longest_first_and_returns_the_same_answers(longest: bool) -> None:
    server = _Server()
    be = ConcurrencyLimit(server, 2, longest_first=longest)

    async def go() -> list[list[LLMResult]]:
        return list(await asyncio.gather(*(be.generate([r]) for r in _reqs())))

    got = [r[0] for r in asyncio.run(go())]
    assert [r.request_id for r in got] == [f"q{i}" for i in range(8)]
    assert [r.text for r in got] == ["5", "40", "12", "40", "1", "30", "7", "25"]
    # the first two take the free slots on arrival; the six that waited go out longest first, or as they came
    waited = ["q3", "q5", "q7", "q2", "q6", "q4"] if longest else ["q2", "q3", "q4", "q5", "q6", "q7"]
    assert server.order == ["q0", "q1", *waited]


def test_request_order_is_read_from_the_config_and_left_out_of_its_dump_at_the_default() -> None:
    base = {
        "name": "t",
        "population": {"n_agents": 4},
        "policy": {"kind": "llm"},
        "llm": {"backend": "openai", "base_urls": ["http://127.0.0.1:9/v1"], "model": "m"},
    }
    plain = config_from_dict(base)
    assert "request_order" not in plain.model_dump(mode="json")["llm"]
    ordered = config_from_dict({**base, "llm": {**base["llm"], "request_order": "longest_first"}})
    assert ordered.model_dump(mode="json")["llm"]["request_order"] == "longest_first"
    assert ordered.config_hash() != plain.config_hash()
    assert ordered.llm is not None
    limit = find_wrapper(build_backend(ordered.llm), ConcurrencyLimit)
    assert limit is not None and limit.longest_first
    with pytest.raises(Exception, match="request_order"):
        config_from_dict({**base, "llm": {**base["llm"], "request_order": "shortest"}})
