"""Resolve a config value naming a user's class (``pkg.module:Class``) -- safely.

A config is trusted to name modules, but a *value* in it must never run arbitrary code (a factory
path like ``os:system`` would call a shell with the next config key). So a dotted path may name only
a **class** whose required methods are plain functions (the protocol), checked before anything is
called. Recommenders (``recsys.kind``) and moderation strategies (``moderation.kind``) share this.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from typing import Any

from socium.errors import ConfigError


def check_protocol_class(
    obj: Any, kind: str, key: str, methods: Sequence[str], protocol: str, doc: str, noun: str = "plugin"
) -> type:
    """``obj`` itself if it is a class defining every method in ``methods``; else a ConfigError naming ``key``."""
    if not inspect.isclass(obj):
        what = "a module" if inspect.ismodule(obj) else f"a {type(obj).__name__}"
        raise ConfigError(
            f"{key}: {kind!r} is {what}, not a {noun} class; a dotted path must name a class implementing "
            f"{' and '.join(m + '()' for m in methods)} (see {doc})"
        )
    missing = [m for m in methods if not inspect.isfunction(getattr(obj, m, None))]
    if missing:
        raise ConfigError(
            f"{key}: {kind!r} does not implement {' and '.join(m + '()' for m in missing)} (the {protocol} protocol)"
        )
    return obj


# Config keys whose value may be a dotted path to a user's class (imported, so its module's top-level code runs).
PLUGIN_KEYS = ("recsys.kind", "moderation.kind")


def is_dotted_path(kind: str) -> bool:
    """Whether a plugin key's value names code to import (``pkg.module:Class``) rather than a built-in or an
    installed entry point's plain name."""
    return ":" in kind or "." in kind


def recorded_plugins(config: dict[str, Any]) -> list[str]:
    """``key 'value'`` for each dotted plugin path in a config mapping read from data (a trace), found
    without importing anything.

    Why: resuming from a trace alone imported the trace's ``recsys.kind`` module (its top-level code ran)
    before the class check, so a planted trace ran code. Only the user's own config or command line may
    name code to import; a trace that does is refused unless the user gives that config again.
    """
    found = []
    for key in PLUGIN_KEYS:
        section, _, field = key.partition(".")
        value = config.get(section, {})
        value = value.get(field) if isinstance(value, dict) else None
        if isinstance(value, str) and is_dotted_path(value):
            found.append(f"{key} {value[:200]!r}")
    return found


def import_class(kind: str, key: str, methods: Sequence[str], protocol: str, doc: str, noun: str = "plugin") -> type:
    """Import ``pkg.module:Class`` (or ``pkg.module.Class``) and check it with :func:`check_protocol_class`."""
    mod_name, sep, attr = kind.partition(":")
    if not sep:
        mod_name, _, attr = kind.rpartition(".")
    if not mod_name or not attr or not all(p.isidentifier() for p in (*mod_name.split("."), *attr.split("."))):
        raise ConfigError(f"{key}: {kind!r} is not a dotted path 'package.module:Class'")
    try:
        obj: Any = importlib.import_module(mod_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"{key}: cannot import {kind!r}: {exc}") from None
    return check_protocol_class(obj, kind, key, methods, protocol, doc, noun)


def build_with_params(cls: type, kind: str, key: str, params: dict[str, Any], **context: Any) -> Any:
    """``cls(**params, **context)``; unknown ``params`` keys are errors listing the accepted ones.

    ``context`` arguments (e.g. ``seed``) are passed only if the class accepts them.
    """
    sig = inspect.signature(cls)
    ps = sig.parameters
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ps.values())
    accepted = {n for n, p in ps.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self"}
    unknown = [] if var_kw else sorted(set(params) - accepted)
    if unknown:
        allowed = ", ".join(sorted(accepted - set(context))) or "(none)"
        raise ConfigError(f"{key}: unknown key(s) {', '.join(unknown)} for {kind!r}; allowed: {allowed}")
    kwargs = dict(params)
    kwargs.update({k: v for k, v in context.items() if var_kw or k in accepted})
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key}: cannot build {kind!r} with {params}: {exc}") from None
