"""Config sections for veracity, agent roles and moderation (``roles:`` and ``moderation:``).

Kept here rather than in ``socium.config`` so the intervention layer's keys live beside the code that
reads them; ``socium.config`` only mounts them. Every key is part of the world (it is hashed), since
a different moderation policy is a different experiment.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from socium.config.base import PerspectiveName
from socium.config.base import _Cfg as _BaseCfg

VERACITY = ("unknown", "true", "false", "unverified", "non-rumor")
"""Ground-truth labels a post may carry (Twitter15's four plus 'unknown'); index = the stored code."""
Veracity = Literal["true", "false", "unverified", "non-rumor"]
ROLES = ("ordinary", "spreader", "fact_checker", "bot")
"""Agent roles; index = the stored code (``agents`` rows keep the name in ``agent_roles``)."""
Role = Literal["ordinary", "spreader", "fact_checker", "bot"]


class _Cfg(_BaseCfg):
    """The base's rules (and its hash rule, ``OmitWhenDefault``), non-finite numbers allowed as before."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=True)


class RolesConfig(_Cfg):
    """Who spreads misinformation, who checks it, and who is an automated amplifier.

    Fractions are drawn per agent from the run's seed (counter-based, so the same agents get the
    same roles whatever else changes); ``agents`` pins roles by id (e.g. the authors of false source
    tweets in data) and wins over the draw.
    """

    spreader: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Fraction of agents who are misinformation spreaders (their original posts are false).",
    )
    fact_checker: float = Field(
        0.0, ge=0, le=1, description="Fraction of agents who are fact-checkers (they report false posts they see)."
    )
    bot: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Fraction of agents who are bots: fixed behaviour, never asked the policy (they repost false "
        "posts in their feed).",
    )
    agents: dict[Role, list[int]] = Field(
        default_factory=dict, description="Roles pinned by agent id, e.g. {spreader: [3, 7]}; win over the fractions."
    )
    spreader_goal: str = Field(
        "Convince people the false claims you believe are true and get them shared widely.",
        description="Private goal given to LLM spreaders that have none of their own.",
    )
    fact_checker_goal: str = Field(
        "Keep the platform accurate: correct and report false claims you see.",
        description="Private goal given to LLM fact-checkers that have none of their own.",
    )
    fact_checker_reports: bool = Field(
        True, description="Fact-checkers report every false post in their feed (on top of what their policy does)."
    )
    bot_reposts: int = Field(
        1, ge=0, le=20, description="Bots repost at most this many false posts (unseen before) per activation."
    )

    @model_validator(mode="after")
    def _fractions(self) -> RolesConfig:
        if self.spreader + self.fact_checker + self.bot > 1 + 1e-9:
            raise ValueError(
                f"roles: spreader + fact_checker + bot = {self.spreader + self.fact_checker + self.bot:g} exceeds 1"
            )
        return self


class PrebunkConfig(_Cfg):
    """Inoculation before exposure (Roozenbeek & van der Linden): a prompt line or a pinned post."""

    fraction: float = Field(
        0.0, ge=0, le=1, description="Fraction of agents inoculated (seeded draw); 0 switches prebunking off."
    )
    step: int = Field(0, ge=0, description="Step from which the inoculated agents carry it.")
    mode: Literal["prompt", "post"] = Field(
        "prompt",
        description="'prompt': a line in every later prompt; 'post': the text pinned once at the top of their next "
        "feed.",
    )
    text: str = Field(
        "Platform tip: misleading posts often use outrage, urgency and unverifiable sources. Check before you share.",
        max_length=1000,
        description="The inoculation text.",
    )


class ModerationConfig(_Cfg):
    """How the platform intervenes (see docs/moderation.md).

    ``kind`` picks who decides which posts are misleading (a third-party fact-checker, community
    notes, both, or a plugin class); the other keys say what the platform then does with a post
    judged misleading (show a label, down-rank it, remove it, strike its author).
    """

    kind: str = Field(
        "none",
        description="none, fact_check, community_notes, hybrid, or a dotted path 'pkg.module:Class' implementing the "
        "Moderator protocol.",
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Strategy options, e.g. fact_check {delay, recall, precision, min_engagement, capacity}; "
        "community_notes {min_per_side, min_raters} (docs/moderation.md).",
    )
    show_labels: bool = Field(
        True, description="Labels and notes are shown with the post in feeds (and in LLM prompts)."
    )
    downrank: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Rank factor for a labelled post in EVERY recommender's feed (1: none, 0: never shown).",
    )
    remove: bool = Field(
        False, description="Remove labelled posts (and their reposts): never in a feed, search or trend afterwards."
    )
    suspend_after: int = Field(
        0, ge=0, description="Suspend an author after this many strikes (one per labelled post); 0: never."
    )
    veracity_visible_to: list[PerspectiveName] = Field(
        default_factory=list,
        description="Perspectives whose agents see each post's ground-truth veracity in the prompt (none by default).",
    )
    prebunk: PrebunkConfig = Field(
        default_factory=PrebunkConfig, description="Prebunking (inoculation) of a fraction of agents."
    )

    @property
    def active(self) -> bool:
        """Anything to do at all (a 'none' run with no prebunking behaves exactly as before)."""
        return self.kind != "none" or self.prebunk.fraction > 0
