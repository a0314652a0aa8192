"""The GPU-like fake server (issue 41.4): throughput grows with what is in flight up to its batch
limit, then requests queue; its /metrics counters give busy slot-time and idle time; TCP_NODELAY on."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import aiohttp
import pytest

from socium.llm.fake_server import FakeOpenAIServer

BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}


async def _burst(url: str, n: int) -> tuple[float, dict[str, Any], dict[str, Any]]:
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{url}/metrics") as r:
            before = await r.json()
        t0 = time.perf_counter()

        async def one() -> None:
            async with s.post(f"{url}/chat/completions", data=json.dumps(BODY)) as r:
                assert r.status == 200
                await r.read()

        await asyncio.gather(*(one() for _ in range(n)))
        wall = time.perf_counter() - t0
        async with s.get(f"{url}/metrics") as r:
            after = await r.json()
    return wall, before, after


class PeakServer(FakeOpenAIServer):
    """Also keeps the most requests ever decoding at once (``_note`` is the server's one place that
    changes that number): what "queued" and "one wave" mean, counted instead of timed."""

    peak = 0

    def _note(self, change: int) -> None:
        super()._note(change)
        self.peak = max(self.peak, self._decoding)


def test_batch_limit_queues_what_exceeds_it() -> None:
    """8 requests at 0.3 s on 4 slots take two rounds; on an unbounded server more than 4 decode at once.

    Counted, not timed: comparing the two servers' wall times failed when the machine's load changed
    between the two bursts."""
    with PeakServer(delay_s=0.3, batch_limit=4, record=False) as gpu:
        wall, before, after = asyncio.run(_burst(gpu.base_url, 8))
    assert wall >= 0.58  # two waves of 0.3 s: the second four waited for slots (a lower bound: load only adds)
    assert gpu.peak == 4  # never more than the batch limit decoding; the limit was reached
    busy = after["busy_slot_s"] - before["busy_slot_s"]
    assert busy >= 8 * 0.3 - 0.05  # each held a slot for its 0.3 s (plus scheduling, however long)
    assert busy <= 4 * wall  # never more than 4 slots busy inside the burst: queued time is not busy time
    assert after["requests"] - before["requests"] == 8
    assert after["batch_limit"] == 4
    with PeakServer(delay_s=0.3, record=False) as flat:
        asyncio.run(_burst(flat.base_url, 8))
    # one wave: requests beyond the 4 slots decoded together (the 8 are sent at once; 0.3 s each leaves
    # time for the fifth to arrive while the first still decodes on any machine that runs this suite)
    assert flat.peak > 4


def test_idle_time_counts_only_time_with_nothing_decoding() -> None:
    """Idle time between two /metrics reads covers the sleep but not the 0.2 s two requests decode.

    The wall clock spans both metrics reads (one session, read before the first and after the second),
    so everything the server could count as idle lies inside it, however slow the machine."""
    with FakeOpenAIServer(delay_s=0.2, batch_limit=2, record=False) as srv:

        async def go() -> tuple[dict[str, Any], dict[str, Any], float]:
            async with aiohttp.ClientSession() as s:
                t0 = time.perf_counter()
                async with s.get(f"{srv.base_url}/metrics") as r:
                    before = await r.json()
                await asyncio.sleep(0.3)  # idle

                async def one() -> None:
                    async with s.post(f"{srv.base_url}/chat/completions", data=json.dumps(BODY)) as r:
                        assert r.status == 200
                        await r.read()

                await asyncio.gather(one(), one())  # 0.2 s busy
                async with s.get(f"{srv.base_url}/metrics") as r:
                    after = await r.json()
                return before, after, time.perf_counter() - t0

        before, after, wall = asyncio.run(go())
    idle = after["idle_s"] - before["idle_s"]
    assert idle >= 0.25  # the sleep was idle
    assert idle <= wall - 0.19  # the two requests' 0.2 s were not


def test_server_sockets_have_nodelay() -> None:
    """Without TCP_NODELAY, Nagle plus delayed ACK can add ~40 ms to a reply on loopback."""
    with FakeOpenAIServer(record=False) as srv:

        async def go() -> list[int]:
            async with aiohttp.ClientSession() as s:
                async with s.post(f"{srv.base_url}/chat/completions", data=json.dumps(BODY)) as r:
                    await r.read()
                return [w.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                        for w in list(srv._writers)]  # fmt: skip

        flags = asyncio.run(go())
    assert flags and all(flags)


def test_batch_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_limit"):
        FakeOpenAIServer(batch_limit=0)


def test_timeline_gives_each_requests_slot_times_and_is_emptied_by_reading() -> None:
    """``timeline=True``: GET /timeline returns (arrived, slot taken, slot freed) per request since the last
    read; 6 requests on 3 slots: at most 3 hold a slot at any moment. Off by default."""

    async def go(url: str) -> tuple[list[list[float]], list[list[float]]]:
        await _burst(url, 6)
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{url}/timeline") as r:
                first = (await r.json())["requests"]
            async with s.get(f"{url}/timeline") as r:
                again = (await r.json())["requests"]
        return first, again

    with FakeOpenAIServer(delay_s=0.05, batch_limit=3, record=False, timeline=True) as gpu:
        got, again = asyncio.run(go(gpu.base_url))
    assert len(got) == 6 and again == []
    assert all(a <= t <= f for a, t, f in got)
    assert all(f - t >= 0.05 - 1e-3 for _, t, f in got)  # each held its slot for the decode time
    holding = [sum(1 for _, t, f in got if t <= at < f) for _, at, _ in got]
    assert max(holding) <= 3
    # 6 x 0.05 slot-seconds on at most 3 slots: the slots were held over at least two decode times
    assert max(f for *_, f in got) - min(t for _, t, _ in got) >= 2 * 0.05 - 1e-3
    with FakeOpenAIServer(record=False) as plain:
        assert plain.timeline is None and plain.drain_timeline() == []
