"""Top-k inner-product search for a batch of users over the window's post vectors.

The score of post p for user u is ``u . P[p] + b[p]`` (the caller folds recency decay into P's rows
and adds popularity through b), so one chunked matrix product ranks every user at once.

Why an inverted-file (IVF) index as well: on 2 CPU cores an exact product of 10^4 users by 10^5
posts by 384 dims is ~8 * 10^11 flops (~15 s). The IVF path clusters post vectors with spherical
k-means, scores each user against the centroids, and scores exactly only the posts in the
``nprobe`` nearest clusters: ~nprobe / n_clusters of the work, at the cost of occasionally missing
a good post in an unprobed cluster (recall is measured in benchmarks/bench_recsys.py).

Both paths are deterministic: no random numbers, ties broken by the newer post (larger position).
"""

from __future__ import annotations

import numpy as np


def _select(rows: np.ndarray, pos: np.ndarray, score: np.ndarray, n_rows: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``t`` best (score desc, pos desc) of the given triples, padded with -1 / -inf."""
    out_p = np.full((n_rows, t), -1, dtype=np.int64)
    out_s = np.full((n_rows, t), -np.inf, dtype=np.float32)
    if not len(rows):
        return out_p, out_s
    order = np.lexsort((-pos, -score, rows))
    r = rows[order]
    starts = np.searchsorted(r, np.arange(n_rows))
    rank = np.arange(len(r)) - starts[r]
    keep = rank < t
    out_p[r[keep], rank[keep]] = pos[order][keep]
    out_s[r[keep], rank[keep]] = score[order][keep]
    return out_p, out_s


def _block_top(s: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of every entry at least as large as its row's t-th largest value (ties included)."""
    n = s.shape[1]
    if n <= t:
        return np.nonzero(np.ones(s.shape, dtype=bool))
    thr = np.partition(s, n - t, axis=1)[:, n - t]
    return np.nonzero(s >= thr[:, None])


def exact_top(u: np.ndarray, p: np.ndarray, b: np.ndarray, t: int, chunk_elems: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """Exact top ``t`` positions and scores per user row, user chunks bounded to ``chunk_elems`` scores."""
    n_u, n_p = len(u), len(p)
    if n_p == 0 or n_u == 0:
        return _select(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32), n_u, t)
    pt = np.ascontiguousarray(p.T)
    step = max(1, chunk_elems // n_p)
    rows, pos, sc = [], [], []
    for lo in range(0, n_u, step):
        s = u[lo : lo + step] @ pt
        s += b
        r, c = _block_top(s, t)
        rows.append(r + lo)
        pos.append(c)
        sc.append(s[r, c])
    return _select(np.concatenate(rows), np.concatenate(pos), np.concatenate(sc), n_u, t)


def train_centroids(x: np.ndarray, n_clusters: int, iters: int = 8, max_sample: int = 64) -> np.ndarray:
    """Spherical k-means on an evenly spaced sample of ``x`` (at most ``max_sample`` per cluster).

    Deterministic without a random stream: the initial centroids are evenly spaced sample rows (posts
    are in time order, so this spreads them over the history). Empty clusters keep their centroid.
    """
    n = len(x)
    n_clusters = max(1, min(n_clusters, n))
    m = min(n, n_clusters * max_sample)
    sample = x[np.linspace(0, n - 1, m).astype(np.int64)]
    c = sample[np.linspace(0, m - 1, n_clusters).astype(np.int64)].copy()
    for _ in range(iters):
        a = assign(sample, c)
        order = np.argsort(a, kind="stable")
        sa = a[order]
        starts = np.flatnonzero(np.r_[True, sa[1:] != sa[:-1]])
        sums = np.add.reduceat(sample[order], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        ok = norms[:, 0] > 0
        c[sa[starts][ok]] = sums[ok] / norms[ok]
    return c.astype(np.float32)


def assign(x: np.ndarray, centroids: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """Nearest centroid (by inner product) of each row, int32."""
    out = np.zeros(len(x), dtype=np.int32)
    ct = np.ascontiguousarray(centroids.T)
    for lo in range(0, len(x), chunk):
        out[lo : lo + chunk] = np.argmax(x[lo : lo + chunk] @ ct, axis=1)
    return out


def ivf_top(
    u: np.ndarray, p: np.ndarray, b: np.ndarray, clusters: np.ndarray, centroids: np.ndarray, t: int, nprobe: int
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate top ``t`` per user: exact scores over the posts of each user's ``nprobe`` best clusters.

    ``clusters[i]`` is the cluster of ``p[i]``. Users are grouped by probed cluster so each cluster's
    posts meet all their users in one small matrix product.
    """
    n_u, n_c = len(u), len(centroids)
    nprobe = max(1, min(nprobe, n_c))
    cs = u @ centroids.T
    probe = np.argpartition(-cs, nprobe - 1, axis=1)[:, :nprobe] if nprobe < n_c else np.broadcast_to(np.arange(n_c), (n_u, n_c))
    pair_user = np.repeat(np.arange(n_u), nprobe)
    pair_cl = probe.ravel()
    by_cl = np.argsort(pair_cl, kind="stable")
    pair_user, pair_cl = pair_user[by_cl], pair_cl[by_cl]
    p_order = np.argsort(clusters, kind="stable")  # positions grouped by cluster, ascending within
    p_sorted = np.ascontiguousarray(p[p_order])
    b_sorted = b[p_order]
    p_lo = np.searchsorted(clusters[p_order], np.arange(n_c + 1))
    u_lo = np.searchsorted(pair_cl, np.arange(n_c + 1))
    rows, pos, sc = [], [], []
    for c in np.flatnonzero((np.diff(u_lo) > 0) & (np.diff(p_lo) > 0)).tolist():
        users = pair_user[u_lo[c] : u_lo[c + 1]]
        a, z = p_lo[c], p_lo[c + 1]
        s = u[users] @ p_sorted[a:z].T
        s += b_sorted[a:z]
        r, col = _block_top(s, t)
        rows.append(users[r])
        pos.append(p_order[a + col])
        sc.append(s[r, col])
    if not rows:
        return _select(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32), n_u, t)
    return _select(np.concatenate(rows), np.concatenate(pos), np.concatenate(sc), n_u, t)
