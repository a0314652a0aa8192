"""What a run is made of besides its config: input files, their content digests, and pre-flight checks.

Why: the config hash covers file *paths*; an edited population CSV or edge list under the same path
is a different world, and resuming into it silently mixes two worlds in one trace. The sha256 of
every input file is recorded in ``runs.input_digests`` at set-up and compared on resume (one function,
:func:`input_digests`, computes it for both). The pre-flight checks here run before the run
directory is created, so bad input never leaves a half-made directory behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from socium.config.base import InputFile
from socium.config.experiment import HASH_EXCLUDED, ExperimentConfig
from socium.errors import ConfigError, InputFileError
from socium.recsys.registry import resolve_recommender
from socium.trace.queries.runs import table_names
from socium.trace.store import open_trace

# Measured: a synthetic population costs ~0.8 KB/agent (benchmarks/bench_foundation.py); platform
# state, recommender and per-step buffers bring a rule-based run to about 2 KB/agent, and every
# follow edge costs about 64 bytes while the graph is generated and indexed.
BYTES_PER_AGENT = 2048
BYTES_PER_EDGE = 64


def input_paths(cfg: ExperimentConfig) -> dict[str, str]:
    """Config key -> file path of every input file the run reads, found by walking the config models for
    fields marked :class:`~socium.config.base.InputFile` (so a new file key is digested without a list here
    to keep up to date). A run folder (``llm_agents.replay_from``) stands for its ``trace.duckdb``."""
    out: dict[str, str] = {}
    _walk(cfg, "", out)
    return out


def _walk(model: BaseModel, prefix: str, out: dict[str, str]) -> None:
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        key = f"{prefix}{name}"
        marker = next((m for m in info.metadata if isinstance(m, InputFile)), None)
        if marker is not None:
            if isinstance(value, str) and value and marker.reads(model):
                p = Path(value)
                out[key] = str(p / "trace.duckdb") if marker.run_dir and p.is_dir() else value
        elif isinstance(value, BaseModel):
            _walk(value, f"{key}.", out)
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    _walk(item, f"{key}[{i}].", out)
        elif isinstance(value, dict):
            for k, item in value.items():
                if isinstance(item, BaseModel):
                    _walk(item, f"{key}.{k}.", out)


def check_data_file(key: str, path: str | Path) -> Path:
    """A data path must name an existing regular file: not a directory, FIFO or device such as
    ``/dev/zero`` (which would be read forever)."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputFileError(p, None, f"file not found (config key {key})") from None
    except OSError as exc:
        raise InputFileError(p, None, f"cannot read (config key {key}): {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputFileError(p, None, f"is a directory, expected a file (config key {key})")
    if not stat.S_ISREG(st.st_mode):
        raise InputFileError(p, None, f"is not a regular file (a device, FIFO or socket) (config key {key})")
    if not os.access(p, os.R_OK):
        raise InputFileError(p, None, f"not readable (config key {key})")
    return p


def file_digest(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def input_digests(cfg: ExperimentConfig) -> dict[str, dict[str, Any]]:
    """The world's input files as ``{key: {path, sha256, bytes}}``; the one place this is computed."""
    out = {}
    for key, path in input_paths(cfg).items():
        p = check_data_file(key, path)
        out[key] = {"path": str(path), "sha256": file_digest(p), "bytes": p.stat().st_size}
    return out


def inputs_json(digests: dict[str, dict[str, Any]]) -> str:
    return json.dumps(digests, sort_keys=True, separators=(",", ":"))


def changed_inputs(recorded: dict[str, dict[str, Any]], current: dict[str, dict[str, Any]]) -> list[str]:
    """Human lines naming each input file whose content (or presence) differs."""
    lines = []
    for key in sorted(set(recorded) | set(current)):
        a, b = recorded.get(key), current.get(key)
        if a is None or b is None:
            lines.append(
                f"{key}: {b['path']} was not digested when the run started (an older socium), so its contents "
                "cannot be checked"
                if a is None and b is not None
                else f"{key}: removed since the run started"
            )
        elif a.get("sha256") != b.get("sha256"):
            lines.append(
                f"{key}: {b['path']} changed since the run started "
                f"(sha256 {str(a.get('sha256'))[:12]}, now {b['sha256'][:12]})"
            )
    return lines


def recorded_inputs(cfg: ExperimentConfig, recorded: dict[str, dict[str, Any]], run_dir: Path) -> ExperimentConfig:
    """``cfg`` (a finished run's recorded config) with each input file it reads found as the run read it.

    Why: a run records its input paths as written (``people.csv``) and reads them from the folder it was
    started in, which the trace does not record. ``socium interview`` rebuilt the persona from whatever
    ``people.csv`` the *current* folder held, and ``--record`` stored that impostor's answer. The recorded
    sha256 says which file the run read: a relative path is looked for in the current folder, then beside
    the run folder and in each folder above it (``runs/<name>`` is started two folders up); the first with
    the recorded content is used (as an absolute path). None matching is a :class:`RunDirError` naming the
    key, as ``--resume`` refuses a changed input. A run from before digests were recorded is taken as is.
    """
    from socium.errors import RunDirError  # lazy: errors is cheap, but keep the import beside its use

    data = cfg.model_dump(mode="json")
    changed = False
    for key, path in input_paths(cfg).items():
        rec = recorded.get(key)
        if not isinstance(rec, dict) or not rec.get("sha256"):
            continue
        given = Path(str(rec.get("path") or path))
        bases = [Path.cwd(), *Path(os.path.abspath(run_dir)).parents] if not given.is_absolute() else [Path("/")]
        found = next((c for b in bases if _has_digest(c := b / given, rec["sha256"])), None)
        if found is None:
            raise RunDirError(
                f"{run_dir}: {key}: {given} is not the file the run read (sha256 {str(rec['sha256'])[:12]}: "
                "changed, removed, or relative to another folder); run the command from the folder the run was "
                "started in, or restore the file"
            )
        if str(found) != path:
            _set_key(data, key, str(found.parent if key.endswith("replay_from") else found))
            changed = True
    return type(cfg).model_validate(data) if changed else cfg


def _has_digest(path: Path, sha256: str) -> bool:
    try:
        return path.is_file() and file_digest(path) == sha256
    except OSError:
        return False


def _set_key(data: dict[str, Any], key: str, value: str) -> None:
    """Set ``a.b[2].c`` (a key of :func:`input_paths`) in a dumped config."""
    import re

    parts = [p for p in re.split(r"\.|\[(\d+)\]", key) if p]
    node: Any = data
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    else:
        out[prefix] = value
    return out


def config_diff(
    recorded: dict[str, Any], current: dict[str, Any], ignore: tuple[str, ...] = HASH_EXCLUDED
) -> list[str]:
    """Dotted keys whose values differ between two config dicts (``ignore``: sections not compared)."""
    a = _flatten({k: v for k, v in recorded.items() if k not in ignore}, "", {})
    b = _flatten({k: v for k, v in current.items() if k not in ignore}, "", {})
    return [
        f"{k}: {a.get(k, '<absent>')!r} -> {b.get(k, '<absent>')!r}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]


def available_memory() -> int | None:
    """Bytes this machine can still give (MemAvailable), or None when it cannot be told."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def estimate_memory(cfg: ExperimentConfig) -> int:
    """Rough bytes a synthetic world of ``population.n_agents`` needs (agents + follow edges)."""
    n = cfg.population.n_agents
    raw = cfg.graph.params.get("m", cfg.graph.params.get("k", 3))
    # a value that is not a number (--set graph.params.m=abc) is named by the graph's own checks, not here
    per_node = float(raw or 3) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else 3.0
    per_node = per_node if cfg.graph.kind != "empty" else 0.0
    return int(n * BYTES_PER_AGENT + 2 * n * max(per_node, 0.0) * BYTES_PER_EDGE)


def check_memory(cfg: ExperimentConfig, available: int | None = None) -> None:
    if cfg.population.source != "synthetic":
        return  # a file's population is bounded by the file, which is read (and checked) first
    need = estimate_memory(cfg)
    have = available_memory() if available is None else available
    if have is not None and need > have:
        raise ConfigError(
            f"population.n_agents: {cfg.population.n_agents:,} agents need about {need / 2**30:,.1f} GiB "
            f"and this machine has {have / 2**30:,.1f} GiB available; use fewer agents"
        )


def check_replay_source(cfg: ExperimentConfig) -> None:
    """``llm_agents.replay_from`` must be a run directory (or trace file) holding recorded LLM calls."""
    src = cfg.llm_agents.replay_from
    if not src:
        return

    p = Path(src)
    db = p / "trace.duckdb" if p.is_dir() else p
    if not db.is_file():
        raise ConfigError(f"llm_agents.replay_from: {src} is not a run directory (no trace.duckdb)")
    con = open_trace(db)
    try:
        tables = table_names(con)
    finally:
        con.close()
    if "llm_calls" not in tables:
        raise ConfigError(f"llm_agents.replay_from: {src} holds no recorded LLM calls (no llm_calls table)")


def preflight(cfg: ExperimentConfig) -> dict[str, dict[str, Any]]:
    """Every check that needs no run directory; returns the input digests to record."""

    resolve_recommender(cfg.recsys.kind)  # a plugin path is checked to name a recommender class first
    check_replay_source(cfg)  # before digesting: a folder without a trace gets its own message
    digests = input_digests(cfg)  # llm.model_path is an input file too: checked and digested here
    check_memory(cfg)
    return digests
