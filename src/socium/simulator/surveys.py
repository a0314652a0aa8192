"""Scheduled surveys: every k steps a seeded sample of agents answers a question (table ``surveys``).

Rule-based agents answer with their numeric stance; LLM agents answer in structured JSON through
the policy's backend, so stance trajectories are measured the same way for both. Every surveyed
agent gets a row with either a value or a ``reason`` saying why there is none: an answer that
fails validation is re-asked once with the error, as actions are, and a backend failure or a
second invalid answer is recorded as such, never as a silent NULL.

The loop hands these functions the parts of the world they read (population, memory, who has signed
up, the run's key), never the simulation itself, which imports this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from socium.agents.memory import MemoryStream, WindowMemory
from socium.agents.profiles import Population
from socium.config.agents import SurveyConfig
from socium.core.policy import Surveyable
from socium.core.rng import SURVEY, uniform
from socium.simulator.recording import StepRecorder


def surveyed_agents(n: int, joined: np.ndarray | None, key: int, step: int, index: int, fraction: float) -> np.ndarray:
    """Who answers survey ``index`` at ``step``: a seeded sample (the run's ``key``) of the ``n`` agents,
    of those signed up by then when ``joined`` says who has."""
    ids = np.arange(n)
    if joined is not None:  # agents not yet signed up (population.join_schedule) are not on the platform to ask
        ids = ids[joined]
    if fraction >= 1.0:
        return ids
    return ids[uniform(key, SURVEY, step, ids, sub=index) < fraction]


def run_surveys(
    surveys: Sequence[SurveyConfig],
    step: int,
    rec: StepRecorder,
    *,
    asker: Surveyable | None,
    population: Population,
    memory: WindowMemory | MemoryStream,
    joined: np.ndarray | None,
    key: int,
) -> None:
    """Ask the ``surveys`` due at ``step`` and add their rows to the step's recorder: through ``asker``
    (the policy's ``surveys`` capability) with each agent's memory, else the agents' numeric stances."""
    for qi, sv in enumerate(surveys):
        if (step + 1) % sv.every:
            continue
        who = surveyed_agents(len(population), joined, key, step, qi, sv.sample_fraction)
        answers: Sequence[tuple[Any, ...]]  # (text, value[, reason[, outcome[, stated value]]])
        if asker is not None:
            people = [(population.profile(int(a)), list(memory.get(int(a), ()))) for a in who]
            answers, calls = asker.survey(people, sv.question, sv.scale, step)
            rec.calls.extend(calls)
        else:
            st = population.stance[who]
            answers = [("" if np.isnan(x) else f"{x:+.3f}", None if np.isnan(x) else float(x)) for x in st]
        s = rec.surveys
        for a, ans in zip(who.tolist(), answers):
            text, value = ans[0], ans[1]
            reason = ans[2] if len(ans) > 2 else (None if value is not None else "agent has no stance")
            # typed outcome (socium.agents.survey_answers.SurveyOutcome); only "ok" values enter a mean
            outcome = (
                ans[3] if len(ans) > 3 else ("ok" if value is not None else "no_stance" if len(ans) < 3 else "invalid")
            )
            s["step"].append(step)
            s["agent_id"].append(a)
            s["question"].append(sv.question)
            s["answer"].append(text)
            s["value"].append(value)
            s["reason"].append(reason)
            s["outcome"].append(outcome)
            s["stated_value"].append(ans[4] if len(ans) > 4 else value)
