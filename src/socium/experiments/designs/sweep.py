"""Sweeps: a grid of config overrides x seeds, each combination one run, run in parallel on Ray.

A sweep file::

    base: quickstart.yaml            # relative to the sweep file
    grid: {policy.p_repost: [0.05, 0.1], recsys.k: [5, 10]}
    seeds: [1, 2]
    out: runs/repost-sweep           # relative to the working directory
    parallel: 4                      # runs in flight at once (each a Ray task with num_cpus=1)
    address: null                    # Ray cluster; null starts Ray locally

Every run is an ordinary run directory (``out/run-000/trace.duckdb``), so every other tool
(``socium query``, ``socium card``, resume) works on it unchanged. Re-running a sweep resumes:
finished runs are no-ops, interrupted ones continue from their last committed step. The summary
reads each run's totals through the named trace queries (:func:`socium.trace.queries.runs.run_summary`);
a user comparing runs in SQL ATTACHes them all read-only in one connection (:func:`attach_runs`).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from socium.config.loading import config_from_dict, read_yaml_mapping
from socium.core.intervals import nonnegative_interval
from socium.errors import ConfigError
from socium.experiments.spec import _trace_state
from socium.reporting.page import ReportTable, counted
from socium.simulator.ray_start import start_ray
from socium.simulator.simulation import Simulation
from socium.trace.queries import cascades, posts
from socium.trace.queries import runs as run_q
from socium.trace.rundir import check_out_path
from socium.trace.safe_write import own_folder, replace_file


@dataclass
class RunSpec:
    """One cell of the sweep: its directory name, the overrides applied to the base, its seed."""

    run: str
    overrides: dict[str, Any]
    seed: int
    run_dir: str

    def override_strings(self) -> list[str]:
        # JSON is valid YAML, so config's ``key.path=value`` parser reads values back with their types.
        return [f"{k}={json.dumps(v)}" for k, v in self.overrides.items()] + [f"seed={self.seed}"]


@dataclass
class SweepSpec:
    base: dict[str, Any]
    grid: dict[str, list[Any]]
    seeds: list[int]
    out: Path
    parallel: int = 2
    address: str | None = None
    runs: list[RunSpec] = field(default_factory=list)


def load_sweep(path: str | Path, out: str | Path | None = None, parallel: int | None = None) -> SweepSpec:
    """Read and validate a sweep file; every run's config is validated before anything runs."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"sweep file not found: {p}")
    data = read_yaml_mapping(p)
    unknown = set(data) - {"base", "grid", "seeds", "out", "parallel", "address"}
    if unknown:
        raise ConfigError(
            f"{p}: unknown sweep keys {sorted(unknown)} (allowed: base, grid, seeds, out, parallel, address)"
        )
    base = data.get("base")
    if isinstance(base, str):
        base_path = (p.parent / base).resolve()
        if not base_path.is_file():
            raise ConfigError(f"{p}: base config not found: {base_path}")
        base = read_yaml_mapping(base_path)
    if not isinstance(base, dict):
        raise ConfigError(f"{p}: 'base' must be a config file path or an inline config mapping")
    grid = data.get("grid") or {}
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise ConfigError(f"{p}: 'grid' must map key.path to a non-empty list of values")
    seeds = data.get("seeds", [base.get("seed", 0)])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and s >= 0 for s in seeds):
        raise ConfigError(f"{p}: 'seeds' must be a non-empty list of non-negative integers")
    out_dir = Path(out or data.get("out") or f"runs/{p.stem}")
    # `is None`, not `or`: --parallel 0 was silently 2 while -1 was refused; a string was int()'s traceback
    par = parallel if parallel is not None else data.get("parallel", 2)
    if par is None:
        par = 2
    if isinstance(par, bool) or not isinstance(par, int) or par < 1:
        raise ConfigError(f"{p}: 'parallel' must be an integer >= 1, got {par!r}")
    check_out_path(out_dir)  # a file there was mkdir's FileExistsError traceback
    spec = SweepSpec(base, {str(k): v for k, v in grid.items()}, seeds, out_dir, par, data.get("address"))
    spec.runs = expand(spec)
    for r in spec.runs:
        config_from_dict(base, r.override_strings(), source=f"{p} ({r.run}: {r.overrides}, seed {r.seed})")
    return spec


