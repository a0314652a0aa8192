"""Is the forecast's numpy sampler the simulator's model? Fold 0 of the 134-cascade CV, measured (issue 28).

Why: the forecast, its null and the counterfactual arms are drawn by ``forecast.replica_times`` in
continuous minutes; the CV's ``calibrated`` model is the simulator on 1-minute steps. This script fits
fold 0's timing on the other folds (as the CV does), then for ``--cascades`` held-out cascades of fold 0
runs the simulator's calibrated null (``--sim-runs`` replica copies in one run, the CV's config) and
draws the numpy null (``--np-runs`` replicas), and prints per cascade:

* ``z grid``: the largest |z| over minutes and curves (scale, depth, breadth) between the simulator's
  mean curves and the numpy null put on the 1-minute grid (``simcheck.on_step_grid``); equal models
  give ~3.3 for 450 nearly normal comparisons;
* ``z cont``: the same against the numpy null in continuous minutes, as the forecast uses it;
* the grid's lag: simulator minus continuous mean scale at minutes 5, 10, 30 and 149, and the NRMSE
  between the two mean scale curves (normalised by the simulator's maximum, as the CV normalises),
  over all 150 minutes and over minutes ``--act``..149 (the forecast's scoring window);

and, on the first ``--arms`` cascades, the removal and down-rank arms acted at minute ``--act``:
replicas whose removal run equals ``counterfactual.apply_arm`` (keep 0) on the control run's times, and
replicas that a down-rank factor (0.5, 0.05, 0) changed at all.

    PYTHONPATH=src python benchmarks/forecast_vs_simulator.py [--cascades 10] [--arms 3] [--out runs/fc-vs-sim]

``--forecast M`` (tier 2) checks the prefix-conditioned forecast instead: per cascade the simulator replays
the first ``M`` minutes (``simforecast.simulate_forecast``: seed reposts on the grid, per-copy speed from
``speed_posterior`` of the prefix the simulator holds, ``timing.condition_minute``) and is compared with
``forecast.replica_times(condition=True)`` on that prefix put on the grid (``z grid``) and with the forecast
as the CV scores it, on the real prefix in continuous minutes (``z cont``, over minutes M..149: before M the
two differ by construction, the prefix's grid times); ``prefix ok``: every replica
has exactly the replayed reshares by minute M. Then the scale NRMSE against the real cascade over minutes
M..149 of the CV's forecast (continuous), the numpy forecast on the grid and the simulator's forecast.

The cascades, the fit and its speed prior come through the public :mod:`socium.forecast` (``load_cascades``
of the registered ``oasis`` set, the CV's 134 in the CV's order; ``fit``; a fit file read back with
``load_fit``, so ``cascade_sigma`` is the fit file's and never a silent 0); ``--cascades`` is the quick
look's limit. What it compares lies below that API on purpose: the forecast's numpy sampler
(``propagation.forecast.forecast``) against the simulator (``propagation.sim.simcheck`` / ``simforecast``), on
the CV's own fold split (``propagation.data.folds.train_and_held``).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import yaml

from socium import forecast as fc
from socium.core.rng import component_rng
from socium.experiments.propagation.counterfactual import apply_arm
from socium.experiments.propagation.data.curves import nrmse
from socium.experiments.propagation.data.folds import train_and_held
from socium.experiments.propagation.data.realcascades import CascadeTree, earliest_users, subtree_curves
from socium.experiments.propagation.forecast import forecast as F
from socium.experiments.propagation.forecast.forecast import window_nrmse
from socium.experiments.propagation.sim.simcheck import Events, events_curves, max_z, on_step_grid, simulate_calibrated
from socium.experiments.propagation.sim.simforecast import draw_shifts, grid_prefix, simulate_forecast
from socium.simulator.timing import TimingParams
from socium.trace.queries.curves import cascade_curves_from_events, node_depths

SPEC = Path(__file__).resolve().parents[1] / "examples" / "results" / "propagation-cv.yaml"
MINUTES = 150


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cascades", type=int, default=10, help="first N held-out cascades of fold 0")
    ap.add_argument("--arms", type=int, default=3, help="run the removal and down-rank arms on the first N of them")
    ap.add_argument("--sim-runs", type=int, default=100)
    ap.add_argument("--np-runs", type=int, default=4000)
    ap.add_argument("--act", type=int, default=10, help="action minute of the arms")
    ap.add_argument("--out", default="runs/forecast-vs-sim")
    ap.add_argument("--forecast", type=int, default=0, help="observed minutes: check the conditioned forecast")
    a = ap.parse_args()
    cv = yaml.safe_load(SPEC.read_text(encoding="utf-8"))["cv"]  # the CV's folds and seed (its families: fit's)
    cascades = fc.load_cascades("oasis")  # the spec's 134 (sample 134 of OASIS's 134), same ids and order
    trees = cascades.trees
    train, held = train_and_held(list(trees), cv["folds"], cv["seed"])[0]
    out = Path(a.out)
    fit_path = fc.write_fit_file(fc.fit(cascades.subset(train), bootstrap=0, seed=cv["seed"]), out / "fold0-fit.json")
    fit = fc.load_fit(fit_path)
    tp = fit.params
    if a.forecast:
        forecast_table(trees, held[: a.cascades], tp, fit.cascade_sigma, a, out)
        return
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}; fold 0: fit on {len(train)}, {fit.timing['delay']['family']}; "
          f"simulator {a.sim_runs} replicas (seed 3), numpy {a.np_runs} (stream 91)")  # fmt: skip
    print("| cascade | users | depth | z grid (scale/depth/breadth) | z cont | lag at 5/10/30/149 min "
          "| scale NRMSE all / after act | sim s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for k, cid in enumerate(held[: a.cascades]):
        tree = trees[cid]
        c = F.cascade_arrays(tree, earliest_users(tree, None))
        t0 = time.perf_counter()
        events = simulate_calibrated(tree, tp, a.sim_runs, out / cid / "null", seed=3, minutes=MINUTES)
        wall = time.perf_counter() - t0
        sim = events_curves(events, MINUTES)
        t = F.replica_times(c, tp, 0.0, 0, a.np_runs, component_rng(k, 91), condition=False)
        grid = F.curves_from_times(c.parent, on_step_grid(c.parent, t, 1.0), MINUTES)
        cont = F.curves_from_times(c.parent, t, MINUTES)
        zg, zc = max_z(sim, grid), max_z(sim, cont)
        lag = sim["scale"].mean(0) - cont["scale"].mean(0)
        err = nrmse(cont["scale"].mean(0), sim["scale"].mean(0), MINUTES)
        after = window_nrmse(cont["scale"].mean(0), sim["scale"].mean(0), a.act, MINUTES)
        print(f"| {cid} | {len(c.parent)} | {int(node_depths(c.parent).max())} | "
              + "/".join(f"{zg[x]:.1f}" for x in ("scale", "depth", "max_breadth"))
              + f" | {max(zc.values()):.1f} | " + "/".join(f"{lag[m]:+.1f}" for m in (5, 10, 30, 149))
              + f" | {err:.3f} / {after:.3f} | {wall:.0f} |")  # fmt: skip
        if k < a.arms:
            arms(tree, tp, events, a, out / cid)


def forecast_table(
    trees: dict[str, CascadeTree], ids: list[str], tp: TimingParams, sd: float, a: argparse.Namespace, out: Path
) -> None:
    """Tier 2: the conditioned forecast in the simulator against ``replica_times(condition=True)``."""
    m = a.forecast
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}; fold 0, cascade_sigma {sd:.3f}, observed minutes {m}; simulator "
          f"{a.sim_runs} replicas (seed 3, shifts stream 92), numpy {a.np_runs} (stream 93)")  # fmt: skip
    print("| cascade | users | observed | z grid (scale/depth/breadth) | z cont, minutes M..149 | prefix ok "
          f"| scale NRMSE {m}-149: CV forecast / numpy on grid / simulator | sim s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for k, cid in enumerate(ids):
        tree = trees[cid]
        users = earliest_users(tree, None)
        real = F.cascade_arrays(tree, users)
        c = grid_prefix(real, m, 1.0)
        obs = F.observed_mask(c, m)
        g = draw_shifts(c, tp, sd, m, a.sim_runs, component_rng(k, 92))
        t0 = time.perf_counter()
        events = simulate_forecast(tree, tp, sd, m, g, out / cid / f"forecast{m}", seed=3, minutes=MINUTES)
        wall = time.perf_counter() - t0
        prefix = np.sort(np.where(c.parent[obs] < 0, 0.0, c.delay[obs]))
        ok = sum(len(t[t <= m]) == len(prefix) and np.allclose(np.sort(t[t <= m]), prefix) for _, t in events)
        sim = events_curves(events, MINUTES)
        tg = F.replica_times(c, tp, sd, m, a.np_runs, component_rng(k, 93), condition=True)
        grid = F.curves_from_times(c.parent, on_step_grid(c.parent, tg, 1.0, obs), MINUTES)
        cont = F.curves_from_times(c.parent, F.replica_times(real, tp, sd, m, a.np_runs, component_rng(k, 93)), MINUTES)
        zg = max_z(sim, grid)
        zc = max_z({x: v[:, m:] for x, v in sim.items()}, {x: v[:, m:] for x, v in cont.items()})
        target = subtree_curves(tree, users, MINUTES)["scale"]
        err = [window_nrmse(x["scale"].mean(0), target, m, MINUTES) for x in (cont, grid, sim)]
        print(f"| {cid} | {len(users)} | {int(obs.sum())} | "
              + "/".join(f"{zg[x]:.1f}" for x in ("scale", "depth", "max_breadth"))
              + " | " + "/".join(f"{zc[x]:.1f}" for x in ("scale", "depth", "max_breadth"))
              + f" | {ok}/{len(events)} | "
              + " / ".join(f"{e:.4f}" for e in err) + f" | {wall:.0f} |")  # fmt: skip


def arms(tree: CascadeTree, tp: TimingParams, ctrl: Events, a: argparse.Namespace, out: Path) -> None:
    """Removal against apply_arm on the control's own times, and down-ranking's effect, at minute ``a.act``."""
    label = {"kind": "fact_check", "params": {"delay": a.act - 1, "recall": 1.0, "min_engagement": 0}}
    base = simulate_calibrated(tree, tp, a.sim_runs, out / "ctrl", moderation={"kind": "none"})
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(base, ctrl)), "a 'none' moderation section changed a run"
    gone = simulate_calibrated(tree, tp, a.sim_runs, out / "remove", moderation={**label, "remove": True})
    same, reach0, reach1 = 0, [], []
    for (p0, t0), (p1, t1) in zip(ctrl, gone):
        z = np.zeros((1, len(p0)))
        want = cascade_curves_from_events(p0, apply_arm(p0, t0[None, :], float(a.act), z, z)[0], MINUTES)["scale"]
        got = cascade_curves_from_events(p1, t1, MINUTES)["scale"]
        same += int(np.array_equal(got, want))
        reach0.append(cascade_curves_from_events(p0, t0, MINUTES)["scale"][-1])
        reach1.append(got[-1])
    print(f"  removal at minute {a.act}: {same}/{len(ctrl)} replicas equal apply_arm(keep 0); "
          f"mean reach at 149 control {np.mean(reach0):.1f}, removed {np.mean(reach1):.1f}")  # fmt: skip
    for f in (0.5, 0.05, 0.0):
        arm = simulate_calibrated(tree, tp, a.sim_runs, out / f"down{f}", moderation={**label, "downrank": f})
        changed = sum(not np.array_equal(x[1], y[1]) or len(x[0]) != len(y[0]) for x, y in zip(ctrl, arm))
        mean = np.mean([cascade_curves_from_events(p, t, MINUTES)["scale"][-1] for p, t in arm])
        print(f"  downrank {f:g} at minute {a.act}: {changed}/{len(ctrl)} replicas changed; mean reach {mean:.1f}")


if __name__ == "__main__":
    main()
