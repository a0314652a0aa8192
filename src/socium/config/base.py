"""The strict base of every config section: unknown keys, non-finite numbers and bad defaults are errors."""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from socium.core.perspective import perspective
from socium.errors import ConfigError


@dataclass(frozen=True)
class OmitWhenDefault:
    """Field metadata: while the field holds its default it is left out of the dumped config, hence out of
    the recorded config and the config hash (``Annotated[float, OmitWhenDefault()]``).

    Why: a key added to the config must not change any existing run's hash or recorded config (resume and
    skip-if-done recognise a run by them). Each such key once carried its own hand-written serializer; this
    one marker, read by every section's serializer (:class:`_Cfg`), is the single rule.
    ``tests/test_config/test_hash_rule.py`` toggles every field and checks the hash follows.
    """


@dataclass(frozen=True)
class NotHashed:
    """Field metadata: the field does not change the world, so the config hash leaves it out
    (``executor``: where a run runs; ``steps``: a stopping rule). Read by ``ExperimentConfig.config_hash``."""


def _marked(model: type[BaseModel], marker: type) -> tuple[str, ...]:
    return tuple(n for n, f in model.model_fields.items() if any(isinstance(m, marker) for m in f.metadata))


@cache
def omitted_when_default(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of a config section marked :class:`OmitWhenDefault`."""
    return _marked(model, OmitWhenDefault)


@cache
def not_hashed(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of a config section marked :class:`NotHashed`."""
    return _marked(model, NotHashed)


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


class OmitsDefaults(BaseModel):
    """A model whose :class:`OmitWhenDefault` fields are left out of its dump while at their defaults (the
    serializer every ``_Cfg`` section has; sections with another base, e.g. ``llm``, take it from here)."""

    @model_serializer(mode="wrap")
    def _omit_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave out each :class:`OmitWhenDefault` field while it equals its default."""
        data = handler(self)
        for name in omitted_when_default(type(self)):
            field = type(self).model_fields[name]
            if (
                isinstance(data, dict)
                and name in data
                and getattr(self, name) == field.get_default(call_default_factory=True)
            ):
                del data[name]
        return data


class _Cfg(StrictNumbers, OmitsDefaults):
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
