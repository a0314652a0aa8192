"""Fit the exposure-timing layer's parameters to real retweet trees (``socium fit propagation``).

Estimator (documented because every later propagation number rests on it):

* Unit: one tree edge ``parent -> child``; the response delay is ``child delay - parent delay`` in
  minutes (children clamped to their parent by :mod:`realcascades`), floored at
  :data:`~socium.simulator.timing.MIN_DELAY_MIN`.
* Covariates (heterogeneous influence): ``x_author = log1p(children of the parent)`` and
  ``x_root = log1p(children of the source)``. In a tree population (every user follows the user it
  retweeted from) these are exactly the follower counts the simulator sees, so a fitted shift means
  the same thing in the data and in a run.
* Each family's parameters and the two influence slopes are fitted jointly by maximum likelihood
  (the log-normal has the closed form: least squares on log delays); the family with the lowest AIC
  is kept, and every family's log-likelihood and AIC are reported beside it.
* Per-user activity heterogeneity: users appear in several cascades, so the between-user variance of
  the log-delay residuals is the one-way random-effects ANOVA (method of moments) estimate over
  users with at least two edges; it is drawn as a per-agent factor and taken out of the family's
  own spread (:meth:`DelayDistribution.narrowed`).
* Between-cascade spread: the same ANOVA over cascades gives the sd of a whole cascade's log-delay
  shift left after the covariates. It is reported (``estimates.cascade_sigma``) because it is where a
  content-free model's held-out error comes from (a cascade's own speed cannot be read off the follow
  graph), and it is not drawn by the simulator (see :func:`cascade_sigma`).
* Source-author audience speed: part of that cascade spread belongs to the account that posted the
  source (the same news account's followers answer at a similar speed). Cascade means of the
  residuals are grouped by source author; the between-author sd by the same ANOVA, and each training
  author's shift is its empirical-Bayes prediction (BLUP, shrunk toward 0 by how many cascades it
  has), written as ``timing.root_effects`` (user id -> log shift); unseen authors get 0
  (:func:`root_effects`). Chosen on Twitter15 trees *outside* OASIS's 134 (docs/results.md).
* Confidence intervals: percentile bootstrap over cascades (whole trees resampled, so the
  dependence between edges of one tree is kept), refitting the chosen family each time.

What is *not* identifiable from retweet trees: the chance that an exposure leads to a reshare
(trees contain only users who did reshare). In tree populations every member eventually reshares,
so the calibrated null uses ``p_repost = 1`` and the cascade's shape within a window is all timing;
with other populations that probability is a free parameter (``socium sensitivity`` varies it).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special, stats

from socium.errors import ConfigError
from socium.experiments.propagation.data.realcascades import CascadeTree
from socium.simulator.timing import FAMILIES, MIN_DELAY_MIN, DelayDistribution, TimingParams
from socium.trace.rundir import write_out_file


@dataclass(frozen=True)
class EdgeData:
    """Response delays of every tree edge with covariates, the cascade and the user of each."""

    delay: NDArray[np.float64]
    x_author: NDArray[np.float64]
    x_root: NDArray[np.float64]
    cascade: NDArray[np.int64]
    user: list[str]
    roots: list[str] | None = None
    """Source author's user id of each cascade index (None: unknown, no root effects)."""

    def take_cascades(self, picked: NDArray[np.int64]) -> EdgeData:
        """Edges of the cascades listed in ``picked`` (with repeats, for the bootstrap)."""
        by = [np.flatnonzero(self.cascade == c) for c in range(int(self.cascade.max()) + 1)]
        idx = np.concatenate([by[c] for c in picked]) if len(picked) else np.empty(0, np.int64)
        # A cascade drawn twice must not make its users look like repeat users: copies get own ids.
        seen: dict[int, int] = {}
        dup = []
        for c in picked.tolist():
            dup.append(seen.get(c, 0))
            seen[c] = dup[-1] + 1
        copy = np.concatenate([np.full(len(by[c]), j) for j, c in enumerate(picked)]) if len(picked) else idx
        nth = np.concatenate([np.full(len(by[c]), d) for d, c in zip(dup, picked)]) if len(picked) else idx
        return EdgeData(
            self.delay[idx],
            self.x_author[idx],
            self.x_root[idx],
            copy.astype(np.int64),
            [f"{self.user[i]}#{d}" for i, d in zip(idx.tolist(), nth.tolist())],
            None if self.roots is None else [f"{self.roots[c]}#{d}" for c, d in zip(picked.tolist(), dup)],
        )


