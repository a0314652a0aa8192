"""SOTOPIA-Eval: an LLM judge scores both agents of an episode on seven dimensions.

The judge sees everything (both profiles with secrets, both goals, environment-only text) and the
whole transcript, as in SOTOPIA; :class:`~.prompts.JudgeOutput` rejects any score outside its
dimension's range, so a judge that answers "goal: 12" gets one re-ask and is then recorded as a
failed judgement rather than clipped into a plausible-looking number. Procedural tasks also have
rule-based goal scores, which is what :func:`judge_vs_objective` compares the judge against.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

from socium.episodes.prompts import JudgeOutput, Turn, build_judge_prompt, judge_json_schema
from socium.episodes.sotopia import CharacterProfile, EnvironmentProfile
from socium.episodes.structured import Outcome, ask_structured
from socium.llm.base import LLMBackend


def judge_schema(reasoning_chars: int = 400) -> dict[str, Any]:
    """The judge's output schema with each ``reasoning`` capped at ``reasoning_chars``.

    The cap only shortens what constrained decoding lets the model write (judge calls dominate a
    small CPU model's time); validation still uses :class:`JudgeOutput`'s own bounds.
    """
    schema = copy.deepcopy(judge_json_schema())
    for d in schema.get("$defs", {}).values():
        props = d.get("properties", {})
        if "reasoning" in props:
            props["reasoning"]["maxLength"] = min(reasoning_chars, props["reasoning"].get("maxLength", reasoning_chars))
    return schema


async def judge_episode(
    backend: LLMBackend,
    episode_id: str,
    env: EnvironmentProfile,
    agents: Sequence[CharacterProfile],
    transcript: Sequence[Turn],
    *,
    seed: int,
    max_tokens: int,
    temperature: float,
    reasoning_chars: int = 400,
    max_turn_chars: int = 1000,
    reask: bool = True,
) -> Outcome[JudgeOutput]:
    """One judge call (plus at most one re-ask) for a finished episode."""
    messages = build_judge_prompt(env, agents, transcript, max_turn_chars=max_turn_chars)
    return await ask_structured(
        backend,
        f"{episode_id}-judge",
        messages,
        judge_schema(reasoning_chars),
        JudgeOutput.model_validate,
        seed=seed,
        max_tokens=max_tokens,
        temperature=temperature,
        reask=reask,
        metadata={"episode_id": episode_id, "call": "judge", "step": len(transcript), "agent_id": None},
    )


def judge_scores(judgement: JudgeOutput) -> dict[str, dict[str, float]]:
    """``{"agent_0": {dimension: score, ..., "overall": mean}, "agent_1": {...}}`` for the trace."""
    out: dict[str, dict[str, float]] = {}
    for key in ("agent_0", "agent_1"):
        ev = getattr(judgement, key)
        out[key] = {**{k: float(v) for k, v in ev.scores().items()}, "overall": ev.overall()}
    return out


def judge_vs_objective(pairs: Sequence[tuple[float, float]]) -> dict[str, float | int | None]:
    """How well judge goal scores track rule-based ones: n, mean absolute error, Pearson r.

    ``pairs`` are (judge goal, objective goal) per agent-episode; r is None when either side is
    constant (undefined), which is common with tiny samples or a judge that always says 10.
    """
    n = len(pairs)
    if n == 0:
        return {"n": 0, "mae": None, "pearson_r": None}
    js = [float(j) for j, _ in pairs]
    os_ = [float(o) for _, o in pairs]
    mae = sum(abs(j - o) for j, o in zip(js, os_)) / n
    mj, mo = sum(js) / n, sum(os_) / n
    sj = math.sqrt(sum((j - mj) ** 2 for j in js))
    so = math.sqrt(sum((o - mo) ** 2 for o in os_))
    r = None if sj == 0 or so == 0 else sum((j - mj) * (o - mo) for j, o in zip(js, os_)) / (sj * so)
    return {"n": n, "mae": mae, "pearson_r": r}


__all__ = [
    "judge_episode",
    "judge_schema",
    "judge_scores",
    "judge_vs_objective",
]
