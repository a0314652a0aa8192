"""The episode loop: two characters take turns (or one author writes the script), then outcomes.

An episode ends at ``max_turns``, when a character leaves, or after ``max_none_streak``
consecutive turns in which nothing happened ('none', or a turn whose output stayed invalid after
the re-ask). Invalid turns are recorded as such (``valid = False``, action ``invalid``, the raw
reply and the reason kept) and reach the other character's transcript as "did nothing"; they
are never silently replaced by a plausible action. Script mode applies the same ending rules to
the written script, so turn counts and leave rates are comparable across modes.

After the interaction each character of a procedural task answers one structured question
(:mod:`.objective`); then the optional judge scores both (:mod:`.judge`). Everything a model
was asked in the episode is returned with the result, for the episode's single transaction.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from socium.episodes.config import EpisodeMode, EpisodesConfig
from socium.episodes.judge import judge_episode, judge_scores
from socium.episodes.objective import answer_format, answer_model, answer_schema, score_answers
from socium.episodes.prompts import (
    MAX_ARGUMENT_CHARS,
    JudgeOutput,
    Mode,
    Script,
    Turn,
    TurnAction,
    build_script_prompt,
    build_turn_prompt,
    script_json_schema,
    turn_json_schema,
)
from socium.episodes.sotopia import CharacterProfile, EnvironmentProfile, RelationshipType
from socium.episodes.structured import Outcome, ask_structured
from socium.episodes.tasks import BargainingTask, MutualFriendTask, TaskScore
from socium.llm.base import LLMBackend
from socium.llm.cache import MemoryCache
from socium.llm.types import LLMRequest, LLMResult
from socium.platform.text import clean_text

TaskKind = Literal["mutual_friend", "bargaining", "sotopia"]
EndReason = Literal["max_turns", "leave", "none_streak", "script_end", "invalid_script"]
SOTOPIA_AGREEMENT_GOAL = 7


class EpisodeSpec(BaseModel):
    """Everything needed to run one episode anywhere (a Ray actor gets only this and the config)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    episode_id: str
    index: int = Field(ge=0, description="Position in the run; results are written in this order.")
    mode: EpisodeMode
    kind: TaskKind
    scenario_id: str = Field(description="The task instance or SOTOPIA env; shared by its episodes in every mode.")
    seed: int = Field(ge=0, description="Seeds every request of the episode (with the call's identity).")
    repeat: int = Field(0, ge=0)
    env: EnvironmentProfile
    agents: tuple[CharacterProfile, CharacterProfile]
    relationship: RelationshipType
    task: Annotated[MutualFriendTask | BargainingTask, Field(discriminator="kind")] | None = None


@dataclass
class TurnRecord:
    """One row of the ``turns`` table."""

    turn: int
    speaker: int
    action_type: str  # one of prompts.ACTION_TYPES, or "invalid"
    argument: str
    raw: str | None
    valid: bool
    error: str | None = None

    def as_turn(self) -> Turn:
        """What the characters (and the judge) see: an invalid turn is a turn where nothing happened."""
        if not self.valid:
            return Turn(turn=self.turn, speaker=self.speaker, action_type="none", argument="")
        return Turn(
            turn=self.turn,
            speaker=self.speaker,
            action_type=self.action_type,
            argument=self.argument,
        )


Call = tuple[str, LLMRequest, LLMResult, str]


@dataclass
class EpisodeResult:
    spec: EpisodeSpec
    turns: list[TurnRecord]
    ended_by: EndReason
    invalid_reason: str | None = None
    answers: list[dict[str, Any] | None] = field(default_factory=lambda: [None, None])
    answer_errors: list[str | None] = field(default_factory=lambda: [None, None])
    objective: TaskScore | None = None
    objective_detail: str | None = None
    agreement: bool | None = None
    judge: dict[str, dict[str, float]] | None = None
    judge_error: str | None = None
    calls: list[Call] = field(default_factory=list)
    model: str = ""
    judge_model: str | None = None
    wall_s: float = 0.0

    @property
    def valid(self) -> bool:
        return self.invalid_reason is None

    def transcript(self) -> list[Turn]:
        return [t.as_turn() for t in self.turns]


