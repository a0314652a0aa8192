"""An LLM agent's answer to a survey question: the schema it must fill, its validation, one re-ask, and
a check that the number agrees with the words.

The loop (:mod:`socium.simulator.surveys`) decides who is asked when and writes the rows; this module
is how a language-model agent answers, so it lives with the agents.

Why the consistency check (issue 29 item 2): a small model fills the schema's number independently of
its text, so "yes" was stored as -1.0, "yes" as 0.13, ", 1.0," as -1.0, and a run of emoji got a value.
Such a value measures nothing; :func:`check_answer` gives it a typed outcome (``inconsistent`` or
``degenerate``), the row keeps the stated number apart (``stated_value``) and its ``value`` is empty,
so no mean includes it while the counts stay visible.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from socium.agents import prompts as P
from socium.agents.policy_calls import PolicyCalls
from socium.agents.retry import retry_turns
from socium.llm.base import run_coro_sync
from socium.llm.parsing import parse_json_lenient
from socium.platform.text import clean_text

#: Why a survey row has (or lacks) a value: ``ok`` is the only outcome whose value enters a mean.
SurveyOutcome = Literal["ok", "inconsistent", "degenerate", "invalid", "backend_error", "no_stance"]


class SurveyAnswer(NamedTuple):
    """One agent's answer; a row without a value always says why (``reason``, ``outcome``)."""

    text: str
    value: float | None
    reason: str | None
    outcome: SurveyOutcome = "ok"
    stated: float | None = None  # the number the agent gave, also when it was rejected


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


_WORD = re.compile(r"[^\W\d_]{2,}")  # two or more letters, any script
_NUMBER = re.compile(r"(?<![\w.])[-+\u2212]?(?:\d+(?:\.\d+)?|\.\d+)(?![\w%])")
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")
#: Explicit stance words anywhere in the answer; "yes"/"no" count only as the answer's first word
#: ("no doubt, she should go" is not a no).
_POSITIVE = frozenset({"agree", "agreed", "support", "supportive", "favor", "favour", "approve"})
_NEGATIVE = frozenset({"disagree", "oppose", "opposed", "against", "disapprove", "reject"})
_FIRST_POSITIVE = frozenset({"yes", "yeah", "yep", "sure"})
_FIRST_NEGATIVE = frozenset({"no", "nope", "nah"})
_NOT_A_NO = frozenset({"doubt", "question", "matter", "problem", "wonder", "worries"})  # "no doubt, ..."
_NEGATORS = frozenset({"not", "don't", "dont", "doesn't", "never", "cannot", "can't", "won't", "no", "hardly"})
#: Words that make a stance word weak: then only the value's side is checked, not its distance from the middle.
_HEDGES = frozenset(
    {"somewhat", "slightly", "maybe", "perhaps", "partly", "partially", "mildly", "kind", "sort", "little", "bit",
     "unsure", "neutral", "depends", "mixed", "moderately", "fairly"}
)  # fmt: skip
#: An unhedged yes/agree must lie this share of the half-range beyond the middle ("yes" -> 0.13 on -1..1 does not).
STRONG_SHARE = 0.25
#: More bare numbers than this (no words) is a counting run (", 1.0, 2, 3, 4, ..."), not an answer.
MAX_BARE_NUMBERS = 4
_PLACEHOLDER = re.compile(r"\{\{[^{}]*\}\}")  # "{{short text}}": the prompt's template echoed back
#: A number written in the answer matches the value within this share of the scale's range.
NUMBER_TOLERANCE = 0.05


def _polarity(text: str) -> tuple[int, str, bool]:
    """(+1 / -1 / 0, the stance word, hedged) of the answer's explicit stance words; 0 when none or mixed."""
    toks = _TOKEN.findall(text.lower().replace("\u2019", "'"))
    found: list[tuple[int, str]] = []
    for i, t in enumerate(toks):
        sign = 1 if t in _POSITIVE else -1 if t in _NEGATIVE else 0
        if i == 0 and not (t in _FIRST_NEGATIVE and toks[1:2] and toks[1] in _NOT_A_NO):
            sign = sign or (1 if t in _FIRST_POSITIVE else -1 if t in _FIRST_NEGATIVE else 0)
        if sign and any(w in _NEGATORS for w in toks[max(0, i - 2) : i]):
            sign, t = -sign, f"not {t}"  # "do not agree", "not against"
        if sign:
            found.append((sign, t))
    signs = {s for s, _ in found}
    if len(signs) != 1:
        return 0, "", False
    return found[0][0], found[0][1], any(t in _HEDGES for t in toks)


