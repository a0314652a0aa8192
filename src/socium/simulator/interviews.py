"""Interviews during a run: questions put to LLM agents with their memory at a step, recorded.

Why in the trace: an answer is only interpretable next to what the agent had seen and done by then,
so each row (``interviews``: step, agent_id, question, answer, call_id, origin) is written with
the ``llm_calls`` row that produced it, in one transaction: the step's own for config interviews
(``interviews: [{step, agents, question}]``), a small one of its own for ``Simulation.interview``
from Python and ``socium interview --record``. ``call_id`` is null when the answer was served from
the run's cache (the same question to the same persona and memory was asked before).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import pyarrow as pa

from socium.agents.memory import MemoryStream, WindowMemory
from socium.agents.profiles import Population
from socium.core.policy import Interviewable
from socium.errors import UsageError

COLUMNS = ("step", "agent_id", "question", "answer", "call_id", "origin")


def question_key(question: str) -> int:
    """A stable small number for a question, so two questions at one step get different request ids."""
    return zlib.crc32(question.encode("utf-8", "surrogatepass")) & 0xFFFF


def ask(
    policy: Interviewable | None,
    population: Population,
    memory: WindowMemory | MemoryStream,
    agents: Sequence[int],
    question: str,
    step: int,
) -> tuple[list[tuple[int, str, str]], list]:
    """``(agent, request_id, answer)`` per agent, asked through the run's policy (its ``interviews``
    capability; None: it cannot be interviewed), each with its memory as of now, and the calls made."""
    if policy is None:
        raise UsageError("interviews need LLM agents (policy.kind 'llm')")
    n = len(population)
    for a in agents:
        if not 0 <= a < n:
            raise UsageError(f"interview: agent {a} is not an agent id (population has {n})")
    people = [(population.profile(int(a)), list(memory.get(int(a), ()))) for a in agents]
    answers, calls = policy.interview_batch(people, question, step, question_key(question))
    return [(int(a), rid, text) for a, (rid, text) in zip(agents, answers)], calls


def rows(
    step: int, question: str, answered: list[tuple[int, str, str]], call_ids: dict[str, int], origin: str
) -> dict[str, list]:
    """``interviews`` columns; ``call_ids`` maps the step's request ids to their ``llm_calls`` ids."""
    out: dict[str, list] = {k: [] for k in COLUMNS}
    for agent, rid, text in answered:
        for k, v in zip(COLUMNS, (step, agent, question, text, call_ids.get(rid), origin)):
            out[k].append(v)
    return out


def merge(a: dict[str, list], b: dict[str, list]) -> dict[str, list]:
    return {k: a.get(k, []) + b[k] for k in COLUMNS}


def table(parts: list[dict[str, list]]) -> pa.Table:
    """The ``interviews`` rows of several questions as one table (ids typed, for the trace schema)."""
    cols: dict[str, list] = {k: [] for k in COLUMNS}
    for p in parts:
        cols = merge(cols, p)
    return pa.table(
        {k: pa.array(v, type=pa.int64() if k in ("call_id", "agent_id") else None) for k, v in cols.items()}
    )
