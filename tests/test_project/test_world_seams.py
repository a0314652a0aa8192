"""The typed world's seams stay where issue 35 put them: the parts of a run take the world whole, the loop stays
small, the after-action sequence is written once, and nothing reaches the world as ``Any``."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import socium
from socium.simulator.run_setup import RunSetUp
from socium.simulator.step_agents import StepAgents

SRC = Path(socium.__file__).parent
UNTYPED = re.compile(r"(sim|spec|world): Any|run: object")


def test_parts_take_the_world_whole() -> None:
    assert len(inspect.signature(StepAgents.__init__).parameters) <= 4  # self, world, executor, caps
    assert len(inspect.signature(RunSetUp.restore).parameters) <= 3  # self, store, world


def test_the_loop_stays_small() -> None:
    lines = (SRC / "simulator" / "simulation.py").read_text(encoding="utf-8").count("\n")
    assert lines <= 400, f"simulation.py has {lines} lines: move a part out (world, step_agents, run_setup)"


def test_the_after_action_sequence_is_written_once() -> None:
    """Moderation, ``recsys.observe`` and ``timing.observe`` follow a step's actions only through
    ``World.after_actions``, which the live step and resume both call."""
    for name in ("simulation.py", "run_setup.py", "step_agents.py"):
        text = (SRC / "simulator" / name).read_text(encoding="utf-8")
        assert ".recsys.observe(" not in text and "timing.observe(" not in text, name
    assert "after_actions(step, observations, shown=" in (SRC / "simulator" / "simulation.py").read_text(
        encoding="utf-8"
    )
    assert "after_actions(step, recorded=" in (SRC / "simulator" / "run_setup.py").read_text(encoding="utf-8")


def test_nothing_reaches_the_world_untyped() -> None:
    # the propagation spec too: it sits at the bottom of its rooms, so every room types it (issue 35, build 3)
    found = [
        f"{p.relative_to(SRC)}:{i}: {line.strip()}"
        for p in sorted(SRC.rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if UNTYPED.search(line)
    ]
    assert found == []
