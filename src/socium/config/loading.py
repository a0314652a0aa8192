"""Reading configs: safe YAML (no object tags, no dates, alias expansion bounded), ``--set`` overrides,
validation with errors that name the key path, value and what is allowed."""

from __future__ import annotations

import json
import math
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from socium.config.experiment import ExperimentConfig
from socium.errors import ConfigError

# Limits on what a config file may expand to: YAML aliases can make a few hundred bytes build
# billions of objects ("billion laughs"), so the node graph is measured before anything is built.
MAX_CONFIG_BYTES = 8 * 1024 * 1024
MAX_CONFIG_NODES = 1_000_000


def _format_error(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        val = e.get("input")
        if e["type"] == "literal_error":
            allowed = e.get("ctx", {}).get("expected", "").replace(" or ", ", ")
            lines.append(f"{loc}: {val!r} is not one of {allowed}")
        elif e["type"] == "extra_forbidden":
            lines.append(f"{loc}: unknown key (check spelling; see `socium config-schema`)")
        elif e["type"] == "value_error" and not e["loc"]:
            lines.append(e["msg"].removeprefix("Value error, "))
        elif e["type"] == "value_error":
            lines.append(f"{loc}: {e['msg'].removeprefix('Value error, ')}")
        elif e["type"] == "missing":
            lines.append(f"{loc}: required key is missing")
        else:
            shown = repr(val) if not isinstance(val, dict) else "{...}"
            lines.append(f"{loc}: {shown} is invalid: {e['msg']}")
    return f"invalid config ({source}):\n  " + "\n  ".join(lines)


def apply_override(data: dict[str, Any], item: str) -> None:
    """Apply one ``--set key.path=value`` to a config mapping in place (the value parsed as YAML).

    Shared by ``socium run``, experiment specs and sensitivity designs so that ``--set`` means one thing.
    """
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key.path=value")
    key, raw = item.split("=", 1)
    bad = next((i for i, c in enumerate(item) if "\udc80" <= c <= "\udcff"), None)
    if bad is not None:  # argv bytes that are not UTF-8 arrive as lone surrogates; YAML's reader raised on them
        shown = os.fsencode(item).decode("utf-8", "backslashreplace")
        raise ConfigError(f"--set {shown}: not UTF-8 text (byte 0x{ord(item[bad]) & 0xFF:02x} at character {bad})")
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise ConfigError(f"--set {item!r}: empty key path")
    value = parse_yaml(raw, f"--set {key}")
    node = data
    for p in parts[:-1]:
        nxt = node.get(p)
        if nxt is None:
            nxt = node[p] = {}
        if not isinstance(nxt, dict):
            raise ConfigError(f"--set {key}: '{p}' is not a section")
        node = nxt
    node[parts[-1]] = value


M = TypeVar("M", bound=BaseModel)


def _bad_value(value: Any, path: str) -> tuple[str, str] | None:
    """The first value a JSON config cannot hold, with its key path (non-finite floats, dates, bytes...)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return (
                    f"{path}.{k!r}" if path else repr(k)
                ), f"key {k!r} is a {type(k).__name__}, keys must be strings"
            found = _bad_value(v, f"{path}.{k}" if path else k)
            if found:
                return found
        return None
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _bad_value(v, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return path, f"{value!r} is not a finite number"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path, "text holds a lone surrogate (an invalid \\ud800-\\udfff escape)"
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return None
    return path, f"a {type(value).__name__} value ({str(value)[:40]!r}) where plain text, numbers or lists are expected"


def _json_copy(data: Any, source: str) -> Any:
    bad = _bad_value(data, "")
    if bad is not None:
        raise ConfigError(f"invalid config ({source}):\n  {bad[0] or '<root>'}: {bad[1]}")
    return json.loads(json.dumps(data, allow_nan=False))


def validate_dict(
    model: type[M], data: dict[str, Any], overrides: Sequence[str] | None = None, source: str = "<dict>"
) -> M:
    """Apply ``key.path=value`` overrides, then validate into ``model``; errors name the key path.

    Shared by every YAML format socium reads (experiment configs, episode configs, experiment specs)
    so they all report bad input the same way.
    """
    data = _json_copy(data, source)  # deep copy; also rejects non-JSON values early, naming the key
    for item in overrides or []:
        apply_override(data, item)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_error(err, source)) from None


class _ConfigLoader(yaml.SafeLoader):
    """The safe loader minus implicit timestamps: ``name: 2024-01-01`` stays the text it looks like
    (a ``date`` object cannot be stored as JSON, compared with a string or hashed canonically), and with
    duplicate keys refused: PyYAML keeps the last of two ``policy:`` blocks without a word, so half of
    what the user wrote was silently ignored."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` then overriding a key is allowed
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base constructor says so
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {str(key)[:80]!r} at lines {first} and {key_node.start_mark.line + 1} "
                    "(a mapping holds each key once; merge the two)",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


_ConfigLoader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in rs if tag != "tag:yaml.org,2002:timestamp"]
    for ch, rs in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _expanded_size(node: yaml.Node, where: str) -> int:
    """Nodes the document would build once aliases are expanded; refuses recursive aliases.

    Memoised per node, so measuring a billion-laughs document costs as little as reading it.
    """
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(n: yaml.Node) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in open_:
            mark = n.start_mark
            raise ConfigError(f"{where}:{mark.line + 1}: recursive YAML alias (a value that contains itself)")
        open_.add(key)
        total = 1
        if isinstance(n, yaml.SequenceNode):
            total += sum(size(c) for c in n.value)
        elif isinstance(n, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in n.value)
        open_.discard(key)
        sizes[key] = total
        return total

    return size(node)


