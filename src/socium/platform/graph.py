"""The follow graph: generators, SNAP edge lists, and a compact index for million-agent runs.

Convention everywhere: nodes are agent ids 0..n-1 and an edge ``u -> v`` means *u follows v*
(v's posts reach u's following feed). Undirected models (friendship) become reciprocal follows.
Self-follows are dropped wherever a graph is built: they never change a feed.

A ``networkx.DiGraph`` is convenient for analysis but costs hundreds of bytes per edge, so the
simulation keeps a :class:`FollowIndex` (CSR arrays plus a small overlay of run-time changes).
"""

from __future__ import annotations

import gzip
import itertools
import math
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from socium.errors import ConfigError, InputFileError
from socium.platform.edge_keys import sorted_unique
from socium.platform.twitter_graph import twitter_like_edges

# Allowed parameters per kind, with defaults; a config naming anything else is rejected so a
# misspelt parameter cannot silently fall back to its default.
_PARAMS: dict[str, dict[str, Any]] = {
    "barabasi_albert": {"m": 3},
    "watts_strogatz": {"k": 6, "p": 0.1},
    "stochastic_block": {"sizes": None, "n_blocks": 2, "p_in": 0.05, "p_out": 0.005},
    "core_periphery": {"core_fraction": 0.1, "p_core": 0.3, "p_core_periphery": 0.05, "p_periphery": 0.01},
    "random_out": {"out_degree": 10},
    "twitter_like": {"m": 10, "reciprocity": 0.221, "triad": 0.5, "alpha": 2.276},
    "empty": {},
}
GRAPH_KINDS = tuple(_PARAMS)


def _nx_seed(seed: int) -> int:
    """networkx wants a plain int; derive it through SeedSequence so nearby seeds give unrelated graphs."""
    return int(np.random.SeedSequence(seed).generate_state(1, np.uint32)[0])


def _check_params(kind: str, n: int, params: dict[str, Any]) -> dict[str, Any]:
    if kind not in _PARAMS:
        raise ConfigError(f"graph.kind: unknown {kind!r}; allowed: {', '.join(GRAPH_KINDS)}")
    _check_n(n)
    unknown = sorted(set(params) - set(_PARAMS[kind]))
    if unknown:
        allowed = ", ".join(_PARAMS[kind]) or "none"
        raise ConfigError(f"graph.params.{unknown[0]}: not a parameter of kind {kind!r}; allowed: {allowed}")
    return {**_PARAMS[kind], **params}


def _check_n(n: Any) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ConfigError(f"graph.n: must be a non-negative integer, got {n!r}")


