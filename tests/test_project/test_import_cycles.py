"""No import circles between socium's files (issue 25), TYPE_CHECKING and function-local imports included.

Why every import counts: a composed part that imports its host "only for typing" still ties the two
files into one unit (neither can be read, moved or tested without the other); the parts instead take
explicit collaborators or a small Protocol of what they call (``socium.agents.policy_calls``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import socium

SRC = Path(socium.__file__).parent


def _module(src: Path, path: Path) -> str:
    parts = path.relative_to(src.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(src: Path) -> nx.DiGraph:
    """File-level import arrows of the package at ``src`` (every ``import`` statement anywhere in a file)."""
    files = {_module(src, p): p for p in src.rglob("*.py")}
    g = nx.DiGraph()
    g.add_nodes_from(files)
    for name, path in files.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                # ``from pkg import mod`` is an arrow to the module file, ``from mod import name`` to mod
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for t in targets:
                while t and t not in files:  # ``import a.b.c`` where c is a name: its nearest file
                    t = t.rpartition(".")[0]
                if t and t != name and t != "socium":
                    g.add_edge(name, t)
    return g


def test_import_graph_sees_the_arrows_a_part_takes():
    g = import_graph(SRC)
    assert g.has_edge("socium.agents.llm_policy", "socium.agents.llm_narrator")
    assert g.has_edge("socium.simulator.simulation", "socium.simulator.interviews")  # ``from pkg import mod``
    assert g.has_edge("socium.agents.llm_narrator", "socium.agents.policy_calls")


def test_no_import_circles_between_files():
    circles = [sorted(c) for c in nx.strongly_connected_components(import_graph(SRC)) if len(c) > 1]
    assert circles == []


def test_a_host_imported_under_type_checking_is_a_circle(tmp_path):
    pkg = tmp_path / "socium" / "parts"
    pkg.mkdir(parents=True)
    (tmp_path / "socium" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "host.py").write_text("from socium.parts.part import Part\n")
    (pkg / "part.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from socium.parts.host import Host\n"
    )
    g = import_graph(tmp_path / "socium")
    assert [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1] == [
        ["socium.parts.host", "socium.parts.part"]
    ]
