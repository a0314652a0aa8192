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
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, create_model

from socium.llm.base import LLMBackend
from socium.platform.text import clean_text

from .prompts import _ACTION_RULE, _QUOTE_RULE, DIMENSIONS, ActionType, AgentEvaluation, _data, quote_turn
from .sotopia import CharacterProfile, RelationshipType, private_view, public_view
from .structured import Outcome, ask_structured, request_seed

GroupMode = Literal["agents", "mindreaders", "script"]
TurnTaking = Literal["round_robin", "random", "addressed"]
GroupEnd = Literal["max_turns", "all_left", "none_streak", "script_end", "invalid_script"]
MAX_PARTIES = 8

_NAMES = (
    ("Riley", "Chen"),
    ("Morgan", "Diaz"),
    ("Sam", "Okafor"),
    ("Jordan", "Weiss"),
    ("Avery", "Novak"),
    ("Casey", "Ito"),
    ("Taylor", "Brooks"),
    ("Quinn", "Haddad"),
    ("Jamie", "Larsen"),
    ("Robin", "Mehta"),
)
_VENTURES = ("a food truck", "a small app studio", "a community bakery", "a bike repair shop", "a podcast")


class DealTask(BaseModel):
    """N partners split ``pot``; partner i walks away rather than take less than ``minimums[i]``."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["n_party_deal"] = "n_party_deal"
    venture: str
    pot: int = Field(gt=0)
    minimums: tuple[int, ...]

    @classmethod
    def generate(cls, rng: np.random.Generator, n: int, pot: int = 100) -> DealTask:
        """Minimums sum to 60-85% of the pot, so a deal always exists but cannot satisfy everyone's greed."""
        total = int(pot * rng.uniform(0.60, 0.85))
        w = rng.dirichlet(np.full(n, 4.0))
        mins = np.maximum(1, np.floor(w * total)).astype(int)
        return cls(venture=_VENTURES[int(rng.integers(len(_VENTURES)))], pot=pot, minimums=tuple(int(m) for m in mins))

    @property
    def n(self) -> int:
        return len(self.minimums)

    def scenario(self, names: Sequence[str]) -> str:
        return (
            f"{', '.join(names[:-1])} and {names[-1]} ran {self.venture} together and must now agree how to "
            f"split its {self.pot} points of profit among the {self.n} of them. Shares are whole numbers that "
            f"add up to exactly {self.pot}. Without an agreement everyone gets nothing."
        )

    def goal(self, i: int) -> str:
        return (
            f"Get as large a share of the {self.pot} points as you can. You will not accept less than "
            f"{self.minimums[i]} points (your private minimum; nobody else knows it). No deal is better than "
            f"less than {self.minimums[i]}."
        )

    def answer_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "deal": {"type": "boolean"},
                "shares": {
                    "type": "array",
                    "minItems": self.n,
                    "maxItems": self.n,
                    "items": {"type": "integer", "minimum": 0, "maximum": self.pot},
                },
            },
            "required": ["deal", "shares"],
            "additionalProperties": False,
        }

    def validate_answer(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict) or not isinstance(data.get("deal"), bool):
            raise ValueError('expected {"deal": true|false, "shares": [...]}')
        shares = data.get("shares")
        if not isinstance(shares, list) or len(shares) != self.n:
            raise ValueError(f"shares must list {self.n} integers, one per partner in the order given")
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in shares):
            raise ValueError("shares must be non-negative integers")
        if data["deal"] and sum(shares) != self.pot:
            raise ValueError(f"an agreed split must add up to {self.pot}, got {sum(shares)}")
        return {"deal": data["deal"], "shares": list(shares)}

    def score(self, answers: Sequence[dict[str, Any] | None]) -> tuple[list[float], bool, bool, str]:
        """(goal 0..10 per partner, deal reached, full success, detail).

        Deal: every partner answered, all say deal, all report the same split. Then a partner at or
        above its minimum scores 5 plus up to 5 for the surplus over its minimum (relative to an equal
        share of the pot's surplus); below its minimum, 2 (it agreed to a deal it should have refused).
        No deal: 0 for everyone. Success: a deal that gives every partner at least its minimum.
        """
        valid = [a for a in answers if a is not None]
        splits = {tuple(a["shares"]) for a in valid}
        deal = len(valid) == self.n and all(a["deal"] for a in valid) and len(splits) == 1
        if not deal:
            why = (
                "no answer from some partner"
                if len(valid) < self.n
                else (
                    "someone reports no deal"
                    if not all(a["deal"] for a in valid)
                    else "partners report different splits"
                )
            )
            return [0.0] * self.n, False, False, f"no deal: {why}"
        split = next(iter(splits))
        surplus = max(1.0, (self.pot - sum(self.minimums)) / self.n)
        goals = [2.0 if s < m else 5.0 + 5.0 * min(1.0, (s - m) / surplus) for s, m in zip(split, self.minimums)]
        success = all(s >= m for s, m in zip(split, self.minimums))
        return [round(g, 3) for g in goals], True, success, f"deal {list(split)} vs minimums {list(self.minimums)}"


