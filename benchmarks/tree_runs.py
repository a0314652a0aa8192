"""Run one benchmark's child process on several source trees, alternated (shared by the request-path benches).

Why: before/after comparisons on this shared machine are only fair when the trees take turns in one run, under
the same load; each tree runs in its own interpreter with ``PYTHONPATH`` set to its ``src``, so the code measured
is that tree's, and the child prints one JSON object (its measurements) as its last line.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def source_trees(src_args: Sequence[str], here: Path) -> list[tuple[str, str]]:
    """``--src NAME=PATH`` arguments, then this checkout's ``src`` as "this tree"."""
    trees = [(n, str(Path(p).resolve())) for n, _, p in (s.partition("=") for s in src_args)]
    trees.append(("this tree", str(here.parent.parent / "src")))
    return trees


def alternate(
    trees: Sequence[tuple[str, str]], rounds: int, child_args: Sequence[str]
) -> tuple[dict[str, list[dict[str, float]]], list[float]]:
    """Each round runs ``python <child_args>`` once per tree; returns each tree's runs and the 1-minute loads."""
    got: dict[str, list[dict[str, float]]] = {n: [] for n, _ in trees}
    loads: list[float] = []
    for _ in range(rounds):
        for name, src in trees:
            env = {**os.environ, "PYTHONPATH": src, "OMP_WAIT_POLICY": "PASSIVE"}
            out = subprocess.run([sys.executable, *child_args], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"{name} failed:\n{out.stderr[-3000:]}")
            got[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
            loads.append(os.getloadavg()[0])
    return got, loads


def machine_line(loads: Sequence[float]) -> str:
    """The machine and the load the runs met, for the table's header."""
    return (
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"1-minute load during the runs {min(loads):.1f}-{max(loads):.1f}"
    )
