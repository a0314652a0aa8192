"""What the phenomenon experiments share: their spec files, config assembly, population files, runs.

An experiment (propagation, herding, polarisation) is several ordinary runs -- the LLM population
and its rule-based null model, one per cascade or condition -- built from one YAML spec. Each run
is a normal ``ExperimentConfig`` + ``trace.duckdb``, so everything the experiment reports can be
recomputed from the traces with SQL, and any run can be opened with ``socium card`` or ``query``.

Populations built from data (a retweet tree, OASIS's core users, Reddit personas) are written as
OASIS-style CSV files next to the runs and loaded through ``population.source: oasis_csv``, so a
run's config names every input it used and the simulator needs no experiment-specific code path.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from socium.agents.sources import OASIS_REQUIRED_COLUMNS
from socium.config.base import StrictNumbers
from socium.config.experiment import ExperimentConfig
from socium.config.loading import apply_override, config_from_dict, read_yaml_mapping, validate_dict
from socium.core.intervals import MAX_BOOT
from socium.errors import ConfigError, InputFileError, RunDirError, SociumError
from socium.reporting.progress import current
from socium.simulator.inputs import config_diff
from socium.simulator.simulation import Simulation
from socium.trace.queries import calls as C
from socium.trace.queries import runs as R
from socium.trace.queries.runs import config_hash, last_step
from socium.trace.run_facts import read_json_file
from socium.trace.safe_write import own_folder, replace_file
from socium.trace.store import open_trace, read_run_row, require_store

#: The most agents an experiment spec may build as rows of a population file (``n_agents`` of herding and
#: polarisation): the rows are made in memory and written before the run's own memory check, which covers only
#: synthetic populations. 10^6 rows of a few hundred bytes each is a few hundred MB.
MAX_SPEC_AGENTS = 1_000_000

RESULTS_FILE = "results.json"
"""Every experiment directory holds one; ``socium report`` reads it to know what it is looking at."""


class ExperimentSpec(StrictNumbers):
    """Fields every experiment spec has; ``base`` holds ExperimentConfig keys shared by all its runs."""

    model_config = ConfigDict(extra="forbid")

    experiment: str = Field("", description="The study this spec is for (each study's spec fixes its own name).")
    name: str = Field("experiment", description="Label used in reports and default output paths.")
    out: str | None = Field(None, description="Output directory (the CLI's --out wins).")
    base: dict[str, Any] = Field(
        default_factory=dict,
        description="ExperimentConfig keys for every run (seed, steps, llm, policy, recsys, perspective, llm_agents, "
        "...).",
    )
    run_null: bool = Field(True, description="Also run the experiment's rule-based null model on the same platform.")
    bootstrap: int = Field(
        1000, ge=0, le=MAX_BOOT, description="Bootstrap resamples for confidence intervals (0: none)."
    )


def deep_merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """``b`` over ``a``, recursing into nested dicts (lists and scalars are replaced)."""
    out = dict(a)
    for k, v in b.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def build_config(defaults: dict[str, Any], base: dict[str, Any], owned: dict[str, Any], where: str) -> ExperimentConfig:
    """``defaults`` < the user's ``base`` < the experiment-``owned`` sections, validated.

    The experiment owns the sections that define it (population, graph, seed posts, ...): a user
    value there would silently change what is being measured, so it is an error, not an override.
    """
    clash = sorted(set(base) & set(owned))
    if clash:
        raise ConfigError(f"{where}: base.{clash[0]} is set by the experiment itself; remove it from base")
    return config_from_dict(deep_merge(deep_merge(defaults, base), owned), source=where)


PATH_FIELD: dict[str, Any] = {"path": True}
"""``json_schema_extra`` of spec fields that name files or folders: relative ones resolve against the spec file."""
BASE_PATHS = (("population", "path"), ("graph", "path"))


def resolve_spec_paths(data: dict[str, Any], model: type[BaseModel], spec_dir: Path) -> dict[str, Any]:
    """Make the relative paths written in a spec file relative to that file, not to the working directory,
    so a spec and its inputs can move together (and run from anywhere)."""

    def fix(v: Any) -> Any:
        if isinstance(v, str) and v and not Path(v).expanduser().is_absolute():
            return str((spec_dir / v).resolve())
        return v

    out = dict(data)
    for name, f in model.model_fields.items():
        if isinstance(f.json_schema_extra, dict) and f.json_schema_extra.get("path") and out.get(name) is not None:
            out[name] = [fix(v) for v in out[name]] if isinstance(out[name], list) else fix(out[name])
    base = out.get("base")
    if isinstance(base, dict):
        base = json.loads(json.dumps(base))
        for section, key in BASE_PATHS:
            if isinstance(base.get(section), dict) and base[section].get(key):
                base[section][key] = fix(base[section][key])
        out["base"] = base
    return out


def load_spec_data(
    path: str | Path, overrides: Sequence[str] = (), model: type[BaseModel] | None = None
) -> dict[str, Any]:
    """A spec YAML as a dict: relative paths resolved against the file (when ``model`` names its path
    fields), then ``key.path=value`` overrides applied (values are YAML; their paths stay as given)."""
    data = read_yaml_mapping(path)
    if model is not None:
        data = resolve_spec_paths(data, model, Path(path).resolve().parent)
    for item in overrides:
        apply_override(data, item)
    return data


def parse_spec(model: type[BaseModel], data: dict[str, Any], source: str) -> Any:
    """Validate ``data`` into ``model``; errors name the key path like config errors do."""
    return validate_dict(model, data, None, source)


# ---- population files ----------------------------------------------------------------------------
@dataclass
class PersonRow:
    """One agent of a data-built population (written as a row of an OASIS-style CSV)."""

    user_id: str
    name: str
    username: str
    description: str
    following: list[int]
    activity: list[float]
    stance: float | None = None
    user_char: str = ""


def write_population_csv(path: Path, rows: Sequence[PersonRow]) -> Path:
    """Write ``rows`` so ``population.source: oasis_csv`` loads them as agents 0..N-1.

    Text from data files goes through :mod:`csv` quoting, never through a format string, so a bio
    with commas, quotes or newlines round-trips unchanged.
    The file replaces the name (a link planted in an experiment's ``inputs/`` is never written through).
    """
    own_folder(path.parent)
    with_stance = any(r.stance is not None for r in rows)
    cols = [*OASIS_REQUIRED_COLUMNS, "activity_level_frequency"] + (["stance"] if with_stance else [])
    with io.StringIO(newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            act = [float(min(max(a, 0.0), 1.0)) for a in r.activity]
            rec = [
                r.user_id,
                r.name,
                r.username,
                json.dumps(sorted(set(r.following))),
                "[]",
                r.user_char or r.description,
                r.description,
                json.dumps(act),
            ]
            if with_stance:
                rec.append("" if r.stance is None else f"{r.stance:.6f}")
            w.writerow(rec)
        replace_file(path, fh.getvalue())
    return path


# ---- runs ----------------------------------------------------------------------------------------
@dataclass
class RunInfo:
    """Where a run lives and how it was obtained (fresh, resumed or reused from an earlier call)."""

    run_dir: Path
    status: str
    wall_s: float


def _trace_state(db: Path) -> tuple[str | None, int | None]:
    con = open_trace(db)
    try:
        return config_hash(con), last_step(con)
    except duckdb.Error:
        return None, None
    finally:
        con.close()


def _what_differs(db: Path, cfg: ExperimentConfig) -> str:
    """The first keys whose values differ from the run recorded in ``db``: a bare 'different config' left a
    user who had only moved or copied the experiment folder (its input paths changed) guessing."""

    try:
        rec = read_run_row(db)
        diff = config_diff(json.loads(rec["config"]), json.loads(cfg.canonical_json())) if rec else []
    except (SociumError, TypeError, ValueError):
        diff = []
    if not diff:
        return "the recorded config is unreadable"
    return "; ".join(diff[:3]) + (f"; and {len(diff) - 3} more" if len(diff) > 3 else "")


def run_config(
    cfg: ExperimentConfig, run_dir: Path, *, force: bool = False, on_step: Callable[[Any], None] | None = None
) -> RunInfo:
    """Run ``cfg`` into ``run_dir``; a finished run of the same config is reused, an unfinished one resumed.

    Why reuse: an experiment is many runs and an embedded-model run can take minutes, so re-running
    an experiment after an interruption (or to re-analyse) should redo only what is missing. A run
    dir holding a *different* config is an error unless ``force``.
    """

    db = run_dir / "trace.duckdb"
    t0 = time.perf_counter()
    prog = current()

    def step_done(stats: Any) -> None:
        prog.step(stats.step, stats.llm_calls, stats.tokens)
        if on_step is not None:
            on_step(stats)

    if db.exists() and not force:
        h, last = _trace_state(db)
        if h == cfg.config_hash() and last is not None and last >= cfg.steps - 1:
            prog.finish_item(str(run_dir), reused=True)
            return RunInfo(run_dir, "reused", 0.0)
        if h is not None and h != cfg.config_hash():
            raise RunDirError(
                f"{run_dir} holds a run of a different config ({_what_differs(db, cfg)}); pass --force to overwrite"
            )
        prog.start_item(str(run_dir), cfg.steps, 0 if last is None else last + 1)
        Simulation(cfg, run_dir, resume=True).run(on_step=step_done)
        prog.finish_item(str(run_dir))
        return RunInfo(run_dir, "resumed", time.perf_counter() - t0)
    prog.start_item(str(run_dir), cfg.steps)
    Simulation(cfg, run_dir, force=force).run(on_step=step_done)
    prog.finish_item(str(run_dir))
    return RunInfo(run_dir, "ran", time.perf_counter() - t0)


def connect(run_dir: Path) -> duckdb.DuckDBPyConnection:
    """Read-only connection to a run's trace."""

    return open_trace(require_store(Path(run_dir)))


def llm_usage(run_dir: Path) -> dict[str, float]:
    """LLM calls and tokens of one run (zeros for a rule-based run), plus its simulated wall time."""

    calls = pt = ct = 0
    with R.open_run(run_dir) as con:
        if "llm_calls" in R.table_names(con):
            t = C.totals(con)
            calls, pt, ct = int(t["calls"]), int(t["prompt_tokens"] or 0), int(t["completion_tokens"] or 0)
        wall = R.wall_seconds(con)
        inv = R.policy_outcomes(con)
    return {
        "llm_calls": calls,
        "prompt_tokens": pt,
        "completion_tokens": ct,
        "wall_s": round(float(wall), 3),
        "invalid_rate": round(inv[0] / inv[1], 4) if inv[1] else 0.0,
    }


def write_results(out: Path, results: dict[str, Any]) -> Path:
    """Write ``results.json`` (the experiment's numbers, spec and run directories)."""
    own_folder(out, named=True)
    path = out / RESULTS_FILE
    replace_file(path, json.dumps(results, indent=1, default=_jsonable))  # never through a planted link
    return path


def _jsonable(x: Any) -> Any:
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def read_results(out: Path) -> dict[str, Any]:
    p = Path(out) / RESULTS_FILE
    if not p.is_file():
        raise RunDirError(f"{out}: no {RESULTS_FILE} (not an experiment directory)")
    res = read_json_file(p, "experiment")
    if not isinstance(res["experiment"], str):
        raise InputFileError(p, None, f"not a socium {p.name} ('experiment' is not a name)")
    return res
