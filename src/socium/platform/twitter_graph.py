"""The ``twitter_like`` follow graph: directed growth with preferential attachment, triadic closure and follow-backs.

Why its own module: the generator is a vectorised simulation of a sequential growth process (pointer
jumping instead of a Python loop per node, so 10^6 accounts build in seconds), and that machinery is
unrelated to the other generators in :mod:`socium.platform.graph`, which validates its parameters
and calls :func:`twitter_like_edges`.
"""

from __future__ import annotations

import math

import numpy as np

from socium.errors import ConfigError
from socium.platform.edge_keys import sorted_unique


def twitter_like_attractiveness(m: int, reciprocity: float, triad: float, alpha: float) -> float:
    """The constant ``a`` added to every in-degree so the follower tail has exponent ``alpha``.

    Mean-field rate equation (Dorogovtsev, Mendes & Samukhin 2000, extended to this model): each
    newcomer adds ``m`` follows and on average ``m * reciprocity`` returned ones, so the attachment
    weight after ``t`` nodes is ``t * S`` with ``S = m (1 + reciprocity) + a``. A preferential follow
    reaches an account of in-degree ``k`` with probability ``(k + a) / (t S)``, a triadic one (uniform
    among the follows of a preferentially chosen account) with about ``k / (t m)``. With a share
    ``q = triad (m - 1) / m`` of triadic follows, ``dk/dt = beta k / t`` for large ``k`` with
    ``beta = (1 - q) m / S + q``, so ``P(k) ~ k^-(1 + 1/beta)``; solving for ``a`` gives
    ``a = m ((1 - q) / (beta - q) - (1 + reciprocity))`` with ``beta = 1 / (alpha - 1)``.
    Raises :class:`ConfigError` naming ``graph.params.alpha`` when no ``a > 0`` reaches ``alpha``.
    """
    q = triad * (m - 1) / m
    lo = 1.0 + 1.0 / (q + (1.0 - q) / (1.0 + reciprocity))  # a -> 0
    hi = 1.0 + 1.0 / q if q > 0 else math.inf  # a -> infinity
    if not lo < alpha < hi:
        why = (
            "returned follows steepen the tail (lower graph.params.reciprocity) and triadic ones fatten it "
            "(raise graph.params.triad)"
            if alpha <= lo
            else "triadic follows alone fatten the tail beyond that (lower graph.params.triad)"
        )
        raise ConfigError(
            f"graph.params.alpha: with m={m}, reciprocity={reciprocity:g} and triad={triad:g}, twitter_like "
            f"reaches follower-tail exponents in ({lo:.3f}, {hi:.3f}) only, got {alpha!r}: {why}"
        )
    beta = 1.0 / (alpha - 1.0)
    return m * ((1.0 - q) / (beta - q) - (1.0 + reciprocity))