class GroupSpec(BaseModel):
    """Everything needed to run one group episode anywhere."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    episode_id: str
    index: int = Field(ge=0)
    mode: GroupMode
    scenario_id: str
    seed: int = Field(ge=0)
    repeat: int = Field(0, ge=0)
    turn_taking: TurnTaking = "round_robin"
    relationship: RelationshipType = RelationshipType.ACQUAINTANCE
    characters: tuple[CharacterProfile, ...]
    task: DealTask

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.characters]


def make_characters(rng: np.random.Generator, n: int, scenario_id: str) -> tuple[CharacterProfile, ...]:
    if not 3 <= n <= MAX_PARTIES:
        raise ValueError(f"a group episode has 3..{MAX_PARTIES} characters, got {n}")
    picks = rng.choice(len(_NAMES), size=n, replace=False)
    return tuple(
        CharacterProfile(
            agent_id=f"{scenario_id}-agent{k}",
            first_name=_NAMES[int(p)][0],
            last_name=_NAMES[int(p)][1],
            age=int(rng.integers(25, 61)),
        )
        for k, p in enumerate(picks)
    )


class GroupTurn(BaseModel):
    """One turn; ``speaker`` indexes ``GroupSpec.characters``."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=0)
    speaker: int = Field(ge=0, lt=MAX_PARTIES)
    action_type: ActionType
    argument: str = ""
    next_speaker: int | None = None


@dataclass
class GroupTurnRecord:
    turn: int
    speaker: int
    action_type: str  # an ActionType, or "invalid"
    argument: str
    raw: str | None
    valid: bool
    error: str | None = None
    next_speaker: int | None = None

    def as_turn(self) -> GroupTurn:
        if not self.valid:
            return GroupTurn(turn=self.turn, speaker=self.speaker, action_type="none")
        return GroupTurn(
            turn=self.turn,
            speaker=self.speaker,
            action_type=self.action_type,  # type: ignore[arg-type]
            argument=self.argument,
            next_speaker=self.next_speaker,
        )


# --- prompts ---------------------------------------------------------------------------------------


def _transcript(turns: Sequence[GroupTurn], names: Sequence[str], max_turn_chars: int) -> str:
    return "\n".join(quote_turn(t, names, max_turn_chars) for t in turns) or "(no turns yet)"  # type: ignore[arg-type]


def turn_schema(spec: GroupSpec, me: int, argument_chars: int) -> dict[str, Any]:
    props: dict[str, Any] = {
        "action_type": {"enum": list(ActionType.__args__)},  # type: ignore[attr-defined]
        "argument": {"type": "string", "maxLength": argument_chars},
    }
    required = ["action_type", "argument"]
    if spec.turn_taking == "addressed":
        props["next_speaker"] = {"enum": [i for i in range(len(spec.characters)) if i != me]}
        required.append("next_speaker")
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def group_turn_prompt(
    spec: GroupSpec, me: int, transcript: Sequence[GroupTurn], present: Sequence[int], max_turn_chars: int = 1000
) -> list[dict[str, str]]:
    """Messages for character ``me``'s next turn; what they hold is :func:`group_access` for the mode."""
    if spec.mode == "script":
        raise ValueError("script mode has no per-turn prompt; use group_script_prompt")
    c = spec.characters
    names = spec.names
    others = [i for i in range(len(c)) if i != me]
    mind = spec.mode == "mindreaders"
    system = (
        f"Imagine you are {c[me].name}, in a conversation with {len(others)} other people. Act and speak as "
        f"{c[me].first_name} would, pursuing {c[me].first_name}'s goal in character, keeping the interaction natural. "
        + (
            "Your goal is known only to you, and you do not know the others' goals or secrets. "
            if not mind
            else "You know every other participant's full profile, secrets and goal, and they know yours. "
        )
        + f"{_QUOTE_RULE} {_ACTION_RULE} Reply with one JSON object and nothing else."
    )
    lines = [
        f"Scenario: {_data(spec.task.scenario(names))}",
        "Participants (speaker numbers): " + "; ".join(f"{i}: {_data(n)}" for i, n in enumerate(names)),
        f"Your character: {_data(private_view(c[me]))}",
        f"Your goal: {_data(spec.task.goal(me))}",
    ]
    for i in others:
        if mind:
            lines.append(f"{_data(names[i])}'s full profile: {_data(private_view(c[i]))}")
            lines.append(f"{_data(names[i])}'s goal: {_data(spec.task.goal(i))}")
        else:
            known = public_view(c[i], spec.relationship) or "nothing beyond their name"
            lines.append(f"What you know about {_data(names[i])}: {_data(known)}")
    gone = [names[i] for i in range(len(c)) if i not in present]
    if gone:
        lines.append("Has left the conversation: " + ", ".join(_data(g) for g in gone))
    lines += ["Interaction so far:", _transcript(transcript, names, max_turn_chars)]
    tail = f"You are at Turn #{len(transcript)}. Reply with {_data(c[me].name)}'s action as JSON"
    if spec.turn_taking == "addressed":
        tail += ', including "next_speaker": the speaker number of who should talk next'
    lines.append(tail + ".")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def script_schema(n: int, max_turns: int, argument_chars: int) -> dict[str, Any]:
    turn = {
        "type": "object",
        "properties": {
            "speaker": {"enum": list(range(n))},
            "action_type": {"enum": list(ActionType.__args__)},  # type: ignore[attr-defined]
            "argument": {"type": "string", "maxLength": argument_chars},
        },
        "required": ["speaker", "action_type", "argument"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"turns": {"type": "array", "minItems": 1, "maxItems": max_turns, "items": turn}},
        "required": ["turns"],
        "additionalProperties": False,
    }


