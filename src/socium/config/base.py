"""The strict base of every config section: unknown keys, non-finite numbers and bad defaults are errors."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from socium.core.perspective import perspective
from socium.errors import ConfigError


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)


def _known_perspective(name: str) -> str:
    """A perspective name registered in the table (``socium.core.perspective``), read at validation time
    so a perspective registered by a plugin is accepted like the built-in ones."""
    try:
        perspective(name)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return name


PerspectiveName = Annotated[str, AfterValidator(_known_perspective)]
"""A config value naming a perspective (``perspective``, ``*_visible_to``)."""
