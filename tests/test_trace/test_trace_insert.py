"""The two speed-ups of the propagation CV's per-run cost write and read exactly what the slow paths did:
the trace writer's Arrow insert without register/unregister, and the JSON fast path for numeric list
cells of an OASIS population CSV."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from socium.agents.sources import _parse_literal_list
from socium.errors import InputFileError
from socium.trace.store import TraceStore, table_digest


def _batches(step: int) -> dict[str, pa.Table | dict[str, list]]:
    hostile = 'x\'); DROP TABLE posts; --\n"_batch"'
    return {
        "posts": {
            "post_id": [2 * step, 2 * step + 1],
            "step": [step, step],
            "time_s": [60.0 * step, float("nan")],
            "author": [1, 2**40],
            "kind": ["post", "repost"],
            "parent_id": [None, 2 * step],
            "root_id": [2 * step, 2 * step],
            "content": [hostile, ""],
            "truncated": [False, True],
            "sanitized": [None, False],
        },
        "actions": pa.table({"step": [step], "agent_id": [3], "seq": [0], "type": ["repost"], "args": ["{}"]}),
        "exposures": {"step": [], "agent_id": [], "post_id": []},  # empty: skipped
    }


def _step_row(step: int) -> dict:
    return {
        "sim_time_s": 60.0 * step,
        "n_active": 3,
        "n_actions": 1,
        "n_posts": 2,
        "n_exposures": 0,
        "wall_s": 0.5,
        "committed_at": dt.datetime(2026, 1, 1, 12, 0, step),
        "sim_datetime": None if step % 2 else dt.datetime(2020, 5, 1, 8, step),
    }


def _registered_insert(store: TraceStore, step: int) -> None:
    """The writer's former path (register/unregister a view per table), kept here as the reference."""
    con = store.con
    con.begin()
    items = [*_batches(step).items(), ("steps", {k: [v] for k, v in {"step": step, **_step_row(step)}.items()})]
    for table, batch in items:
        tbl = batch if isinstance(batch, pa.Table) else pa.table(batch)
        if tbl.num_rows == 0:
            continue
        con.register("_batch", tbl)
        cols = ", ".join(f'"{c}"' for c in tbl.column_names)
        con.execute(f'INSERT INTO "{table}" ({cols}) SELECT {cols} FROM _batch')
        con.unregister("_batch")
    con.commit()


def test_append_step_writes_the_rows_the_registered_insert_wrote(tmp_path: Path) -> None:
    new, ref = TraceStore(tmp_path / "new.duckdb"), TraceStore(tmp_path / "ref.duckdb")
    try:
        for step in range(3):
            new.append_step(step, _batches(step), _step_row(step))
            _registered_insert(ref, step)
        for table in ("posts", "actions", "exposures", "steps"):
            assert table_digest(new.con, table) == table_digest(ref.con, table), table
        assert new.con.execute("SELECT count(*) FROM posts").fetchone() == (6,)
        assert new.con.execute("SELECT content FROM posts WHERE post_id = 0").fetchone()[0].startswith("x');")
        assert new.last_step() == 2
        names = {r[0] for r in new.con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        assert "_batch" not in names  # nothing left behind in the catalog
    finally:
        new.close()
        ref.close()


def test_failed_step_leaves_nothing(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.duckdb")
    try:
        store.append_step(0, _batches(0), _step_row(0))
        bad = {**_batches(1), "posts": {"no_such_column": [1]}}
        with pytest.raises(Exception):
            store.append_step(1, bad, _step_row(1))
        assert store.last_step() == 0
        assert store.con.execute("SELECT count(*) FROM actions").fetchone() == (1,)
    finally:
        store.close()


_CELLS = [
    "[]",
    "[ ]",
    "[0, 1, 2]",
    "[0.5, 1e-3, -2, 1E5, -0.0, 0.1]",
    "[1e400, -1e400]",  # both parse as +-inf; the activity check rejects them later
    "[ 7 ,8 ]",
    "[123456789012345678901234567890]",
    "[1,]",  # not the fast grammar: literal_eval still accepts it
    "[1_000]",
    "[.5, 1.]",
    "(1, 2)",
    "['a', \"b\\/c\"]",  # JSON and Python disagree on \/ : must take the literal_eval path
]


@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")
@pytest.mark.parametrize("cell", _CELLS)
def test_list_cells_parse_as_literal_eval_does(cell: str) -> None:
    want = ast.literal_eval(cell)
    got = _parse_literal_list(Path("p.csv"), 2, "c", cell)
    assert got == list(want) and [type(x) for x in got] == [type(x) for x in want]


def test_random_numeric_lists_parse_as_literal_eval_does() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(0, 30))
        ints = rng.integers(-(10**6), 10**6, n).tolist()
        floats = (rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, n)).tolist()
        vals = [i if rng.random() < 0.5 else f for i, f in zip(ints, floats)]
        cell = "[" + ", ".join(repr(v) for v in vals) + "]"
        got = _parse_literal_list(Path("p.csv"), 2, "c", cell)
        assert got == ast.literal_eval(cell) and [type(x) for x in got] == [type(x) for x in vals]


@pytest.mark.parametrize("cell", ["[NaN]", "[true]", "[01]", "[1, 2", "[" + "9" * 5000 + "]", "[__import__('os')]"])
def test_cells_that_were_errors_stay_errors(cell: str) -> None:
    with pytest.raises(InputFileError, match="not a list literal"):
        _parse_literal_list(Path("p.csv"), 2, "c", cell)
