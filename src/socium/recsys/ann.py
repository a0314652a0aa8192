"""Top-k inner-product search for a batch of users over the window's post vectors.

The score of candidate ``i`` for user ``u`` is ``scale[i] * (u . data[rows[i]]) + bias[i]`` (the
caller puts recency decay in ``scale`` and popularity in ``bias``), so one chunked matrix product
ranks every user at once.

Why an inverted-file (IVF) index as well: on 2 CPU cores an exact product of 10^4 users by 10^5
posts by 384 dims is ~8 * 10^11 flops (~15 s). The IVF path clusters post vectors with spherical
k-means, scores each user against the centroids, and scores exactly only the posts in the
``nprobe`` nearest clusters: ~nprobe / n_clusters of the work, at the cost of occasionally missing
a good post in an unprobed cluster (recall is measured in benchmarks/bench_recsys.py).

Why not faiss (issue 26 asked for faiss-cpu or usearch, keeping this index only if it measured
better): ``benchmarks/bench_recsys.py --compare-ann benchmarks/ann_faiss.py`` runs the same feeds
through faiss (``IndexFlatIP`` exact, ``IndexIVFFlat`` on the same clusters, the same tie rule) at
10^4 users x 10^5 posts x 384 dims, k=5, on the shared 2-core machine (load 10-12), one run each:

=============================================  ===============  ==============
                                               this module      faiss-cpu 1.15
=============================================  ===============  ==============
X feeds, 10^4 users, IVF (nprobe 8 of 316)     1.77 s/step      10.16 s/step
X feeds, exact ranking, 10^3 users             8.91 s/step      12.10 s/step
IVF recall of exact out-of-network picks       1.000            1.000
spherical k-means, 10^5 posts, 316 clusters    2.46 s           4.94 s
``ivf_top`` alone, 10^4 users (synthetic)      2.09 s           9.43 s (2 threads), 10.36 s (1)
``exact_top`` alone, 10^3 users, 2 runs        9.25, 7.07 s     11.10, 9.41 s
=============================================  ===============  ==============

faiss is as accurate and slower: ``IndexIVFFlat`` scans each user's lists one vector at a time,
where :func:`ivf_top` multiplies each cluster's posts by all of its users in one BLAS call, and
the faiss wheel's bundled OpenBLAS runs a generic (Prescott) kernel where numpy's picks SkylakeX.
HNSW (usearch, hnswlib) does not fit: scores carry per-post recency decay that changes every
step, so its graph would be rebuilt every step. The comparison stays runnable (faiss is not a
dependency: ``pip install faiss-cpu`` first).

Ties: every (score, candidate) pair is packed into one unique 64-bit key (the float's bits made
order-preserving in the high half, the candidate position in the low half), so "the best t" is a
well-defined set whatever selection algorithm runs, ties go to the newer post, and no random
numbers are involved.
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

_LOW = np.uint64(0xFFFFFFFF)


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


def _scaled(data: np.ndarray, rows: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``data[rows] * scale[:, None]``, skipping the product where every scale is 1 (no recency decay,
    as ``foryou``'s retrieval asks): x * 1 is x to the bit, and the pass over the gathered vectors
    costs as much as the gather."""
    out = data[rows]
    same_type = np.result_type(out, scale) == out.dtype
    return out if same_type and bool(np.all(scale == 1)) else out * scale[:, None]


def _top_keys(keys: np.ndarray, t: int) -> np.ndarray:
    """The ``t`` largest keys of each row, unordered (all of them if the row is shorter)."""
    n = keys.shape[1]
    return keys if n <= t else np.partition(keys, n - t, axis=1)[:, n - t :]


def _finish(buf: np.ndarray, t: int) -> np.ndarray:
    """Best ``t`` positions per row in descending order; -1 where a row has fewer (key 0 = empty)."""
    top = np.sort(_top_keys(buf, t), axis=1)[:, ::-1]
    pos = (top & _LOW).astype(np.int64)
    pos[top == 0] = -1
    if pos.shape[1] < t:
        pos = np.concatenate([pos, np.full((len(pos), t - pos.shape[1]), -1, np.int64)], axis=1)
    return pos


