"""Synthetic reshare trees in socium's cascade row format (docs/data.md), for tests of the forecast tool and
the explorer's forecast pages: one generator, so both read the same kind of file."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_cascade_csv(path: Path, n: int, seed: int) -> Path:
    """``n`` random reshare trees (15-39 nodes; each time lognormal after its parent's, with a per-cascade
    speed) written to ``path`` as ``cascade_id,node_id,parent_id,user_id,time_s`` rows."""
    rng = np.random.default_rng(seed)
    lines = ["cascade_id,node_id,parent_id,user_id,time_s"]
    for c in range(n):
        t = [0.0]
        lines.append(f"k{seed}-{c},0,,a{c % 3},0")
        g = rng.normal(0, 0.6)
        for j in range(1, int(rng.integers(15, 40))):
            p = int(rng.integers(0, j))
            t.append(t[p] + float(np.exp(rng.normal(1.2 + g, 1.0))))
            lines.append(f"k{seed}-{c},{j},{p},u{seed}-{c}-{j},{t[j] * 60:.2f}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
