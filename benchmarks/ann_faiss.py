"""The X recommender's nearest-neighbour search on faiss, kept for comparison with socium's own.

``python benchmarks/bench_recsys.py --compare-ann benchmarks/ann_faiss.py`` (needs ``pip install
faiss-cpu``; not a dependency) runs the X feeds through these functions instead of
:mod:`socium.recsys.ann`, on the same world, clusters and users. Same functions, same results
(``tests/test_recsys/test_recsys_x.py``'s IVF-equals-exact test passed on it): the score
``scale[i] * (u . x[i]) + bias[i]`` is a plain inner product of ``[u, 1]`` with
``[scale * x, bias]``; exact search is ``IndexFlatIP``, IVF is ``IndexIVFFlat`` filled with the
caller's cluster assignments (``faiss.contrib.ivf_tools``) and searched with the users' own probe
lists; faiss returns ``2 t + 8`` candidates per user that numpy re-scores in one fixed way, so ties
go to the newer post on both paths. It lost at 10^4 users x 10^5 posts (numbers in
:mod:`socium.recsys.ann`): IVFFlat scans each query's lists one vector at a time, where the numpy
index multiplies each cluster's posts by all its users in one BLAS call, and the wheel's bundled
OpenBLAS runs a generic (Prescott) kernel where numpy's picks SkylakeX.
"""

from __future__ import annotations

import faiss
import numpy as np
from faiss.contrib.ivf_tools import add_preassigned, search_preassigned

_LOW = np.uint64(0xFFFFFFFF)
#: Fixed k-means seed: the same window gives the same clusters in every run.
KMEANS_SEED = 1234


