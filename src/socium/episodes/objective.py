"""From a free-text episode to a rule-based outcome: each agent answers one structured question.

A transcript says "deal at 450?" / "sure" in a thousand ways; parsing that ourselves would make
the score depend on our regexes. Instead, after the episode each agent is asked
(``task.answer_question(i)``) for a constrained JSON answer, and the rules below turn the two
answers into the task's outcome and an agreement flag.

Rules (documented in docs/results.md as well):

* mutual friend: each agent's ``friend_name`` is scored by :func:`score_mutual_friend`
  (5 points per agent that names the shared friend, shared by both). *Agreement*: both named the
  same friend (after name normalisation), and it is not empty or "none"; right or wrong.
* bargaining: a deal counts only when **both** answer ``deal: true`` with finite non-negative
  prices that differ by at most ``max(1 dollar, 1% of the listing price)``; the deal price is
  their mean. One-sided or mismatched claims are no deal (goal 0 for both). *Agreement*: a deal.
* an agent whose answer is invalid after the re-ask counts as "none" / "no deal".
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from socium.episodes.tasks import (
    BargainingTask,
    MutualFriendTask,
    TaskScore,
    normalise_name,
    score_bargaining,
    score_mutual_friend,
)

Task = MutualFriendTask | BargainingTask
MAX_NAME_CHARS = 100
PRICE_TOLERANCE_ABS = 1.0
PRICE_TOLERANCE_REL = 0.01


class FriendAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    friend_name: str = Field(max_length=MAX_NAME_CHARS, description="The shared friend's name, or 'none'.")


class DealAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    deal: bool = Field(description="Whether the two agreed on a sale.")
    price: float | None = Field(
        None, allow_inf_nan=False, description="The agreed price in dollars; null without a deal."
    )


def answer_model(task: Task) -> type[BaseModel]:
    return FriendAnswer if isinstance(task, MutualFriendTask) else DealAnswer


def answer_schema(task: Task) -> dict[str, Any]:
    """The JSON schema sent with the question (constrained decoding where the backend supports it)."""
    if isinstance(task, MutualFriendTask):
        return {
            "type": "object",
            "properties": {"friend_name": {"type": "string", "maxLength": MAX_NAME_CHARS}},
            "required": ["friend_name"],
            "additionalProperties": False,
        }
    return {
        "type": "object",
        "properties": {
            "deal": {"type": "boolean"},
            "price": {"anyOf": [{"type": "number", "minimum": 0}, {"type": "null"}]},
        },
        "required": ["deal", "price"],
        "additionalProperties": False,
    }


def answer_format(task: Task) -> str:
    """The reply format spelled out in the question, for backends without constrained decoding."""
    if isinstance(task, MutualFriendTask):
        return 'Reply with one JSON object {"friend_name": "<name or none>"} and nothing else.'
    return 'Reply with one JSON object {"deal": true or false, "price": <agreed dollars> or null} and nothing else.'


def _price(value: float | None) -> float | None:
    if value is None or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def decide_deal(task: BargainingTask, a: DealAnswer | None, b: DealAnswer | None) -> tuple[bool, float | None, str]:
    """``(deal, price, reason)`` from the buyer's and the seller's answers; see the module rules."""
    if a is None or b is None:
        return False, None, "an answer is missing or invalid"
    if not (a.deal and b.deal):
        return False, None, f"deal claimed by buyer={a.deal}, seller={b.deal}"
    pa, pb = _price(a.price), _price(b.price)
    if pa is None or pb is None:
        return False, None, f"a deal was claimed without a usable price (buyer {a.price}, seller {b.price})"
    tol = max(PRICE_TOLERANCE_ABS, PRICE_TOLERANCE_REL * task.listing_price)
    if abs(pa - pb) > tol:
        return False, None, f"prices disagree: buyer {pa:g}, seller {pb:g} (tolerance {tol:g})"
    return True, (pa + pb) / 2.0, f"both report a deal at {pa:g} / {pb:g}"


def _name(answer: BaseModel | None) -> str | None:
    return answer.friend_name if isinstance(answer, FriendAnswer) else None


def score_answers(task: Task, answers: tuple[BaseModel | None, BaseModel | None]) -> tuple[TaskScore, bool, str]:
    """``(score, agreement, detail)`` for one finished episode."""
    if isinstance(task, MutualFriendTask):
        n0, n1 = _name(answers[0]), _name(answers[1])
        score = score_mutual_friend(task, n0, n1)
        k0, k1 = normalise_name(n0), normalise_name(n1)
        agreement = bool(k0) and k0 == k1 and k0 != "none"
        return score, agreement, score.detail
    a, b = (x if isinstance(x, DealAnswer) else None for x in answers)
    deal, price, reason = decide_deal(task, a, b)
    score = score_bargaining(task, deal, price)
    return score, deal, f"{reason}; {score.detail}"
