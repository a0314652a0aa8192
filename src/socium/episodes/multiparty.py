"""Episodes of three or more characters: turn-taking, private goals, the three perspectives, a deal task.

Why a separate loop from the dyadic one: with more than two people, *who speaks next* becomes a
modelling choice that changes outcomes (a round-robin meeting, a free-for-all, or people handing
the word to someone), and one person leaving no longer ends the conversation. The information
rules of the three modes carry over from Zhou et al. (2024) unchanged:

- ``agents``: each character sees its own profile and goal, the others only as the relationship allows;
- ``mindreaders``: each character also sees every other character's full profile and goal;
- ``script``: one call writes the whole episode for all characters, knowing everything.

The procedural task is an N-party deal (SOTOPIA's bargaining extended to groups): partners split a
pot; each has a private minimum below which they would rather have no deal. A deal is reached only
when every partner, asked separately after the episode, reports the same split; each partner's
goal score (0..10) comes from the rule in :meth:`DealTask.score`, never from a judge. An optional
SOTOPIA-Eval judge scores every character on the same seven dimensions as the dyadic judge.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from socium.episodes.multiparty_prompts import (
    answer_prompt,
    group_judge_prompt,
    group_script_prompt,
    group_turn_prompt,
    judge_model,
    script_schema,
    turn_schema,
)
from socium.episodes.multiparty_task import (
    GroupEnd,
    GroupSpec,
    GroupTurnRecord,
)
from socium.episodes.prompts import ActionType, AgentEvaluation
from socium.episodes.structured import Outcome, ask_structured, request_seed
from socium.llm.base import LLMBackend
from socium.platform.text import clean_text

# The task, spec and prompt names are imported from here by the runner, tests and users.
__all__ = [
    "GroupLimits",
    "GroupResult",
    "next_speaker",
    "run_group_episode",
]


# --- the loop --------------------------------------------------------------------------------------


def next_speaker(
    spec: GroupSpec, turns: Sequence[GroupTurnRecord], present: Sequence[int], rng: np.random.Generator
) -> int:
    """Who talks next under the episode's turn-taking rule (only characters still present)."""
    n = len(spec.characters)
    last = turns[-1].speaker if turns else None
    if spec.turn_taking == "addressed" and turns and turns[-1].valid:
        want = turns[-1].next_speaker
        if want is not None and want in present and want != last:
            return want
    if spec.turn_taking == "random":
        pool = [i for i in present if i != last] or list(present)
        return int(pool[int(rng.integers(len(pool)))])
    start = 0 if last is None else last + 1
    for k in range(n):
        cand = (start + k) % n
        if cand in present:
            return cand
    return int(present[0])


@dataclass
class GroupResult:
    spec: GroupSpec
    turns: list[GroupTurnRecord]
    ended_by: GroupEnd
    invalid_reason: str | None = None
    answers: list[dict[str, Any] | None] = field(default_factory=list)
    answer_errors: list[str | None] = field(default_factory=list)
    goals: list[float] = field(default_factory=list)
    deal: bool = False
    success: bool = False
    detail: str = ""
    judge: dict[str, dict[str, float]] | None = None
    judge_error: str | None = None
    model: str = ""
    wall_s: float = 0.0


@dataclass
class GroupLimits:
    max_turns: int = 12
    max_turn_chars: int = 1000
    argument_chars: int = 400
    max_tokens: int = 160
    script_max_tokens: int = 1536
    answer_max_tokens: int = 64
    judge_max_tokens: int = 2048
    temperature: float = 0.7
    reask: bool = True


def _meta(spec: GroupSpec, call: str, step: int, agent: int | None) -> dict[str, Any]:
    return {"episode_id": spec.episode_id, "call": call, "step": step, "agent_id": agent, "perspective": spec.mode}


def _validate_turn(n: int, me: int, addressed: bool):
    def check(data: Any) -> dict[str, Any]:
        if not isinstance(data, dict) or data.get("action_type") not in ActionType.__args__:  # type: ignore[attr-defined]
            raise ValueError("action_type must be one of " + ", ".join(ActionType.__args__))  # type: ignore[attr-defined]
        arg = data.get("argument", "")
        if not isinstance(arg, str):
            raise ValueError("argument must be a string")
        nxt = data.get("next_speaker")
        if addressed and not (isinstance(nxt, int) and not isinstance(nxt, bool) and 0 <= nxt < n and nxt != me):
            raise ValueError(f"next_speaker must be another participant's number (0..{n - 1}, not {me})")
        return {
            "action_type": data["action_type"],
            "argument": clean_text(arg, 4000).text,
            "next_speaker": nxt if addressed else None,
        }

    return check


