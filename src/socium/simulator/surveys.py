"""Scheduled surveys: every k steps a seeded sample of agents answers a question (table ``surveys``).

Rule-based agents answer with their numeric stance; LLM agents answer in structured JSON through
the policy's backend, so stance trajectories are measured the same way for both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from socium.simulator.recording import StepRecorder
from socium.simulator.rng import SURVEY, uniform


def surveyed_agents(sim: Any, step: int, index: int, fraction: float) -> np.ndarray:
    ids = np.arange(sim.n)
    if fraction >= 1.0:
        return ids
    return ids[uniform(sim.key, SURVEY, step, ids, sub=index) < fraction]


def run_surveys(sim: Any, step: int, rec: StepRecorder) -> None:
    for qi, sv in enumerate(sim.cfg.surveys):
        if (step + 1) % sv.every:
            continue
        who = surveyed_agents(sim, step, qi, sv.sample_fraction)
        if hasattr(sim.policy, "survey"):
            people = [(sim.population.profile(int(a)), list(sim.memory.get(int(a), ()))) for a in who]
            answers, calls = sim.policy.survey(people, sv.question, sv.scale, step)
            rec.calls.extend(calls)
        else:
            st = sim.population.stance[who]
            answers = [("" if np.isnan(x) else f"{x:+.3f}", None if np.isnan(x) else float(x)) for x in st]
        s = rec.surveys
        for a, (text, value) in zip(who.tolist(), answers):
            s["step"].append(step)
            s["agent_id"].append(a)
            s["question"].append(sv.question)
            s["answer"].append(text)
            s["value"].append(value)
