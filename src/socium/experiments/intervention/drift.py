"""Content drift along quote and comment chains (FUSE: how true news drifts into fake news when retold).

For every quote or comment whose chain leads back to an original post (the source), the cosine
similarity of its text to the source's text, by its depth in the chain (1 = quoting / answering the
source itself). A cascade's drift score is ``1 - mean similarity`` of its retellings, so 0 means
every retelling says what the source said and larger values mean the story moved away from it.
Texts are embedded with :mod:`socium.recsys.embeddings` (MiniLM by default; ``hashing`` in tests).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from socium.experiments.spec import connect
from socium.recsys.embeddings import make_embedder

_SQL = """
WITH RECURSIVE chain(post_id, root_id, depth) AS (
    SELECT post_id, post_id, 0 FROM posts WHERE kind = 'original'
    UNION ALL
    SELECT p.post_id, c.root_id, c.depth + 1 FROM posts p JOIN chain c ON p.parent_id = c.post_id
    WHERE p.kind IN ('quote', 'comment', 'repost')
)
SELECT c.post_id, c.root_id, c.depth, p.kind, p.content, coalesce(v.veracity, 'unknown') AS veracity
FROM chain c JOIN posts p USING (post_id) LEFT JOIN post_veracity v ON v.post_id = c.root_id
ORDER BY c.root_id, c.depth, c.post_id
"""


def chain_rows(run_dir: Path) -> list[tuple[int, int, int, str, str, str]]:
    """(post, source, depth, kind, text, source veracity) for every post in a chain from an original."""
    con = connect(run_dir)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        sql = (
            _SQL
            if "post_veracity" in tables
            else _SQL.replace(
                "LEFT JOIN post_veracity v ON v.post_id = c.root_id",
                "LEFT JOIN (SELECT NULL::BIGINT AS post_id, NULL::VARCHAR AS veracity) v ON v.post_id = c.root_id",
            )
        )
        return [tuple(r) for r in con.execute(sql).fetchall()]  # type: ignore[misc]
    finally:
        con.close()


def drift(run_dir: str | Path, embedder: Any = "minilm", max_depth: int = 6) -> dict[str, Any]:
    """Similarity to the source by depth (overall and by the source's veracity) and per-cascade drift.

    Reposts carry no text of their own: they pass the chain on (a quote of a repost is a retelling of
    the source at the repost's depth + 1) but are not scored.
    """
    rows = chain_rows(Path(run_dir))
    told = [r for r in rows if r[3] in ("quote", "comment") and r[4].strip()]
    out: dict[str, Any] = {"n_retellings": len(told), "by_depth": {}, "by_veracity": {}, "cascades": []}
    if not told:
        return out
    sources = {r[0]: r[4] for r in rows if r[2] == 0}
    roots = sorted({r[1] for r in told})
    emb = make_embedder(embedder) if isinstance(embedder, str) else embedder
    vec = emb.encode([sources[s] for s in roots] + [r[4] for r in told])
    vec = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
    src_vec = dict(zip(roots, vec[: len(roots)]))
    sims = np.einsum("ij,ij->i", vec[len(roots) :], np.stack([src_vec[r[1]] for r in told]))
    depth = np.array([min(r[2], max_depth) for r in told])
    ver = np.array([r[5] for r in told])
    out["by_depth"] = {int(d): round(float(sims[depth == d].mean()), 4) for d in sorted(set(depth.tolist()))}
    for v in sorted(set(ver.tolist())):
        m = ver == v
        out["by_veracity"][v] = {
            "n": int(m.sum()),
            "drift": round(float(1 - sims[m].mean()), 4),
            "by_depth": {
                int(d): round(float(sims[m & (depth == d)].mean()), 4) for d in sorted(set(depth[m].tolist()))
            },
        }
    root_of = np.array([r[1] for r in told])
    for s in roots:
        m = root_of == s
        out["cascades"].append(
            {
                "source": int(s),
                "veracity": str(ver[m][0]),
                "retellings": int(m.sum()),
                "max_depth": int(depth[m].max()),
                "drift": round(float(1 - sims[m].mean()), 4),
            }
        )
    out["drift"] = round(float(1 - sims.mean()), 4)
    return out
