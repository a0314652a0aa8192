"""A step decided in chunks (``executor.step_chunk``) writes the trace of the same step decided whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import small_config
from socium.simulator.simulation import Simulation
from socium.trace.store import trace_digest


def _run(path: Path, chunk: int, **over: Any) -> tuple[dict[str, str], int]:
    """The trace digest and how many batches the policy was asked (chunks over all steps; the chunks of a
    step overlap, issue 41 third round, so they are counted at the policy, not at ``executor.run``)."""
    cfg = small_config(
        steps=4,
        population={"n_agents": 80, "mean_activity": 0.5},
        policy={"kind": "llm"},
        llm={"backend": "random", "max_concurrency": 1},
        executor={"step_chunk": chunk, "concurrency_per_actor": 1},
        **over,
    )
    sim = Simulation(cfg, path)
    runs = 0
    inner = sim.policy.adecide_batch

    async def counted(obs: Any) -> Any:
        nonlocal runs
        runs += 1
        return await inner(obs)

    sim.policy.adecide_batch = counted
    sim.run()
    return trace_digest(path / "trace.duckdb"), runs


@pytest.mark.parametrize(
    "over",
    [
        {},
        {"perspective": "omniscient", "llm_agents": {"group_size": 4}},
        {"roles": {"bot": 0.2, "fact_checker": 0.1, "spreader": 0.1}},
    ],
    ids=["local", "omniscient-groups", "bots-and-fact-checkers"],
)
def test_chunked_step_gives_the_same_trace(tmp_path: Path, over: dict[str, Any]) -> None:
    whole, n_whole = _run(tmp_path / "whole", 0, **over)
    chunked, n_chunked = _run(tmp_path / "chunked", 5, **over)
    assert n_whole == 4 and n_chunked > 2 * n_whole  # the steps really were split
    assert whole["llm_calls"] and whole["actions"]
    whole.pop("runs"), chunked.pop("runs")  # the config recorded there names the chunk size (not its hash)
    assert chunked == whole


def test_chunks_hold_whole_narrator_groups_and_skip_bots(tmp_path: Path) -> None:
    cfg = small_config(
        population={"n_agents": 60, "mean_activity": 0.5},
        policy={"kind": "llm"},
        llm={"backend": "random", "max_concurrency": 1},
        perspective="omniscient",
        llm_agents={"group_size": 4},
        roles={"bot": 0.3},
        executor={"step_chunk": 9, "concurrency_per_actor": 1},
    )
    sim = Simulation(cfg, tmp_path / "r")
    try:
        active = sim.active_agents(0)
        bound = sim.world.moderation.policy_bound(active)
        chunks = sim.agent_steps.chunks(active)
        assert chunks[0][0] == 0 and chunks[-1][1] == len(active)
        assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
        sizes = [int(bound[lo:hi].sum()) for lo, hi in chunks]
        assert len(sizes) > 1 and all(s == 8 for s in sizes[:-1]) and 0 < sizes[-1] <= 8  # 9 // 4 groups of 4
    finally:
        sim.close()


def test_chunks_never_fall_below_twice_what_is_in_flight(tmp_path: Path) -> None:
    """A chunk smaller than the requests the backend may have in flight would idle the servers at every
    chunk's end: ``step_chunk`` is raised to twice ``llm.max_concurrency`` in-process."""
    cfg = small_config(
        population={"n_agents": 300, "mean_activity": 0.5},
        policy={"kind": "llm"},
        llm={"backend": "random", "max_concurrency": 40},
        executor={"step_chunk": 5, "concurrency_per_actor": 1},
    )
    sim = Simulation(cfg, tmp_path / "r")
    try:
        active = sim.active_agents(0)
        assert len(active) > 80
        assert [hi - lo for lo, hi in sim.agent_steps.chunks(active)][:-1] == [80] * (
            len(sim.agent_steps.chunks(active)) - 1
        )
    finally:
        sim.close()


def test_stream_memory_steps_stay_whole(tmp_path: Path) -> None:
    """Stream memory embeds in per-step batches (a model's batch can move a float), so it is not chunked."""
    cfg = small_config(
        population={"n_agents": 80, "mean_activity": 0.5},
        policy={"kind": "llm"},
        llm={"backend": "random", "max_concurrency": 1},
        llm_agents={"memory": {"kind": "stream", "embedder": "hashing"}},
        executor={"step_chunk": 5, "concurrency_per_actor": 1},
    )
    sim = Simulation(cfg, tmp_path / "r")
    try:
        active = sim.active_agents(0)
        assert len(active) > 10 and sim.agent_steps.chunks(active) == [(0, len(active))]
    finally:
        sim.close()


def test_overlapped_steps_lead_with_a_small_chunk(tmp_path: Path) -> None:
    """When a step's chunks overlap (in-process, LLM policy), the first holds only twice what can be in
    flight, so the first requests wait for 80 observations, not a whole chunk's; then chunks as before."""
    cfg = small_config(
        population={"n_agents": 300, "mean_activity": 0.9},
        policy={"kind": "llm"},
        llm={"backend": "random", "max_concurrency": 40},
        executor={"step_chunk": 100, "concurrency_per_actor": 1},
    )
    sim = Simulation(cfg, tmp_path / "r")
    try:
        active = sim.active_agents(0)
        steps = sim.agent_steps
        assert len(active) > 200 and steps.overlapped_batch(2) is not None
        plain, led = steps.chunks(active), steps.chunks(active, lead=True)
        assert [hi - lo for lo, hi in plain][:-1] == [100] * (len(plain) - 1)
        sizes = [hi - lo for lo, hi in led]
        assert sizes[0] == 80 and sizes[1:-1] == [100] * (len(sizes) - 2) and sum(sizes) == len(active)
    finally:
        sim.close()
