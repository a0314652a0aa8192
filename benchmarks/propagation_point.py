"""Which point prediction should the calibrated null's CV score? Chosen on trees outside the 134 (issue 12).

Why: the 134-cascade CV scores one predicted curve per held-out cascade, the mean of ``cv.runs`` (5)
replicas. Its error is dominated by each cascade's own speed (between-cascade sd of log delay
``cascade_sigma`` ~ 0.65), which no fitted parameter can know for a held-out cascade. Under the fitted
hierarchical model the honest predictive distribution of a held-out cascade includes that speed, so
the replicas can each draw one (``timing.cascade_sigma``: a per-replica log-delay shift, with the
fitted family narrowed by the same variance so the marginal delay law is unchanged), and the point
prediction can be chosen for the score actually used. NRMSE is ``||pred - real||_2 / max(real)`` per
cascade: its risk minimiser under a predictive distribution is not the mean curve but the
*weighted geometric median* (weights ``1 / max`` of each possible real curve), which the Weiszfeld
iteration finds from the replicas.

This script selects among those options on Twitter15 trees that are *not* among OASIS's 134 (104-850
users, >= 35% of them reached by minute 150, like the 134), with the CV's own procedure: 5 folds, each
fold's timing (delay family by AIC, influence slopes, user sd, source-account effects, cascade sd)
fitted on the other folds' trees only. The calibrated null is emulated in numpy (p = 1 on the tree,
1-minute steps, wake-up ``ceil(delay)``, reshare stamped at ``RESHARE_AT``), vectorised over replicas;
every variant uses the same random numbers (common random numbers), so differences between variants
are not Monte-Carlo noise of separate draws. ``--check-134`` runs the current default on the 134 so
the emulation can be compared with the simulator's per-cascade scores (not used for any choice).

``--fast-share`` scores another model of between-cascade heterogeneity instead: cascades differ in
the share of fast reactions (the weight of the mixture's fastest component), per tree by EM on the
train trees, drawn per replica (logit-normal or a train tree's own weight) or predicted from the
held-out tree's structure. It did not beat the no-draw mean (docs/results.md).

``--self-degree`` scores a per-user covariate instead: the log1p count of the user's *own* children in
the tree (its followers in a tree population, the same kind of structural covariate as the parent's
count ``x_author``), its slope fitted per fold by least squares on the train trees' log-delay residuals
(a two-stage screen, not the joint likelihood). Every run also prints the scale curve's mean signed
and root-mean-square error per minute (normalised by the real maximum, as NRMSE is) for the no-draw
mean, which says whether the error is a bias in time or cascade-to-cascade spread.

    nice -n 19 python benchmarks/propagation_point.py --runs 40 --json runs/point-select.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from socium.experiments.propagation.curves import CURVE_NAMES, node_depths, nrmse_curves
from socium.experiments.propagation.study import RESHARE_AT, subtree_curves
from socium.experiments.propagation.cv import fold_split
from socium.experiments.propagation.fit import fit_timing, tree_edges
from socium.experiments.propagation.realcascades import CascadeTree, load_twitter15, oasis_cascade_ids
from socium.simulator.timing import MIN_DELAY_MIN, DelayDistribution, TimingParams

MINUTES = 150


def outside_trees(min_users: int = 104, max_users: int = 850, min_reach: float = 0.35) -> dict[str, CascadeTree]:
    """Twitter15 trees outside OASIS's 134 that look like them (size range, share reached by minute 150)."""
    oasis = set(oasis_cascade_ids())
    out = {}
    for tid, tree in load_twitter15(None, strict=False).items():
        if tid in oasis or not (min_users <= len(tree.nodes) <= max_users):
            continue
        if np.mean([n.delay <= MINUTES for n in tree.nodes.values()]) >= min_reach:
            out[tid] = tree
    return out


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
    dens = lambda j: np.exp(-0.5 * ((r - mus[j]) / sig[j]) ** 2) / sig[j]  # noqa: E731
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


