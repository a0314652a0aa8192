"""Model-quality guardrails: which model ran, what its output can support, and a visible warning when the
output is too broken to read as behaviour (issue 29 item 7).

A run of SmolLM2-135M reached an invalid-action rate of 0.39, posts ending in "Reply with one valid JSON
object." (the re-ask prompt, copied back), and survey numbers that contradict their words, and no report
said so. The Simulation Card and every report built on it now name what the model can support and carry
a warning for each measure past its threshold; the thresholds are here, in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb

from socium.agents.retry import NOTE_MARKERS
from socium.trace.queries import quality


@dataclass(frozen=True)
class Thresholds:
    """Rates above which a run's output is flagged, and why each sits where it does.

    ``invalid_rate`` 0.10: an invalid answer is replaced by no action, so past one in ten agent-steps the
    activity, reach and vote counts measure the parser as much as the model (SmolLM2-135M: up to 0.39).
    ``leaked_rate`` 0.02: a post carrying prompt text ("Reply with one valid JSON object.") is the model
    echoing its instructions, not speaking; more than 1 post in 50 makes text measures (drift, stance words,
    extremity) read socium's prompts. ``survey_inconsistent_rate`` 0.10: answers whose number contradicts
    their words (or that are empty) are excluded from means, but past one in ten the remaining numbers come
    from a model that fills the number independently of what it says.
    """

    invalid_rate: float = 0.10
    leaked_rate: float = 0.02
    survey_inconsistent_rate: float = 0.10


THRESHOLDS = Thresholds()

#: Instruction phrases of socium's own prompts (agents/action_prompts.py, llm_policy.py, survey_answers.py,
#: group_policy.py); any of them in an agent's post is the prompt leaking into the output.
LEAK_MARKERS = (
    "reply with one valid json object",
    "reply with one json",
    "answer with one json",
    "that answer was invalid",
    "action is {",
    *NOTE_MARKERS,  # the retry note since issue 40 (socium.agents.retry)
)

#: Survey outcomes that mean the stored number does not measure the answer (agents/survey_answers.py).
SURVEY_BAD_OUTCOMES = ("inconsistent", "degenerate")
#: Survey outcomes where no answer came back at all: not the model's inconsistency, left out of the rate.
SURVEY_NOT_ANSWERED = ("backend_error", "no_stance", "unrecorded")

#: What a known model's output can support, matched case-insensitively against the model names called.
MODEL_SUPPORT = {
    "smollm2-135m": (
        "SmolLM2-135M-Instruct is a plumbing model: it exercises socium end to end (prompts, schemas, parsing, "
        "traces) on a CPU; its output is not social behaviour and supports no finding about people or platforms"
    ),
    "qwen2.5-coder-1.5b": (
        "Qwen2.5-Coder-1.5B is a small code model: it fills the JSON schemas reliably, but its choices are not "
        "validated as social behaviour; read its results as checks of the pipeline"
    ),
}
UNASSESSED = (
    "not assessed by socium: check it against data (socium validate, the propagation and herding studies) before "
    "reading its output as social behaviour"
)


def model_support(models: Iterable[str]) -> str:
    """What the output of the named models can support (the first known one; a generic caution otherwise)."""
    names = [m.lower().replace("_", "-") for m in models]
    for key, text in MODEL_SUPPORT.items():
        if any(key in n for n in names):
            return text
    return UNASSESSED


def run_checks(con: duckdb.DuckDBPyConnection, outcomes: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """(count, out of) per guarded measure: invalid actions (from the card's ``outcomes``), leaked posts,
    survey answers whose number does not measure their words."""
    surveys = quality.survey_answer_outcomes(con)
    answered = sum(n for k, n in surveys.items() if k not in SURVEY_NOT_ANSWERED)
    return {
        "invalid_rate": (sum(outcomes.values()) - int(outcomes.get("ok", 0)), sum(outcomes.values())),
        "leaked_rate": quality.leaked_posts(con, LEAK_MARKERS),
        "survey_inconsistent_rate": (sum(surveys.get(k, 0) for k in SURVEY_BAD_OUTCOMES), answered),
    }


_WHAT = {
    "invalid_rate": "of the agents' actions were invalid or not applied",
    "leaked_rate": "of the agents' posts contain socium's prompt instructions ('Reply with one valid JSON object.')",
    "survey_inconsistent_rate": "of the survey answers give a number that contradicts their words, or no words",
}


def quality_warnings(checks: Mapping[str, tuple[int, int]], thresholds: Thresholds = THRESHOLDS) -> list[str]:
    """One line per measure past its threshold, with its count, n and threshold; empty for a clean run."""
    out = []
    for key, (k, n) in checks.items():
        limit = float(getattr(thresholds, key))
        if n and k / n > limit:
            out.append(
                f"MODEL OUTPUT WARNING: {k / n:.0%} ({k} of {n}) {_WHAT[key]}; above the {limit:.0%} threshold "
                "(socium.reporting.guardrails): read this run's behaviour as the model's failures, not as findings"
            )
    return out


def card_section(checks: Mapping[str, tuple[int, int]]) -> dict[str, Any]:
    """The measured rates as the card prints them: 'rate (k of n)' per measure that had any units."""
    return {key: f"{k / n:.3f} ({k} of {n})" for key, (k, n) in checks.items() if n}