async def _dialogue(spec: GroupSpec, lim: GroupLimits, backend: LLMBackend) -> tuple[list[GroupTurnRecord], GroupEnd]:
    n = len(spec.characters)
    rng = np.random.default_rng(request_seed(spec.seed, spec.episode_id, "turn-taking"))
    turns: list[GroupTurnRecord] = []
    present = list(range(n))
    none_streak = 0
    while True:
        if len(turns) >= lim.max_turns:
            return turns, "max_turns"
        me = next_speaker(spec, turns, present, rng)
        msgs = group_turn_prompt(spec, me, [t.as_turn() for t in turns], present, lim.max_turn_chars)
        out = await ask_structured(
            backend,
            f"{spec.episode_id}-t{len(turns)}",
            msgs,
            turn_schema(spec, me, lim.argument_chars),
            _validate_turn(n, me, spec.turn_taking == "addressed"),
            seed=spec.seed,
            max_tokens=lim.max_tokens,
            temperature=lim.temperature,
            metadata=_meta(spec, "turn", len(turns), me),
            reask=lim.reask,
            max_string_chars=lim.argument_chars,
        )
        if out.value is not None:
            v = out.value
            turns.append(
                GroupTurnRecord(
                    len(turns),
                    me,
                    v["action_type"],
                    v["argument"][: lim.argument_chars],
                    out.raw,
                    True,
                    next_speaker=v["next_speaker"],
                )
            )
        else:
            turns.append(GroupTurnRecord(len(turns), me, "invalid", "", out.raw, False, out.error))
        last = turns[-1]
        if last.valid and last.action_type == "leave":
            present.remove(me)
            if len(present) <= 1:
                return turns, "all_left"
        none_streak = none_streak + 1 if (not last.valid or last.action_type == "none") else 0
        if none_streak >= len(present):  # a full round in which nobody did anything
            return turns, "none_streak"


async def _script(
    spec: GroupSpec, lim: GroupLimits, backend: LLMBackend
) -> tuple[list[GroupTurnRecord], GroupEnd, str | None]:
    n = len(spec.characters)

    def validate(data: Any) -> list[dict[str, Any]]:
        if not isinstance(data, dict) or not isinstance(data.get("turns"), list) or not data["turns"]:
            raise ValueError('expected {"turns": [...]} with at least one turn')
        out = []
        for i, t in enumerate(data["turns"][: lim.max_turns]):
            sp = t.get("speaker") if isinstance(t, dict) else None
            if isinstance(sp, bool) or not isinstance(sp, int) or not 0 <= sp < n:
                raise ValueError(f"turns.{i}.speaker must be 0..{n - 1}")
            out.append({"speaker": sp, **_validate_turn(n, sp, False)(t)})
        return out

    o = await ask_structured(
        backend,
        f"{spec.episode_id}-script",
        group_script_prompt(spec, lim.max_turns),
        script_schema(n, lim.max_turns, lim.argument_chars),
        validate,
        seed=spec.seed,
        max_tokens=lim.script_max_tokens,
        temperature=lim.temperature,
        metadata=_meta(spec, "script", 0, None),
        reask=lim.reask,
        max_string_chars=lim.argument_chars,
    )
    if o.value is None:
        return [], "invalid_script", o.error
    turns = [
        GroupTurnRecord(i, t["speaker"], t["action_type"], t["argument"][: lim.argument_chars], None, True)
        for i, t in enumerate(o.value)
    ]
    return turns, "script_end", None


async def run_group_episode(
    spec: GroupSpec, lim: GroupLimits, backend: LLMBackend, judge_backend: LLMBackend | None = None
) -> GroupResult:
    """Play (or write) one group episode, ask every partner what was agreed, score, optionally judge."""
    import asyncio

    t0 = time.perf_counter()
    invalid = None
    if spec.mode == "script":
        turns, ended, invalid = await _script(spec, lim, backend)
    else:
        turns, ended = await _dialogue(spec, lim, backend)
    res = GroupResult(spec, turns, ended, invalid, model=backend.model_name)
    transcript = [t.as_turn() for t in turns]
    outs: list[Outcome[Any]] = list(
        await asyncio.gather(
            *(
                ask_structured(
                    backend,
                    f"{spec.episode_id}-answer{i}",
                    answer_prompt(spec, i, transcript, lim.max_turn_chars),
                    spec.task.answer_schema(),
                    spec.task.validate_answer,
                    seed=spec.seed,
                    max_tokens=lim.answer_max_tokens,
                    temperature=lim.temperature,
                    metadata=_meta(spec, "answer", len(transcript), i),
                    reask=lim.reask,
                )
                for i in range(len(spec.characters))
            )
        )
    )
    res.answers = [o.value for o in outs]
    res.answer_errors = [o.error for o in outs]
    res.goals, res.deal, res.success, res.detail = spec.task.score(res.answers)
    if judge_backend is not None:
        model = judge_model(len(spec.characters))
        j = await ask_structured(
            judge_backend,
            f"{spec.episode_id}-judge",
            group_judge_prompt(spec, transcript, lim.max_turn_chars),
            model.model_json_schema(),
            model.model_validate,
            seed=spec.seed,
            max_tokens=lim.judge_max_tokens,
            temperature=lim.temperature,
            metadata=_meta(spec, "judge", len(transcript), None),
            reask=lim.reask,
        )
        if j.value is not None:
            res.judge = {}
            for i in range(len(spec.characters)):
                ev: AgentEvaluation = getattr(j.value, f"agent_{i}")
                res.judge[f"agent_{i}"] = {**{k: float(v) for k, v in ev.scores().items()}, "overall": ev.overall()}
        else:
            res.judge_error = j.error
    res.wall_s = time.perf_counter() - t0
    return res
