"""interventions.judged_cascade_totals against the same totals recomputed in Python from raw trace rows."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import duckdb
import pytest

from conftest import small_config
from socium.simulator.simulation import Simulation
from socium.trace.queries.interventions import judged_cascade_totals
from socium.trace.queries.runs import open_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Spreaders' false originals labelled by fact-checkers at once, down-ranked, among true chatter."""
    out = tmp_path_factory.mktemp("judged") / "run"
    cfg = small_config(
        steps=6,
        policy={"kind": "independent_cascade", "p_repost": 0.3, "p_post": 0.4},
        roles={"spreader": 0.3},
        recsys={"kind": "chronological", "k": 5},
        moderation={"kind": "fact_check", "params": {"delay": 0, "recall": 1.0}, "downrank": 0.5},
    )
    Simulation(cfg, out).run()
    return out


def _rows(run_dir: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_totals_match_raw_rows(run_dir: Path) -> None:
    posts = _rows(run_dir, "SELECT post_id, kind, root_id FROM posts")
    judged = {p for (p,) in _rows(run_dir, "SELECT post_id FROM moderation_events WHERE event IN ('label', 'note')")}
    root_of = {p: r for p, _, r in posts}
    group = {p: p in judged for p, kind, _ in posts if kind == "original"}
    want: dict[bool, list] = defaultdict(lambda: [0, set(), set(), 0])
    for j in group.values():
        want[j][0] += 1
    for step, agent, post in _rows(run_dir, "SELECT step, agent_id, post_id FROM exposures"):
        j = group.get(root_of[post])
        if j is not None:
            want[j][1].add((step, agent, post))
            want[j][2].add((agent, root_of[post]))
    for _, kind, r in posts:
        if kind in ("repost", "quote") and r in group:
            want[group[r]][3] += 1
    expected = {j: (n, len(e), len(r), s) for j, (n, e, r, s) in want.items()}
    with open_run(run_dir) as con:
        got = judged_cascade_totals(con)
    assert set(got) == {True, False}, "the run must have judged and unjudged cascades for the test to mean anything"
    assert got[True][1] > 0 and got[False][3] > 0
    assert got == expected


def test_a_run_without_judgements_has_only_the_unjudged_group(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Simulation(small_config(steps=3), out).run()
    with open_run(out) as con:
        got = judged_cascade_totals(con)
    n_originals = _rows(out, "SELECT count(*) FROM posts WHERE kind = 'original'")[0][0]
    assert set(got) == {False} and got[False][0] == n_originals
