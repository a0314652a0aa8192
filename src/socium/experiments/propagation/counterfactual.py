"""Counterfactual interventions on real cascades: "had the platform acted at minute a ...".

Why: the question platforms and policy people ask of a propagation model is not "how big will this
cascade get" but "how much smaller would it have been had we removed it, down-ranked it, labelled it or
prebunked its audience at minute 10". Here the conditioned forecast of
:mod:`~socium.experiments.propagation.forecast.forecast` (the first ``observe_minutes`` of a held-out real cascade
observed, its speed inferred from them, the rest simulated with replicas) is the no-intervention arm,
and every strategy is applied to the *same* replicas (common random numbers), so a difference between
arms is the intervention, not Monte-Carlo noise.

The mechanism (the calibrated null of a tree population: each user follows only the user it reshared
from in the real tree, and without intervention every member eventually reshares):

* nothing that happened by the action minute ``a`` changes (``a >= observe_minutes``);
* every reshare the replica would have made after ``a`` goes ahead with probability
  ``keep = downrank x (1 - label_effect if labelled) x (1 - prebunk_effect if the user was inoculated)``,
  and ``keep = 0`` under removal (the post and its reposts leave every feed);
* a user who does not reshare passes the post to nobody: its whole subtree is lost (in this population
  its descendants follow only it). This is the structural part of the answer: the same per-user effect
  removes more reach from a cascade whose big hubs are still to come.

The effect sizes are assumptions of the study, recorded in its results, with their sources:

* ``label_effect`` 0.247: fact-checker warning labels cut sharing of labelled false headlines by 24.7%
  on average (Martel & Rand 2024, Nature Human Behaviour, meta-analysis of 21 experiments, N = 14,133);
* ``prebunk_effect`` 0.19: psychological inoculation lowers sharing of misinformation by d = 0.24
  (Lu et al. 2023, JMIR, meta-analysis of 41 samples); read as a shift on a probit scale at a base
  sharing rate of 0.5 (where the relative change is smallest for rates up to 0.5) it is
  ``1 - Phi(-0.24) / 0.5 = 0.19``;
* ``downrank`` f: a down-ranked post keeps a share f of its would-be reshares. socium's
  ``ModeratedRecommender`` ranks by ``f / (1 + rank)``; read as the chance to be acted on, its weight is
  multiplied by f. (In the simulator a rule-based agent that follows one account still sees a down-ranked
  post: with nothing to compete with, down-ranking changes nothing there, so this reading is an
  assumption about real feeds, not something the tree population can measure. In socium's quickstart
  world, ``benchmarks/downrank_retention.py`` measures f = 0.5 keeping 0.39-0.69 of reshares, while strong
  down-ranking keeps more than f in sparse chronological feeds and less in full ones: docs/moderation.md.)

Effects are measured on reach (users who reshared, the source included) at minute ``minutes - 1`` (the
forecast's window end) and eventually (every reshare in the tree, whenever it comes), with two-level
bootstrap intervals: cascades resampled, then replicas within each (:func:`nested_bootstrap`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from socium.core.intervals import MIN_N, N_BOOT, Interval, mean_interval, nonnegative_interval
from socium.core.rng import component_rng
from socium.experiments.propagation.forecast.forecast import CascadeArrays, curves_from_times, replica_times
from socium.experiments.propagation.spec import CounterfactualSpec, StrategySpec
from socium.simulator.timing import TimingParams
from socium.trace.queries.curves import node_depths

NEVER = 1e12
"""Time (minutes) given to a reshare that does not happen: past every window."""
CF_BOOT_PURPOSE = 43
"""socium.core.rng stream of the two-level bootstrap (apart from rng.py's 1..7, intervals' 29, forecast's 41)."""


def keep_probability(
    s: StrategySpec, label_effect: float, prebunk_effect: float, inoculated: NDArray[np.bool_]
) -> NDArray[np.float64]:
    """Per-node chance that a reshare due after the action still happens under arm ``s``."""
    if s.remove:
        return np.zeros(inoculated.shape)
    keep = np.full(inoculated.shape, s.downrank * ((1.0 - label_effect) if s.label else 1.0))
    return np.where(inoculated, keep * (1.0 - prebunk_effect), keep)


def apply_arm(
    parent: NDArray[np.int64], times: NDArray[np.float64], act: float, keep: NDArray[np.float64], u: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Replica times under an arm: a reshare after ``act`` survives with chance ``keep`` (uniforms ``u``) and
    only if its parent's did; a lost reshare's time becomes :data:`NEVER`, and so do its descendants'."""
    out = times.copy()
    depth = node_depths(parent)
    alive = np.ones(times.shape, bool)
    for d in range(1, int(depth.max(initial=0)) + 1):
        idx = np.flatnonzero(depth == d)
        late = times[:, idx] > act
        ok = ~late | (u[:, idx] < keep[:, idx])
        alive[:, idx] = alive[:, parent[idx]] & ok
    out[~alive] = NEVER
    return out


def counterfactual_cascade(
    c: CascadeArrays,
    tp: TimingParams,
    casc_sd: float,
    m: int,
    runs: int,
    minutes: int,
    spec: CounterfactualSpec,
    rng: np.random.Generator,
    real_scale: NDArray[np.float64] | None = None,
    quantiles: tuple[float, ...] = (),
) -> dict[str, Any]:
    """Per-replica reach of the conditioned forecast (arm ``none``) and of every strategy at every action minute.

    Returns JSON-ready lists: ``reach`` (at minute ``minutes - 1``) and ``eventual`` per replica and arm
    (arm keys ``name@minute``), the reach the no-intervention replicas had at each action minute (for the
    share of the still-to-come reach an arm averts), the mean scale curve per arm (folded into the pooled
    curves by :func:`counterfactual_summary`), the observed count, and ``oracle``: each arm applied with the
    same draws to the real cascade's actual times (its reach at minute ``minutes - 1`` per replica).
    With ``quantiles`` each arm also carries ``quantiles``: those quantiles of its replicas' scale per minute
    (``socium forecast`` writes them to curves.parquet, so each arm of each cascade can be drawn as a fan).
    """
    times = replica_times(c, tp, casc_sd, m, runs, rng, True)
    n = len(c.parent)
    u_keep = rng.random((runs, n))  # common to every arm: arms differ only in their keep probabilities
    u_inoc = rng.random((runs, n))
    real = np.broadcast_to(c.delay, times.shape)
    arms: dict[str, NDArray[np.float64]] = {"none": times}
    oracle: dict[str, NDArray[np.float64]] = {}
    at_act: dict[str, list[float]] = {}
    for a in spec.minutes_for(m):
        at_act[str(a)] = (times <= a).sum(1).astype(float).tolist()
        for name, s in spec.strategies.items():
            keep = keep_probability(s, spec.label_effect, spec.prebunk_effect, u_inoc < s.prebunk)
            arms[f"{name}@{a}"] = apply_arm(c.parent, times, float(a), keep, u_keep)
            oracle[f"{name}@{a}"] = apply_arm(c.parent, real, float(a), keep, u_keep)
    out: dict[str, Any] = {
        "observed": int((c.delay <= m).sum()),
        "reach_at_act": at_act,
        "arms": {},
        # the same mechanism applied to the real cascade's own future: what the effect would have been had the
        # forecast been perfect (per replica's draws); the gap to the arm's estimate is the forecast's error
        "oracle": {
            k: curves_from_times(c.parent, t, minutes)["scale"][:, -1].astype(int).tolist() for k, t in oracle.items()
        },
    }
    if real_scale is not None:
        out["real_curve"] = np.asarray(real_scale, float)[:minutes].tolist()
    for key, t in arms.items():
        scale = curves_from_times(c.parent, t, minutes)["scale"]
        out["arms"][key] = {
            "reach": scale[:, -1].astype(int).tolist(),
            "eventual": (t < NEVER).sum(1).astype(int).tolist(),
            "curve": scale.mean(0).round(2).tolist(),
        }
        if quantiles:
            out["arms"][key]["quantiles"] = np.quantile(scale, quantiles, axis=0)
    return out


# ---- summary over cascades ----------------------------------------------------------------------------
def nested_bootstrap(
    data: NDArray[np.float64],
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Percentile interval of ``statistic`` under a two-level bootstrap: units (cascades) resampled with
    replacement, then replicas within each resampled unit.

    ``data``: units x replicas x quantities; ``statistic`` maps per-unit replica means (B x units x
    quantities) to B values. Why two levels: a cascade's forecast is itself a mean over a few dozen
    replicas, so an interval over cascades alone would take that Monte-Carlo noise for signal-free.
    No interval below ``MIN_N`` units (the interval policy of :mod:`socium.core.intervals`).
    """
    C, R, _ = data.shape
    est = float(statistic(data.mean(1)[None])[0])
    if C < MIN_N or n_boot <= 0:
        return Interval(est, None, None, C, "none", "n too small for an interval" if C < MIN_N else "no bootstrap")
    rng = component_rng(seed, CF_BOOT_PURPOSE)
    vals = []
    for start in range(0, n_boot, 200):  # chunks keep the B x C x R index array small
        b = min(200, n_boot - start)
        ci = rng.integers(0, C, (b, C))
        ri = rng.integers(0, R, (b, C, R))
        vals.append(statistic(data[ci[:, :, None], ri].mean(2)))
    v = np.concatenate(vals)
    lo, hi = np.quantile(v, [0.5 - level / 2, 0.5 + level / 2])
    return Interval(est, float(lo), float(hi), C, "bootstrap", "cascades, then replicas within each", level)


def _ratio(num: int, den: int) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
    def f(x: NDArray[np.float64]) -> NDArray[np.float64]:
        d = x[..., den].mean(-1)
        return np.where(d > 0, x[..., num].mean(-1) / np.where(d > 0, d, 1.0), np.nan)

    return f


MEASURES = ("reach", "change", "relative", "averted_share", "eventual_relative", "oracle_relative")


def _arm_effects(
    rows: list[dict[str, Any]], key: str, act: str, n_boot: int, seed: int, measures: tuple[str, ...] = MEASURES
) -> dict[str, Any]:
    """An arm against the no-intervention forecast on the same replicas: reach at the window's end, its
    change and relative change, the share of the still-to-come reach (after the action) averted, the
    relative change of the eventual reach; and the same mechanism on the real cascade's own future
    (``oracle_relative``) with the per-cascade error of the estimated relative change (``effect_error``:
    bias, mean absolute error, correlation over cascades)."""
    cf = [r["counterfactual"] for r in rows]
    ctrl = np.array([c["arms"]["none"]["reach"] for c in cf])
    arm = np.array([c["arms"][key]["reach"] for c in cf])
    ev0 = np.array([c["arms"]["none"]["eventual"] for c in cf])
    ev1 = np.array([c["arms"][key]["eventual"] for c in cf])
    before = np.array([c["reach_at_act"][act] for c in cf])
    # quantities per replica: 0 arm reach, 1 control reach, 2 averted, 3 still to come, 4/5 eventual arm/control
    data = np.stack([arm, ctrl, ctrl - arm, ctrl - before, ev1, ev0], axis=2)

    stats: dict[str, Callable[[NDArray[np.float64]], NDArray[np.float64]]] = {  # oracle_relative: below
        "reach": lambda x: x[..., 0].mean(-1),
        "change": lambda x: (x[..., 0] - x[..., 1]).mean(-1),
        "relative": lambda x: _ratio(0, 1)(x) - 1.0,
        "averted_share": _ratio(2, 3),
        "eventual_relative": lambda x: _ratio(4, 5)(x) - 1.0,
    }
    out = {k: nested_bootstrap(data, stats[k], n_boot=n_boot, seed=seed).as_dict() for k in measures if k in stats}
    if "oracle_relative" in measures and all("oracle" in c for c in cf):
        orc = np.array([c["oracle"][key] for c in cf], float)
        real = np.array([r["real_final"]["scale"] for r in rows], float)
        both = np.stack([orc, np.broadcast_to(real[:, None], orc.shape)], axis=2)
        out["oracle_relative"] = nested_bootstrap(
            both, lambda x: _ratio(0, 1)(x) - 1.0, n_boot=n_boot, seed=seed
        ).as_dict()
        pred = arm.mean(1) / ctrl.mean(1) - 1.0
        true = orc.mean(1) / real - 1.0
        err = pred - true
        out["effect_error"] = {
            "bias": mean_interval(err).as_dict(),
            "mae": nonnegative_interval(np.abs(err), seed=seed).as_dict(),
            "r": float(np.corrcoef(pred, true)[0, 1]) if pred.std() > 0 and true.std() > 0 else None,
        }
    return out


def counterfactual_summary(
    rows: list[dict[str, Any]], spec: CounterfactualSpec, m: int, seed: int = 0
) -> dict[str, Any]:
    """Every arm's effect on reach, pooled over cascades (and, where >= 3 cascades carry it, per veracity label)."""
    rows = [r for r in rows if "counterfactual" in r]
    out: dict[str, Any] = {
        "observe_minutes": m,
        "n": len(rows),
        "act_minutes": spec.minutes_for(m),
        "assumptions": {
            "label_effect": spec.label_effect,
            "prebunk_effect": spec.prebunk_effect,
            "strategies": {k: v.model_dump() for k, v in spec.strategies.items()},
        },
    }
    if not rows:
        return out
    cf = [r["counterfactual"] for r in rows]
    ctrl = np.array([c["arms"]["none"]["reach"] for c in cf])
    out["forecast_reach"] = nested_bootstrap(
        ctrl[:, :, None], lambda x: x[..., 0].mean(-1), n_boot=spec.bootstrap, seed=seed
    ).as_dict()
    out["real_reach"] = float(np.mean([r["real_final"]["scale"] for r in rows]))
    out["observed"] = float(np.mean([c["observed"] for c in cf]))
    keys = list(cf[0]["arms"])
    out["curves"] = {k: np.mean([c["arms"][k]["curve"] for c in cf], axis=0).round(3).tolist() for k in keys}
    if all("real_curve" in c for c in cf):
        out["real_curve"] = np.mean([c["real_curve"] for c in cf], axis=0).round(3).tolist()
    for c in cf:  # folded into the pooled curves: 134 cascades x arms x 150 minutes would make results.json tens of MB
        c.pop("real_curve", None)
        for a in c["arms"].values():
            a.pop("curve", None)
    arms: dict[str, Any] = {}
    for key in keys[1:]:
        name, act = key.split("@")
        arms[key] = {"strategy": name, "act_minute": int(act), **_arm_effects(rows, key, act, spec.bootstrap, seed)}
    out["arms"] = arms
    by_label: dict[str, Any] = {}
    for label in sorted({str(r.get("label") or "unknown") for r in rows}):
        sub = [r for r in rows if str(r.get("label") or "unknown") == label]
        if len(sub) >= MIN_N:
            by_label[label] = {
                "n": len(sub),
                **{
                    key: _arm_effects(sub, key, key.split("@")[1], spec.bootstrap, seed, ("relative",))["relative"]
                    for key in arms
                },
            }
    out["by_label"] = by_label
    return out
