"""The metrics layer (socium.trace.queries): named queries against values recomputed in Python from raw rows,
and a guard that keeps SQL against the trace inside socium.trace."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from conftest import small_config
from socium.errors import ConfigError, TraceError
from socium.trace.queries import calls, cascades, exposures, posts, runs

SRC = Path(__file__).resolve().parents[2] / "src" / "socium"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny deterministic run whose random LLM backend reshares, votes and logs calls."""
    from socium.simulator.simulation import Simulation

    out = tmp_path_factory.mktemp("q") / "run"
    cfg = small_config(steps=5, population={"n_agents": 50}, policy={"kind": "llm"}, llm={"backend": "random"})
    Simulation(cfg, out).run()
    return out


def _raw(run_dir: Path, table: str) -> list[dict]:
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        cur = con.execute(f"SELECT * FROM {table}")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]
    finally:
        con.close()


def _trees(post_rows: list[dict]) -> dict[int, list[tuple[int, int, int]]]:
    """root -> [(post, author, depth)] following repost/quote parent links from each original, in Python."""
    children: dict[int, list[dict]] = {}
    for p in post_rows:
        if p["kind"] in ("repost", "quote"):
            children.setdefault(p["parent_id"], []).append(p)
    out = {}
    for p in post_rows:
        if p["kind"] == "original":
            nodes, todo = [], [(p, 0)]
            while todo:
                q, d = todo.pop()
                nodes.append((q["post_id"], q["author"], d))
                todo += [(c, d + 1) for c in children.get(q["post_id"], [])]
            out[p["post_id"]] = nodes
    return out


def test_cascade_queries_match_the_posts_tree(run_dir: Path) -> None:
    trees = _trees(_raw(run_dir, "posts"))
    spread = {r: n for r, n in trees.items() if len(n) > 1}
    assert spread, "the fixture run must reshare something"
    with runs.open_run(run_dir) as con:
        got = cascades.sizes_and_depths(con)
        largest = cascades.largest_cascades(con, 3)
        for root, nodes in spread.items():
            shape = cascades.final_shape(con, root)
            assert shape is not None
            assert shape["size"] == len(nodes)
            assert shape["depth"] == max(d for _, _, d in nodes)
            per_level = Counter(d for _, _, d in nodes if d >= 1)
            assert shape["max_breadth"] == max(per_level.values())
            curves = cascades.propagation_curves(con, root, 24 * 60)
            assert curves["scale"][0] == 1  # the source alone at minute 0
            assert curves["scale"][-1] == len({a for _, a, _ in nodes})  # each user once
        with pytest.raises(ConfigError, match="not the root"):
            cascades.propagation_curves(con, max(p for n in trees.values() for p, _, _ in n) + 1000)
    expected = sorted((len(n), max(d for _, _, d in n)) for n in trees.values())
    assert sorted(map(tuple, got.tolist())) == [tuple(map(float, e)) for e in expected]
    want_largest = sorted(((r, len(n)) for r, n in spread.items()), key=lambda x: (-x[1], x[0]))[:3]
    assert largest == want_largest


def test_reshare_trials_count_exposures_before_adoption(run_dir: Path) -> None:
    post_rows = _raw(run_dir, "posts")
    by_id = {p["post_id"]: p for p in post_rows}
    spreadable = ("original", "repost", "quote")
    shown = {
        (e["agent_id"], e["step"], by_id[e["post_id"]]["root_id"])
        for e in _raw(run_dir, "exposures")
        if by_id[e["post_id"]]["kind"] in spreadable
    }
    adopted: dict[tuple[int, int], int] = {}
    for p in post_rows:
        if p["kind"] in spreadable:
            key = (p["author"], p["root_id"])
            adopted[key] = min(adopted.get(key, p["step"]), p["step"])
    trials = sum(1 for a, s, r in shown if adopted.get((a, r), s) >= s)
    starter = {p["post_id"]: p["author"] for p in post_rows if p["kind"] == "original"}
    adoptions = len(
        {
            (p["author"], p["root_id"])
            for p in post_rows
            if p["kind"] in ("repost", "quote") and p["root_id"] in starter and p["author"] != starter[p["root_id"]]
        }
    )
    assert adoptions > 0
    with runs.open_run(run_dir) as con:
        assert cascades.reshare_trials(con) == (trials, adoptions)
        assert cascades.reshare_trials(con, []) == (0, 0)


