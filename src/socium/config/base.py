"""The strict base of every config section: unknown keys, non-finite numbers and bad defaults are errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

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
