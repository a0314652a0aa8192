"""What a group episode asks: each character's turn, the script writer's whole episode, the final answers and
the judge, with their JSON schemas; :func:`group_access` says what each mode's prompts contain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from socium.episodes.multiparty_task import GroupMode, GroupSpec, GroupTurn
from socium.episodes.prompts import (
    _ACTION_RULE,
    _QUOTE_RULE,
    DIMENSIONS,
    ActionType,
    AgentEvaluation,
    _data,
    quote_turn,
)
from socium.episodes.sotopia import private_view, public_view


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
