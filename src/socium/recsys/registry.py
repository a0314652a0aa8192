"""Pick a recommender by name, or import a user's class from a dotted path ``pkg.module:Class``."""

from __future__ import annotations

import importlib
from typing import Any, Callable

from socium.config import RecsysConfig
from socium.errors import ConfigError
from socium.recsys.base import Recommender
from socium.recsys.chronological import ChronologicalRecommender

BUILTIN: dict[str, Callable[..., Recommender]] = {"chronological": ChronologicalRecommender}


def make_recommender(cfg: RecsysConfig, sim: Any = None) -> Recommender:
    kind = cfg.kind
    if kind in BUILTIN:
        factory = BUILTIN[kind]
    elif ":" in kind or "." in kind:
        mod_name, _, attr = kind.replace(":", ".").rpartition(".")
        try:
            factory = getattr(importlib.import_module(mod_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"recsys.kind: cannot import {kind!r}: {exc}") from None
    else:
        raise ConfigError(f"recsys.kind: {kind!r} is not one of {', '.join(repr(k) for k in BUILTIN)} or a dotted path")
    rec = factory(window_steps=cfg.window_steps, sim=sim, **cfg.params)
    if not isinstance(rec, Recommender):
        raise ConfigError(f"recsys.kind: {kind!r} does not implement observe() and feeds()")
    return rec
