"""Where cascades come from: registered data-set names and the user's files, all as one cascade table.

Why a registry: ``socium forecast --cascades twitter15`` and ``--cascades my.csv`` must reach the same
:data:`~socium.experiments.propagation.data.cascade_format.SCHEMA` table, and a new data set (CED's Weibo
reposts) must be one line here plus its reader, not a new branch in every command. Built-in readers are
named as ``module:function`` and imported only when asked for, so the registry costs nothing at start-up
and a reader may live in any module the experiments layer can import.

A reader is ``reader(limit) -> pa.Table``: the first ``limit`` cascades (all when None), already passed
through :func:`~socium.experiments.propagation.data.cascade_format.cascade_table` or built from cleaned trees.
"""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from socium.errors import ConfigError, InputFileError
from socium.experiments.propagation.data.cascade_format import (
    FILE_SUFFIXES,
    cascade_ids,
    limit_cascades,
    read_csv,
    read_jsonl,
    read_parquet,
    table_from_trees,
)
from socium.experiments.propagation.data.realcascades import (
    load_labels,
    load_twitter15,
    oasis_cascade_ids,
    parse_tree,
    twitter15_ids,
)

Reader = Callable[[int | None], pa.Table]

BUILTIN: dict[str, tuple[str, str]] = {
    "twitter15": (
        "socium.experiments.propagation.data.cascade_sources:read_twitter15",
        "Twitter15 retweet trees (Ma et al. 2017), 1,490 cascades with veracity labels",
    ),
    "oasis": (
        "socium.experiments.propagation.data.cascade_sources:read_oasis",
        "the 134 Twitter15 cascades among OASIS's 198",
    ),
    "twitter15-not-oasis": (
        "socium.experiments.propagation.data.cascade_sources:read_twitter15_not_oasis",
        "the Twitter15 cascades outside OASIS's 134 (transfer tests of an OASIS fit)",
    ),
    "ced": (
        "socium.experiments.propagation.data.ced:read_ced_source",
        "Weibo repost/comment cascades of CED (Song et al. 2018) posted before 2013-07-01, rumour / non-rumour",
    ),
}
"""Data-set name -> (``module:function`` of its reader, one line on what it is)."""
_REGISTERED: dict[str, tuple[Reader, str]] = {}
_READERS = {".csv": read_csv, ".parquet": read_parquet, ".jsonl": read_jsonl, ".ndjson": read_jsonl}
TWITTER_EPOCH_MS = 1288834974657
"""Snowflake ids (Twitter since Nov 2010) carry their creation time: ``(id >> 22) + this`` ms since 1970."""


def register_source(name: str, reader: Reader, description: str = "") -> None:
    """Make ``name`` a data set ``load_cascade_table`` (and ``socium forecast --cascades``) accepts."""
    _REGISTERED[name] = (reader, description)


def source_names() -> dict[str, str]:
    """Every registered data-set name with its one-line description."""
    return {**{k: v[1] for k, v in BUILTIN.items()}, **{k: v[1] for k, v in _REGISTERED.items()}}


def _reader(name: str) -> Reader:
    if name in _REGISTERED:
        return _REGISTERED[name][0]
    module, _, func = BUILTIN[name][0].partition(":")
    reader: Reader = getattr(importlib.import_module(module), func)
    return reader


def snowflake_time(tweet_id: str) -> dt.datetime | None:
    """When a tweet was posted, read from its snowflake id (None for ids older than snowflake)."""
    if not tweet_id.isdigit() or int(tweet_id) < 1 << 32:
        return None
    return dt.datetime.fromtimestamp(((int(tweet_id) >> 22) + TWITTER_EPOCH_MS) // 1000, dt.timezone.utc)


def _twitter15(ids: list[str] | None, limit: int | None) -> pa.Table:
    wanted = ids if limit is None else (ids if ids is not None else twitter15_ids())[: max(limit, 0)]
    trees = load_twitter15(None, wanted, strict=False)
    labels = load_labels()
    return table_from_trees(trees, labels=labels, posted_at={c: t for c in trees if (t := snowflake_time(c))})


def read_twitter15(limit: int | None = None) -> pa.Table:
    """All Twitter15 trees (repaired as :mod:`realcascades` records), labels, ``posted_at`` from the ids."""
    return _twitter15(None, limit)


def read_oasis(limit: int | None = None) -> pa.Table:
    """OASIS's 134 Twitter15 cascades, in OASIS's list order."""
    return _twitter15(oasis_cascade_ids(), limit)


def read_twitter15_not_oasis(limit: int | None = None) -> pa.Table:
    """The Twitter15 trees that are not among OASIS's 134, in archive order."""
    oasis = set(oasis_cascade_ids())
    return _twitter15([c for c in twitter15_ids() if c not in oasis], limit)


def read_file(path: Path) -> pa.Table:
    """One file: CSV, Parquet or JSONL rows of the format, or a Ma et al. tree file (``.txt``, one cascade)."""
    suffix = path.suffix.lower()
    if suffix == ".txt":
        return table_from_trees({path.stem: parse_tree(path)})
    if suffix not in _READERS:
        raise InputFileError(path, None, f"unknown file type {suffix!r}: expected {', '.join(FILE_SUFFIXES)} or .txt")
    return _READERS[suffix](path)


def load_cascade_table(source: str | Path, limit: int | None = None) -> pa.Table:
    """The cascades ``source`` names: a registered data set, a file, or a folder of files (all of one kind
    of the above; tree files are one cascade each, named by file stem), as one table.

    A cascade id in two files of a folder is an error naming both: merging them would invent a cascade.
    """
    name = str(source)
    if name in _REGISTERED or name in BUILTIN:
        return limit_cascades(_reader(name)(limit), limit)
    p = Path(source)
    if p.is_file():
        return limit_cascades(read_file(p), limit)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in (*FILE_SUFFIXES, ".txt"))
        if not files:
            raise InputFileError(p, None, f"folder holds no cascade files ({', '.join(FILE_SUFFIXES)}, .txt trees)")
        tables: list[pa.Table] = []
        first: dict[str, Path] = {}
        for f in files:
            t = read_file(f)
            for c in cascade_ids(t):
                if c in first:
                    raise InputFileError(f, None, f"cascade {c!r} is also in {first[c]}")
                first[c] = f
            tables.append(t)
            if limit is not None and len(first) >= limit:
                break
        return limit_cascades(pa.concat_tables(tables), limit)
    names = ", ".join(source_names())
    raise ConfigError(f"--cascades {name!r}: not a data set ({names}), nor a file or folder")
