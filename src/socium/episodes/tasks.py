"""Procedurally generated dyadic tasks whose outcome is scored by rule, not by an LLM judge.

SOTOPIA's goal score comes from a GPT-4 judge, which is itself one of the things the replicated
paper questions. These tasks (after SOTOPIA's ``mutual_friends`` and ``craigslist_bargains``
sources) have a known right answer, so goal completion can be measured exactly and compared with
the judge's. Every task renders to an :class:`EnvironmentProfile` so the same episode loop runs it.
Generation draws only from the given ``numpy`` generator: the same seed gives the same task.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from socium.episodes.sotopia import EnvironmentProfile, RelationshipType, render_for
from socium.errors import ConfigError, SociumError

#: Names for the characters of procedural tasks (two-party and 3+); none is a mutual-friend candidate name.
TASK_NAMES = (
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


class TaskOutcomeError(SociumError, ValueError):
    """An episode outcome handed to a scorer is self-contradictory (a deal without a price)."""


class TaskScore(BaseModel):
    """Rule-based result on SOTOPIA's goal scale, so it sits next to the judge's ``goal`` score."""

    model_config = ConfigDict(frozen=True)

    goal: tuple[float, float] = Field(description="Goal completion 0..10 for agent 0 and agent 1.")
    success: bool = Field(description="The task's full-success condition held.")
    within_targets: bool | None = Field(None, description="Bargaining only: deal price between the two targets.")
    detail: str = ""


def _task_id(prefix: str, payload: BaseModel) -> str:
    digest = hashlib.sha256(json.dumps(payload.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
    return f"{prefix}-{digest[:20]}"


def _pick(rng: np.random.Generator, pool: Sequence[str]) -> str:
    return pool[int(rng.integers(len(pool)))]


# --- mutual friend ----------------------------------------------------------------------------

_FIRST_NAMES = (
    "Alvin",
    "Mable",
    "Lolita",
    "Catherine",
    "Vita",
    "Brandon",
    "Don",
    "Tara",
    "Arlene",
    "Dorothy",
    "Timothy",
    "Leona",
    "Karis",
    "Elizabeth",
    "Eric",
    "Leroy",
    "Thanh",
    "Marva",
    "Michael",
    "Virginia",
    "Debra",
    "Eugenia",
    "Roberto",
    "David",
    "Larry",
    "Lynn",
    "Donald",
    "Dennis",
    "Jane",
    "Harvey",
    "Ninfa",
    "Angelica",
    "Andrew",
    "Melissa",
    "Anna",
    "Soledad",
    "John",
    "Lawrence",
    "Rafael",
    "Pamela",
)
ATTRIBUTE_POOLS: dict[str, tuple[str, ...]] = {
    "school": (
        "Clark University",
        "Coe College",
        "Williams College",
        "Auburn University",
        "Weber State University",
        "Winona State University",
        "Kansas Wesleyan University",
        "San Jose State University",
    ),
    "major": (
        "Greek",
        "Psychology",
        "Marine Biology",
        "Applied Mathematics",
        "Bioengineering",
        "Social Science Education",
        "Geological Engineering",
        "Hispanic-American Studies",
    ),
    "company": ("BellSouth", "MetLife", "Vectren", "Sony", "Cray", "Groupon", "General Cable", "Exxon"),
    "hobby": ("Homebrewing", "Amateur radio", "Quilting", "Kayaking", "Astronomy", "Climbing", "Go", "Parkour"),
    "location_preference": ("indoor", "outdoor"),
    "time_preference": ("morning", "afternoon", "evening"),
}


class Friend(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    attributes: dict[str, str]

    def describe(self) -> str:
        parts = "  ".join(f"{k.replace('_', ' ').title()}: {v}" for k, v in self.attributes.items())
        return f"{self.name}: {parts}".rstrip()


class MutualFriendTask(BaseModel):
    """Cooperative: each side holds a friend list; exactly one friend (same name, same attributes) is on both."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["mutual_friend"] = "mutual_friend"
    attributes: tuple[str, ...]
    friends: tuple[tuple[Friend, ...], tuple[Friend, ...]]
    shared_name: str

    @model_validator(mode="after")
    def _exactly_one_shared(self) -> MutualFriendTask:
        for side in self.friends:
            if len({normalise_name(f.name) for f in side}) != len(side):
                raise ValueError("friend names must be distinct within a list")
        a, b = ({f.name: f for f in side} for side in self.friends)
        common = set(a) & set(b)
        if common != {self.shared_name} or a[self.shared_name] != b[self.shared_name]:
            raise ValueError(
                f"the lists must share exactly {self.shared_name!r}, identically; they share {sorted(common)}"
            )
        return self

    @property
    def shared(self) -> Friend:
        return next(f for f in self.friends[0] if f.name == self.shared_name)

    def to_environment(self) -> EnvironmentProfile:
        """SOTOPIA's mutual-friends format; the answer is environment-only text."""
        goals = []
        for side in self.friends:
            listing = "".join(f"\n {f.describe()} " for f in side)
            goals.append(
                "You are trying to figure out whether you have a mutual friend with the other person. "
                "You should not simply list their names. At the end you will be asked for the mutual friend's name."
                f"\n<extra_info> You know the following friends: {listing}\n</extra_info>"
            )
        return EnvironmentProfile(
            env_id=_task_id("mutual-friend", self),
            codename="socium_mutual_friend",
            source="socium-mutual_friends",
            scenario=(
                "2 strangers are meeting at a party. "
                f"<p viewer='environment'>They have 1 common friend: {self.shared_name}.</p>"
            ),
            agent_goals=goals,
            relationship=RelationshipType.STRANGER,
        )

    def private_info(self, agent_index: int) -> str:
        """What agent ``agent_index`` is told: its own goal with its friend list."""
        return render_for(self.to_environment().agent_goals[agent_index], f"agent_{agent_index}")  # type: ignore[arg-type]

    def answer_question(self, agent_index: int) -> str:
        """Asked of each agent after the episode; its reply goes to :func:`score_mutual_friend`."""
        return (
            "Which of your friends do you think you share with the other person? "
            "Reply with that friend's name only, or 'none' if you do not know."
        )


