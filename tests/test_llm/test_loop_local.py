"""``LoopLocal``: one object per event loop, also when it answers the last loop's from its shortcut."""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading

from socium.llm.base import LoopLocal


def test_one_object_per_loop_with_loops_taking_turns() -> None:
    made = itertools.count()
    local = LoopLocal(lambda: next(made))
    loops = [asyncio.new_event_loop() for _ in range(2)]

    async def get() -> int:
        return int(local.get())

    try:
        seen = [loops[i % 2].run_until_complete(get()) for i in range(6)]
        assert seen == [0, 1, 0, 1, 0, 1]
        local.clear()  # a cleared holder makes new objects, even for the loop it answered last
        assert loops[1].run_until_complete(get()) == 2
        assert [loop for loop, _ in local.items()] == [loops[1]]
    finally:
        for loop in loops:
            loop.close()


def test_a_dead_loops_object_is_not_given_to_a_new_loop() -> None:
    made = itertools.count()
    local = LoopLocal(lambda: next(made))

    async def get() -> int:
        return int(local.get())

    for expected in range(5):  # each loop dies before the next is made (it may reuse the address)
        loop = asyncio.new_event_loop()
        assert loop.run_until_complete(get()) == expected
        loop.close()
        del loop
        gc.collect()
    assert local.items() == []  # entries vanish with their loop


def test_threads_each_with_their_own_loop() -> None:
    local = LoopLocal(object)
    got: dict[int, list[object]] = {}

    def worker(i: int) -> None:
        loop = asyncio.new_event_loop()

        async def many() -> list[object]:
            out = []
            for _ in range(2000):
                out.append(local.get())
                await asyncio.sleep(0)
            return out

        got[i] = loop.run_until_complete(many())
        loop.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    firsts = [vals[0] for vals in got.values()]
    assert all(all(v is vals[0] for v in vals) for vals in got.values())  # the same one throughout
    assert len({id(v) for v in firsts}) == 4  # and another per loop
