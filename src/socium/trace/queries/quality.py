"""What a run's trace says about the quality of the model's output: instruction text leaked into agents'
posts, and survey answers whose number contradicts their words (see socium.reporting.guardrails for the
thresholds a report warns at). Values reach SQL only as bound parameters; the markers are socium's own
prompt phrases, and the posts they are searched in are agent output, which is only ever read here.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

Con = duckdb.DuckDBPyConnection


def _columns(con: Con, table: str) -> set[str]:
    rows = con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()
    return {str(r[0]) for r in rows}


def leaked_posts(con: Con, markers: Sequence[str]) -> tuple[int, int]:
    """(agents' posts containing any of ``markers``, case-insensitive; agents' posts with text). Seed posts
    (the experimenter's) are not the model's output and are left out."""
    if not markers:
        return 0, 0
    hit = " OR ".join(["strpos(lower(content), ?) > 0"] * len(markers))
    row = con.execute(
        f"SELECT count(*) FILTER (WHERE {hit}), count(*) FROM posts "  # noqa: S608 -- only '?' placeholders
        "WHERE content IS NOT NULL AND length(trim(content)) > 0 AND post_id NOT IN "
        "(SELECT post_id FROM actions WHERE origin = 'seed' AND post_id IS NOT NULL)",
        [m.lower() for m in markers],
    ).fetchall()[0]
    return int(row[0] or 0), int(row[1] or 0)


def survey_answer_outcomes(con: Con) -> dict[str, int]:
    """Survey rows per typed outcome (``ok``, ``inconsistent``, ``degenerate``, ``invalid``, ...); empty for
    a trace written before answers had an outcome."""
    if "outcome" not in _columns(con, "surveys"):
        return {}
    rows = con.execute("SELECT coalesce(outcome, 'unrecorded'), count(*) FROM surveys GROUP BY 1 ORDER BY 1")
    return {str(k): int(n) for k, n in rows.fetchall()}