def make_mutual_friend(
    rng: np.random.Generator,
    n_friends: int = 5,
    attributes: Sequence[str] = ("name", "school", "major", "company", "hobby"),
) -> MutualFriendTask:
    """Two lists of ``n_friends`` with one shared friend at a random position in each.

    Attribute values come from small pools, so non-shared friends often share the shared friend's
    school or company: agents must combine attributes, as in the original MutualFriends task. Names
    are distinct across both lists, so the name alone identifies the answer.
    """
    attrs = [a for a in attributes if a != "name"]
    unknown = [a for a in attrs if a not in ATTRIBUTE_POOLS]
    if unknown:
        raise ConfigError(f"mutual_friend.attributes: unknown {unknown}; allowed: name, {', '.join(ATTRIBUTE_POOLS)}")
    if len(set(attrs)) != len(attrs):
        raise ConfigError(f"mutual_friend.attributes: duplicates in {list(attributes)}")
    if not 1 <= n_friends <= (len(_FIRST_NAMES) + 1) // 2:
        raise ConfigError(f"mutual_friend.n_friends: {n_friends}; allowed 1..{(len(_FIRST_NAMES) + 1) // 2}")
    order = rng.permutation(len(_FIRST_NAMES))
    names = [_FIRST_NAMES[int(i)] for i in order[: 2 * n_friends - 1]]

    def friend(name: str) -> Friend:
        return Friend(name=name, attributes={a: _pick(rng, ATTRIBUTE_POOLS[a]) for a in attrs})

    shared = friend(names[0])
    sides = []
    for k in range(2):
        others = [friend(n) for n in names[1 + k * (n_friends - 1) : 1 + (k + 1) * (n_friends - 1)]]
        others.insert(int(rng.integers(n_friends)), shared)
        sides.append(tuple(others))
    return MutualFriendTask(attributes=tuple(attrs), friends=(sides[0], sides[1]), shared_name=shared.name)


def normalise_name(text: str | None) -> str:
    """Case-, whitespace- and edge-punctuation-insensitive form of a name ("  alvin. " == "Alvin")."""
    if text is None:
        return ""
    return re.sub(r"\s+", " ", text).strip().strip(".,;:!?\"'`()[]{}*").strip().casefold()


def score_mutual_friend(task: MutualFriendTask, answer_a: str | None, answer_b: str | None) -> TaskScore:
    """Shared score, since the goal is joint: both right -> 10, one right -> 5, none -> 0.

    An answer counts only if it *is* the name after normalisation; pulling a name out of free text
    is the caller's job (ask :meth:`MutualFriendTask.answer_question` with a constrained reply), so
    an answer listing every friend cannot score.
    """
    target = normalise_name(task.shared_name)
    right = [normalise_name(a) == target for a in (answer_a, answer_b)]
    value = 5.0 * sum(right)
    return TaskScore(
        goal=(value, value),
        success=all(right),
        detail=f"shared friend {task.shared_name}; correct: agent_0={right[0]}, agent_1={right[1]}",
    )


# --- bargaining --------------------------------------------------------------------------------


class BargainItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    title: str
    description: str
    base_price: float = Field(gt=0)


DEFAULT_ITEMS: tuple[BargainItem, ...] = (
    BargainItem(
        title="a couch, loveseat and ottoman set",
        description="Comfortable, light staining, in good shape.",
        base_price=550,
    ),
    BargainItem(title="a 64GB smartphone", description="Brand new, still sealed in its box.", base_price=650),
    BargainItem(
        title="a dresser with matching night stand",
        description="Decent condition; one handle detached.",
        base_price=200,
    ),
    BargainItem(
        title="an antique oak accent table", description="Late 1800s, two levels, solid joints.", base_price=60
    ),
    BargainItem(
        title="a glass and wood TV stand", description="Black glass, wood trim, fits a 42-inch TV.", base_price=125
    ),
    BargainItem(title="a road bike", description="Aluminium frame, new tyres, serviced last month.", base_price=400),
    BargainItem(
        title="a two-bedroom apartment sublet for one month", description="Furnished, near transit.", base_price=1800
    ),
    BargainItem(
        title="a used electric guitar with amplifier", description="Minor scratches, plays well.", base_price=300
    ),
)