def tree_edges(trees: Sequence[CascadeTree]) -> EdgeData:
    delay, xa, xr, casc, users = [], [], [], [], []
    for c, tree in enumerate(trees):
        ids, parent, t = tree.events()
        children = np.bincount(parent[parent >= 0], minlength=len(ids))
        for i in range(1, len(ids)):
            p = int(parent[i])
            if p < 0:
                continue
            delay.append(max(t[i] - t[p], MIN_DELAY_MIN))
            xa.append(math.log1p(children[p]))
            xr.append(math.log1p(children[0]))
            casc.append(c)
            users.append(ids[i])
    if not delay:
        raise ConfigError("fit propagation: the training trees have no edges (every tree is a lone source)")
    roots = [tree.root_user for tree in trees]
    return EdgeData(np.array(delay), np.array(xa), np.array(xr), np.array(casc, np.int64), users, roots)


# ---- maximum likelihood per family -------------------------------------------------------------
def _unpack(family: str, th: NDArray[np.float64], k: int) -> DelayDistribution:
    if family == "weibull":
        return DelayDistribution(family, {"shape": float(np.exp(th[0])), "scale": float(np.exp(th[1]))})
    if family == "lomax":
        return DelayDistribution(family, {"alpha": float(np.exp(th[0])), "scale": float(np.exp(th[1]))})
    if family == "lognormal":
        return DelayDistribution(family, {"mu": float(th[0]), "sigma": float(np.exp(th[1]))})
    logits = np.concatenate(([0.0], th[: k - 1]))
    w = special.softmax(logits)
    return DelayDistribution(
        family,
        {
            "weights": w.tolist(),
            "mus": th[k - 1 : 2 * k - 1].tolist(),
            "sigmas": np.exp(th[2 * k - 1 : 3 * k - 1]).tolist(),
        },
    )


def _start(family: str, logd: NDArray[np.float64], k: int) -> list[float]:
    m, s = float(logd.mean()), float(logd.std()) or 1.0
    if family in ("weibull", "lomax"):
        return [0.0, m]
    if family == "lognormal":
        return [m, math.log(s)]
    qs = np.quantile(logd, (np.arange(k) + 0.5) / k)
    return [0.0] * (k - 1) + qs.tolist() + [math.log(s / k)] * k


@dataclass(frozen=True)
class FamilyFit:
    family: str
    params: TimingParams
    loglik: float
    n_params: int
    n: int

    @property
    def aic(self) -> float:
        return 2 * self.n_params - 2 * self.loglik


