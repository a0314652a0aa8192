"""Pick a moderation strategy by name, or a user's class by dotted path (``pkg.module:Class``).

Like recommenders (``socium.recsys.registry``), a dotted path must name a class implementing the
protocol -- here ``moderate()`` -- checked by :mod:`socium.core.plugins` before anything is built.
"""

from __future__ import annotations

from typing import Any

from socium.core.plugins import build_with_params, import_class
from socium.errors import ConfigError
from socium.moderation.base import Moderator
from socium.moderation.strategies import CommunityNotes, FactCheck, Hybrid, NoModeration

BUILTIN: dict[str, type] = {
    "none": NoModeration,
    "fact_check": FactCheck,
    "community_notes": CommunityNotes,
    "hybrid": Hybrid,
}


def resolve_moderator(kind: str) -> type:
    """The class named by ``moderation.kind``, without building it."""
    if kind in BUILTIN:
        return BUILTIN[kind]
    if ":" in kind or "." in kind:
        return import_class(
            kind, "moderation.kind", ("moderate",), "Moderator", "docs/moderation.md", "moderation strategy"
        )
    raise ConfigError(f"moderation.kind: {kind!r} is not one of {', '.join(repr(k) for k in BUILTIN)} or a dotted path")


def make_moderator(kind: str, params: dict[str, Any]) -> Moderator:
    """Build the strategy; ``params`` keys must be its constructor's arguments."""
    mod = build_with_params(resolve_moderator(kind), kind, "moderation.params", dict(params))
    if not isinstance(mod, Moderator):
        raise ConfigError(f"moderation.kind: {kind!r} does not implement moderate()")
    return mod