def group_script_prompt(spec: GroupSpec, max_turns: int) -> list[dict[str, str]]:
    """Script mode: one author sees every profile, secret and goal and writes all turns."""
    c, names = spec.characters, spec.names
    system = (
        f"You are writing the script of a conversation among {len(c)} characters (speakers 0..{len(c) - 1}). "
        "Each pursues their own goal in character and acts only on what that character knows. "
        f"{_ACTION_RULE} Write at most {max_turns} turns. Reply with one JSON object "
        '{"turns": [{"speaker": N, "action_type": ..., "argument": ...}, ...]} and nothing else.'
    )
    lines = [f"Scenario: {_data(spec.task.scenario(names))}"]
    for i, ch in enumerate(c):
        lines += [
            f"Speaker {i}, {_data(ch.name)}: {_data(private_view(ch))}",
            f"{_data(ch.name)}'s goal (known only to {_data(ch.first_name)}): {_data(spec.task.goal(i))}",
        ]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def answer_prompt(
    spec: GroupSpec, me: int, transcript: Sequence[GroupTurn], max_turn_chars: int
) -> list[dict[str, str]]:
    """After the episode each partner is asked privately what was agreed (their own view of it)."""
    names = spec.names
    user = (
        f"Scenario: {_data(spec.task.scenario(names))}\nYou are {_data(names[me])}. Your goal: "
        f"{_data(spec.task.goal(me))}\nParticipants in order: {', '.join(_data(n) for n in names)}\n"
        f"The conversation:\n{_transcript(transcript, names, max_turn_chars)}\n"
        "The conversation is over. Did the group agree on a split? Answer as JSON "
        '{"deal": true|false, "shares": [points for each participant, in the order above]}.'
    )
    return [
        {"role": "system", "content": f"You are {_data(names[me])}. Answer truthfully about what was agreed."},
        {"role": "user", "content": user},
    ]


def judge_model(n: int) -> type[BaseModel]:
    """``{"agent_0": AgentEvaluation, ..., "agent_<n-1>": ...}`` for n characters."""
    fields: dict[str, Any] = {f"agent_{i}": (AgentEvaluation, ...) for i in range(n)}
    return create_model(f"GroupJudge{n}", __config__=ConfigDict(extra="forbid"), **fields)


def group_judge_prompt(spec: GroupSpec, transcript: Sequence[GroupTurn], max_turn_chars: int) -> list[dict[str, str]]:
    names = spec.names
    keys = ", ".join(f"agent_{i}" for i in range(len(names)))
    rubric = "\n".join(f"- {k} (integer {lo}..{hi}): {d}" for k, (lo, hi, d) in DIMENSIONS.items())
    system = (
        f"You evaluate a social interaction among {len(names)} characters. For each character ({keys}) score "
        f"each dimension below: reasoning first, then an integer score in range.\n{rubric}\n{_QUOTE_RULE} "
        "Reply with one JSON object with one key per character and nothing else."
    )
    lines = [f"Scenario: {_data(spec.task.scenario(names))}"]
    for i, ch in enumerate(spec.characters):
        lines += [
            f"agent_{i}, {_data(ch.name)}: {_data(private_view(ch))}",
            f"agent_{i}'s goal: {_data(spec.task.goal(i))}",
        ]
    lines += ["Interaction:", _transcript(transcript, names, max_turn_chars)]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def group_access(mode: GroupMode) -> dict[str, Any]:
    """What each mode's prompts contain, for the summary and the tests that check the prompts."""
    common = {
        "scenario": "shared",
        "participant_names": "all, with speaker numbers",
        "transcript": "all earlier turns, quoted, neutralised, cut to max_turn_chars",
    }
    if mode == "agents":
        return {
            "mode": mode,
            "calls": "one per turn",
            "own_goal": True,
            "others_goals": False,
            "others_profiles": "public_view by relationship (never secrets)",
            **common,
        }
    if mode == "mindreaders":
        return {
            "mode": mode,
            "calls": "one per turn",
            "own_goal": True,
            "others_goals": True,
            "others_profiles": "full, with secrets",
            **common,
        }
    return {
        "mode": mode,
        "calls": "one per episode",
        "own_goal": True,
        "others_goals": True,
        "others_profiles": "full, with secrets",
        **common,
        "transcript": "none (the call writes it)",
    }


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
