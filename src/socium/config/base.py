"""The strict base of every config section: unknown keys, non-finite numbers and bad defaults are errors."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)