def author_counts(trees: list[CascadeTree]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in trees:
        out[t.root_user] = out.get(t.root_user, 0) + 1
    return out


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
    log(f"scale NRMSE {nrmse:.4f}; with the mean bias curve removed (in sample) {debiased:.4f}; "
        f"largest |mean signed| {np.abs(mean).max():.3f} at minute {int(np.abs(mean).argmax())}")
    return {
        "minutes": at,
        "mean_signed": [round(float(mean[t]), 4) for t in at],
        "rms": [round(float(rms[t]), 4) for t in at],
        "nrmse": round(nrmse, 4),
        "nrmse_mean_bias_removed": round(debiased, 4),
    }


def run(
    trees: dict[str, CascadeTree],
    seed: int,
    runs: int,
    components: int = 2,
    dt: float = 1.0,
    log: Any = print,
    fast_share: bool = False,
    self_degree: bool = False,
) -> dict[str, Any]:
    """``fast_share``: score the per-cascade fast-share candidates instead of the draw / median ones;
    ``self_degree``: score the own-children covariate instead."""
    ids = list(trees)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(77,)))
    # the fast-share draws have their own stream, so the other variants keep their random numbers
    rng_w = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(78,)))
    nmax = max(len(t.nodes) for t in trees.values())
    nested = sorted({k for k in (5, 10, 20, 40, runs) if k <= runs})  # means of the first k no-draw replicas
    variants = [f"mean{k}_nodraw" for k in nested]
    if fast_share:
        variants += [f"mean{runs}_fastln", f"mean{runs}_fastemp", f"mean{runs}_fastreg"]
    elif self_degree:
        variants += [f"mean{runs}_selfdeg"]
    else:
        variants += [f"mean{runs}_draw", f"mean{runs}_drawcond", f"wgm{runs}_draw", f"wgm{runs}_drawcond"]
        variants += [f"wgm{runs}_nodraw"]
    scores: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    fits = []
    bias: list[np.ndarray] = []  # per held-out tree: (no-draw mean of runs - real scale) / max(real), per minute
    for k, held in enumerate(fold_split(ids, 5, seed)):
        train = [c for c in ids if c not in set(held)]
        t0 = time.perf_counter()
        fit = fit_timing([trees[c] for c in train], bootstrap=0, seed=seed, sources=train, components=components)
        tp = TimingParams.from_dict(fit["timing"])
        est = fit["estimates"]
        cs, rs, rw = est["cascade_sigma"], est.get("root_sigma", 0.0), est.get("root_within_sigma", 0.0)
        counts = author_counts([trees[c] for c in train])
        fits.append({"fold": k, "family": tp.delay.family, "cascade_sigma": cs, "root_sigma": rs, "root_within": rw})
        log(f"fold {k}: fit {time.perf_counter() - t0:.0f} s, {tp.delay.family}, cascade sd {cs:.3f}, root sd {rs:.3f}")
        if self_degree:
            sd_a, sd_b = self_degree_fit([trees[c] for c in train], tp)
            fits[-1].update(self_intercept=sd_a, self_slope=sd_b)
            log(f"  own-children slope {sd_b:+.3f} (intercept {sd_a:+.3f}) per log1p child")
        if fast_share:
            if tp.delay.family != "lognormal_mixture":
                raise SystemExit(f"fold {k}: the fast-share model needs a log-normal mixture, got {tp.delay.family}")
            w_tr, n_tr = tree_fast_weights([trees[c] for c in train], tp)
            lg_mu, lg_sd, lg_raw = logit_normal_fit(w_tr, n_tr)
            coef = fast_weight_regression([trees[c] for c in train], w_tr)
            resid_sd = float(np.std(special.logit(w_tr) - np.stack([tree_features(trees[c]) for c in train]) @ coef))
            log(
                f"  logit(w) ~ 1 + log n + direct share + log1p depth: {np.round(coef, 3).tolist()}, "
                f"residual sd {resid_sd:.2f}"
            )
            pooled = float(tp.delay.params["weights"][int(np.argmin(tp.delay.params["mus"]))])
            fits[-1].update(fast_weight_fit=pooled, tree_w_median=float(np.median(w_tr)),
                            logit_mean=lg_mu, logit_sd=lg_sd, logit_sd_raw=lg_raw)  # fmt: skip
            fits[-1].update(logit_coef=coef.tolist(), logit_resid_sd=resid_sd)
            log(
                f"  fast weight: pooled {pooled:.3f}, per-tree median {np.median(w_tr):.3f}, "
                f"IQR {np.percentile(w_tr, 25):.3f}-{np.percentile(w_tr, 75):.3f}; "
                f"logit {lg_mu:.2f} sd {lg_sd:.2f} (raw {lg_raw:.2f})"
            )
        for cid in held:
            tree = trees[cid]
            real = subtree_curves(tree, list(tree.nodes), MINUTES)
            draws = {
                "u": rng.random((runs, nmax)),
                "v": rng.random((runs, nmax)),
                "z": special.ndtri(np.clip(rng.random((runs, nmax)), 1e-12, 1 - 1e-12)),
                "g": special.ndtri(np.clip(rng.random(runs), 1e-12, 1 - 1e-12)),
            }
            shift = tp.root_effects.get(tree.root_user, 0.0)
            n_a = counts.get(tree.root_user, 0)
            shrink = n_a * rs**2 / (n_a * rs**2 + rw**2) if rs > 0 else 0.0
            cond = math.sqrt(max(cs**2 - shrink * rs**2, 0.0))
            nod = replica_curves(tree, tp, shift, 0.0, draws, dt)
            preds = {f"mean{k}_nodraw": {c: nod[c][:k].mean(0) for c in CURVE_NAMES} for k in nested}
            bias.append((nod["scale"].mean(0) - real["scale"]) / max(float(real["scale"].max()), 1.0))
            if self_degree:
                slf = replica_curves(tree, tp, shift, 0.0, draws, dt, node_shift=sd_a + sd_b * own_children(tree))
                preds[f"mean{runs}_selfdeg"] = {c: slf[c].mean(0) for c in CURVE_NAMES}
                for v in variants:
                    scores[v].append(nrmse_curves(preds[v], real, MINUTES))
                continue
            if fast_share:
                h, pick = rng_w.standard_normal(runs), rng_w.integers(0, len(w_tr), runs)
                fln = replica_curves(tree, tp, shift, 0.0, draws, dt, special.expit(lg_mu + lg_sd * h))
                fem = replica_curves(tree, tp, shift, 0.0, draws, dt, w_tr[pick])
                w_hat = float(special.expit(tree_features(tree) @ coef))
                frg = replica_curves(tree, tp, shift, 0.0, draws, dt, np.full(runs, w_hat))
                preds |= {
                    f"mean{runs}_fastln": {c: fln[c].mean(0) for c in CURVE_NAMES},
                    f"mean{runs}_fastemp": {c: fem[c].mean(0) for c in CURVE_NAMES},
                    f"mean{runs}_fastreg": {c: frg[c].mean(0) for c in CURVE_NAMES},
                }
                for v in variants:
                    scores[v].append(nrmse_curves(preds[v], real, MINUTES))
                continue
            drw = replica_curves(tree, tp, shift, cs, draws, dt)
            dcd = replica_curves(tree, tp, shift, cond, draws, dt)
            preds |= {
                f"mean{runs}_draw": {c: drw[c].mean(0) for c in CURVE_NAMES},
                f"mean{runs}_drawcond": {c: dcd[c].mean(0) for c in CURVE_NAMES},
                f"wgm{runs}_draw": {c: weighted_geomedian(drw[c]) for c in CURVE_NAMES},
                f"wgm{runs}_drawcond": {c: weighted_geomedian(dcd[c]) for c in CURVE_NAMES},
                f"wgm{runs}_nodraw": {c: weighted_geomedian(nod[c]) for c in CURVE_NAMES},
            }
            for v in variants:
                scores[v].append(nrmse_curves(preds[v], real, MINUTES))
    out: dict[str, Any] = {
        "n": len(ids),
        "seed": seed,
        "runs": runs,
        "components": components,
        "dt": dt,
        "fits": fits,
        "variants": {},
    }
    bases = ["mean5_nodraw"] + ([f"mean{runs}_nodraw"] if (fast_share or self_degree) and runs != 5 else [])
    for v in variants:
        arr = np.array([[s[c] for c in CURVE_NAMES] for s in scores[v]])
        out["variants"][v] = {"nrmse": dict(zip(CURVE_NAMES, arr.mean(0).round(4).tolist()))}
        line = f"{v:>20}: " + " / ".join(f"{x:.4f}" for x in arr.mean(0))
        for b in bases:
            diff = arr - np.array([[s[c] for c in CURVE_NAMES] for s in scores[b]])
            boot = np.random.default_rng(0).integers(0, len(arr), (2000, len(arr)))
            lo, hi = np.percentile(diff[boot].mean(1), [2.5, 97.5], axis=0)
            out["variants"][v][f"minus_{b}"] = {
                c: [round(float(diff[:, j].mean()), 4), round(float(lo[j]), 4), round(float(hi[j]), 4)]
                for j, c in enumerate(CURVE_NAMES)
            }
            line += f"   vs {b} " + "  ".join(
                f"{diff[:, j].mean():+.4f} ({lo[j]:+.4f}..{hi[j]:+.4f})" for j in range(3)
            )
        log(line)
    out["bias_scale"] = bias_summary(np.array(bias), log)
    out["per_cascade"] = {v: [round(s["scale"], 5) for s in scores[v]] for v in variants}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40, help="replicas per prediction")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--components", type=int, default=2, help="log-normal mixture components of the delay fit")
    ap.add_argument("--dt", type=float, default=1.0, help="step length in minutes (cv.step_minutes)")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N outside trees (0: all)")
    ap.add_argument("--check-134", action="store_true", help="score the 134 instead (emulation check only)")
    ap.add_argument("--fast-share", action="store_true", help="score the per-cascade fast-share candidates")
    ap.add_argument("--self-degree", action="store_true", help="score the own-children delay covariate")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    t0 = time.perf_counter()
    load0 = os.getloadavg()
    if a.check_134:
        import yaml

        from socium.experiments.propagation.study import PropagationSpec, load_trees

        spec_file = Path(__file__).resolve().parents[1] / "examples" / "results" / "propagation-cv.yaml"
        spec = PropagationSpec.model_validate(yaml.safe_load(spec_file.read_text(encoding="utf-8")))
        trees = load_trees(spec)  # the CV's own order, so fold_split gives the CV's folds
    else:
        trees = outside_trees()
        if a.limit:
            trees = dict(list(trees.items())[: a.limit])
    print(f"{len(trees)} trees ({'the 134' if a.check_134 else 'outside the 134'}), seed {a.seed}, {a.runs} replicas")
    res = run(trees, a.seed, a.runs, a.components, a.dt, fast_share=a.fast_share, self_degree=a.self_degree)
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    res["loadavg_start_end"] = [load0, os.getloadavg()]
    print(f"wall {res['wall_s']} s, load average start {load0[0]:.2f} end {os.getloadavg()[0]:.2f}")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(res, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