class BargainingTask(BaseModel):
    """Competitive: agent 0 buys, agent 1 sells; the buyer's target is always below the seller's.

    CraigslistBargain gives the buyer a target below the listing price and the seller a target near
    it. Some SOTOPIA craigslist scenarios have overlapping targets (any price between satisfies
    both); those are not competitive, so this generator never makes them and the model rejects them.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["bargaining"] = "bargaining"
    item: BargainItem
    listing_price: float = Field(gt=0)
    buyer_target: float = Field(gt=0)
    seller_target: float = Field(gt=0)

    @model_validator(mode="after")
    def _conflicting(self) -> BargainingTask:
        if not self.buyer_target < self.seller_target:
            raise ValueError(f"buyer_target {self.buyer_target} must be below seller_target {self.seller_target}")
        return self

    def to_environment(self) -> EnvironmentProfile:
        goals = [
            (
                "You are the buyer for this item. <extra_info>Your target price is "
                f"${self.buyer_target:.2f}. Paying significantly more than the target counts against you; "
                "paying less counts in your favour.</extra_info>"
            ),
            (
                "You are the seller of this item. <extra_info>Your target price is "
                f"${self.seller_target:.2f}. Selling significantly below the target counts against you; "
                "selling above it counts in your favour.</extra_info>"
            ),
        ]
        return EnvironmentProfile(
            env_id=_task_id("bargaining", self),
            codename="socium_bargaining",
            source="socium-craigslist_bargains",
            scenario=(
                f"One person is selling {self.item.title} for ${self.listing_price:.2f}, while another person "
                f"is interested in buying it. {self.item.description}"
            ),
            agent_goals=goals,
            relationship=RelationshipType.STRANGER,
        )

    def private_info(self, agent_index: int) -> str:
        """What agent ``agent_index`` is told: its role and its own target price."""
        return render_for(self.to_environment().agent_goals[agent_index], f"agent_{agent_index}")  # type: ignore[arg-type]

    def answer_question(self, agent_index: int) -> str:
        """Asked after the episode; the two replies must agree for the deal to count (caller's rule)."""
        return (
            "Did you and the other person agree on a sale? If yes, reply with the agreed price in dollars "
            "as a number; if not, reply 'no deal'."
        )


def make_bargaining(
    rng: np.random.Generator,
    items: Sequence[BargainItem] = DEFAULT_ITEMS,
    buyer_fraction: tuple[float, float] = (0.5, 0.85),
    seller_fraction: tuple[float, float] = (0.9, 1.0),
) -> BargainingTask:
    """A listing (item base price x U(0.8, 1.2)) with targets drawn as fractions of it, in whole dollars.

    The default ranges keep the buyer below the seller (CraigslistBargain-like); should rounding or
    custom ranges cross them, the seller's target is lifted to one dollar above the buyer's.
    """
    if not items:
        raise ConfigError("bargaining.items: empty; need at least one item")
    for label, (lo, hi) in (("buyer_fraction", buyer_fraction), ("seller_fraction", seller_fraction)):
        if not 0 < lo <= hi:
            raise ConfigError(f"bargaining.{label}: {(lo, hi)}; need 0 < low <= high")
    item = items[int(rng.integers(len(items)))]
    listing = float(max(2, round(item.base_price * rng.uniform(0.8, 1.2))))
    buyer = float(max(1, round(listing * rng.uniform(*buyer_fraction))))
    seller = float(max(buyer + 1, round(listing * rng.uniform(*seller_fraction))))
    return BargainingTask(item=item, listing_price=listing, buyer_target=buyer, seller_target=seller)


def score_bargaining(task: BargainingTask, deal: bool, price: float | None) -> TaskScore:
    """Per-side goal from where the price falls between the targets.

    Buyer: 10 at or below its target, 0 at or above the seller's, linear between; seller mirrored,
    so inside the range the two sum to 10 (a zero-sum split of the surplus). No deal scores 0 for
    both: neither bought nor sold, which is what each goal asked for. ``success`` means a deal
    inside the targets' range (each side conceded at most to the other's target).
    """
    if not deal:
        if price is not None:
            raise TaskOutcomeError(f"no deal but a price {price!r} was given")
        return TaskScore(goal=(0.0, 0.0), success=False, within_targets=None, detail="no deal")
    if price is None or isinstance(price, bool) or not math.isfinite(float(price)) or price < 0:
        raise TaskOutcomeError(f"a deal needs a finite non-negative price, got {price!r}")
    p = float(price)
    lo, hi = task.buyer_target, task.seller_target
    seller_share = min(1.0, max(0.0, (p - lo) / (hi - lo)))
    within = lo <= p <= hi
    return TaskScore(
        goal=(10.0 * (1.0 - seller_share), 10.0 * seller_share),
        success=within,
        within_targets=within,
        detail=f"deal at ${p:.2f}; buyer target ${lo:.2f}, seller target ${hi:.2f}",
    )