def expand(spec: SweepSpec) -> list[RunSpec]:
    """Grid cells in file order (the product of the value lists), seeds innermost."""
    keys = list(spec.grid)
    runs: list[RunSpec] = []
    for values in itertools.product(*(spec.grid[k] for k in keys)):
        for seed in spec.seeds:
            i = len(runs)
            runs.append(RunSpec(f"run-{i:03d}", dict(zip(keys, values)), seed, str(spec.out / f"run-{i:03d}")))
    return runs


PROGRESS_FILE = "progress.json"
"""Written by a sweep cell after each step (steps done, steps, LLM calls, tokens) for the driver's display."""


def run_one(base: dict[str, Any], overrides: list[str], run_dir: str) -> dict[str, Any]:
    """Run (or resume, or reuse when finished) one sweep cell; errors are returned, not raised, so one
    bad cell cannot take the rest of the sweep down with it."""

    t0 = time.perf_counter()
    usage = {"llm_calls": 0, "tokens": 0}
    try:
        cfg = config_from_dict(base, overrides)
        db = Path(run_dir) / "trace.duckdb"
        if db.exists():
            h, last = _trace_state(db)
            if h == cfg.config_hash() and last is not None and last >= cfg.steps - 1:
                return {
                    "ok": True,
                    "reused": True,
                    "error": None,
                    "task_wall_s": time.perf_counter() - t0,
                    "pid": os.getpid(),
                    **usage,
                }
        progress = Path(run_dir) / PROGRESS_FILE

        def on_step(stats: Any) -> None:
            usage["llm_calls"] += stats.llm_calls
            usage["tokens"] += stats.tokens
            tmp = progress.with_suffix(".tmp")
            tmp.write_text(json.dumps({"step": stats.step + 1, "steps": cfg.steps, **usage}), encoding="utf-8")
            os.replace(tmp, progress)

        Simulation(cfg, run_dir, resume=db.exists()).run(on_step=on_step)
        return {
            "ok": True,
            "reused": False,
            "error": None,
            "task_wall_s": time.perf_counter() - t0,
            "pid": os.getpid(),
            **usage,
        }
    except Exception as exc:  # reported in the summary
        return {
            "ok": False,
            "reused": False,
            "error": f"{type(exc).__name__}: {exc}",
            "task_wall_s": time.perf_counter() - t0,
            "pid": os.getpid(),
            **usage,
        }


def read_progress(run_dir: str | Path) -> tuple[int, int, int, int] | None:
    """(steps done, steps, LLM calls, tokens) of a cell in flight, from its progress file."""
    try:
        d = json.loads((Path(run_dir) / PROGRESS_FILE).read_text(encoding="utf-8"))
        return int(d["step"]), int(d["steps"]), int(d["llm_calls"]), int(d["tokens"])
    except (OSError, ValueError, KeyError):
        return None


OnPoll = Callable[[dict[str, tuple[int, int, int, int]]], None]


def run_sweep(
    spec: SweepSpec, on_done: Callable[[RunSpec, dict[str, Any]], None] | None = None, on_poll: OnPoll | None = None
) -> list[dict[str, Any]]:
    """Run every cell as a Ray task (``num_cpus=1``), at most ``spec.parallel`` in flight, then
    return :func:`summarize`'s rows. Joins ``spec.address`` or starts Ray locally. ``on_poll`` is
    called about twice a second with the progress of the cells in flight."""
    import ray

    own_folder(spec.out, named=True)
    manifest = {"base": spec.base, "grid": spec.grid, "seeds": spec.seeds, "runs": [asdict(r) for r in spec.runs]}
    replace_file(spec.out / "sweep.json", json.dumps(manifest, indent=2, default=str))
    owns = False
    if not ray.is_initialized():
        kw: dict[str, Any] = (
            {"address": spec.address} if spec.address else {"num_cpus": os.cpu_count() or 1, "include_dashboard": False}
        )
        start_ray(**kw)
        owns = True
    task = ray.remote(num_cpus=1, max_retries=0)(run_one)
    status: dict[str, dict[str, Any]] = {}
    try:
        todo = list(spec.runs)
        pending: dict[Any, RunSpec] = {}
        while todo or pending:
            while todo and len(pending) < spec.parallel:
                r = todo.pop(0)
                pending[task.remote(spec.base, r.override_strings(), str(Path(r.run_dir).resolve()))] = r
            done, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            if not done:
                if on_poll:
                    on_poll({r.run: p for r in pending.values() if (p := read_progress(r.run_dir)) is not None})
                continue
            r = pending.pop(done[0])
            try:
                res = ray.get(done[0])
            except Exception as exc:  # the task's worker died
                res = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "task_wall_s": None}
            status[r.run] = res
            if on_done:
                on_done(r, res)
    finally:
        if owns:
            ray.shutdown()
    replace_file(spec.out / "status.json", json.dumps(status, indent=2, default=str))
    return summarize(spec.out)