def exact_top(
    u: np.ndarray,
    data: np.ndarray,
    rows: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray,
    t: int,
    chunk_elems: int = 1 << 22,
) -> np.ndarray:
    """Exact best ``t`` candidate positions (indices into ``rows``) per user, best first, -1 padded."""
    n_u, n_p = len(u), len(rows)
    if n_p == 0 or n_u == 0:
        return np.full((n_u, t), -1, np.int64)
    pt = np.ascontiguousarray(_scaled(data, rows, scale).T)
    pos = np.arange(n_p, dtype=np.uint64)[None, :]
    step = max(1, chunk_elems // n_p)
    starts = list(range(0, n_u, step))

    def one(lo: int) -> np.ndarray:
        s = u[lo : lo + step] @ pt
        s += bias
        return _top_keys(sort_keys(s, pos), t)

    with single_threaded_blas():  # one chunk per thread: no BLAS thread team spinning on a busy machine
        workers = min(_cpus(), len(starts), 8)
        if workers <= 1:
            parts = [one(lo) for lo in starts]
        else:
            with ThreadPoolExecutor(workers) as ex:
                parts = list(ex.map(one, starts))
    return _finish(np.concatenate(parts), t)


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
    u: np.ndarray,
    data: np.ndarray,
    rows: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray,
    clusters: np.ndarray,
    centroids: np.ndarray,
    t: int,
    nprobe: int,
    threads: int | None = None,
) -> np.ndarray:
    """Approximate :func:`exact_top`: exact scores over the candidates in each user's ``nprobe`` best
    clusters (``clusters[i]`` is the cluster of candidate ``i``). Users are grouped by probed cluster
    so each cluster's candidates meet all their users in one small matrix product; clusters are
    spread over ``threads`` worker threads (default: the CPUs this process may use, at most 8), each
    running single-threaded BLAS, since small products gain nothing from a BLAS thread team."""
    n_u, n_c = len(u), len(centroids)
    if len(rows) == 0 or n_u == 0:
        return np.full((n_u, t), -1, np.int64)
    nprobe = max(1, min(nprobe, n_c))
    if nprobe < n_c:
        probe = np.argpartition(-(u @ centroids.T), nprobe - 1, axis=1)[:, :nprobe]
    else:
        probe = np.broadcast_to(np.arange(n_c), (n_u, n_c))
    by_cl = np.argsort(probe.ravel(), kind="stable")
    pair_user = (by_cl // nprobe).astype(np.int64)
    pair_slot = by_cl % nprobe
    u_lo = np.searchsorted(probe.ravel()[by_cl], np.arange(n_c + 1))
    p_order = np.argsort(clusters, kind="stable")  # candidates grouped by cluster, ascending within
    p_lo = np.searchsorted(clusters[p_order], np.arange(n_c + 1))
    p_sorted = _scaled(data, rows[p_order], scale[p_order])
    b_sorted = bias[p_order]
    pos_sorted = p_order.astype(np.uint64)
    buf = np.zeros((n_u, nprobe, t), dtype=np.uint64)  # 0 = empty slot

    def run(cs: list[int]) -> None:  # each (user, slot) cell is written by exactly one cluster: no races
        for c in cs:
            a, z = p_lo[c], p_lo[c + 1]
            us = pair_user[u_lo[c] : u_lo[c + 1]]
            s = u[us] @ p_sorted[a:z].T
            s += b_sorted[a:z]
            top = _top_keys(sort_keys(s, pos_sorted[None, a:z]), t)
            buf[us, pair_slot[u_lo[c] : u_lo[c + 1]], : top.shape[1]] = top

    todo = np.flatnonzero((np.diff(u_lo) > 0) & (np.diff(p_lo) > 0)).tolist()
    workers = max(1, min(_cpus(), len(todo) // 8, 8)) if threads is None else max(1, threads)
    with single_threaded_blas():  # many small products: a BLAS thread team per product only spins
        if workers == 1:
            run(todo)
        else:
            with ThreadPoolExecutor(workers) as ex:
                list(ex.map(run, [todo[i::workers] for i in range(workers)]))
    return _finish(buf.reshape(n_u, nprobe * t), t)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def single_threaded_blas() -> Any:
    """Limit BLAS to one thread per call (threadpoolctl); parallelism comes from our own threads."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency; without it BLAS keeps its default
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")