def test_run_totals_activity_and_exposures(run_dir: Path) -> None:
    acts = _raw(run_dir, "actions")
    steps = _raw(run_dir, "steps")
    policy = [a for a in acts if a["origin"] != "seed"]
    by_type = Counter((a["type"], a["step"]) for a in policy if a["outcome"] == "ok")
    shown = Counter((e["step"], e["source"] or "unknown") for e in _raw(run_dir, "exposures"))
    kinds = Counter(p["kind"] for p in _raw(run_dir, "posts"))
    votes = [a for a in policy if a["outcome"] == "ok" and a["type"] in ("like_post", "dislike_post")]
    with runs.open_run(run_dir) as con:
        assert runs.policy_outcomes(con) == (sum(a["outcome"] != "ok" for a in policy), len(policy))
        assert runs.actions_by_type(con) == sorted((t, s, n) for (t, s), n in by_type.items())
        assert runs.agent_steps(con) == sum(s["n_active"] for s in steps)
        assert runs.last_step(con) == max(s["step"] for s in steps)
        assert runs.run_summary(con)["steps"] == sum(s["step"] >= 0 for s in steps)
        assert runs.run_summary(con)["actions"] == len(acts)
        assert runs.count_rows(con, "posts") == sum(kinds.values())
        assert exposures.by_source(con) == sorted((s, src, n) for (s, src), n in shown.items())
        assert posts.post_kinds(con) == dict(kinds)
        n, up = posts.crowd_votes(con)
        assert n == len(votes) > 0
        assert up == pytest.approx(sum(v["type"] == "like_post" for v in votes) / len(votes))
        with pytest.raises(TraceError, match="not a socium trace table"):
            runs.count_rows(con, "information_schema.tables")


def test_call_totals_and_per_step_usage(run_dir: Path) -> None:
    rows = _raw(run_dir, "llm_calls")
    assert rows
    with runs.open_run(run_dir) as con:
        t = calls.totals(con)
        assert (t["calls"], t["prompt_tokens"], t["completion_tokens"]) == (
            len(rows),
            sum(r["prompt_tokens"] for r in rows),
            sum(r["completion_tokens"] for r in rows),
        )
        per_step = Counter(r["step"] for r in rows)
        assert [(s, n) for s, n, *_ in calls.usage_per_step(con)] == sorted(per_step.items())
        spent = calls.spend_by_backend(con)
        assert spent == {"default": (sum(r["attempts"] for r in rows), t["prompt_tokens"] + t["completion_tokens"])}
        assert calls.next_call_id(con) == max(r["call_id"] for r in rows) + 1
        with pytest.raises(TraceError, match="not a call log"):
            calls.spend_by_backend(con, "posts; DROP TABLE posts")


# ---- the guard: SQL against the trace lives in socium.trace ----------------------------------------
SQL = re.compile(
    r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|ALTER TABLE|ATTACH|DROP (TABLE|VIEW)"
    r"|CREATE (OR REPLACE )?(TEMP )?(TABLE|VIEW|INDEX|SEQUENCE))\b|FROM \""
)

# Where SQL may legitimately stand outside socium/trace/ (paths relative to src/socium), and why.
ALLOWED = {
    # The LLM response cache keeps its own DuckDB file (not a run's trace) with its own table.
    "llm/cache.py",
    # Episodes have their own store (episodes.duckdb), schema and report queries.
    "episodes/",
    # `socium query`: the SQL is what the user typed, run in a sandboxed read-only connection.
    "cli/lookup.py",
}


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def sql_outside_trace(root: Path = SRC) -> list[str]:
    """'path:line: text' of every string literal (docstrings apart) that reads as SQL, outside the allowed places."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("trace/") or any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in ALLOWED):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if SQL.search(node.value):
                    found.append(f"src/socium/{rel}:{node.lineno}: {node.value.strip()[:80]!r}")
    return found


def test_no_sql_against_the_trace_outside_socium_trace() -> None:
    found = sql_outside_trace()
    assert not found, "SQL outside socium.trace; add a named query in socium/trace/queries/:\n" + "\n".join(found)


def test_guard_finds_sql_and_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "reporting").mkdir()
    (tmp_path / "reporting" / "bad.py").write_text(
        '"""Mentions SELECT in a docstring, which is prose."""\n\nQ = 1\nROWS = "SELECT count(*) FROM posts"\n'
    )
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "ok.py").write_text('Q = "SELECT 1"\n')
    assert sql_outside_trace(tmp_path) == ["src/socium/reporting/bad.py:4: 'SELECT count(*) FROM posts'"]
    for allowed in ALLOWED:
        assert (SRC / allowed).exists(), f"allow-list entry {allowed} names nothing: remove it"