def attach_runs(con: duckdb.DuckDBPyConnection, sweep_dir: str | Path) -> dict[str, str]:
    """ATTACH every finished-or-partial run of a sweep read-only; returns {run: schema alias}.

    Then e.g. ``SELECT 'run-000', count(*) FROM r000.posts UNION ALL ...`` compares runs in one query.
    """
    manifest = json.loads((Path(sweep_dir) / "sweep.json").read_text(encoding="utf-8"))
    aliases = {}
    for r in manifest["runs"]:
        db = Path(sweep_dir) / r["run"] / "trace.duckdb"
        if db.exists():
            alias = "r" + r["run"].split("-")[-1]  # our own name, safe as an identifier
            run_q.attach_read_only(con, db, alias)
            aliases[r["run"]] = alias
    return aliases


def summarize(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """One row per run: run, overrides, seed, steps, posts, actions, wall_s, status."""
    sweep_dir = Path(sweep_dir)
    manifest = json.loads((sweep_dir / "sweep.json").read_text(encoding="utf-8"))
    status_path = sweep_dir / "status.json"
    status = json.loads(status_path.read_text(encoding="utf-8")) if status_path.exists() else {}
    got: dict[str, dict[str, Any]] = {}
    for r in manifest["runs"]:
        if (sweep_dir / r["run"] / "trace.duckdb").exists():
            with run_q.open_run(sweep_dir / r["run"]) as con:
                got[r["run"]] = run_q.run_summary(con)
    out = []
    for r in manifest["runs"]:
        g = got.get(r["run"])
        st = status.get(r["run"], {})
        out.append(
            {
                "run": r["run"],
                "overrides": r["overrides"],
                "seed": r["seed"],
                "steps": g["steps"] if g else 0,
                "posts": g["posts"] if g else 0,
                "actions": g["actions"] if g else 0,
                "wall_s": round(float(g["wall_s"]), 3) if g else None,
                "status": "ok" if st.get("ok") else (st.get("error") or "not run"),
            }
        )
    return out


# ---- report (``socium report SWEEP_DIR``) ---------------------------------------------------------
SWEEP_FILE = "sweep.json"
#: Outcomes every run of any config has, read through the named trace queries: name -> label.
OUTCOMES = {
    "posts": "posts (all kinds)",
    "reshares": "reshares (reposts + quotes)",
    "largest_cascade": "largest cascade (posts, root included)",
    "actions": "actions",
}


def run_outcomes(run_dir: str | Path) -> dict[str, float]:
    """A finished (or partial) run's :data:`OUTCOMES`."""

    with run_q.open_run(run_dir) as con:
        summ = run_q.run_summary(con)
        kinds = posts.post_kinds(con)
        top = cascades.largest_cascades(con, 1)
    return {
        "posts": float(summ["posts"]),
        "reshares": float(kinds.get("repost", 0) + kinds.get("quote", 0)),
        "largest_cascade": float(top[0][1]) if top else 1.0,
        "actions": float(summ["actions"]),
    }


def _cell(values: list[float]) -> str:
    """Mean over seeds with its interval by the one policy (bootstrap: counts; none below 3 seeds)."""

    iv = nonnegative_interval(values)
    if iv.estimate is None:
        return "-"
    return f"{iv.estimate:.1f}" + (f" [{iv.low:.1f}, {iv.high:.1f}]" if iv.has_bounds else "")


def _figure(path: Path, combos: list[str], per: list[dict[str, list[float]]]) -> Path:
    """One panel per outcome: every seed's value as a dot, the mean over seeds as a bar per combination."""
    from socium.reporting import plots as P  # lazy: matplotlib, for figures only

    fig, axes = P.plt.subplots(1, len(OUTCOMES), figsize=(max(3.4, 0.3 * len(combos)) * len(OUTCOMES), 3.4))
    xs = np.arange(len(combos))
    for ax, (key, label) in zip(axes, OUTCOMES.items()):
        means = [float(np.mean(p[key])) if p[key] else np.nan for p in per]
        ax.bar(xs, means, 0.6, color="tab:blue", alpha=0.35, label="mean over seeds")
        for x, p in zip(xs, per):
            ax.plot([x] * len(p[key]), p[key], "o", color="black", ms=3, label="one seed")
        ax.set_xticks(xs, combos, fontsize=8)
        ax.set_xlabel("combination (# in the table)", fontsize=8)
        ax.set_ylabel("count", fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.set_ylim(bottom=0)
        P._integer(ax)
    fig.suptitle("Outcomes per combination of the grid (dots: seeds; bars: their mean)", fontsize=10)
    return P._save(fig, path, axes[0])


def report(rep: Any, path: Path) -> list[Path]:
    """The sweep's page: per combination the override values whole and the mean outcomes over seeds
    (interval by socium.core.intervals, none below 3 seeds), every run's row, and a figure. Returns the
    run directories (their cards differ only where the overrides do)."""

    rows = summarize(path)
    manifest = json.loads((path / SWEEP_FILE).read_text(encoding="utf-8"))
    keys = list(manifest.get("grid") or {})
    have = {r["run"]: run_outcomes(path / r["run"]) for r in rows if (path / r["run"] / "trace.duckdb").is_file()}
    combos: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        combos.setdefault(json.dumps([r["overrides"].get(k) for k in keys]), []).append(r)
    rep.heading("Sweep")
    rep.note(
        f"{counted(len(combos), 'combination')} of {', '.join(keys) or 'no grid key'} x "
        f"{counted(len(manifest.get('seeds') or []), 'seed')} = {counted(len(rows), 'run')}; "
        f"{sum(r['status'] == 'ok' for r in rows)} finished. Outcomes: mean over the combination's seeds "
        "[95% bootstrap interval over seeds; none below 3 seeds]."
    )
    per: list[dict[str, list[float]]] = []
    table: list[list[str]] = []
    for combo, runs in combos.items():
        vals = {k: [have[r["run"]][k] for r in runs if r["run"] in have] for k in OUTCOMES}
        per.append(vals)
        table.append(
            [f"#{len(table) + 1}", *(json.dumps(v) for v in json.loads(combo)), f"{len(vals['posts'])}/{len(runs)}"]
            + [_cell(vals[k]) for k in OUTCOMES]
        )
    rep.table(ReportTable("Per combination", ["#", *keys, "seeds run", *OUTCOMES.values()], table, summary=True))
    rep.series["sweep"] = {"keys": keys, "combinations": [json.loads(c) for c in combos], "outcomes": per}
    labels = [f"#{i + 1}" for i in range(len(combos))]  # the values, whole, are in the table
    if have:
        rep.image(_figure(rep.out_dir / "sweep_outcomes.png", labels, per), "Outcomes per combination of the grid")
    rep.table(
        ReportTable(
            "Every run",
            ["run", *keys, "seed", "status", "steps", *OUTCOMES.values(), "wall s"],
            [
                [r["run"], *(json.dumps(r["overrides"].get(k)) for k in keys), str(r["seed"]), r["status"]]
                + [str(r["steps"])]
                + [f"{have[r['run']][k]:.0f}" if r["run"] in have else "-" for k in OUTCOMES]
                + ["-" if r["wall_s"] is None else f"{r['wall_s']:.2f}"]
                for r in rows
            ],
        )
    )
    return [path / r["run"] for r in rows if r["run"] in have]