def check_answer(text: str, value: float, scale: tuple[float, float]) -> tuple[SurveyOutcome, str] | None:
    """None when the answer's words agree with its value; else (``degenerate`` | ``inconsistent``, reason).

    * degenerate: no word of two letters and no number (empty, punctuation, a run of emoji), a template
      placeholder echoed back ("{{short text}}"), a run of bare numbers, or one word over half the words;
    * a number written in the answer inside the scale that the value does not match (", 1.0," -> -1.0);
    * an explicit stance word against the value's side of the middle ("yes" -> -1.0), or an unhedged
      one too close to the middle ("yes" -> 0.13 on -1..1; "somewhat agree" only needs the side).

    Assumes the scale's upper end is the "yes / agree / support" end (true of the questions socium ships;
    a question whose "yes" is its lower end would be flagged wrongly).
    The reason quotes only our own words and numbers, never the agent's text."""
    lo, hi = scale
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    words = [w.lower() for w in _WORD.findall(text)]
    numbers = [float(x.replace("\u2212", "-")) for x in _NUMBER.findall(text)]
    has_words = bool(words)
    if not has_words and not numbers:
        return "degenerate", "degenerate: the answer has no word and no number"
    if _PLACEHOLDER.fullmatch(text.strip()):
        return "degenerate", "degenerate: the answer is a template placeholder"
    if not has_words and len(numbers) > MAX_BARE_NUMBERS:
        return "degenerate", f"degenerate: the answer is a run of {len(numbers)} numbers"
    if len(words) >= 8 and Counter(words).most_common(1)[0][1] > len(words) / 2:
        return "degenerate", "degenerate: the answer repeats one word"
    in_scale = [x for x in numbers if lo - 1e-9 <= x <= hi + 1e-9]
    tol = NUMBER_TOLERANCE * (hi - lo)
    if in_scale:
        if any(abs(x - value) <= tol for x in in_scale):
            return None  # the answer writes the value: explicit agreement
        return "inconsistent", f"inconsistent: the answer writes {in_scale[0]:g} but the value is {value:g}"
    if not has_words:
        return "degenerate", "degenerate: the answer has no word and no number in the scale"
    sign, word, hedged = _polarity(text)
    if sign == 0:
        return None
    need = 0.0 if hedged else STRONG_SHARE * half
    if sign * (value - mid) < need - 1e-9:
        side = "positive" if sign > 0 else "negative"
        where = "on the other side of" if sign * (value - mid) < 0 else "too close to"
        return (
            "inconsistent",
            f"inconsistent: the answer says '{word}' ({side}) but the value {value:g} is {where} the middle {mid:g}",
        )
    return None


async def _ask(
    policy: PolicyCalls, profile: Any, memory: Sequence[str], question: str, scale: tuple[float, float], step: int
) -> SurveyAnswer:
    lo, hi = scale
    q = f'{question}\nAnswer as JSON: {{"answer": short text, "value": a number from {lo} to {hi}}}.'
    msgs = P.interview_messages(profile, memory, q, **policy.persona_kw())
    meta = {"step": step, "agent_id": profile.id, "survey": True}
    last_err, raw = "", ""
    for attempt in range(2):
        rid = f"survey-s{step}-a{profile.id}" + (f"-{attempt}" if attempt else "")
        req = policy.request(rid, msgs, survey_schema(scale), meta, policy.seed(profile.id, step, 1000 + attempt))
        res = (await policy.generate([req]))[0]  # on the agent's own backend (llms routing)
        if not res.ok:
            return SurveyAnswer(
                "", None, clean_text(f"backend error ({res.error_kind}): {res.error}", 500).text, "backend_error"
            )
        raw = clean_text(res.text, 2000).text
        try:
            answer, value = validate_survey(parse_json_lenient(res.text), scale)
        except ValueError as exc:
            last_err = clean_text(str(exc), 300).text
            msgs = msgs + retry_turns(raw, last_err)
            continue
        bad = check_answer(answer, value, scale)  # a valid value that its own words contradict is not re-asked
        if bad is not None:
            return SurveyAnswer(answer, None, bad[1], bad[0], value)
        return SurveyAnswer(answer, value, None, "ok", value)
    return SurveyAnswer(raw[:300], None, f"invalid output after re-ask: {last_err}", "invalid")


def ask_llm_survey(
    policy: PolicyCalls,
    people: Sequence[tuple[Any, Sequence[str]]],
    question: str,
    scale: tuple[float, float],
    step: int,
) -> list[SurveyAnswer]:
    """Every person's answer, asked concurrently through the policy's backend stack."""
    if not people:
        return []

    async def all_() -> list[SurveyAnswer]:
        return list(await asyncio.gather(*(_ask(policy, p, mem, question, scale, step) for p, mem in people)))

    return run_coro_sync(all_())