class CallRecorder(MemoryCache):
    """A result cache that also keeps each fresh call, by episode, until the episode is written."""

    def __init__(self) -> None:
        super().__init__()
        self._pending: dict[str, list[Call]] = {}

    def put(
        self,
        key: str,
        request: LLMRequest,
        result: LLMResult,
        model: str,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        super().put(key, request, result, model, meta)
        eid = str(request.metadata.get("episode_id", ""))
        self._pending.setdefault(eid, []).append((key, request, result, model))

    def drain(self, episode_id: str) -> list[Call]:
        return self._pending.pop(episode_id, [])


@dataclass
class Models:
    """The backends an episode uses; both stacks are built with ``recorder`` as their cache."""

    backend: LLMBackend
    recorder: CallRecorder
    judge_backend: LLMBackend | None = None


def end_reason(turns: list[TurnRecord], max_turns: int, max_none_streak: int) -> EndReason | None:
    """Why the episode ends after its last turn, or None to continue."""
    if turns and turns[-1].valid and turns[-1].action_type == "leave":
        return "leave"
    tail = turns[-max_none_streak:]
    if len(tail) == max_none_streak and all(t.action_type == "none" or not t.valid for t in tail):
        return "none_streak"
    if len(turns) >= max_turns:
        return "max_turns"
    return None


def _clean_argument(item: Any) -> Any:
    """Cut and sanitise a reply's argument before validation (as ``Turn.from_untrusted``): a long or
    NUL-laden utterance is still an utterance; the wrong type or action stays invalid."""
    if isinstance(item, dict) and isinstance(item.get("argument"), str):
        return {**item, "argument": clean_text(item["argument"], MAX_ARGUMENT_CHARS).text}
    return item


def validate_turn(data: Any) -> TurnAction:
    """A turn reply; 'none' and 'leave' may omit their (empty) argument."""
    if isinstance(data, dict) and "argument" not in data and data.get("action_type") in ("none", "leave"):
        data = {**data, "argument": ""}
    return TurnAction.model_validate(_clean_argument(data))


def _argument(text: str) -> str:
    return clean_text(text, MAX_ARGUMENT_CHARS).text


def _meta(spec: EpisodeSpec, call: str, step: int, agent: int | None) -> dict[str, Any]:
    return {"episode_id": spec.episode_id, "call": call, "step": step, "agent_id": agent, "perspective": spec.mode}


async def _dialogue(spec: EpisodeSpec, cfg: EpisodesConfig, backend: LLMBackend) -> tuple[list[TurnRecord], EndReason]:
    assert spec.mode in ("agents", "mindreaders")
    turns: list[TurnRecord] = []
    while True:
        t = len(turns)
        speaker = t % 2
        msgs = build_turn_prompt(
            spec.mode,
            spec.env,
            spec.agents[speaker],
            spec.agents[1 - speaker],
            speaker,
            spec.relationship,
            [x.as_turn() for x in turns],
            include_environment=cfg.include_environment,
            max_turn_chars=cfg.max_turn_chars,
        )
        out = await ask_structured(
            backend,
            f"{spec.episode_id}-t{t}",
            msgs,
            turn_json_schema(),
            validate_turn,
            seed=spec.seed,
            max_tokens=cfg.llm.max_tokens,
            temperature=cfg.llm.temperature,
            metadata=_meta(spec, "turn", t, speaker),
            reask=cfg.reask,
            max_string_chars=cfg.argument_chars,
        )
        if out.value is not None:
            turns.append(TurnRecord(t, speaker, out.value.action_type, _argument(out.value.argument), out.raw, True))
        else:
            turns.append(TurnRecord(t, speaker, "invalid", "", out.raw, False, out.error))
        ended = end_reason(turns, cfg.max_turns, cfg.max_none_streak)
        if ended is not None:
            return turns, ended


async def _script(
    spec: EpisodeSpec, cfg: EpisodesConfig, backend: LLMBackend
) -> tuple[list[TurnRecord], EndReason, str | None]:
    msgs = build_script_prompt(
        spec.env, spec.agents, spec.relationship, include_environment=cfg.include_environment, max_turns=cfg.max_turns
    )

    def validate(data: Any) -> Script:
        if isinstance(data, dict) and isinstance(data.get("turns"), list):
            data = {**data, "turns": [_clean_argument(t) for t in data["turns"][: cfg.max_turns]]}  # cut, not fatal
        return Script.model_validate(data)

    out = await ask_structured(
        backend,
        f"{spec.episode_id}-script",
        msgs,
        script_json_schema(cfg.max_turns),
        validate,
        seed=spec.seed,
        max_tokens=cfg.script_max_tokens,
        temperature=cfg.llm.temperature,
        metadata=_meta(spec, "script", 0, None),
        reask=cfg.reask,
        max_string_chars=cfg.argument_chars,
    )
    if out.value is None:
        return [], "invalid_script", out.error
    turns: list[TurnRecord] = []
    for i, st in enumerate(out.value.turns):
        turns.append(TurnRecord(i, st.speaker, st.action_type, _argument(st.argument), None, True))
        ended = end_reason(turns, cfg.max_turns, cfg.max_none_streak)
        if ended is not None:
            return turns, ended, None
    return turns, "script_end", None


def _answer_messages(spec: EpisodeSpec, cfg: EpisodesConfig, i: int, transcript: list[Turn]) -> list[dict[str, str]]:
    """The character's own turn prompt (mindreaders keep their view), its last line replaced by the question.

    Keeping the turn prompt verbatim up to the transcript's end states exactly what the character
    knew, and lets a backend with prefix caching (llama.cpp) reuse the work of the last turn.
    """
    assert spec.task is not None
    view: Mode = "mindreaders" if spec.mode == "mindreaders" else "agents"
    me = spec.agents[i]
    base = build_turn_prompt(
        view,
        spec.env,
        me,
        spec.agents[1 - i],
        i,
        spec.relationship,
        transcript,
        include_environment=cfg.include_environment,
        max_turn_chars=cfg.max_turn_chars,
    )
    context = base[1]["content"].rsplit("\n", 1)[0]  # drop "You are at Turn #n ..."
    fmt = answer_format(spec.task)
    question = (
        f"The interaction is over; no more actions. Question for {me.name}: {spec.task.answer_question(i)} "
        f"Instead of an action, {fmt[0].lower()}{fmt[1:]}"
    )
    return [base[0], {"role": "user", "content": f"{context}\n{question}"}]


async def _answers(
    spec: EpisodeSpec, cfg: EpisodesConfig, backend: LLMBackend, transcript: list[Turn]
) -> list[Outcome[Any]]:
    assert spec.task is not None
    model = answer_model(spec.task)
    step = len(transcript)
    return list(
        await asyncio.gather(
            *(
                ask_structured(
                    backend,
                    f"{spec.episode_id}-answer{i}",
                    _answer_messages(spec, cfg, i, transcript),
                    answer_schema(spec.task),
                    model.model_validate,
                    seed=spec.seed,
                    max_tokens=cfg.answer_max_tokens,
                    temperature=cfg.llm.temperature,
                    metadata=_meta(spec, "answer", step, i),
                    reask=cfg.reask,
                )
                for i in (0, 1)
            )
        )
    )


async def run_episode(spec: EpisodeSpec, cfg: EpisodesConfig, models: Models) -> EpisodeResult:
    """Play (or write) one episode, extract its outcome, judge it, and collect its calls."""
    t0 = time.perf_counter()
    invalid: str | None = None
    if spec.mode == "script":
        turns, ended, invalid = await _script(spec, cfg, models.backend)
    else:
        turns, ended = await _dialogue(spec, cfg, models.backend)
    res = EpisodeResult(spec, turns, ended, invalid, model=models.backend.model_name)
    transcript = res.transcript()
    if spec.task is not None:
        outs = await _answers(spec, cfg, models.backend, transcript)
        res.answers = [o.value.model_dump() if o.value is not None else None for o in outs]
        res.answer_errors = [o.error for o in outs]
        score, agreement, detail = score_answers(spec.task, (outs[0].value, outs[1].value))
        res.objective, res.agreement, res.objective_detail = score, agreement, detail
    if models.judge_backend is not None and cfg.judge_llm is not None:
        res.judge_model = models.judge_backend.model_name
        out = await judge_episode(
            models.judge_backend,
            spec.episode_id,
            spec.env,
            spec.agents,
            transcript,
            seed=spec.seed,
            max_tokens=cfg.judge_max_tokens,
            temperature=cfg.judge_llm.temperature,
            reasoning_chars=cfg.judge_reasoning_chars,
            max_turn_chars=cfg.max_turn_chars,
            reask=cfg.reask,
        )
        if isinstance(out.value, JudgeOutput):
            res.judge = judge_scores(out.value)
            if spec.task is None:
                res.agreement = all(res.judge[k]["goal"] >= SOTOPIA_AGREEMENT_GOAL for k in ("agent_0", "agent_1"))
        else:
            res.judge_error = out.error
    res.calls = models.recorder.drain(spec.episode_id)
    res.wall_s = time.perf_counter() - t0
    return res