def fit_family(
    family: str, e: EdgeData, *, covariates: bool = True, components: int = 2, start: Sequence[float] | None = None
) -> FamilyFit:
    """Joint MLE of a family and the influence slopes: ``delay = exp(b.x) * D`` with ``D`` the family."""
    if family not in FAMILIES:
        raise ConfigError(f"fit propagation: family {family!r} is not one of {', '.join(FAMILIES)}")
    d, X = e.delay, np.c_[e.x_author, e.x_root]
    logd = np.log(d)
    k = components if family == "lognormal_mixture" else 1
    nb = 2 if covariates else 0
    if family == "lognormal":  # closed form: least squares on log delays is the MLE
        A = np.c_[np.ones(len(d)), X] if covariates else np.ones((len(d), 1))
        coef, *_ = np.linalg.lstsq(A, logd, rcond=None)
        resid = logd - A @ coef
        sigma = float(resid.std())
        dist = DelayDistribution("lognormal", {"mu": float(coef[0]), "sigma": sigma})
        b = coef[1:3] if covariates else np.zeros(2)
        ll = float(np.sum(stats.norm.logpdf(resid, 0, sigma) - logd))
        return FamilyFit(family, TimingParams(dist, float(b[0]), float(b[1])), ll, 2 + nb, len(d))

    if family == "lognormal_mixture":
        return _fit_mixture_em(e, k, covariates, start)

    def nll(th: NDArray[np.float64]) -> float:
        b = th[-nb:] if nb else np.zeros(2)
        shift = X @ b
        try:
            dist = _unpack(family, th[: len(th) - nb], k)
        except ConfigError:
            return 1e300
        val = dist.logpdf(d * np.exp(-shift)) - shift
        tot = float(np.sum(val))
        return -tot if math.isfinite(tot) else 1e300

    th0 = np.array(list(start) if start is not None else _start(family, logd, k) + [0.0] * nb, float)
    res = optimize.minimize(nll, th0, method="L-BFGS-B", options={"maxiter": 500})
    b = res.x[-nb:] if nb else np.zeros(2)
    tp = TimingParams(_unpack(family, res.x[: len(res.x) - nb], k), float(b[0]), float(b[1]))
    return FamilyFit(family, tp, -float(res.fun), len(res.x), len(d))


def _fit_mixture_em(
    e: EdgeData, k: int, covariates: bool, start: Sequence[float] | None, iters: int = 300, tol: float = 1e-7
) -> FamilyFit:
    """EM for a mixture of Gaussian regressions on log delay with shared influence slopes.

    On ``y = log delay`` the model is ``y = mu_j + b.x + sigma_j * eps`` with prob ``w_j``; the M-step
    is a weighted least squares for (intercepts, slopes) and closed forms for weights and sigmas.
    Components are returned sorted by ``mu`` so bootstrap summaries do not suffer label switching.
    """
    y = np.log(e.delay)
    X = np.c_[e.x_author, e.x_root] if covariates else np.zeros((len(y), 0))
    n, nb = len(y), X.shape[1]
    if start is not None:
        th = np.asarray(start, float)
        w = special.softmax(np.concatenate(([0.0], th[: k - 1])))
        mu, sig = th[k - 1 : 2 * k - 1].copy(), np.exp(th[2 * k - 1 : 3 * k - 1])
        b = th[3 * k - 1 : 3 * k - 1 + nb] if nb else np.zeros(0)
    else:
        w = np.full(k, 1.0 / k)
        mu = np.quantile(y, (np.arange(k) + 0.5) / k)
        sig = np.full(k, max(float(y.std()) / k, 0.1))
        b = np.zeros(nb)
    prev = -np.inf
    ll = prev
    for _ in range(iters):
        r = y - X @ b if nb else y
        logp = np.log(np.maximum(w, 1e-300)) + stats.norm.logpdf(r[:, None], mu[None, :], sig[None, :])
        tot = special.logsumexp(logp, axis=1)
        ll = float(tot.sum())
        resp = np.exp(logp - tot[:, None])
        nk = resp.sum(0) + 1e-12
        w = nk / n
        if nb:  # weighted least squares: columns = component indicators (weighted by 1/sigma^2) + X
            wt = resp / sig[None, :] ** 2
            A = np.zeros((k + nb, k + nb))
            rhs = np.zeros(k + nb)
            sw = wt.sum(1)
            A[:k, :k] = np.diag(wt.sum(0))
            A[:k, k:] = wt.T @ X
            A[k:, :k] = A[:k, k:].T
            A[k:, k:] = (X * sw[:, None]).T @ X
            rhs[:k] = wt.T @ y
            rhs[k:] = X.T @ (y * sw)
            # lstsq, not solve: with one tree (or sources of equal fan-out) x_root is constant and A is
            # singular; the closed-form lognormal fit already takes lstsq's minimum-norm answer there.
            sol = np.linalg.lstsq(A, rhs, rcond=None)[0]
            mu, b = sol[:k], sol[k:]
            r = y - X @ b
        else:
            mu = (resp * r[:, None]).sum(0) / nk
        sig = np.sqrt(np.maximum((resp * (r[:, None] - mu[None, :]) ** 2).sum(0) / nk, 1e-4))
        if ll - prev < tol * abs(ll):
            break
        prev = ll
    order = np.argsort(mu)
    dist = DelayDistribution(
        "lognormal_mixture",
        {"weights": (w[order] / w.sum()).tolist(), "mus": mu[order].tolist(), "sigmas": sig[order].tolist()},
    )
    bb = np.r_[b, np.zeros(2 - nb)] if nb < 2 else b
    return FamilyFit(
        "lognormal_mixture", TimingParams(dist, float(bb[0]), float(bb[1])), ll - float(y.sum()), 3 * k - 1 + nb, n
    )


