"""Scheduled surveys: every k steps a seeded sample of agents answers a question (table ``surveys``).

Rule-based agents answer with their numeric stance; LLM agents answer in structured JSON through
the policy's backend, so stance trajectories are measured the same way for both. Every surveyed
agent gets a row with either a value or a ``reason`` saying why there is none: an answer that
fails validation is re-asked once with the error, as actions are, and a backend failure or a
second invalid answer is recorded as such, never as a silent NULL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np

from socium.llm.base import run_coro_sync
from socium.llm.parsing import parse_json_lenient
from socium.platform.text import clean_text
from socium.simulator.recording import StepRecorder
from socium.simulator.rng import SURVEY, uniform

#: (answer text, value or None, reason or None): why a row has no value is never left implicit.
SurveyAnswer = tuple[str, "float | None", "str | None"]


def surveyed_agents(sim: Any, step: int, index: int, fraction: float) -> np.ndarray:
    ids = np.arange(sim.n)
    joined = getattr(getattr(sim, "state", None), "joined", None)
    if joined is not None:  # agents not yet signed up (population.join_schedule) are not on the platform to ask
        ids = ids[joined]
    if fraction >= 1.0:
        return ids
    return ids[uniform(sim.key, SURVEY, step, ids, sub=index) < fraction]


#: Longest survey answer text the schema allows: "briefly", ~40 tokens of English, so the answer and its
#: value fit in the default 96-token budget (300 let a wordy answer run out of tokens before its value).
SURVEY_ANSWER_CHARS = 160


def survey_schema(scale: tuple[float, float]) -> dict[str, Any]:
    """Exactly ``answer`` then ``value``. Without ``additionalProperties: false`` constrained decoding
    let SmolLM2 go on past the value with invented keys (``"description": {...}``) until the token
    budget ran out: in the main job 6 of 11 surveyed agents gave no value, each after two 96-token calls."""
    lo, hi = scale
    return {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "maxLength": SURVEY_ANSWER_CHARS},
            "value": {"type": "number", "minimum": lo, "maximum": hi},
        },
        "required": ["answer", "value"],
        "additionalProperties": False,
    }


def validate_survey(data: Any, scale: tuple[float, float]) -> tuple[str, float]:
    """``(answer, value)`` from a parsed reply; ValueError naming what is wrong."""
    lo, hi = scale
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object with 'answer' and 'value'")
    v = data.get("value")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        raise ValueError(f"'value' must be a number from {lo:g} to {hi:g}")
    if not lo <= v <= hi:
        raise ValueError(f"'value' {v:g} is outside {lo:g}..{hi:g}")
    answer = data.get("answer", "")
    return clean_text(answer if isinstance(answer, str) else str(answer), 300).text, float(v)


async def _ask(
    policy: Any, profile: Any, memory: Sequence[str], question: str, scale: tuple[float, float], step: int
) -> SurveyAnswer:
    from socium.agents import prompts as P

    lo, hi = scale
    q = f'{question}\nAnswer as JSON: {{"answer": short text, "value": a number from {lo} to {hi}}}.'
    msgs = P.interview_messages(profile, memory, q, **(policy.persona_kw() if hasattr(policy, "persona_kw") else {}))
    meta = {"step": step, "agent_id": profile.id, "survey": True}
    last_err, raw = "", ""
    for attempt in range(2):
        rid = f"survey-s{step}-a{profile.id}" + (f"-{attempt}" if attempt else "")
        req = policy._request(rid, msgs, survey_schema(scale), meta, policy._seed(profile.id, step, 1000 + attempt))
        res = (await policy._generate([req]))[0]  # on the agent's own backend (llms routing)
        if not res.ok:
            return "", None, clean_text(f"backend error ({res.error_kind}): {res.error}", 500).text
        raw = clean_text(res.text, 2000).text
        try:
            answer, value = validate_survey(parse_json_lenient(res.text), scale)
            return answer, value, None
        except ValueError as exc:
            last_err = clean_text(str(exc), 300).text
            msgs = msgs + [
                {"role": "assistant", "content": raw},
                {"role": "user", "content": f"That answer was invalid: {last_err}. Reply with one valid JSON object."},
            ]
    return raw[:300], None, f"invalid output after re-ask: {last_err}"


def ask_llm_survey(
    policy: Any, people: Sequence[tuple[Any, Sequence[str]]], question: str, scale: tuple[float, float], step: int
) -> list[SurveyAnswer]:
    """Every person's answer, asked concurrently through the policy's backend stack."""
    if not people:
        return []

    async def all_() -> list[SurveyAnswer]:
        return list(await asyncio.gather(*(_ask(policy, p, mem, question, scale, step) for p, mem in people)))

    return run_coro_sync(all_())


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
        for a, ans in zip(who.tolist(), answers):
            text, value = ans[0], ans[1]
            reason = ans[2] if len(ans) > 2 else (None if value is not None else "agent has no stance")
            s["step"].append(step)
            s["agent_id"].append(a)
            s["question"].append(sv.question)
            s["answer"].append(text)
            s["value"].append(value)
            s["reason"].append(reason)
