"""One agent's profile as a typed record: what a researcher writes or reads, and what a policy is shown of
the agent it decides for (``Observation.profile``).

On the ground floor because the observation contract names it; the simulation keeps agents in columns
(``agents.profiles.Population``) and materialises a profile only when one agent is looked at.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

HOURS = 24


class AgentProfile(BaseModel):
    """One agent as a researcher writes or reads it."""

    model_config = ConfigDict(extra="forbid")

    id: int = Field(ge=0, description="Dense agent index 0..N-1; the id used everywhere in the trace.")
    name: str = Field("", description="Display name.")
    username: str = Field("", description="Handle, unique within a population.")
    bio: str = Field("", description="Self-description / persona text shown to the agent itself.")
    interests: list[str] = Field(default_factory=list, description="Topics the agent cares about.")
    stance: float | None = Field(None, description="Optional numeric opinion, conventionally in [-1, 1].")
    goal: str | None = Field(None, description="Optional private goal; only some perspectives reveal it to others.")
    activity: list[float] = Field(
        default_factory=lambda: [0.1] * HOURS,
        description="24 probabilities of being active in a step that falls in each hour of the day.",
    )
    extra: dict[str, Any] = Field(default_factory=dict, description="Source-specific attributes (age, mbti, ...).")

    @field_validator("activity")
    @classmethod
    def _activity_24(cls, v: list[float]) -> list[float]:
        if len(v) != HOURS:
            raise ValueError(f"activity must have {HOURS} hourly probabilities, got {len(v)}")
        bad = [p for p in v if not (0.0 <= p <= 1.0)]
        if bad:
            raise ValueError(f"activity probabilities must lie in [0, 1], got {bad[0]!r}")
        return v
