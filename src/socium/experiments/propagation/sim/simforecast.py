"""The prefix-conditioned forecast run in socium's simulator (issue 28, tier 2 of the forecast check).

Why: the forecast (:func:`~socium.experiments.propagation.forecast.forecast.replica_times` with ``condition=True``)
replays a cascade's first ``m`` minutes, draws a per-replica cascade speed from the prefix's posterior and
truncates the delays of observed users' children to "after minute m" -- all in numpy, in continuous
minutes. Here the same forecast is a simulator run of the CV's ``calibrated`` config
(``cv_config.cv_run_config``, as :func:`~socium.experiments.propagation.sim.simcheck.simulate_calibrated` builds it),
so a claim that the numpy forecast is the simulator's model can be tested:

* ``R`` disjoint replica copies of the tree population; copy ``r``'s source is post ``r`` (seed posts come
  first at step 0);
* the observed reshares are ``seed_actions`` reposts at step ``floor(t / dt)``, in (step, copy, node)
  order, so before minute ``m`` -- when nobody else reshares -- each gets the next post id and a repost
  targets its parent's post in its own copy;
* timing: the fold's law narrowed by ``cascade_sigma``, ``user_sigma`` 0 (each user has one incoming
  edge in a tree), the influence slopes, and ``root_effects["<source>#r"]`` = the source's fitted effect
  plus copy ``r``'s shift ``g_r`` (a ``#r`` key wins over the bare id, ``TimingParams.root_shift``);
* ``timing.condition_minute: m``: a post made before ``m`` wakes each follower after a delay drawn from
  the law truncated to "after m" (``ExposureTiming``).

The simulator holds the prefix on its grid: an observed reshare at ``t`` is timed at
``(floor(t / dt) + RESHARE_AT) * dt``. :func:`grid_prefix` gives the cascade as the simulator holds it;
the numpy forecast on that prefix, put on the grid by ``simcheck.on_step_grid(..., observed=...)``, is the
same model as this run, so mean curves must agree within Monte-Carlo error.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from socium.core import actions as A
from socium.experiments.propagation.data.realcascades import CascadeTree, earliest_users
from socium.experiments.propagation.forecast.forecast import CascadeArrays, observed_mask, speed_posterior
from socium.experiments.propagation.sim.cv_config import cv_run_config, replicate_rows
from socium.experiments.propagation.sim.population import cascade_population
from socium.experiments.propagation.sim.simcheck import TREE_POPULATION, Events
from socium.experiments.propagation.spec import CVSpec, PropagationSpec
from socium.experiments.spec import run_config, write_population_csv
from socium.simulator.timing import TimingParams
from socium.trace.queries.cascades import RESHARE_AT, cascade_events
from socium.trace.queries.runs import open_run


def grid_prefix(c: CascadeArrays, m: float, dt: float) -> CascadeArrays:
    """The cascade as the simulator holds its first ``m`` minutes: each observed reshare at its trace time
    ``(floor(t / dt) + RESHARE_AT) * dt``; the source stays at 0, later nodes keep their real times.

    A reshare whose trace time passes ``m`` (real time within ``RESHARE_AT * dt`` of ``m``) is then not
    part of the observed prefix, as in the simulator, which replays only what it times before ``m``.
    """
    obs = observed_mask(c, m) & (c.parent >= 0)
    t = c.delay.copy()
    t[obs] = (np.floor(c.delay[obs] / dt + 1e-9) + RESHARE_AT) * dt
    return CascadeArrays(c.parent, t, c.root_user)


def draw_shifts(
    c: CascadeArrays, tp: TimingParams, casc_sd: float, m: float, runs: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Per-replica cascade log-delay shifts ``g_r`` from the prefix's posterior (``forecast.speed_posterior``)."""
    grid, w = speed_posterior(c, tp, casc_sd, m)
    return rng.choice(grid, size=runs, p=w)


def replay_timing(tp: TimingParams, casc_sd: float, root_user: str, g: NDArray[np.float64]) -> TimingParams:
    """The forecast's per-edge law for the simulator: the fold's law narrowed by ``casc_sd``, no user factor,
    and copy ``r``'s source effect = fitted effect + ``g[r]`` (keyed ``root#r``; bare id with one copy)."""
    base = tp.root_effects.get(root_user, 0.0)
    keys = [f"{root_user}#{r}" for r in range(len(g))] if len(g) > 1 else [root_user]
    effects = {**tp.root_effects, **{k: base + float(x) for k, x in zip(keys, g)}}
    delay = tp.delay.narrowed(casc_sd) if casc_sd > 0 else tp.delay
    return TimingParams(delay, tp.b_author, tp.b_root, 0.0, dict(tp.meta), effects)


def seed_reposts(c: CascadeArrays, m: float, dt: float, runs: int) -> list[dict[str, Any]]:
    """``seed_actions`` replaying the observed reshares of ``c`` (its times already on the grid) in every copy.

    Posts are numbered in the order they are made: the ``runs`` sources first, then these reposts in
    (step, copy, node) order -- nodes in ``earliest_users`` order, so a parent before its child -- and
    nobody else reshares before ``m``; node ``i``'s repost in copy ``r`` is therefore post
    ``runs + its index in this list``.
    """
    n = len(c.parent)
    obs = np.flatnonzero(observed_mask(c, m) & (c.parent >= 0)).tolist()
    step = {i: int(math.floor(c.delay[i] / dt + 1e-9)) for i in obs}
    order = sorted((step[i], r, i) for r in range(runs) for i in obs)
    post: dict[tuple[int, int], int] = {}
    actions = []
    for k, (s, r, i) in enumerate(order):
        par = int(c.parent[i])
        target = r if par == 0 else post[(r, par)]
        post[(r, i)] = runs + k
        actions.append({"agent": r * n + i, "step": s, "action": {"type": A.Repost.type_name, "post_id": target}})
    return actions


def simulate_forecast(
    tree: CascadeTree,
    tp: TimingParams,
    casc_sd: float,
    m: int,
    g: NDArray[np.float64],
    out: Path,
    *,
    seed: int = 3,
    dt: float = 1.0,
    minutes: int = 150,
) -> Events:
    """(parent, minutes) of each replica of the prefix-conditioned forecast, run in the simulator.

    ``g``: one cascade shift per replica (:func:`draw_shifts`, from the posterior of the prefix the caller
    conditions on). The observed prefix is ``grid_prefix`` of the tree's real times.
    """
    users = earliest_users(tree, None)
    rows, _ = cascade_population(tree, users, TREE_POPULATION, None, 0)
    runs = len(g)
    idx = {u: i for i, u in enumerate(users)}
    parent = np.array([-1 if (p := tree.nodes[u].parent) is None else idx[p] for u in users], np.int64)
    c = grid_prefix(CascadeArrays(parent, np.array([tree.nodes[u].delay for u in users]), tree.root_user), m, dt)
    pop = write_population_csv(out / "pop.csv", replicate_rows(rows, runs))
    cv = CVSpec(runs=runs, step_minutes=dt)
    spec = PropagationSpec(name="forecast-sim", minutes=minutes, cv=cv)
    timing = replay_timing(tp, casc_sd, tree.root_user, g).to_dict()
    cfg = cv_run_config("calibrated", spec, cv, "x", pop, "source", timing, seed, len(rows))
    data = cfg.model_dump(mode="json")
    data["timing"]["condition_minute"] = float(m)
    data["seed_actions"] = seed_reposts(c, m, dt, runs)
    info = run_config(type(cfg).model_validate(data), out / "run", force=True)
    with open_run(info.run_dir) as con:
        return [cascade_events(con, r) for r in range(runs)]