def sort_keys(score: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """uint64 keys ordering by (score, pos): larger key = higher score, then larger position."""
    signed = np.ascontiguousarray(score, dtype=np.float32).view(np.int32)
    flip = (signed >> 31).view(np.uint32) | np.uint32(0x80000000)  # negative: all bits; else: the sign bit
    ordered = signed.view(np.uint32) ^ flip
    return (ordered.astype(np.uint64) << np.uint64(32)) | np.asarray(pos, dtype=np.uint64)


def key_score(keys: np.ndarray) -> np.ndarray:
    """Invert the score half of :func:`sort_keys` (for diagnostics and tests)."""
    hi = (keys >> np.uint64(32)).astype(np.uint32)
    bits = np.where(hi & np.uint32(0x80000000), hi & np.uint32(0x7FFFFFFF), ~hi)
    return bits.view(np.float32)


def _shortlist(t: int) -> int:
    """How many candidates faiss returns per user: enough that exact ties and rounding differences
    at the t-th place are settled by :func:`_rerank`, not by the kernel."""
    return 2 * t + 8


def _posts(data: np.ndarray, rows: np.ndarray, scale: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``[scale * x, bias]`` per candidate, float32 and contiguous, as faiss reads it."""
    p = np.empty((len(rows), data.shape[1] + 1), dtype=np.float32)
    np.multiply(data[rows], scale[:, None], out=p[:, :-1])
    p[:, -1] = bias
    return p


def _users(u: np.ndarray) -> np.ndarray:
    q = np.empty((len(u), u.shape[1] + 1), dtype=np.float32)
    q[:, :-1] = u
    q[:, -1] = 1.0
    return q


def _rerank(
    u: np.ndarray,
    data: np.ndarray,
    rows: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray,
    cand: np.ndarray,
    t: int,
    chunk: int = 2048,
) -> np.ndarray:
    """Best ``t`` of each user's short list ``cand`` (candidate positions, -1 = none), best first,
    -1 padded, scored by one numpy expression whichever index produced the list."""
    out = np.full((len(u), t), -1, np.int64)
    for lo in range(0, len(u), chunk):
        c = cand[lo : lo + chunk]
        ok = c >= 0
        safe = np.where(ok, c, 0)
        x = data[rows[safe]]  # (users, m, d)
        s = np.einsum("ud,umd->um", u[lo : lo + chunk], x, dtype=np.float32) * scale[safe] + bias[safe]
        keys = sort_keys(s.astype(np.float32), safe)
        keys[~ok] = 0
        out[lo : lo + chunk] = _finish(keys, t)
    return out


def _finish(buf: np.ndarray, t: int) -> np.ndarray:
    """Best ``t`` positions per row in descending order; -1 where a row has fewer (key 0 = empty)."""
    n = buf.shape[1]
    top = buf if n <= t else np.partition(buf, n - t, axis=1)[:, n - t :]
    top = np.sort(top, axis=1)[:, ::-1]
    pos = (top & _LOW).astype(np.int64)
    pos[top == 0] = -1
    if pos.shape[1] < t:
        pos = np.concatenate([pos, np.full((len(pos), t - pos.shape[1]), -1, np.int64)], axis=1)
    return pos


def exact_top(
    u: np.ndarray, data: np.ndarray, rows: np.ndarray, scale: np.ndarray, bias: np.ndarray, t: int
) -> np.ndarray:
    """Exact best ``t`` candidate positions (indices into ``rows``) per user, best first, -1 padded."""
    n_u, n_p = len(u), len(rows)
    if n_p == 0 or n_u == 0:
        return np.full((n_u, t), -1, np.int64)
    index = faiss.IndexFlatIP(data.shape[1] + 1)
    index.add(_posts(data, rows, scale, bias))
    _, cand = index.search(_users(u), min(n_p, _shortlist(t)))
    return _rerank(u, data, rows, scale, bias, cand, t)


def train_centroids(x: np.ndarray, n_clusters: int, iters: int = 8, max_sample: int = 64) -> np.ndarray:
    """Spherical k-means (faiss) on at most ``max_sample`` rows of ``x`` per cluster, fixed seed."""
    n = len(x)
    n_clusters = max(1, min(n_clusters, n))
    km = faiss.Kmeans(
        x.shape[1],
        n_clusters,
        niter=iters,
        spherical=True,
        seed=KMEANS_SEED,
        max_points_per_centroid=max_sample,
        min_points_per_centroid=1,
    )
    km.train(np.ascontiguousarray(x, dtype=np.float32))
    return np.ascontiguousarray(km.centroids, dtype=np.float32)


def assign(x: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Nearest centroid (by inner product) of each row, int32."""
    if len(x) == 0:
        return np.zeros(0, np.int32)
    index = faiss.IndexFlatIP(centroids.shape[1])
    index.add(np.ascontiguousarray(centroids, dtype=np.float32))
    _, nearest = index.search(np.ascontiguousarray(x, dtype=np.float32), 1)
    return nearest[:, 0].astype(np.int32)


def ivf_top(
    u: np.ndarray,
    data: np.ndarray,
    rows: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray,
    clusters: np.ndarray,
    centroids: np.ndarray,
    t: int,
    nprobe: int,
) -> np.ndarray:
    """Approximate :func:`exact_top`: exact scores over the candidates in each user's ``nprobe`` best
    clusters (``clusters[i]`` is the cluster of candidate ``i``; -1: in none, never returned).

    The clusters come from the caller (trained when the window doubles, not per step), so the
    inverted lists are filled with faiss's pre-assigned add and searched with the users' own probe
    lists (``faiss.contrib.ivf_tools``); the coarse quantizer is never asked.
    """
    n_u, n_c = len(u), len(centroids)
    if len(rows) == 0 or n_u == 0:
        return np.full((n_u, t), -1, np.int64)
    nprobe = max(1, min(nprobe, n_c))
    if nprobe < n_c:
        probe = np.argpartition(-(u @ centroids.T), nprobe - 1, axis=1)[:, :nprobe]
    else:
        probe = np.broadcast_to(np.arange(n_c), (n_u, n_c))
    d = data.shape[1] + 1
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, n_c, faiss.METRIC_INNER_PRODUCT)
    index.is_trained = True
    index.nprobe = nprobe
    inside = np.flatnonzero(clusters >= 0).astype(np.int64)
    # ``inside`` must stay referenced here: add_preassigned keeps only a raw pointer to the ids
    add_preassigned(
        index, _posts(data, rows[inside], scale[inside], bias[inside]), clusters[inside].astype(np.int64), inside
    )
    _, cand = search_preassigned(index, _users(u), _shortlist(t), np.ascontiguousarray(probe, dtype=np.int64))
    return _rerank(u, data, rows, scale, bias, cand, t)
