"""The action table is the only place an action's name is spelled: no Python file outside
``core/actions.py`` (the table) and ``platform/rules.py`` (the rules' own messages) names an action type
in a string literal, so a new action is one class plus its rule and no list elsewhere goes stale."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from socium.core.actions import ACTION_TYPES

SRC = Path(__file__).resolve().parents[2] / "src" / "socium"
ALLOWED_FILES = {"core/actions.py", "platform/rules.py"}  # the state itself (platform/state.py) names none
# Words that are action names and also mean something else, with the vocabulary they belong to there.
HOMONYMS: dict[str, set[str]] = {
    "repost": {  # a post kind (platform.posts.KIND_NAMES), read where posts and cascades are shown or counted
        "platform/posts.py",
        "agents/prompt_blocks.py",
        "agents/perspectives.py",
        "trace/queries/cascades.py",
        "trace/queries/interventions.py",
        "trace/queries/explore/posts.py",
        "experiments/designs/compare.py",
        "experiments/designs/sweep.py",
        "experiments/validation/validate.py",
        "explore/widgets.py",
    },
    "trend": {"agents/perspectives.py", "recsys/base.py"},  # an exposure source ('trend' results)
    "follow": {"explore/live.py"},  # the explorer's "follow the run live" checkbox
    "refresh": {"explore/live.py"},  # the explorer's reload button
    "block": {"platform/graph.py"},  # a stochastic block model's community attribute
    "not_interested": {"recsys/foryou/value_model.py"},  # X's value-model head (NotInterestedWeight)
}
_COMPOUND = [t for t in ACTION_TYPES if "_" in t]
_SINGLE = [t for t in ACTION_TYPES if "_" not in t]
_FIND = re.compile(
    r"(?<![\w])(" + "|".join(map(re.escape, _COMPOUND)) + r")(?![\w])"
    r"|(?<=['\"])(" + "|".join(map(re.escape, _SINGLE)) + r")(?=['\"])"
)


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def named_actions(path: Path) -> list[tuple[int, str]]:
    """(line, action name) of every string literal in ``path`` that names an action type (docstrings aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
            names = {m.group(1) or m.group(2) for m in _FIND.finditer(text)}
            if text in ACTION_TYPES:
                names.add(text)
            hits += [(node.lineno, n) for n in sorted(names)]
    return hits


def test_no_file_outside_the_table_and_the_rules_names_an_action_type():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in ALLOWED_FILES:
            continue
        for line, name in named_actions(path):
            if rel not in HOMONYMS.get(name, ()):
                offenders.append(f"{rel}:{line}: {name}")
    assert offenders == [], "name actions through socium.core.actions (the class's type_name or meta):\n" + "\n".join(
        offenders
    )


def test_the_check_finds_names_in_sql_prose_and_literals(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        '"""like_post in a docstring is fine."""\n'
        "A = 'like_comment'\n"
        "B = \"SELECT 1 FROM actions WHERE type = 'follow'\"\n"
        "C = 'needed for like_comment / dislike_comment'\n"
        "D = 'we follow the run'\n"  # the word, unquoted inside a longer text, is not the action
    )
    assert named_actions(f) == [(2, "like_comment"), (3, "follow"), (4, "dislike_comment"), (4, "like_comment")]