def twitter_like_edges(n: int, seed: int, m: int, r: float, q: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Directed growth with preferential attachment on in-degree, triadic closure and follow-backs.

    The model and its defaults are described in :func:`generate_graph`. The process is sequential
    (whom a newcomer finds depends on every earlier follow), but each random choice is drawn up
    front and only *pointers* are resolved afterwards, in vectorised rounds:

    * a preferential follow of newcomer ``t`` takes, with probability ``a t / (a t + E_t)``, a uniform
      earlier account, otherwise the target of a uniform earlier edge (``E_t`` edges exist before
      ``t``; an edge's target is an account drawn in proportion to its in-degree). A returned follow's
      target, the follower, is known at once; a follow's target is copied once it is resolved;
    * a triadic follow waits for its anchor (the newcomer's latest preferential pick ``v``), then
      copies a uniform one of ``v``'s own follows;
    * copy chains are shortened by pointer jumping, so 10^6 nodes take a few dozen rounds.

    Repeated picks within one newcomer's follows are redrawn preferentially (up to 8 rounds; a repeat
    left after that becomes one edge).
    """
    a = twitter_like_attractiveness(m, r, q, alpha)
    if n < 2:
        return np.empty(0, np.int32), np.empty(0, np.int32)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    it = np.int32 if 2 * n * m < 2**31 else np.int64  # slot and edge indices; halves the peak memory at 10^6
    rows = np.arange(n, dtype=it)
    col = np.arange(m, dtype=it)
    slots = np.arange(n * m, dtype=it).reshape(n, m)
    valid = col[None, :] < np.minimum(rows, m)[:, None]  # account t follows min(t, m) earlier ones
    nf = valid.sum(axis=1)
    ret = valid & (rng.random((n, m)) < r)  # whether a follow is returned does not depend on its target
    nr = ret.sum(axis=1)
    e_before = np.concatenate(([0], np.cumsum(nf + nr)[:-1])).astype(it)
    # All edges in creation order (each account's follows, then the follows returned to it), as slot ids.
    edge_slot = np.empty(int(nf.sum() + nr.sum()), dtype=it)
    edge_ret = np.zeros(len(edge_slot), dtype=bool)
    edge_slot[(e_before[:, None] + np.cumsum(valid, axis=1) - 1)[valid]] = slots[valid]
    pos_r = ((e_before + nf)[:, None] + np.cumsum(ret, axis=1) - 1)[ret]
    edge_slot[pos_r], edge_ret[pos_r] = slots[ret], True
    del pos_r

    def preferential(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Preferential picks for slots ``s``: the followee where known now (else -1), and else the
        slot whose followee it copies."""
        t = s // m
        eb = e_before[t]
        out = np.full(len(s), -1, dtype=it)
        ptrs = np.full(len(s), -1, dtype=it)
        uniform = rng.random(len(s)) * (a * t + eb) < a * t
        out[uniform] = (rng.random(int(uniform.sum())) * t[uniform]).astype(it)
        rest = np.flatnonzero(~uniform)
        e = (rng.random(len(rest)) * eb[rest]).astype(it)
        is_ret = edge_ret[e]
        out[rest[is_ret]] = edge_slot[e[is_ret]] // m  # a returned follow points at its follower
        ptrs[rest[~is_ret]] = edge_slot[e[~is_ret]]
        return out, ptrs

    val = np.full(n * m, -1, dtype=it)  # the resolved followee of each slot
    ptr = np.full(n * m, -1, dtype=it)  # the slot whose followee an unresolved slot copies
    core = valid & (rows[:, None] <= m)  # the first m + 1 accounts follow every earlier one
    val[slots[core]] = np.broadcast_to(col, (n, m))[core]
    grow = slots[m + 1 :].ravel()  # every slot of a later account is used
    j = grow % m
    triadic = (j > 0) & (rng.random(len(grow)) < q)
    s = grow[~triadic]
    val[s], ptr[s] = preferential(s)
    pa_col = np.where(triadic.reshape(-1, m), 0, col[None, :])  # anchor: the latest preferential slot
    anchor = (grow - j + np.maximum.accumulate(pa_col, axis=1).ravel())[triadic]
    pend_t, u_t = grow[triadic], rng.random(int(triadic.sum()))
    pend_c = s[ptr[s] >= 0]
    while len(pend_t) or len(pend_c):
        if len(pend_t):
            v = val[anchor]
            ready = v >= 0
            s, v, u = pend_t[ready], v[ready], u_t[ready]
            has = nf[v] > 0  # account 0 follows nobody: fall back to a preferential pick
            ptr[s[has]] = v[has] * m + (u[has] * nf[v[has]]).astype(it)
            val[s[~has]], ptr[s[~has]] = preferential(s[~has])
            pend_t, anchor, u_t = pend_t[~ready], anchor[~ready], u_t[~ready]
            pend_c = np.concatenate([pend_c, s[ptr[s] >= 0]])
        if len(pend_c):
            src = ptr[pend_c]
            got = val[src]
            done = got >= 0
            val[pend_c[done]] = got[done]
            pend_c, src = pend_c[~done], src[~done]
            hop = ptr[src]  # pointer jumping: skip a slot that is itself still copying
            ptr[pend_c] = np.where((hop >= 0) & (val[src] < 0), hop, src)
    del ptr

    vals = val.reshape(n, m)
    chk = rows[m + 1 :]  # accounts whose follows may repeat (the core's cannot)
    for _ in range(8):  # repeated picks within one account's follows: redraw them preferentially
        sub = vals[chk]
        order = np.argsort(sub, axis=1, kind="stable")
        srt = np.take_along_axis(sub, order, axis=1)
        dup_sorted = np.zeros(sub.shape, dtype=bool)
        dup_sorted[:, 1:] = srt[:, 1:] == srt[:, :-1]
        dup = np.zeros(sub.shape, dtype=bool)
        np.put_along_axis(dup, order, dup_sorted, axis=1)
        s = slots[chk][dup]
        if not len(s):
            break
        out, ptrs = preferential(s)
        out[out < 0] = val[ptrs[out < 0]]  # every earlier follow is resolved by now
        val[s] = out
        chk = chk[dup.any(axis=1)]
    owner = np.repeat(rows, m).reshape(n, m)
    src = np.concatenate([owner[valid], vals[ret]])
    dst = np.concatenate([vals[valid], owner[ret]])
    del val, vals, owner
    # Account ids are a random permutation of joining order: otherwise agent 0 (the usual author of
    # seed posts) would always be the oldest account and the largest hub, followed by most of the graph.
    perm = rng.permutation(n)  # int64, so the (src, dst) keys below do not overflow
    key = sorted_unique(perm[src] * n + perm[dst])  # also drops a repeat that survived 8 redraws
    s_out, d_out = np.divmod(key, n)
    return s_out.astype(np.int32), d_out.astype(np.int32)