def _theta(fit: FamilyFit, components: int) -> list[float]:
    """Unconstrained parameters of a fit, to warm-start a bootstrap refit."""
    p = fit.params.delay.params
    tail = [fit.params.b_author, fit.params.b_root]
    if fit.family in ("weibull", "lomax"):
        first = "shape" if fit.family == "weibull" else "alpha"
        return [math.log(p[first]), math.log(p["scale"])] + tail
    w = np.asarray(p["weights"])
    return (
        (np.log(np.maximum(w[1:], 1e-9) / max(w[0], 1e-9))).tolist()
        + list(p["mus"])
        + np.log(p["sigmas"]).tolist()
        + tail
    )


def _random_effect_sd(r: NDArray[np.float64], groups: NDArray[np.int64], min_size: int) -> tuple[float, int]:
    """Between-group sd of ``r`` by one-way random-effects ANOVA (method of moments).

    Only groups with at least ``min_size`` members enter; returns the sd and how many groups it
    rests on (0 groups / sd 0 when fewer than 2 groups or 4 values qualify). A negative variance
    estimate (no group effect) gives 0.
    """
    _, inv, cnt = np.unique(groups, return_inverse=True, return_counts=True)
    keep = cnt[inv] >= min_size
    if keep.sum() < 4:
        return 0.0, 0
    rr = r[keep]
    _, g, n_g = np.unique(inv[keep], return_inverse=True, return_counts=True)
    k, n = len(n_g), len(rr)
    if k < 2 or n <= k:
        return 0.0, 0
    means = np.bincount(g, rr) / n_g
    ssw = float(np.sum((rr - means[g]) ** 2))
    ssb = float(np.sum(n_g * (means - rr.mean()) ** 2))
    msw, msb = ssw / (n - k), ssb / (k - 1)
    n0 = (n - float(np.sum(n_g**2)) / n) / (k - 1)
    return math.sqrt(max((msb - msw) / n0, 0.0)), k


def _residuals(e: EdgeData, fit: FamilyFit) -> NDArray[np.float64]:
    """Log delay minus the fitted influence shift: what the base family and random effects must explain."""
    return np.asarray(np.log(e.delay) - fit.params.b_author * e.x_author - fit.params.b_root * e.x_root)


def user_sigma(e: EdgeData, fit: FamilyFit) -> tuple[float, int]:
    """Between-user sd of log-delay residuals (one-way random effects, method of moments).

    Residual = log delay minus the influence shift; users with >= 2 edges enter. Returns the sd and
    how many users it rests on. Negative variance estimates (no user effect) give 0.
    """
    _, users = np.unique(np.array(e.user), return_inverse=True)
    return _random_effect_sd(_residuals(e, fit), users.astype(np.int64), 2)


