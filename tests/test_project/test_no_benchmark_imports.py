"""No test imports ``benchmarks/`` (issue 25): code a test pins lives in the package, where CI lints and types it.

The scripts in ``benchmarks/`` are not a package and are neither linted nor type-checked; a test that loads one
by path tests code no user can import. Tests import the package function a benchmark calls instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def benchmark_loads(source: str) -> list[int]:
    """Lines of ``source`` that import from ``benchmarks`` or name the folder to load a script from it."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and node.value == "benchmarks":  # Path(...) / "benchmarks" / "x.py"
            names = ["benchmarks"]
        else:
            continue
        if any(n.split(".")[0] == "benchmarks" for n in names):
            hits.append(node.lineno)
    return hits


def test_the_check_finds_each_way_of_loading_a_benchmark():
    assert benchmark_loads("import benchmarks.bench_ray\n") == [1]
    assert benchmark_loads("x = 1\nfrom benchmarks.scale_study import seed_ci\n") == [2]
    assert benchmark_loads('path = root / "benchmarks" / "scale_study.py"\n') == [1]
    assert benchmark_loads('"""Numbers from benchmarks/bench_ray.py."""\nimport socium\n') == []


def test_no_test_loads_a_benchmark():
    found = {
        str(p.relative_to(TESTS)): lines
        for p in sorted(TESTS.rglob("*.py"))
        if p != Path(__file__).resolve() and (lines := benchmark_loads(p.read_text(encoding="utf-8")))
    }
    assert found == {}
