"""The data of a group episode: the N-party deal task and its score, the characters, the episode spec, its turns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from socium.episodes.prompts import ActionType
from socium.episodes.sotopia import CharacterProfile, RelationshipType
from socium.episodes.tasks import TASK_NAMES as _NAMES

GroupMode = Literal["agents", "mindreaders", "script"]
TurnTaking = Literal["round_robin", "random", "addressed"]
GroupEnd = Literal["max_turns", "all_left", "none_streak", "script_end", "invalid_script"]
MAX_PARTIES = 8

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
            action_type=self.action_type,
            argument=self.argument,
            next_speaker=self.next_speaker,
        )
