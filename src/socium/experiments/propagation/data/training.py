"""The trees a fit is trained on, from ``socium fit propagation --train`` values.

Why apart from the estimator (:mod:`~socium.experiments.propagation.fit.fit`): naming trees by file, folder,
cascade-format file or data-set name is reading data, and the estimator only needs the trees.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from socium.errors import ConfigError
from socium.experiments.propagation.data.cascade_format import FILE_SUFFIXES, cascade_trees
from socium.experiments.propagation.data.cascade_sources import load_cascade_table, source_names
from socium.experiments.propagation.data.ced import load_ced
from socium.experiments.propagation.data.realcascades import (
    CascadeTree,
    load_twitter15,
    oasis_cascade_ids,
    parse_tree,
)


def load_training_trees(sources: Sequence[str]) -> dict[str, CascadeTree]:
    """Trees named by ``--train`` values: a tree file, a folder of ``*.txt`` trees, a cascade-format file
    (CSV/Parquet/JSONL, docs/data.md) or a registered data set name ('twitter15', 'oasis', 'ced', ...).

    Any real retweet-tree set in the Ma et al. format works; ids are file stems (Twitter15: tweet ids).
    'twitter15' and 'oasis' load the trees directly (as every earlier fit did, so refits are unchanged).
    """

    out: dict[str, CascadeTree] = {}
    for src in sources:
        p = Path(src)
        if src == "twitter15":
            out.update(load_twitter15(None, strict=False))
        elif src == "oasis":
            out.update(load_twitter15(None, oasis_cascade_ids(), strict=False))
        elif src == "ced":  # Weibo (CED) cascades posted before 2013-07-01 only: the later ones are held back
            out.update(load_ced()[0])
        elif src in source_names() or (p.is_file() and p.suffix.lower() in FILE_SUFFIXES):
            out.update(cascade_trees(load_cascade_table(src), source=src))
        elif p.is_dir():
            files = sorted(p.glob("*.txt"))
            if not files:
                out.update(cascade_trees(load_cascade_table(p), source=src))
                continue
            out.update({f.stem: parse_tree(f) for f in files})
        elif p.is_file():  # the user's own files parse strictly: a broken line is file:line, not a silent skip
            out[p.stem] = parse_tree(p)
        else:
            raise ConfigError(f"--train {src!r}: not a tree file, a folder, a cascade file or a data set name")
    if not out:
        raise ConfigError("--train: no trees given")
    return out
