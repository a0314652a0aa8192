"""A numpy emulator of the calibrated propagation null, and the point predictors scored on its replicas.

Why in the package: the choice of ``cv.runs`` for the 134-cascade cross-validation (docs/results.md)
rests on this emulator (``benchmarks/propagation_point.py`` runs the selection), so its curves must be
the curves the simulator and :func:`~socium.trace.queries.curves.cascade_curves_from_events` give for
the same reshare times; the tests pin that here. The calibrated null is emulated with p = 1 on the
tree, ``dt``-minute steps, wake-up ``ceil(delay / dt)`` steps after the parent's reshare, and each
reshare stamped at ``(step + RESHARE_AT) * dt``, vectorised over replicas (common random numbers).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from socium.experiments.propagation.data.realcascades import CascadeTree
from socium.experiments.propagation.fit.fit import tree_edges
from socium.simulator.timing import MIN_DELAY_MIN, DelayDistribution, TimingParams
from socium.trace.queries.cascades import RESHARE_AT
from socium.trace.queries.curves import DEFAULT_MINUTES, node_depths

MINUTES = DEFAULT_MINUTES
"""Curves run over OASIS's comparison window (150 minutes), like every propagation score."""


def replica_curves(
    tree: CascadeTree,
    tp: TimingParams,
    root_shift: float,
    casc_sd: float,
    draws: dict[str, np.ndarray],
    dt: float = 1.0,
    fast_weight: np.ndarray | None = None,
    node_shift: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Curves (R x MINUTES) of R replicas of the calibrated null on ``tree``.

    ``draws``: standard uniforms ``u``, ``v`` and normals ``z`` (R x n) and ``g`` (R,); ``casc_sd`` > 0
    draws one log-delay shift per replica and narrows the family by it (the simulator's rule); ``dt``:
    step length in minutes (``cv.step_minutes``). ``fast_weight`` (R,): each replica's own weight of the
    fastest mixture component (the other components share the rest in their fitted proportions), the
    per-cascade fast-share model of :func:`tree_fast_weights`; None keeps the fitted weights.
    ``node_shift`` (n,): a log-delay shift per node of ``tree.events()`` order (e.g. :func:`self_degree_fit`).
    """
    _, parent, _ = tree.events()
    n = len(parent)
    children = np.bincount(parent[parent >= 0], minlength=n).astype(float)
    depth = node_depths(parent)
    R = draws["g"].shape[0]
    dist = tp.delay.narrowed(math.sqrt(tp.user_sigma**2 + casc_sd**2))
    if fast_weight is None:
        base = dist.log_quantile(draws["u"][:, :n], draws["v"][:, :n])
    else:
        base = _log_quantile_fast(dist, draws["u"][:, :n], draws["v"][:, :n], fast_weight)
    xa = np.where(parent >= 0, np.log1p(children[np.maximum(parent, 0)]), 0.0)
    logd = (
        base
        + tp.b_author * xa[None, :]
        + tp.b_root * math.log1p(children[0])
        + root_shift
        + tp.user_sigma * draws["z"][:, :n]
        + casc_sd * draws["g"][:, None]
    )
    if node_shift is not None:
        logd = logd + node_shift[None, :]
    delay = np.exp(np.minimum(logd, 50.0))
    wait = np.maximum(1, np.ceil(np.maximum(delay, MIN_DELAY_MIN) / dt - 1e-9))  # steps, as ExposureTiming
    step = np.zeros((R, n))
    for d in range(1, int(depth.max()) + 1):  # parents before children: one vector op per depth level
        idx = np.flatnonzero(depth == d)
        step[:, idx] = step[:, parent[idx]] + wait[:, idx]
    # a reshare in step s is timed at (s + RESHARE_AT) * dt and counts from minute ceil(that time) on
    L = int(depth.max()) + 1
    first = np.minimum(np.ceil((step[:, 1:] + RESHARE_AT) * dt - 1e-9), MINUTES).astype(np.int64)
    lvl = np.broadcast_to(depth[1:], first.shape)
    key = (np.arange(R)[:, None] * L + lvl) * (MINUTES + 1) + first
    cnt = np.bincount(key.ravel(), minlength=R * L * (MINUTES + 1)).reshape(R, L, MINUTES + 1)
    per_level = np.cumsum(cnt[:, :, :MINUTES], axis=2)  # per_level[r, level, t]: reached by minute t
    scale = 1 + per_level.sum(1)
    levels = np.arange(L)[None, :, None]
    dep = np.where(per_level > 0, levels, 0).max(1)
    breadth = per_level[:, 1:, :].max(1) if L > 1 else np.zeros((R, MINUTES), np.int64)
    return {"scale": scale.astype(float), "depth": dep.astype(float), "max_breadth": breadth.astype(float)}


def _log_quantile_fast(dist: DelayDistribution, u: np.ndarray, v: np.ndarray, w_fast: np.ndarray) -> np.ndarray:
    """``dist.log_quantile`` with the fastest component's weight set per replica (row) to ``w_fast``."""
    p = dist.params
    mus, sig = np.asarray(p["mus"], float), np.asarray(p["sigmas"], float)
    w0 = np.asarray(p["weights"], float)
    f = int(np.argmin(mus))
    wf = np.clip(w_fast, 0.0, 1.0)[:, None]  # (R, 1)
    others = np.delete(w0, f) / max(float(np.delete(w0, f).sum()), 1e-12)
    # components keep their order (the fitted weight gives exactly ``dist.log_quantile``'s draws)
    w = np.concatenate([np.broadcast_to(1 - wf, (len(wf), len(mus) - 1)) * others[None, :]], axis=1)
    w = np.insert(w, f, wf[:, 0], axis=1)  # (R, k)
    cum = np.cumsum(w, axis=1)
    cum /= cum[:, -1:]
    comp = np.minimum((v[:, :, None] >= cum[:, None, :]).sum(2), len(mus) - 1)
    return mus[comp] + sig[comp] * special.ndtri(np.clip(u, 1e-12, 1 - 1e-12))


def tree_fast_weights(trees: list[CascadeTree], tp: TimingParams, iters: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Per-tree ML weight of the fastest delay component (components fixed at the fold's fit), and edge counts.

    Why: the drawn log-delay shift (``cascade_sigma``) moves every delay of a cascade; the candidate here
    is that cascades differ instead in the *share* of reactions that come fast. Each training tree's
    residual log delays (after the influence covariates and its source account's effect) get the fitted
    marginal mixture with only the fast weight free, estimated by EM (a concave 1-D likelihood).
    """
    e = tree_edges(trees)
    roots = e.roots or []
    shift = np.array([tp.root_effects.get(roots[c], 0.0) for c in e.cascade.tolist()]) if roots else 0.0
    r = np.log(e.delay) - tp.b_author * e.x_author - tp.b_root * e.x_root - shift
    p = tp.delay.params
    mus, sig, w0 = (np.asarray(p[k], float) for k in ("mus", "sigmas", "weights"))
    f = int(np.argmin(mus))
    others = [j for j in range(len(mus)) if j != f]
    dens = lambda j: np.exp(-0.5 * ((r - mus[j]) / sig[j]) ** 2) / sig[j]
    pf = dens(f)
    po = sum(w0[j] * dens(j) for j in others) / w0[others].sum()
    k = len(trees)
    n = np.bincount(e.cascade, minlength=k).astype(float)
    w = np.full(k, w0[f])
    for _ in range(iters):
        wi = w[e.cascade]
        resp = wi * pf / np.maximum(wi * pf + (1 - wi) * po, 1e-300)
        new = np.bincount(e.cascade, resp, minlength=k) / np.maximum(n, 1)
        if np.abs(new - w).max() < 1e-7:
            w = new
            break
        w = new
    return np.clip(w, 1e-3, 1 - 1e-3), n


def logit_normal_fit(w: np.ndarray, n: np.ndarray) -> tuple[float, float, float]:
    """Mean and sd of logit(weight) across trees, the sd with estimation noise ``1 / (n w (1-w))`` removed.

    Returns (mean, deconvolved sd, raw sd).
    """
    lg = special.logit(w)
    raw = float(lg.var(ddof=1))
    noise = float(np.mean(1.0 / (np.maximum(n, 1) * w * (1 - w))))
    return float(lg.mean()), math.sqrt(max(raw - noise, 0.0)), math.sqrt(raw)


def tree_features(tree: CascadeTree) -> np.ndarray:
    """Tree-level covariates known for a held-out tree (the simulator runs on its whole structure).

    1, log users, share of users who reshare the source directly, log1p depth.
    """
    _, parent, _ = tree.events()
    n = len(parent)
    direct = float(np.sum(parent == 0)) / max(n - 1, 1)
    return np.array([1.0, math.log(n), direct, math.log1p(float(node_depths(parent).max()))])


def fast_weight_regression(trees: list[CascadeTree], w: np.ndarray) -> np.ndarray:
    """Least-squares coefficients of logit(per-tree fast weight) on :func:`tree_features`."""
    x = np.stack([tree_features(t) for t in trees])
    coef, *_ = np.linalg.lstsq(x, special.logit(w), rcond=None)
    return np.asarray(coef)


def weighted_geomedian(curves: np.ndarray, iters: int = 100) -> np.ndarray:
    """Curve minimising ``sum_r ||p - C_r|| / max(C_r)``: the Bayes point prediction for NRMSE.

    Weiszfeld iteration from the mean; a replica whose curve is all zero weighs 1 (NRMSE's own rule
    for an all-zero real curve).
    """
    peak = curves.max(1)
    w = np.where(peak > 0, 1.0 / np.maximum(peak, 1e-12), 1.0)
    p = curves.mean(0)
    for _ in range(iters):
        d = np.maximum(np.sqrt(((curves - p) ** 2).sum(1)), 1e-9)
        a = w / d
        new = (a[:, None] * curves).sum(0) / a.sum()
        if np.abs(new - p).max() < 1e-6:
            return new
        p = new
    return p


def own_children(tree: CascadeTree) -> np.ndarray:
    """log1p of each node's own children in the tree (``tree.events()`` order): its followers in a tree population."""
    _, parent, _ = tree.events()
    return np.log1p(np.bincount(parent[parent >= 0], minlength=len(parent)).astype(float))


def self_degree_fit(trees: list[CascadeTree], tp: TimingParams) -> tuple[float, float]:
    """Intercept and slope of the train trees' log-delay residuals on the reacting user's own log1p children.

    Residual = log delay minus the fitted influence terms and the source account's effect, so the slope is
    what the user's own audience adds beyond the parent's and the source's. Least squares (a screen): the
    intercept is applied with the slope, so the shift averages ~0 over the training edges.
    """
    e = tree_edges(trees)
    roots = e.roots or []
    shift = np.array([tp.root_effects.get(roots[c], 0.0) for c in e.cascade.tolist()]) if roots else 0.0
    r = np.log(e.delay) - tp.b_author * e.x_author - tp.b_root * e.x_root - shift
    xs = []
    for tree in trees:  # the edge order of tree_edges: every non-source node with a parent, in events() order
        _, parent, _ = tree.events()
        xs.append(own_children(tree)[1:][parent[1:] >= 0])
    x = np.concatenate(xs)
    a, b = np.linalg.lstsq(np.column_stack([np.ones(len(x)), x]), r - r.mean(), rcond=None)[0]
    return float(a), float(b)


def bias_summary(err: np.ndarray, log: Any = print) -> dict[str, Any]:
    """Mean signed and RMS normalised scale error per minute over trees, and NRMSE with the mean bias removed.

    ``err``: (trees x minutes). If the mean signed error is small against the RMS at every minute, the
    error is cascade-to-cascade spread that no change of the pooled delay law can remove.
    """
    mean, rms = err.mean(0), np.sqrt((err**2).mean(0))
    at = [t for t in (1, 2, 5, 10, 30, 60, 90, 120, MINUTES - 1) if t < err.shape[1]]
    nrmse = float(np.sqrt((err**2).mean(1)).mean())
    debiased = float(np.sqrt(((err - mean) ** 2).mean(1)).mean())
    log("scale error by minute (mean signed / RMS, share of the real maximum): "
        + ", ".join(f"{t}: {mean[t]:+.3f}/{rms[t]:.3f}" for t in at))  # fmt: skip
    log(
        f"scale NRMSE {nrmse:.4f}; with the mean bias curve removed (in sample) {debiased:.4f}; "
        f"largest |mean signed| {np.abs(mean).max():.3f} at minute {int(np.abs(mean).argmax())}"
    )
    return {
        "minutes": at,
        "mean_signed": [round(float(mean[t]), 4) for t in at],
        "rms": [round(float(rms[t]), 4) for t in at],
        "nrmse": round(nrmse, 4),
        "nrmse_mean_bias_removed": round(debiased, 4),
    }
