"""The client-side measure of how busy the connection limit kept its slots (issue 41, item 3): the
accumulator on a fake clock, the gate's counting (a hand-off is no change), and the integral against the
GPU-like fake server's own count. Integrals and lower bounds only: no wall-clock upper bound."""

from __future__ import annotations

import asyncio

import pytest

from socium.llm.factory import build_backend
from socium.llm.fake_server import FakeOpenAIServer
from socium.llm.priority_gate import PriorityGate
from socium.llm.slot_meter import SlotMeter, SlotWindow, combine
from socium.llm.types import user_request
from socium.llm.wrappers import ConcurrencyLimit, find_wrapper


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_accumulator_on_a_fake_clock() -> None:
    clock = Clock()
    m = SlotMeter(4, clock)
    assert m.take() is None  # nothing taken: not measured
    m.up()  # t=100: 1 held
    clock.t = 101.0
    m.up()  # 1 held for 1 s
    clock.t = 103.0
    m.down()  # 2 held for 2 s
    clock.t = 104.0
    m.down()  # 1 held for 1 s; nothing held from here
    clock.t = 106.0
    m.up()  # idle 2 s inside the window
    clock.t = 107.0
    m.down()  # 1 held for 1 s
    clock.t = 150.0  # after the last answer: not part of the window
    got = m.take()
    assert got == SlotWindow(7.0, 1 + 4 + 1 + 1, 2.0, 4)
    assert got.occupancy == pytest.approx(7 / 28)
    assert got.idle_share == pytest.approx(2 / 7)
    assert got.describe() == "slots 25% busy, idle 29%"
    assert m.take() is None  # a new window begins empty


def test_a_take_with_slots_held_carries_them_into_the_next_window() -> None:
    clock = Clock()
    m = SlotMeter(2, clock)
    m.up()
    m.up()
    clock.t = 102.0
    assert m.take() == SlotWindow(2.0, 4.0, 0.0, 2)
    clock.t = 103.0
    m.down()
    m.down()
    assert m.take() == SlotWindow(1.0, 2.0, 0.0, 2)


def test_combine_weighs_each_limit_by_its_capacity() -> None:
    a, b = SlotWindow(10.0, 40.0, 1.0, 4), SlotWindow(5.0, 5.0, 4.0, 2)
    got = combine([a, None, b])
    assert got is not None
    assert got.occupancy == pytest.approx(45 / (40 + 10))
    assert got.idle_share == pytest.approx(5 / 15)
    assert combine([None]) is None
    assert combine([a]) == a


def test_the_gate_counts_slots_held_and_a_hand_off_is_no_change() -> None:
    clock = Clock()
    meter = SlotMeter(2, clock)
    held: list[int] = []

    async def main() -> None:
        gate = PriorityGate(2, meter=meter)

        async def one() -> None:
            await gate.acquire()
            held.append(meter.held)
            clock.t += 1.0
            await asyncio.sleep(0)
            gate.release()

        await asyncio.gather(*(one() for _ in range(6)))

    asyncio.run(main())
    assert max(held) == 2 and meter.held == 0
    got = meter.take()
    assert got is not None
    assert got.idle_s == 0.0  # slots were handed straight on: the count never fell to 0 before the end
    # six holds of 1 s each on two slots: 6 s busy... per slot 3 s, but the clock moves once per hold, so
    # the window is 6 s, both slots held in all but the last second (the last hold runs alone)
    assert got == SlotWindow(6.0, 11.0, 0.0, 2)


def _send(backend, n: int, tag: str) -> None:
    reqs = [user_request(f"{tag}-{i}", f"{tag} {i}") for i in range(n)]
    results = asyncio.run(backend.generate(reqs))
    assert all(r.ok for r in results), [r.error for r in results if not r.ok][:1]


def test_client_busy_slot_seconds_match_the_fake_servers_timeline() -> None:
    """Each request's slot is held by the client from before it is sent to after its answer is read, so
    it contains the server's decoding of it: the client's integral is at least the server's, and with the
    server's delay far above the client's own work per request, not far above it (a loose ratio that holds
    at load 10+: the per-request overhead would have to be a third of the 0.25 s delay to break it)."""
    n, delay, limit = 24, 0.25, 4
    with FakeOpenAIServer(delay_s=delay, batch_limit=limit, timeline=True, record=False) as srv:
        cfg = {
            "backend": "openai",
            "base_urls": [srv.base_url],
            "model": "fake-model",
            "max_concurrency": limit,
            "timeout_s": 120.0,
        }
        backend = build_backend(cfg)
        lim = find_wrapper(backend, ConcurrencyLimit)
        assert lim is not None
        lim.meter.take()
        _send(backend, n, "a")
        timeline = srv.drain_timeline()
    got = lim.meter.take()
    assert got is not None and len(timeline) == n
    server_busy = sum(freed - taken for _arrived, taken, freed in timeline)
    assert server_busy >= n * delay * 0.99  # the server held each for its delay
    assert got.busy_slot_s >= server_busy * 0.99  # the client's hold contains the server's decoding
    assert got.busy_slot_s <= server_busy * 1.5
    assert got.busy_slot_s <= limit * got.window_s + 1e-9
    assert got.idle_s == 0.0  # one gathered burst: a freed slot went straight to a waiting request
    assert got.occupancy >= 0.6  # loose: the last wave and the first sends are the only empty slot time


def test_a_gap_between_bursts_is_idle_time() -> None:
    with FakeOpenAIServer(delay_s=0.05, batch_limit=2, record=False) as srv:
        backend = build_backend(
            {"backend": "openai", "base_urls": [srv.base_url], "model": "m", "max_concurrency": 2, "timeout_s": 120.0}
        )
        lim = find_wrapper(backend, ConcurrencyLimit)
        _send(backend, 3, "a")

        async def pause() -> None:
            await asyncio.sleep(0.3)

        asyncio.run(pause())
        _send(backend, 3, "b")
    got = lim.meter.take()
    assert got is not None
    assert got.idle_s >= 0.3 * 0.99  # the pause (a lower bound: load only lengthens it)
    assert got.window_s >= got.idle_s + 6 * 0.05 / 2 * 0.99  # and the two bursts around it
