"""Re-ranking the scored candidates into the feed: DPP, or X's published slate-diversity rule.

DPP: X's VM ranker is called with ``DppParams { theta: 0.65, max_selected_rank: 150 }``
(``home-mixer/scorers/vm_ranker.rs``) but its kernel runs in a service whose code is not published.
socium uses the standard quality x similarity kernel of Chen, Zhang & Zhou (NeurIPS 2018, "Fast greedy
MAP inference for determinantal point process to improve recommendation diversity"):
``L_ij = q_i S_ij q_j`` with ``q_i = exp(alpha r_i)``, ``alpha = theta / (2 (1 - theta))``, ``r_i`` the
candidate's score divided by its user's best score, ``S`` the cosine of post embeddings (diagonal 1),
and their greedy algorithm (incremental Cholesky), batched over users, among each user's best
``max_selected_rank`` candidates. theta 0 keeps only diversity; theta -> 1 is pure score order.

Slate: ``home-mixer/selectors/slate_diversity.rs``: walk the ranked list; within the first
``author_window_size`` picks an author may fill at most ``max_posts_per_author`` slots; a capped
candidate yields to the first allowed one within ``max_lookahead``, else the head is taken anyway.
Its semantic-id adjacency rule needs X's semantic ids and is left out.
"""

from __future__ import annotations

import numpy as np

from socium.recsys.foryou.factors import by_row_then_score

_CHUNK_ELEMS = 1 << 20  # floats per gathered batch of (users x candidates x dims): 4 MiB, so the k
# passes over it run from cache (16 MiB measured ~30% slower at 10^4 users)


def _padded(
    row: np.ndarray, n_rows: int, score: np.ndarray, limit: int, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(index matrix, valid mask): each row's best ``limit`` candidate indices by score, -1 padded.
    ``order``: the indices sorted by (row, score desc, index) when the caller already has them."""
    if order is None:
        order = by_row_then_score(row, score)
    r = row[order]
    starts = np.searchsorted(r, np.arange(n_rows))
    pos = np.arange(len(order)) - starts[r]
    keep = pos < limit
    width = int(min(limit, np.bincount(row, minlength=n_rows).max(initial=0)))
    mat = np.full((n_rows, max(width, 1)), -1, np.int64)
    mat[r[keep], pos[keep]] = order[keep]
    return mat, mat >= 0


def dpp(
    row: np.ndarray,
    n_rows: int,
    score: np.ndarray,
    vectors: np.ndarray,
    post: np.ndarray,
    k: int,
    theta: float,
    max_rank: int,
    order: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Per user, the indices (into the candidate arrays) of up to ``k`` picks in greedy DPP order.

    ``vectors[post[i]]`` is candidate i's unit-norm (or zero) embedding. A user whose kernel runs out
    of volume (all remaining candidates identical to picks) gets the rest in score order. With no
    candidates at all (every post filtered: own, already served) each user gets an empty feed.
    """
    if len(score) == 0:  # the padded slots would otherwise look up score[0] of an empty array
        return [np.zeros(0, np.int64) for _ in range(n_rows)]
    mat, valid = _padded(row, n_rows, score, max(1, max_rank), order)
    width = mat.shape[1]
    kk = min(k, width)
    alpha = theta / (2.0 * (1.0 - theta))
    out: list[np.ndarray] = []
    d = vectors.shape[1] if vectors.ndim == 2 else 0
    step = max(1, _CHUNK_ELEMS // max(1, width * max(d, 1)))
    # one gather buffer for every chunk: ``np.take`` into it (mode 'clip': the ids are valid, and 'raise'
    # buffers the copy) costs a quarter of ``vectors[...]``, which faults in a fresh 4 MiB array each time
    buf = np.empty((min(step, n_rows) * width, d), vectors.dtype) if vectors.ndim == 2 else None
    for lo in range(0, n_rows, step):
        m = mat[lo : lo + step]
        ok = valid[lo : lo + step]
        safe = np.maximum(m, 0)
        s = np.where(ok, score[safe], -np.inf)
        best = np.max(np.where(ok, s, -np.inf), axis=1, keepdims=True)
        rel = np.where(ok, s / np.where(best > 0, best, 1.0), 0.0)
        q = np.where(ok, np.exp(alpha * (rel - 1.0)), 0.0)  # / exp(alpha): same picks, no overflow near theta 1
        u = len(m)
        ids = post[safe]
        v = vectors[ids] if buf is None else np.take(vectors, ids.ravel(), axis=0, out=buf[: u * width], mode="clip")
        v = v.reshape(u, width, -1)  # (u, w, d) float32
        c = np.zeros((u, width, kk), np.float32)
        d2 = np.where(ok, q * q, -np.inf)
        picks = np.full((u, kk), -1, np.int64)
        alive = ok.any(axis=1)
        ar = np.arange(u)
        for t in range(kk):
            j = np.argmax(d2, axis=1)
            dj = d2[ar, j]
            go = alive & (dj > 1e-12)
            if not go.any():
                break
            picks[go, t] = j[go]
            sim = np.matmul(v, v[ar, j][:, :, None])[:, :, 0]  # batched gemv, float32 (a full gram
            # with a transposed operand measured 100x slower in numpy's batched matmul)
            sim[ar, j] = 1.0
            lj = q[ar, j][:, None] * q * sim
            e = (lj - np.einsum("uk,uwk->uw", c[ar, j, :t], c[:, :, :t])) / np.sqrt(np.where(go, dj, 1.0))[:, None]
            e[~go] = 0.0
            c[:, :, t] = e
            d2 = np.where(go[:, None], d2 - e * e, d2)
            d2[ar[go], j[go]] = -np.inf
            alive = go
        res = np.take_along_axis(m, np.maximum(picks, 0), axis=1)
        short: np.ndarray = np.asarray((picks < 0).any(axis=1))
        for i in range(u):
            if not short[i]:
                out.append(res[i])
                continue
            got = [int(x) for x in picks[i] if x >= 0]  # volume ran out: fill by score order
            taken = set(got)
            got += [int(x) for x in range(width) if ok[i, x] and x not in taken][: kk - len(got)]
            out.append(m[i, got])
    return out


def slate(
    row: np.ndarray,
    n_rows: int,
    score: np.ndarray,
    author: np.ndarray,
    k: int,
    author_window: int,
    max_per_author: int,
    lookahead: int,
    order: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Per user, up to ``k`` picks by X's slate-diversity rule (author caps; see module doc)."""
    mat, valid = _padded(row, n_rows, score, len(row) + 1, order)
    out: list[np.ndarray] = []
    for i in range(n_rows):
        remaining = [int(x) for x in mat[i][valid[i]]]
        counts: dict[int, int] = {}
        picked: list[int] = []
        while remaining and len(picked) < k:
            enforce = len(picked) < author_window
            window = remaining[: max(0, lookahead)]
            at = next(
                (w for w, c in enumerate(window) if not enforce or counts.get(int(author[c]), 0) < max_per_author), 0
            )
            cand = remaining.pop(at)
            if enforce:
                counts[int(author[cand])] = counts.get(int(author[cand]), 0) + 1
            picked.append(cand)
        out.append(np.asarray(picked, np.int64))
    return out


def by_score(
    row: np.ndarray, n_rows: int, score: np.ndarray, k: int, order: np.ndarray | None = None
) -> list[np.ndarray]:
    """No re-ranking: each user's best ``k`` by score."""
    mat, valid = _padded(row, n_rows, score, k, order)
    return [mat[i][valid[i]] for i in range(n_rows)]
