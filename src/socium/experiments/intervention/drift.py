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

from socium.recsys.embeddings import make_embedder
from socium.trace.queries.cascades import retelling_chains
from socium.trace.queries.runs import open_run


def chain_rows(run_dir: Path) -> list[tuple[int, int, int, str, str, str]]:
    """(post, source, depth, kind, text, source veracity) for every post in a chain from an original."""
    with open_run(run_dir) as con:
        return retelling_chains(con)


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
