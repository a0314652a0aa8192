"""Pick a recommender by name, an installed plugin, or a user's class from a dotted path ``pkg.module:Class``.

A config is trusted input (it names Python modules to import), but a *value* in it must never be
able to run arbitrary code: ``recsys.kind: os:system`` once ran ``recsys.params.command`` in a shell.
So a dotted path may name only a **class** whose ``observe`` and ``feeds`` are methods (the
:class:`Recommender` protocol), checked before anything is called; functions, builtins, modules and
other callables are refused. Installed packages can also register classes under the
``socium.recommenders`` entry-point group and be named by their entry-point name.

Every factory is called as ``factory(window_steps=..., context=..., **recsys.params)``; ``window_steps``
and ``context`` (a :class:`~socium.recsys.base.RecsysContext`: agent count, seed, step length, profiles)
are passed only if its signature accepts them, so a user's class may take neither. A class that still
takes ``sim`` (the whole simulation, passed before issue 35) is refused with one error saying what changed.
Unknown keys in ``recsys.params`` are config errors that list the accepted ones.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from socium.config.world import RecsysConfig
from socium.core.plugins import check_protocol_class, import_class
from socium.errors import ConfigError
from socium.recsys.base import Recommender, RecsysContext
from socium.recsys.chronological import ChronologicalRecommender
from socium.recsys.foryou import ForYouRecommender
from socium.recsys.refresh import RefreshMix
from socium.recsys.simple import GlobalRecommender, RandomRecommender, RedditHotRecommender
from socium.recsys.x import XRecommender

BUILTIN: dict[str, Callable[..., Recommender]] = {
    "chronological": ChronologicalRecommender,
    "random": RandomRecommender,
    "reddit_hot": RedditHotRecommender,
    "x": XRecommender,
    "global": GlobalRecommender,
    "foryou": ForYouRecommender,
}


ENTRY_POINT_GROUP = "socium.recommenders"
RECSYS_METHODS = ("observe", "feeds")


def _entry_point(kind: str) -> Any | None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == kind:
            try:
                return ep.load()
            except Exception as exc:  # a broken plugin package: say which
                raise ConfigError(f"recsys.kind: entry point {kind!r} ({ep.value}) cannot be loaded: {exc}") from None
    return None


def check_recommender_class(obj: Any, kind: str) -> type:
    """Only a class with ``observe`` and ``feeds`` methods may be built from a config value."""
    return check_protocol_class(
        obj, kind, "recsys.kind", RECSYS_METHODS, "Recommender", "docs/recsys.md", "recommender"
    )


def _import(kind: str) -> type:
    return import_class(kind, "recsys.kind", RECSYS_METHODS, "Recommender", "docs/recsys.md", "recommender")


def resolve_recommender(kind: str) -> Callable[..., Recommender]:
    """The class (or built-in factory) named by ``recsys.kind``, without building anything."""
    if kind in BUILTIN:
        return BUILTIN[kind]
    plugin = _entry_point(kind)
    if plugin is not None:
        return check_recommender_class(plugin, kind)
    if ":" in kind or "." in kind:
        return _import(kind)
    raise ConfigError(
        f"recsys.kind: {kind!r} is not one of {', '.join(repr(k) for k in BUILTIN)}, "
        f"an installed '{ENTRY_POINT_GROUP}' plugin, or a dotted path"
    )


OLD_SIM_PARAMETER = (
    "takes 'sim' (the whole simulation), which socium no longer passes: a recommender is now built with "
    "'context', a socium.recsys.base.RecsysContext (n_agents, seed, step_minutes, bios, interests, usernames); "
    "rename the parameter to 'context' (docs/recsys.md, 'Your own recommender')"
)


def _call(
    factory: Callable[..., Any], kind: str, window_steps: int, context: RecsysContext | None, params: dict[str, Any]
) -> Any:
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):  # some builtins have no signature: just call
        return factory(window_steps=window_steps, context=context, **params)
    ps = sig.parameters
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ps.values())
    accepted = {n for n, p in ps.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if "sim" in accepted and "sim" not in params:
        raise ConfigError(f"recsys.kind: {kind!r} {OLD_SIM_PARAMETER}")
    unknown = sorted(set(params) - accepted) if not var_kw else []
    if unknown:
        allowed = ", ".join(sorted(accepted - {"window_steps", "context", "self"})) or "(none)"
        raise ConfigError(
            f"recsys.params: unknown key(s) {', '.join(unknown)} for recommender {kind!r}; allowed: {allowed}"
        )
    kwargs = dict(params)
    for name, value in (("window_steps", window_steps), ("context", context)):
        if var_kw or name in accepted:
            kwargs[name] = value
    try:
        return factory(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"recsys: cannot build recommender {kind!r} with params {params}: {exc}") from None


def make_recommender(cfg: RecsysConfig, context: RecsysContext | None = None) -> Recommender:
    """Build the recommender named by ``cfg.kind`` (a built-in or ``pkg.module:Class``); ``context``: what it
    is told about the run (None outside a run, e.g. in tests)."""
    kind = cfg.kind
    factory = resolve_recommender(kind)
    rec = _call(factory, kind, cfg.window_steps, context, dict(cfg.params))
    if not isinstance(rec, Recommender):
        raise ConfigError(f"recsys.kind: {kind!r} does not implement observe() and feeds()")
    if cfg.following_k is not None:  # OASIS-style refresh counts (see recsys.refresh)
        return RefreshMix(rec, cfg.window_steps, cfg.following_k, cfg.recommended_k or 0, cfg.rec_probability)
    return rec
