"""Pick a recommender by name, or import a user's class from a dotted path ``pkg.module:Class``.

Every factory is called as ``factory(window_steps=..., sim=..., **recsys.params)``; ``window_steps``
and ``sim`` are passed only if its signature accepts them, so a user's class may take neither.
Unknown keys in ``recsys.params`` are config errors that list the accepted ones.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable

from socium.config import RecsysConfig
from socium.errors import ConfigError
from socium.recsys.base import Recommender
from socium.recsys.chronological import ChronologicalRecommender
from socium.recsys.simple import GlobalRecommender, RandomRecommender, RedditHotRecommender
from socium.recsys.x import XRecommender

BUILTIN: dict[str, Callable[..., Recommender]] = {
    "chronological": ChronologicalRecommender,
    "random": RandomRecommender,
    "reddit_hot": RedditHotRecommender,
    "x": XRecommender,
    "global": GlobalRecommender,
}


def _import(kind: str) -> Callable[..., Any]:
    mod_name, sep, attr = kind.partition(":")
    if not sep:
        mod_name, _, attr = kind.rpartition(".")
    try:
        obj = importlib.import_module(mod_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"recsys.kind: cannot import {kind!r}: {exc}") from None
    if not callable(obj):
        raise ConfigError(f"recsys.kind: {kind!r} is not a class or factory")
    return obj


def _call(factory: Callable[..., Any], kind: str, window_steps: int, sim: Any, params: dict[str, Any]) -> Any:
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):  # some builtins have no signature: just call
        return factory(window_steps=window_steps, sim=sim, **params)
    ps = sig.parameters
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ps.values())
    accepted = {n for n, p in ps.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = sorted(set(params) - accepted) if not var_kw else []
    if unknown:
        allowed = ", ".join(sorted(accepted - {"window_steps", "sim", "self"})) or "(none)"
        raise ConfigError(f"recsys.params: unknown key(s) {', '.join(unknown)} for recommender {kind!r}; allowed: {allowed}")
    kwargs = dict(params)
    for name, value in (("window_steps", window_steps), ("sim", sim)):
        if var_kw or name in accepted:
            kwargs[name] = value
    try:
        return factory(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"recsys: cannot build recommender {kind!r} with params {params}: {exc}") from None


def make_recommender(cfg: RecsysConfig, sim: Any = None) -> Recommender:
    """Build the recommender named by ``cfg.kind`` (a built-in or ``pkg.module:Class``)."""
    kind = cfg.kind
    if kind in BUILTIN:
        factory = BUILTIN[kind]
    elif ":" in kind or "." in kind:
        factory = _import(kind)
    else:
        raise ConfigError(f"recsys.kind: {kind!r} is not one of {', '.join(repr(k) for k in BUILTIN)} or a dotted path")
    rec = _call(factory, kind, cfg.window_steps, sim, dict(cfg.params))
    if not isinstance(rec, Recommender):
        raise ConfigError(f"recsys.kind: {kind!r} does not implement observe() and feeds()")
    if cfg.following_k is not None:  # OASIS-style refresh counts (see recsys.refresh)
        from socium.recsys.refresh import RefreshMix

        return RefreshMix(rec, cfg.window_steps, cfg.following_k, cfg.recommended_k or 0, cfg.rec_probability)
    return rec