def _int_param(kind: str, name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ConfigError(f"graph.params.{name}: {kind} needs an integer in [{lo}, {hi}], got {value!r}")
    return int(value)


def _prob_param(kind: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"graph.params.{name}: {kind} needs a probability in [0, 1], got {value!r}")
    return float(value)


def generate_graph(kind: str, n: int, seed: int, **params: Any) -> nx.DiGraph:
    """Build a seeded follow graph of one of :data:`GRAPH_KINDS` over nodes 0..n-1.

    Parameters (defaults in brackets): ``barabasi_albert``: m [3]; ``watts_strogatz``: k [6], p [0.1];
    ``stochastic_block``: sizes (list summing to n) or n_blocks [2] (near-equal), p_in [0.05],
    p_out [0.005]; ``core_periphery``: core_fraction [0.1], p_core [0.3], p_core_periphery [0.05],
    p_periphery [0.01] (a two-block SBM); ``random_out``: out_degree [10], each node follows that many
    distinct others chosen uniformly (directed, not reciprocal); ``empty``: none.
    Block models record each node's block as node attribute ``"block"`` (core = 0).

    ``twitter_like`` is a directed growth model built for the follow-graph facts the undirected
    kinds miss (their follows are all mutual: reciprocity 1.0). Accounts join one at a time; each
    newcomer follows ``m`` earlier accounts: the first by preferential attachment on in-degree
    (probability proportional to followers + ``a``), each later one with probability ``triad`` by
    triadic closure (a uniform one of the accounts followed by its latest preferential pick, as in
    Holme & Kim 2002, PRE 65:026107), otherwise preferentially again; each follow is returned with
    probability ``reciprocity``. Parameters and where their defaults come from:

    * ``m`` [10]: follows per newcomer, so each account follows about ``m (1 + reciprocity)`` (12.2).
      A scale choice, not a measurement: Twitter's mean in Kwak et al. 2010 is ~35 (1.47 billion
      relations among 41.7 million users); 10 keeps feeds of a few thousand agents sparse. The
      first ``m + 1`` accounts follow all earlier ones.
    * ``reciprocity`` [0.221]: the share of follows returned, i.e. of connected pairs that are
      mutual. Kwak, Lee, Park & Moon 2010 (WWW): 22.1% of connected user pairs are reciprocal. The
      share of follow *edges* whose reverse exists (what ``socium validate`` measures) is then
      ``2r / (1 + r)`` = 0.362.
    * ``triad`` [0.5]: the chance that a follow after the first closes a triangle. Without it
      clustering is only what hubs give (0.11 at the default alpha, 0.02 at alpha 2.6; 3x10^4
      nodes, 6 seeds); with it the graph clusters like a social network, a trait Myers, Sharma,
      Gupta & Lin 2014 (WWW) find in the Twitter follow graph next to its information-network
      traits (and Romero & Kleinberg 2010, ICWSM, find directed closure a major way Twitter
      follows form). No study gives one share of closing follows to copy: 0.5 is a modelling
      choice; the mean local clustering it gives (0.22-0.30 at 10^4-10^6 nodes) is in
      docs/results.md.
    * ``alpha`` [2.276]: the follower (in-degree) tail exponent aimed at, Kwak et al. 2010's fit
      to Twitter's follower distribution. It sets the constant ``a`` (which also lets accounts
      nobody follows yet be found) through
      :func:`~socium.platform.twitter_graph.twitter_like_attractiveness`, a mean-field
      result. At the defaults the fitted exponent is 2.15-2.32 (10^4-10^6 nodes); a steeper aim
      with triadic closure falls short (alpha 2.6, triad 0.5, 3x10^4 nodes: 2.26-2.45 over 6
      seeds), as triadic follows favour old accounts beyond their in-degree.

    Account ids are a random permutation of joining order. Built in vectorised numpy, without
    networkx: see ``benchmarks/bench_graph.py`` for its speed. Pure growth at this exponent makes the
    oldest accounts followed by most of the population (73% at 10^6 nodes), which no Twitter account
    has been: no ageing or follow limit is modelled.
    """
    p = _check_params(kind, n, params)
    n = int(n)
    if kind in ("random_out", "twitter_like"):
        return _digraph(n, *generate_edges(kind, n, seed, **params))
    if kind == "empty":
        return _digraph(n, np.empty(0, np.int32), np.empty(0, np.int32))
    s = _nx_seed(seed)
    if kind == "barabasi_albert":
        m = _int_param(kind, "m", p["m"], 1, n - 1)  # n - 1: networkx needs n > m
        return _reciprocal(n, nx.barabasi_albert_graph(n, m, seed=s))
    if kind == "watts_strogatz":
        k = _int_param(kind, "k", p["k"], 1, n - 1)
        return _reciprocal(n, nx.watts_strogatz_graph(n, k, _prob_param(kind, "p", p["p"]), seed=s))
    if kind == "stochastic_block":
        sizes = _block_sizes(n, p["sizes"], p["n_blocks"])
        p_in, p_out = _prob_param(kind, "p_in", p["p_in"]), _prob_param(kind, "p_out", p["p_out"])
        probs = [[p_in if i == j else p_out for j in range(len(sizes))] for i in range(len(sizes))]
        return _block_model(n, sizes, probs, s)
    # core_periphery
    frac = p["core_fraction"]
    if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0.0 < frac < 1.0:
        raise ConfigError(f"graph.params.core_fraction: core_periphery needs a fraction in (0, 1), got {frac!r}")
    if n < 2:
        raise ConfigError(f"graph.n: core_periphery needs n >= 2, got {n}")
    core = min(max(1, round(n * frac)), n - 1)
    pc, pcp, pp = (_prob_param(kind, k, p[k]) for k in ("p_core", "p_core_periphery", "p_periphery"))
    return _block_model(n, [core, n - core], [[pc, pcp], [pcp, pp]], s)


def generate_edges(kind: str, n: int, seed: int, **params: Any) -> tuple[np.ndarray, np.ndarray]:
    """Like :func:`generate_graph` but returns sorted int32 (src, dst) arrays.

    ``random_out`` never touches networkx here, so 10^6-node graphs can go straight into
    :meth:`FollowIndex.from_edges` without the multi-GB dict-of-dicts.
    """
    p = _check_params(kind, n, params)
    if kind == "twitter_like":
        return _twitter_like(int(n), seed, p)
    if kind != "random_out":
        return graph_to_edges(generate_graph(kind, n, seed, **params))
    n = int(n)
    d = _int_param(kind, "out_degree", p["out_degree"], 0, max(0, n - 1))
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    if n == 0 or d == 0:
        return np.empty(0, np.int32), np.empty(0, np.int32)
    dst = _distinct_per_row(rng, n, n - 1, d)  # choices among the n-1 others ...
    dst += dst >= np.arange(n, dtype=dst.dtype)[:, None]  # ... shifted past the node itself
    src = np.repeat(np.arange(n, dtype=np.int32), d)
    return src, dst.astype(np.int32).ravel()


def _twitter_like(n: int, seed: int, p: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``graph.params`` and build the edges (:mod:`socium.platform.twitter_graph`)."""
    # the first m + 1 accounts follow all earlier ones, so a population of n <= m + 1 is that core alone
    m = min(_int_param("twitter_like", "m", p["m"], 1, 100_000), max(1, n - 1))
    r = _prob_param("twitter_like", "reciprocity", p["reciprocity"])
    q = _prob_param("twitter_like", "triad", p["triad"])
    alpha = p["alpha"]
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not math.isfinite(alpha):
        raise ConfigError(f"graph.params.alpha: twitter_like needs a number (follower-tail exponent), got {alpha!r}")
    return twitter_like_edges(n, seed, m, r, q, float(alpha))


def _distinct_per_row(rng: np.random.Generator, rows: int, pool: int, d: int) -> np.ndarray:
    """``d`` distinct values from ``range(pool)`` per row, each row sorted, without a Python loop per row."""
    if d > pool // 2:  # dense: pick the complement and keep what is left (output is ~pool wide anyway)
        keep = np.ones((rows, pool), dtype=bool)
        if pool - d:
            keep[np.arange(rows)[:, None], _distinct_per_row(rng, rows, pool, pool - d)] = False
        return np.nonzero(keep)[1].reshape(rows, d).astype(np.int64)
    out = np.sort(rng.integers(0, pool, size=(rows, d)), axis=1)
    while True:
        dup = np.zeros(out.shape, dtype=bool)
        dup[:, 1:] = out[:, 1:] == out[:, :-1]
        count = int(dup.sum())
        if count == 0:
            return out
        out[dup] = rng.integers(0, pool, size=count)  # redraw only the repeats; converges geometrically
        out.sort(axis=1)


def _block_sizes(n: int, sizes: Any, n_blocks: Any) -> list[int]:
    if sizes is not None:
        ok = isinstance(sizes, (list, tuple)) and all(isinstance(x, (int, np.integer)) and x >= 0 for x in sizes)
        if not ok or any(isinstance(x, bool) for x in sizes):
            raise ConfigError(
                f"graph.params.sizes: stochastic_block needs a list of non-negative integers, got {sizes!r}"
            )
        if sum(sizes) != n:
            raise ConfigError(f"graph.params.sizes: stochastic_block sizes sum to {sum(sizes)}, but n is {n}")
        return [int(x) for x in sizes]
    b = _int_param("stochastic_block", "n_blocks", n_blocks, 1, max(1, n))
    return [n // b + (1 if i < n % b else 0) for i in range(b)]


def _block_model(n: int, sizes: list[int], probs: list[list[float]], seed: int) -> nx.DiGraph:
    g = _reciprocal(n, nx.stochastic_block_model(sizes, probs, seed=seed, sparse=True))
    block = np.repeat(np.arange(len(sizes)), sizes).tolist()
    nx.set_node_attributes(g, dict(enumerate(block)), "block")
    return g


def _reciprocal(n: int, ug: nx.Graph) -> nx.DiGraph:
    e = np.array(list(ug.edges()), dtype=np.int64).reshape(-1, 2)
    return _digraph(n, np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]]))


def _digraph(n: int, src: np.ndarray, dst: np.ndarray) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    keep = src != dst
    g.add_edges_from(zip(src[keep].tolist(), dst[keep].tolist()))
    return g


def read_edgelist(path: str | Path, n: int | None = None, directed: bool = False) -> nx.DiGraph:
    """Read a SNAP edge list (``u v`` per line, ``#`` comments, plain or gzip) as a follow graph.

    ``directed=False`` (SNAP's undirected graphs list each edge once) adds both follows. Columns after
    the second (weights, timestamps) are ignored. With ``n`` given, ids must lie in 0..n-1 and the graph
    has exactly n nodes. Without it, dense ids 0..max are kept as they are; otherwise the distinct ids
    are relabelled 0.. in sorted order and the original ids are kept, by new id, in
    ``g.graph["original_ids"]``, so results can be mapped back to the file.
    """
    path = Path(path)
    if n is not None:
        _check_n(n)
    src: list[int] = []
    dst: list[int] = []
    try:
        with path.open("rb") as fb:
            gz = fb.read(2) == b"\x1f\x8b"
        opener: Callable[..., Any] = gzip.open if gz else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                s = line.strip()
                if not s or s.startswith("#"):
                    continue
                try:
                    u, v = (int(x) for x in s.split()[:2])  # one token only: ValueError on unpacking
                    if u < 0 or v < 0:
                        raise ValueError
                except ValueError:
                    reason = f"expected two non-negative integer node ids 'u v', got {s[:80]!r}"
                    raise InputFileError(path, lineno, reason) from None
                if n is not None and (u >= n or v >= n):
                    raise InputFileError(path, lineno, f"node id {max(u, v)} out of range 0..{n - 1} in {s[:80]!r}")
                src.append(u)
                dst.append(v)
    except FileNotFoundError:
        raise InputFileError(path, None, "file not found") from None
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:  # zlib.error: corrupt gzip data
        raise InputFileError(path, None, f"cannot read edge list: {exc}") from None
    s_arr = np.asarray(src, dtype=np.int64)
    d_arr = np.asarray(dst, dtype=np.int64)
    original: list[int] | None = None
    if n is None:
        ids = sorted_unique(np.concatenate([s_arr, d_arr]))
        n = len(ids)
        if n and ids[-1] != n - 1:
            s_arr, d_arr = np.searchsorted(ids, s_arr), np.searchsorted(ids, d_arr)
            original = ids.tolist()
    if not directed:
        s_arr, d_arr = np.concatenate([s_arr, d_arr]), np.concatenate([d_arr, s_arr])
    g = _digraph(int(n), s_arr, d_arr)
    if original is not None:
        g.graph["original_ids"] = original
    return g


def graph_from_following(following: list[list[int]]) -> nx.DiGraph:
    """Follow lists (agent i follows ``following[i]``, as OASIS CSVs give them) to a graph."""
    n = len(following)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for u, vs in enumerate(following):
        for v in vs:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < n:
                raise ValueError(f"agent {u} follows {v!r}, which is not an agent id in 0..{n - 1}")
            if v != u:
                g.add_edge(u, int(v))
    return g


def graph_to_edges(g: nx.DiGraph) -> tuple[np.ndarray, np.ndarray]:
    """All edges as int32 (src, dst) arrays sorted by src then dst (the order CSR rows need)."""
    m = g.number_of_edges()
    flat = np.fromiter(itertools.chain.from_iterable(g.edges()), dtype=np.int64, count=2 * m)
    pairs = flat.reshape(m, 2)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return pairs[order, 0].astype(np.int32), pairs[order, 1].astype(np.int32)


class FollowIndex:
    """Who follows whom, compact enough for 10^6 agents and mutable during a run.

    The bulk lives in CSR form: ``indices`` (int32, 4 bytes per edge) holds each node's followees
    sorted, ``indptr`` (int32, or int64 past 2^31 edges) the row starts, ``follower_counts`` (int32)
    the in-degrees: about 4 bytes per edge plus 8 per node. Follows and unfollows made during the run
    go to a small overlay of Python sets (roughly 100 bytes per changed edge) rather than rewriting the
    arrays; :meth:`compact` folds the overlay back in.
    """

    def __init__(self, n: int, indptr: np.ndarray, indices: np.ndarray) -> None:
        self.n = int(n)
        self.indptr, self.indices = indptr, indices
        self.indptr.flags.writeable = False  # followees() hands out views; nobody may edit them
        self.indices.flags.writeable = False
        self.follower_counts = np.bincount(indices, minlength=self.n).astype(np.int32)
        self._added: dict[int, set[int]] = {}
        self._removed: dict[int, set[int]] = {}
        self.n_edges = int(len(indices))

    @classmethod
    def from_edges(cls, src: np.ndarray, dst: np.ndarray, n: int) -> FollowIndex:
        """Build from parallel arrays; duplicate edges collapse and self-follows are dropped."""
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        if src.shape != dst.shape:
            raise ValueError(f"src and dst differ in length: {len(src)} vs {len(dst)}")
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise ValueError(f"edge endpoints must lie in 0..{n - 1}")
        keep = src != dst
        key = sorted_unique(src[keep] * n + dst[keep])  # (src, dst) order, duplicates dropped
        s, d = np.divmod(key, n) if n else (key, key)
        counts = np.bincount(s, minlength=n)
        itype = np.int32 if len(key) < 2**31 else np.int64
        indptr = np.concatenate(([0], np.cumsum(counts))).astype(itype)
        return cls(n, indptr, d.astype(np.int32))

    @classmethod
    def from_graph(cls, g: nx.DiGraph, n: int) -> FollowIndex:
        return cls.from_edges(*graph_to_edges(g), n)

    def _check(self, *ids: int) -> None:
        for x in ids:
            if not 0 <= x < self.n:
                raise IndexError(f"agent id {x} out of range 0..{self.n - 1}")

    def _base_has(self, u: int, v: int) -> bool:
        row = self.indices[self.indptr[u] : self.indptr[u + 1]]
        i = int(np.searchsorted(row, v))
        return i < len(row) and int(row[i]) == v

    def followees(self, u: int) -> np.ndarray:
        """Sorted int32 ids ``u`` follows now (a read-only view when ``u`` has no pending changes)."""
        self._check(u)
        row = self.indices[self.indptr[u] : self.indptr[u + 1]]
        rem, add = self._removed.get(u), self._added.get(u)
        if rem:
            row = row[~np.isin(row, np.fromiter(rem, dtype=np.int32, count=len(rem)))]
        if add:
            row = np.union1d(row, np.fromiter(add, dtype=np.int32, count=len(add))).astype(np.int32)
        return row

    def is_following(self, u: int, v: int) -> bool:
        self._check(u, v)
        if v in self._added.get(u, ()):
            return True
        return v not in self._removed.get(u, ()) and self._base_has(u, v)

    def following_among(self, u: int, vs: Iterable[int]) -> list[int]:
        """The ids of ``vs`` that ``u`` follows now, sorted: :meth:`is_following` for a prompt's shown
        users at once. A binary search of ``u``'s CSR row per id through memoryviews (a prompt shows a
        handful of users: numpy's per-call overhead was most of the cost at that size)."""
        cand = sorted(set(vs))
        self._check(u, *cand)
        if not cand:
            return []
        ptr, ind = self._row_views()
        lo, hi = ptr[u], ptr[u + 1]
        rem, add = self._removed.get(u), self._added.get(u)
        out = []
        for v in cand:
            if add is not None and v in add:
                out.append(v)
            elif rem is None or v not in rem:
                i = bisect_left(ind, v, lo, hi)
                if i < hi and ind[i] == v:
                    out.append(v)
        return out

    def _row_views(self) -> tuple[memoryview, memoryview]:
        """``indptr`` and ``indices`` as memoryviews (rebuilt when :meth:`compact` replaced the arrays)."""
        got = self.__dict__.get("_views")
        if got is None or got[0] is not self.indptr or got[1] is not self.indices:
            got = (self.indptr, self.indices, self.indptr.data, self.indices.data)
            self.__dict__["_views"] = got
        return got[2], got[3]

    def __getstate__(self) -> dict[str, Any]:  # memoryviews do not pickle: rebuilt on first use
        return {k: v for k, v in self.__dict__.items() if k != "_views"}

    def add(self, u: int, v: int) -> None:
        """``u`` follows ``v``; following twice is a no-op so replayed actions stay idempotent."""
        self._check(u, v)
        if u == v:
            raise ValueError(f"agent {u} cannot follow itself")
        if self.is_following(u, v):
            return
        rem = self._removed.get(u)
        if rem is not None and v in rem:
            rem.discard(v)
            if not rem:
                del self._removed[u]
        else:
            self._added.setdefault(int(u), set()).add(int(v))
        self.follower_counts[v] += 1
        self.n_edges += 1

    def remove(self, u: int, v: int) -> None:
        """``u`` unfollows ``v``; a no-op when ``u`` does not follow ``v``."""
        self._check(u, v)
        if not self.is_following(u, v):
            return
        add = self._added.get(u)
        if add is not None and v in add:
            add.discard(v)
            if not add:
                del self._added[u]
        else:
            self._removed.setdefault(int(u), set()).add(int(v))
        self.follower_counts[v] -= 1
        self.n_edges -= 1

    def follower_count(self, v: int) -> int:
        self._check(v)
        return int(self.follower_counts[v])

    def following_count(self, u: int) -> int:
        self._check(u)
        base = int(self.indptr[u + 1] - self.indptr[u])
        return base + len(self._added.get(u, ())) - len(self._removed.get(u, ()))

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Current (src, dst) int32 arrays sorted by src then dst, overlay applied."""
        counts = np.diff(self.indptr).astype(np.int64)
        src = np.repeat(np.arange(self.n, dtype=np.int64), counts)
        dst = self.indices.astype(np.int64)
        if not self._added and not self._removed:
            return src.astype(np.int32), dst.astype(np.int32)
        key = src * self.n + dst  # sorted; the overlay is spliced in by binary search, not a full re-sort
        if self._removed:
            gone = np.fromiter((u * self.n + v for u, vs in self._removed.items() for v in vs), dtype=np.int64)
            key = np.delete(key, np.searchsorted(key, gone))  # every removed edge is in the base
        if self._added:
            new = np.sort(np.fromiter((u * self.n + v for u, vs in self._added.items() for v in vs), np.int64))
            key = np.insert(key, np.searchsorted(key, new), new)
        s, d = np.divmod(key, self.n)
        return s.astype(np.int32), d.astype(np.int32)

    def compact(self) -> None:
        """Fold pending changes into the CSR arrays, e.g. between phases of a long run."""
        if self._added or self._removed:
            fresh = FollowIndex.from_edges(*self.edges(), self.n)
            self.indptr, self.indices = fresh.indptr, fresh.indices
            self._added, self._removed = {}, {}

    def to_graph(self) -> nx.DiGraph:
        return _digraph(self.n, *self.edges())