def cascade_sigma(e: EdgeData, fit: FamilyFit) -> tuple[float, int]:
    """Between-cascade sd of log-delay residuals (one-way random effects over cascades).

    Why it is estimated: it measures how much whole cascades run faster or slower than the pooled
    delay law *after* the influence covariates, i.e. the part of a held-out cascade's speed that a
    model fitted on other cascades cannot know from the follow graph. It is reported (with its
    bootstrap CI) but not drawn by the simulator: a per-replica draw (family narrowed by it, so the
    per-edge law is unchanged) was measured on 1,046 Twitter15 trees outside the scored 134 and made
    the held-out point prediction slightly worse, as its mean curve and as the NRMSE-optimal
    geometric median alike (``benchmarks/propagation_point.py``, docs/results.md).
    """
    return _random_effect_sd(_residuals(e, fit), e.cascade, 2)


@dataclass(frozen=True)
class RootEffects:
    """Source-author effects on log delay: sds and empirical-Bayes predictions per author."""

    effects: dict[str, float]
    sigma: float  # between-author sd of a cascade's mean log-delay residual
    within: float  # sd between cascades of one author (includes each mean's sampling noise)
    n_authors: int


def root_effects(e: EdgeData, fit: FamilyFit) -> RootEffects:
    """Audience speed of each source author, as a shrunken (empirical-Bayes) log-delay shift.

    Why: the held-out error of a content-free model is mostly whole cascades running faster or
    slower than the pooled law (``cascade_sigma``), and part of that is the source account: the same
    news account's audience answers its posts at a similar speed. Model: a cascade's mean
    log-delay residual is ``m_c = delta + g_author + e_c`` with ``g ~ N(0, sigma^2)``,
    ``e ~ N(0, within^2)``; ``sigma`` and ``within`` by one-way random-effects ANOVA over cascades
    grouped by author (method of moments, every author enters), ``delta`` the mean of ``m_c``. The
    prediction for an author with ``n_a`` training cascades is the BLUP
    ``n_a sigma^2 / (n_a sigma^2 + within^2) * (mean_a m_c - delta)``: an author seen once moves
    little, one seen often moves most of the way, an unseen author gets 0 (the pooled law).
    """
    if e.roots is None:
        return RootEffects({}, 0.0, 0.0, 0)
    r = _residuals(e, fit)
    n_c = np.bincount(e.cascade)
    has = n_c > 0
    m = np.bincount(e.cascade, r)[has] / n_c[has]
    authors = [e.roots[c] for c in np.flatnonzero(has).tolist()]
    names, grp = np.unique(np.array(authors), return_inverse=True)
    sigma, k = _random_effect_sd(m, grp.astype(np.int64), 1)
    if k < 2:
        return RootEffects({}, 0.0, 0.0, 0)
    delta = float(m.mean())
    sums = np.bincount(grp, m)
    cnt = np.bincount(grp)
    within = math.sqrt(float(np.sum((m - (sums / cnt)[grp]) ** 2)) / max(len(m) - len(cnt), 1))
    effects = {}
    for j, name in enumerate(names.tolist()):
        shrink = cnt[j] * sigma**2 / (cnt[j] * sigma**2 + within**2) if sigma > 0 else 0.0
        effects[name] = float(shrink * (sums[j] / cnt[j] - delta))
    return RootEffects(effects, sigma, within, len(names))


def _summary(tp: TimingParams, x_author: float, x_root: float, casc_sigma: float) -> dict[str, float]:
    """Scalar summaries worth a CI: slopes, user sd, and delay quantiles in minutes for a typical edge.

    The quantiles are taken at the median covariates: at ``x = 0`` (an author nobody follows) the
    base distribution is an extrapolation whose intercept trades off against the slopes.
    """
    u = np.array([0.25, 0.5, 0.75, 0.9])
    grid = np.exp(np.linspace(math.log(MIN_DELAY_MIN) - 5, math.log(1e7), 4000))
    shift = math.exp(tp.b_author * x_author + tp.b_root * x_root)
    cdf = tp.delay.cdf(grid / shift)
    q = np.interp(u, cdf, grid)
    out = {"b_author": tp.b_author, "b_root": tp.b_root, "user_sigma": tp.user_sigma, "cascade_sigma": casc_sigma}
    out.update({f"delay_q{int(x * 100)}_min": float(v) for x, v in zip(u, q)})
    for name, val in tp.delay.params.items():
        if isinstance(val, list):
            out.update({f"{name}[{i}]": float(v) for i, v in enumerate(val)})
        else:
            out[name] = float(val)
    return out


