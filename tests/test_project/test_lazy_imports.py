"""Every function-local ``socium`` import states why it is not at the top of its module (issue 25).

Why: the package once stayed importable through ~125 function-local imports that dodged an import knot.
The knot is gone (tests/test_project/test_import_cycles.py), so a local import now hides a real dependency unless it
has a reason: a heavy or optional third-party library the caller's common path does not need (matplotlib,
ray, aiohttp, torch), or the CLI's start-up time. The reason is written on the line as ``# lazy: why``
(or on the line just above, where the import line is full); this test names file and line of any import
that lacks one, so a new one needs a stated reason. ``if TYPE_CHECKING:`` imports are not function-local
and are not checked here.
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

import socium

SRC = Path(socium.__file__).parent
MARK = "# lazy:"


def _names_socium(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "socium"
    return any(a.name.split(".")[0] == "socium" for a in node.names)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _local_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """``socium`` imports inside a function (at any depth), skipping ``if TYPE_CHECKING:`` blocks."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit(other, in_function)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                if in_function and _names_socium(child):
                    found.append(child)
                continue
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(tree, False)
    return found


def unexplained_lazy_imports(source: str, name: str) -> list[str]:
    """``name:line: statement`` for each function-local socium import of ``source`` without ``# lazy:``."""
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string
    out = []
    for node in _local_imports(ast.parse(source)):
        end = node.end_lineno or node.lineno
        lines = range(node.lineno - 1, end + 1)  # the statement's lines and the one just above
        if not any(comments.get(n, "").startswith(MARK) for n in lines):
            out.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_every_function_local_socium_import_says_why_it_is_lazy():
    missing = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        missing += unexplained_lazy_imports(path.read_text(encoding="utf-8"), f"src/socium/{rel}")
    assert missing == [], "function-local imports without '# lazy: <reason>' (lift them or say why):\n" + "\n".join(
        missing
    )


def test_the_check_names_file_and_line_and_accepts_stated_reasons():
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from socium.core.rng import TIMING\n"  # typing only: not function-local
        "def f():\n"
        "    import json\n"  # not socium
        "    from socium.errors import ConfigError\n"  # line 6: no reason
        "    from socium.reporting import plots as P  # lazy: matplotlib\n"
        "    # lazy: ray, only when chosen\n"
        "    from socium.simulator.ray_executor import (\n"
        "        RayExecutor,\n"
        "    )\n"
        "    class C:\n"
        "        def g(self):\n"
        "            from . import sibling\n"  # line 14: relative, nested, no reason
        "    x = '# lazy: not a comment'; from socium import errors\n"  # line 15: the mark is in a string
    )
    assert unexplained_lazy_imports(source, "pkg/mod.py") == [
        "pkg/mod.py:6: from socium.errors import ConfigError",
        "pkg/mod.py:14: from . import sibling",
        "pkg/mod.py:15: from socium import errors",
    ]


def test_cli_start_up_leaves_the_heavy_libraries_unloaded():
    """What the ``# lazy: CLI start-up`` imports buy: ``socium --help`` loads none of the numeric, trace
    or plotting libraries (each costs tenths of a second that every command would pay)."""
    heavy = ("numpy", "duckdb", "matplotlib", "pandas", "scipy", "aiohttp", "ray", "networkx")
    code = f"import sys, socium.cli.main; print(' '.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == []
