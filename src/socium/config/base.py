"""The strict base of every config section: unknown keys, non-finite numbers and bad defaults are errors."""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo, field_validator

from socium.core.perspective import perspective
from socium.errors import ConfigError


def _leaf_types(annotation: Any) -> set[Any]:
    """The plain types a field annotation admits (``Annotated``, ``Optional`` and unions unwrapped)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _leaf_types(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return set().union(*(_leaf_types(a) for a in get_args(annotation)))
    return {annotation}


def numbers_only(annotation: Any) -> bool:
    """Whether a field takes an int or a float and never a boolean."""
    leaves = _leaf_types(annotation)
    return bool(leaves & {int, float}) and bool not in leaves


class StrictNumbers(BaseModel):
    """A model whose numeric keys refuse ``true`` / ``false``.

    Why: pydantic's lax mode reads a YAML ``true`` as 1 for an int or float field, so ``cv.runs: true`` or
    ``counterfactual.bootstrap: yes`` ran (and was hashed) as 1. A boolean where a number is asked for is a
    slip, not a number; the error names the key like every config error."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_numbers(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, bool) and info.field_name is not None:
            field = cls.model_fields.get(info.field_name)
            if field is not None and numbers_only(field.annotation):
                raise ValueError(f"{str(v).lower()} is a boolean; this key takes a number")
        return v


class _Cfg(StrictNumbers):
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


@dataclass(frozen=True)
class InputFile:
    """Field metadata: this config key names a file whose *contents* shape the run's results.

    Why a marker and not a list: the config hash covers paths, not contents, so an edited file under the
    same path is another world, and a resume into it must be refused. ``timing.params_file``,
    ``llm.model_path`` and ``llm_agents.replay_from`` were left out of a hand-kept list of digested keys
    (a resume silently continued in another world). ``socium.simulator.inputs.input_paths`` finds every
    field carrying this marker by walking the config models, so a new file key is digested by
    construction. ``used`` says whether the section reads the file (e.g. ``graph.path`` only for
    ``kind: edgelist``); ``run_dir`` marks a run folder, whose ``trace.duckdb`` is the input.
    """

    used: Callable[[Any], bool] | None = None
    run_dir: bool = False

    def reads(self, section: Any) -> bool:
        return self.used is None or bool(self.used(section))


InputPath = Annotated[str | None, InputFile()]
"""A config value naming an input file that is read whenever it is set (digested on every run)."""