def parse_yaml(text: str, where: str) -> Any:
    """Parse config YAML safely: no tags that build objects, no dates, alias expansion bounded.

    Why compose first: PyYAML builds aliased values by reference, so a bomb is cheap to load, but
    every later step (deep copy, JSON, pydantic) expands it; measuring the node graph before
    constructing anything refuses it while it is still a few kilobytes.
    """
    loader = _ConfigLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        n = _expanded_size(node, where)
        if n > MAX_CONFIG_NODES:
            raise ConfigError(
                f"{where}: YAML expands to {n:,} values (limit {MAX_CONFIG_NODES:,}); "
                "aliases (*name) repeated inside aliases multiply, see 'billion laughs'"
            )
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        raise ConfigError(f"{at}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:
        raise ConfigError(f"{where}: YAML nested too deeply") from None
    finally:
        loader.dispose()


def read_config_text(path: str | Path) -> str:
    """A config file's text: a regular file, bounded in size, UTF-8; errors name the file."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"config file not found: {p}")
    if not p.is_file():
        raise ConfigError(f"{p}: not a regular file (a directory or device cannot be a config)")
    size = p.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{p}: {size:,} bytes; a config may hold at most {MAX_CONFIG_BYTES:,}")
    raw = p.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{p}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the file as UTF-8"
        ) from None


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    """A YAML file's top-level mapping, read with the safe loader; errors name file and line."""
    p = Path(path)
    data = parse_yaml(read_config_text(p), str(p)) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: top level must be a mapping of config keys")
    return data


def config_from_dict(
    data: dict[str, Any], overrides: list[str] | None = None, source: str = "<dict>"
) -> ExperimentConfig:
    return validate_dict(ExperimentConfig, data, overrides, source)


# Keys that mark a YAML file as the input of another command, and that command (FILE: the file).
_OTHER_SPECS: tuple[tuple[frozenset[str], str, str], ...] = (
    (frozenset({"grid"}), "a sweep spec", "socium sweep FILE"),
    (frozenset({"method", "parameters"}), "a sensitivity spec", "socium sensitivity FILE"),
    (frozenset({"parties", "deals", "pot", "turn_taking"}), "a group-episodes config", "socium group-episodes FILE"),
    (frozenset({"tasks", "sotopia", "judge_llm", "modes"}), "an episodes config", "socium episodes FILE"),
)
# socium.experiments.studies.EXPERIMENT_KINDS, which config (below experiments) cannot import; a test holds them equal.
_EXPERIMENT_KINDS = ("propagation", "herding", "polarisation", "intervention", "compare")


def other_spec_error(data: dict[str, Any], path: str | Path) -> ConfigError | None:
    """The one-line error for a file that is another command's input given to ``socium run``.

    Why: an experiment spec given to ``socium run`` listed its seven keys as unknown config keys, which
    says what is wrong with a config but not that the file is not one, nor which command reads it.
    """
    unknown = set(data) - set(ExperimentConfig.model_fields)
    if not unknown:
        return None
    shown = shlex.quote(str(path))
    kind = data.get("experiment")
    if "experiment" in unknown:
        if isinstance(kind, str) and kind in _EXPERIMENT_KINDS:
            article = "an" if kind[0] in "aeiou" else "a"
            return ConfigError(
                f"{path}: this is {article} {kind} spec, not a run config: `socium experiment {kind} {shown}`"
            )
        return ConfigError(
            f"{path}: this is an experiment spec, not a run config: `socium experiment KIND {shown}` "
            f"(KIND: {', '.join(_EXPERIMENT_KINDS)})"
        )
    for keys, what, command in _OTHER_SPECS:
        if unknown & keys:
            return ConfigError(f"{path}: this is {what}, not a run config: `{command.replace('FILE', shown)}`")
    return None


def load_config(path: str | Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Load and validate a YAML config; ``overrides`` are ``key.path=value`` strings (values are YAML)."""
    data = read_yaml_mapping(path)
    other = other_spec_error(data, path)
    if other is not None:
        raise other
    return config_from_dict(data, overrides, source=str(path))
