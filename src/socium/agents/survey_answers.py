"""An LLM agent's answer to a survey question: the schema it must fill, its validation, one re-ask.

The loop (:mod:`socium.simulator.surveys`) decides who is asked when and writes the rows; this module
is how a language-model agent answers, so it lives with the agents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from socium.llm.base import run_coro_sync
from socium.llm.parsing import parse_json_lenient
from socium.platform.text import clean_text

#: (answer text, value or None, reason or None): why a row has no value is never left implicit.
SurveyAnswer = tuple[str, "float | None", "str | None"]

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