def fit_timing(
    trees: Sequence[CascadeTree],
    *,
    families: Sequence[str] = FAMILIES,
    bootstrap: int = 100,
    seed: int = 0,
    components: int = 2,
    sources: Sequence[str] = (),
    with_root_effects: bool = True,
) -> dict[str, Any]:
    """Fit every family, keep the lowest AIC, add the user factor and bootstrap CIs; a JSON-able dict.

    ``with_root_effects`` also fits the source authors' audience speeds (:func:`root_effects`).

    The returned dict's ``timing`` entry is what ``timing.params`` / ``timing.params_file`` accept.
    """
    t0 = time.perf_counter()
    e = tree_edges(trees)
    fits = [fit_family(f, e, components=components) for f in families]
    best = min(fits, key=lambda f: f.aic)
    if best.family in ("lognormal", "lognormal_mixture"):
        us, n_users = user_sigma(e, best)
    else:
        us, n_users = 0.0, 0
    tp = TimingParams(best.params.delay, best.params.b_author, best.params.b_root, us)
    xa, xr = float(np.median(e.x_author)), float(np.median(e.x_root))
    point = _summary(tp, xa, xr, cascade_sigma(e, best)[0])
    roots = root_effects(e, best) if with_root_effects else RootEffects({}, 0.0, 0.0, 0)
    if with_root_effects:
        point.update(root_sigma=roots.sigma, root_within_sigma=roots.within)
    boot: list[dict[str, float]] = []
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(21,)))
    for _ in range(bootstrap):
        picked = rng.integers(0, len(trees), len(trees))
        eb = e.take_cascades(picked)
        start = None if best.family == "lognormal" else _theta(best, components)
        fb = fit_family(best.family, eb, components=components, start=start)
        ub = user_sigma(eb, fb)[0] if best.family in ("lognormal", "lognormal_mixture") else 0.0
        tb = TimingParams(fb.params.delay, fb.params.b_author, fb.params.b_root, ub)
        boot.append(_summary(tb, xa, xr, cascade_sigma(eb, fb)[0]))
        if with_root_effects:
            rb = root_effects(eb, fb)
            boot[-1].update(root_sigma=rb.sigma, root_within_sigma=rb.within)
    ci = {}
    for key in point:
        vals = np.array([b[key] for b in boot if key in b])
        if len(vals) >= 2:
            lo, hi = np.percentile(vals, [2.5, 97.5])
            ci[key] = [float(lo), float(hi)]
    meta = {
        "estimator": "joint MLE per family, lowest AIC kept; user and cascade sd by one-way random-effects ANOVA "
        "(cascade sd reported, not drawn); source-author effects: ANOVA over cascade means by author, "
        "BLUP per author; 95% percentile bootstrap over cascades",
        "n_root_effects": roots.n_authors,
        "n_cascades": len(trees),
        "n_edges": len(e.delay),
        "n_users_repeated": n_users,
        "quantiles_at": {"x_author": xa, "x_root": xr},
        "bootstrap": bootstrap,
        "seed": seed,
        "sources": list(sources),
        "wall_s": round(time.perf_counter() - t0, 2),
    }
    tp = TimingParams(tp.delay, tp.b_author, tp.b_root, tp.user_sigma, meta, roots.effects)
    return {
        "timing": tp.to_dict(),
        "estimates": point,
        "ci95": ci,
        "families": [
            {"family": f.family, "loglik": f.loglik, "aic": f.aic, "n_params": f.n_params}
            for f in sorted(fits, key=lambda f: f.aic)
        ],
    }


def write_fit(result: dict[str, Any], out: str | Path) -> Path:
    return write_out_file(Path(out), json.dumps(result, indent=2))
