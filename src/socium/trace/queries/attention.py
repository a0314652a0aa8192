"""Who is shown whose posts: out-of-network share, cross-stance exposure, concentration of attention.

Why here and not in :mod:`~socium.trace.queries.exposures`: these measures compare recommenders, so they
must not trust a recommender's own label. ``exposures.source`` says what the recommender *called* a slot
(``reddit_hot`` logs its whole front page as ``global``, ``random`` as ``random``), so "out of network"
is decided here from the trace's follow graph instead: the viewer did not follow the shown post's author
when the feed was built. The same rule then holds for every recommender, a user's own class included.

Units: an *exposure* is a distinct (step, viewer, post): the same post twice in one feed is one. The
*author* of a shown repost or quote is the account that reshared it (what the viewer's feed shows and
what following decides). A viewer's own posts are counted apart, never as in- or out-of-network.
Feeds are built at the start of a step, before that step's actions, so a follow made at step ``s``
counts from step ``s + 1`` on; initial follows carry step -1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import duckdb
import numpy as np

Con = duckdb.DuckDBPyConnection

_SHOWN = (
    "WITH e AS (SELECT DISTINCT step, agent_id, post_id FROM exposures), "
    "ea AS (SELECT e.step, e.agent_id, e.post_id, p.author FROM e JOIN posts p USING (post_id)) "
)


@dataclass(frozen=True)
class NetworkOrigin:
    """Exposures by whether the viewer followed the author at the time (own posts apart)."""

    in_network: int
    out_of_network: int
    own: int

    @property
    def others(self) -> int:
        """Exposures to other accounts' posts: the denominator of :attr:`oon_share`."""
        return self.in_network + self.out_of_network

    @property
    def oon_share(self) -> float | None:
        """Share of exposures to others' posts whose author the viewer did not follow; None with none."""
        return self.out_of_network / self.others if self.others else None


def network_origin(con: Con) -> NetworkOrigin:
    """In-network, out-of-network and own-post exposures of a run, decided from the follow graph."""
    row = con.execute(
        _SHOWN + "SELECT count(*) FILTER (WHERE agent_id <> author AND fol), "
        "count(*) FILTER (WHERE agent_id <> author AND NOT fol), count(*) FILTER (WHERE agent_id = author) "
        "FROM (SELECT ea.agent_id, ea.author, EXISTS (SELECT 1 FROM follows f WHERE f.src = ea.agent_id "
        "AND f.dst = ea.author AND f.start_step < ea.step AND (f.end_step IS NULL OR f.end_step >= ea.step)) "
        "AS fol FROM ea)"
    ).fetchone()
    a, b, c = row if row is not None else (0, 0, 0)
    return NetworkOrigin(int(a or 0), int(b or 0), int(c or 0))


@dataclass(frozen=True)
class StanceExposure:
    """Exposures to others' posts by the sign of the viewer's and the author's assigned stance."""

    same: int
    cross: int
    unknown: int
    """Viewer or author without a stance, or with stance exactly 0 (no side)."""

    @property
    def cross_share(self) -> float | None:
        """Share of exposures between two sided accounts that crossed sides; None with none."""
        n = self.same + self.cross
        return self.cross / n if n else None


def cross_stance(con: Con) -> StanceExposure:
    """Same-side and cross-side exposures, by the sign of ``agents.stance`` (the design's camp).

    The camp is the assigned stance's sign, as the polarisation study's groups are (a bounded-confidence
    agent's current stance moves within its camp; it does not define who is "the other side")."""
    row = con.execute(
        _SHOWN + "SELECT count(*) FILTER (WHERE sv * sa > 0), count(*) FILTER (WHERE sv * sa < 0), "
        "count(*) FILTER (WHERE sv IS NULL OR sa IS NULL OR sv = 0 OR sa = 0) "
        "FROM (SELECT sign(v.stance) AS sv, sign(a.stance) AS sa FROM ea "
        "LEFT JOIN agents v ON v.agent_id = ea.agent_id LEFT JOIN agents a ON a.agent_id = ea.author "
        "WHERE ea.agent_id <> ea.author)"
    ).fetchone()
    a, b, c = row if row is not None else (0, 0, 0)
    return StanceExposure(int(a or 0), int(b or 0), int(c or 0))


def impressions(con: Con, by: Literal["author", "post"] = "author") -> np.ndarray:
    """Exposures (others' views; own views left out) per author or per post, one value per unit.

    ``author``: every account with at least one post a feed can show (original, repost, quote), 0 for
    those never shown, so an author nobody saw counts as unequal attention. ``post``: every such post."""
    key = "author" if by == "author" else "post_id"
    rows = con.execute(
        _SHOWN + f"SELECT u.k, count(ea.post_id) FROM (SELECT DISTINCT {key} AS k FROM posts "
        "WHERE kind <> 'comment') u LEFT JOIN ea ON ea." + key + " = u.k AND ea.agent_id <> ea.author "
        "GROUP BY u.k ORDER BY u.k"
    ).fetchall()
    return np.asarray([int(n) for _, n in rows], dtype=np.int64)


def gini(values: Sequence[float] | np.ndarray) -> float | None:
    """Gini coefficient of non-negative amounts: 0 when all are equal, (n-1)/n when one unit has all.

    None for no units or a zero total (no attention to share). The sorted-rank formula,
    ``sum((2i - n - 1) x_i) / (n sum x)`` over ascending ``x``."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0 or float(x.sum()) == 0.0:
        return None
    if float(x[0]) < 0:
        raise ValueError("gini: amounts must be non-negative")
    return float((2 * np.arange(1, n + 1) - n - 1) @ x / (n * x.sum()))


def cascade_size_counts(con: Con) -> dict[int, int]:
    """Cascade size (nodes, root included) -> number of cascades, over every original post of the run
    (one nobody reshared has size 1); the whole size distribution, for means, tails and CCDFs."""
    rows = con.execute(
        "SELECT size, count(*) FROM (SELECT root_id, count(*) AS size FROM cascade_nodes GROUP BY root_id) "
        "GROUP BY size ORDER BY size"
    ).fetchall()
    return {int(s): int(n) for s, n in rows}
