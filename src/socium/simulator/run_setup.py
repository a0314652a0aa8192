"""Set-up of a :class:`~socium.simulator.simulation.Simulation` run: the run directory checked under its
lock, the world written as step -1, or a committed trace replayed to resume it.

A part the simulation is composed of (``Simulation.setup``), so set-up and resume read apart from
stepping. It holds only what it is built with (run directory, config, input digests, the notes for the
caller); the :class:`~socium.simulator.world.World` its methods write or restore (made by
``world.build_world``) and the trace store are handed to each method explicitly, never the simulation
itself, which imports this module. It reads the trace only through the named restore queries
(:mod:`socium.trace.queries.restore`).
"""

from __future__ import annotations

import json
import platform as _stdlib_platform  # the standard library module; socium never shadows it
import shutil
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

import socium
from socium.agents import perspectives
from socium.agents.memory import MemoryStream
from socium.config.experiment import ExperimentConfig
from socium.config.loading import config_from_dict
from socium.core.actions import Action, parse_action
from socium.core.plugins import recorded_plugins
from socium.errors import RunDirError, TraceError
from socium.llm.base import event_loop_kind
from socium.simulator.inputs import changed_inputs, config_diff, inputs_json
from socium.simulator.step_agents import memory_line, remember
from socium.simulator.world import World
from socium.trace.queries import exposures
from socium.trace.queries import restore as rq
from socium.trace.run_facts import held_run_error
from socium.trace.rundir import REPLACED_BY_FORCE, check_run_files, refuse_foreign
from socium.trace.safe_write import write_run_file
from socium.trace.store import TraceStore, read_run_row


class RunSetUp:
    """Run-directory checks, the set-up commit and resume (see the module docstring)."""

    def __init__(
        self, run_dir: Path, cfg: ExperimentConfig, inputs: dict[str, dict[str, Any]], notes: list[str]
    ) -> None:
        """``inputs``: the digests of the run's input files (``inputs.preflight``); ``notes``: the run's
        list of things to tell the user, appended to (e.g. a resume that starts fresh)."""
        self.run_dir = run_dir
        self.cfg = cfg
        self.inputs = inputs
        self.notes = notes

    # ---- set-up and resume ------------------------------------------------------------------
    def check_run_dir(self, resume: bool, force: bool, lock_is_ours: bool) -> bool:
        """Decide (holding the lock) whether this is a resume or a fresh run; returns ``resume``.
        ``lock_is_ours``: the run's lock file was there before this start (``RunDirLock.existed``)."""
        db = self.run_dir / "trace.duckdb"
        check_run_files(self.run_dir)  # a linked or special trace/config is refused, never followed
        if resume:
            if rq.has_setup(db):
                self.check_same_world(db)
                return True
            self.notes.append(f"{self.run_dir}: no committed set-up to resume, so the run starts from step 0")
        if db.exists() and not resume:
            if not force:  # finished or not by the run's own steps; the way on by whether it is this world
                raise held_run_error(self.run_dir, self.cfg.config_hash())
        elif not force:
            refuse_foreign(self.run_dir, lock_is_ours=lock_is_ours)
        if force or db.exists():  # a trace with no committed set-up holds nothing worth keeping
            for name in REPLACED_BY_FORCE:
                (self.run_dir / name).unlink(missing_ok=True)
            shutil.rmtree(self.run_dir / "report", ignore_errors=True)
        return False

    def check_same_world(self, db: Path) -> None:
        """Refuse a resume into a different world: other config keys or other input file contents.

        Reads the recorded config as JSON only (nothing named in it is imported), before the world is built.
        """
        rec = read_run_row(db)
        if rec is None:
            raise TraceError(f"{self.run_dir}: trace has committed steps but no run row")
        if rec["config_hash"] != self.cfg.config_hash():
            try:
                diff = config_diff(json.loads(rec["config"]), json.loads(self.cfg.canonical_json()))
            except (TypeError, ValueError):
                diff = ["(the recorded config is unreadable)"]
            shown = "; ".join(diff[:8]) + (f"; and {len(diff) - 8} more" if len(diff) > 8 else "")
            raise RunDirError(
                f"{self.run_dir}: config differs from the one this run started with "
                f"(hash {str(rec['config_hash'])[:12]}): {shown}"
            )
        if rec.get("input_digests"):
            try:
                recorded = json.loads(rec["input_digests"])
            except ValueError:
                raise TraceError(f"{db}: runs.input_digests is not JSON") from None
            changed = changed_inputs(recorded, self.inputs)
            if changed:
                raise RunDirError(f"{self.run_dir}: cannot resume into a different world: " + "; ".join(changed))

    def write_setup(self, store: TraceStore, world: World, wall_s: Callable[[], float]) -> None:
        """Commit step -1: the run row, the agents and the initial follow graph of the world; ``wall_s``
        gives the real seconds since the previous commit (read when the row is written)."""
        cfg, pop, state = self.cfg, world.population, world.state
        write_run_file(self.run_dir / "config.json", cfg.canonical_json())
        runs = {
            "run_id": [uuid.uuid4().hex],
            "name": [cfg.name],
            "config": [cfg.canonical_json()],
            "config_hash": [cfg.config_hash()],
            "seed": [cfg.seed],
            "perspective": [cfg.perspective],
            "socium_version": [socium.__version__],
            "python_version": [_stdlib_platform.python_version()],
            "duckdb_version": [duckdb.__version__],
            "created_at": [_now()],
            "input_digests": [inputs_json(self.inputs)],
            "event_loop": [event_loop_kind()],  # the driver's LLM loop (uvloop or asyncio): speed, not results
        }
        act = pa.FixedSizeListArray.from_arrays(pa.array(pop.activity.ravel()), 24).cast(pa.list_(pa.float32()))
        agents = pa.table(
            {
                "agent_id": pa.array(np.arange(len(pop), dtype=np.int64)),
                "name": pop.names,
                "username": pop.usernames,
                "bio": pop.bios,
                "interests": pa.array(pop.interests, pa.list_(pa.string())),
                "stance": pa.array(pop.stance.astype(np.float64), from_pandas=True),
                "goal": pa.array(pop.goals, pa.string()),
                "activity": act,
            }
        )
        src, dst = state.follows.edges()
        follows = pa.table(
            {
                "step": pa.array(np.full(len(src), -1, np.int32)),
                "seq": pa.array(np.arange(len(src), dtype=np.int32)),
                "src": pa.array(src.astype(np.int64)),
                "dst": pa.array(dst.astype(np.int64)),
                "event": pa.array(np.ones(len(src), np.int8)),
            }
        )
        store.append_step(
            -1,
            {"runs": runs, "agents": agents, "follow_events": follows},
            {
                "sim_time_s": 0.0,
                "n_active": 0,
                "n_actions": 0,
                "n_posts": 0,
                "n_exposures": 0,
                "wall_s": wall_s(),
                "committed_at": _now(),
            },
        )

    def restore(self, store: TraceStore, world: World) -> tuple[int, int] | None:
        """Rebuild platform, recommender and agent state of ``world`` by replaying the committed trace;
        returns the next ``call_id`` and the last committed step, or None when there is no committed step."""
        last = store.last_step()
        if last is None:  # cannot happen under the lock (checked by check_run_dir); kept for safety
            return None
        row = store.run_row()  # config and inputs were compared in _check_same_world
        if row is None:
            raise TraceError(f"{self.run_dir}: trace has committed steps but no run row")
        if last >= self.cfg.steps:
            raise RunDirError(
                f"{self.run_dir}: {last + 1} steps are already committed; steps={self.cfg.steps} "
                "would shorten the run (a run can be extended, not cut)"
            )
        con = store.con
        if json.loads(row["config"]).get("steps") != self.cfg.steps:
            self.extend_to(store, self.cfg.steps)
        state, pending, needs_profile = world.state, world.pending_results, world.needs_profile
        joins = rq.sign_ups_by_step(con)
        mod_events = rq.moderation_events_by_step(con)
        for step in range(0, last + 1):
            state.begin_step(step, world.clock.sim_time(step))
            for agent in joins.get(step, ()):
                world.signups.join(state, agent, record=False)
            acted: set[int] = set()
            for agent, typ, args, outcome, post_id, origin in rq.step_actions(con, step):
                if origin != "seed" and agent not in acted:  # it was observed this step: its pending
                    acted.add(agent)  # results were shown (and consumed) then
                    pending.pop(agent, None)
                if typ == "invalid_llm_output":
                    continue
                action = _recorded_action(step, agent, typ, args)
                got = state.apply(agent, action)
                if got.status != outcome or (got.post_id != post_id and post_id is not None):
                    raise TraceError(
                        f"replay diverged at step {step}, agent {agent}, action {typ}: "
                        f"recorded {outcome}/{post_id}, replayed {got.status}/{got.post_id}"
                    )
                if needs_profile and origin != "seed":
                    waiting = perspectives.pending_from(typ, getattr(action, "query", ""), got.results)
                    if waiting is not None:
                        pending[agent] = waiting
            shown = partial(exposures.served_at, con, step)  # read only for a recommender that remembers
            world.after_actions(step, recorded=mod_events.get(step, ()), shown=shown)
            if world.timing is not None and step < last:
                world.timing.due(step + 1)  # that wake-up already happened before the interruption
        world.moderation.restore_veracity(state, rq.post_veracity(con))
        for agent, stance in rq.latest_stances(con):
            world.population.stance[agent] = stance
        memory = world.memory
        if needs_profile and isinstance(memory, MemoryStream):
            memory.restore(rq.memory_entries(con))
            memory.active_steps = rq.llm_active_steps(con)
        elif needs_profile and self.cfg.llm_agents.memory_size:
            for step, agent, typ, args, outcome in rq.recent_own_actions(con, self.cfg.llm_agents.memory_size):
                remember(world, agent, memory_line(step, typ, json.loads(args), outcome))
        return rq.next_call_id(con), last

    def extend_to(self, store: TraceStore, steps: int) -> None:
        """Record a new stopping point: ``steps`` is not part of the world (it is left out of the config
        hash), so the run row and config.json are updated to say how far the run now goes."""
        rq.set_run_config(store.con, self.cfg.canonical_json())
        write_run_file(self.run_dir / "config.json", self.cfg.canonical_json())


def _recorded_action(step: int, agent: int, typ: str, args: str) -> Action:
    """An action row of the trace as a typed action; a damaged row is one :class:`TraceError` naming it
    (bad ``args`` was a pydantic or JSON traceback on ``--resume``)."""
    try:
        data = json.loads(args)
        if not isinstance(data, dict):
            raise ValueError("args is not a JSON object")
        return parse_action({**data, "type": typ})
    except (TypeError, ValueError) as exc:  # json.JSONDecodeError and pydantic.ValidationError are ValueErrors
        why = str(exc).splitlines()[0][:200]
        raise TraceError(
            f"trace damaged: the {typ!r} action of agent {agent} at step {step} cannot be read ({why}); "
            "the run cannot be resumed from this trace"
        ) from None


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def load_run_config(run_dir: str | Path, *, allow_plugins: bool = False) -> ExperimentConfig:
    """The config a run started with, read from its trace (the source of truth).

    A recorded dotted plugin path (``recsys.kind: pkg.mod:Class``) is refused unless ``allow_plugins``
    (for callers that only read the config and build nothing): a trace is data and must never make socium
    import code; the user names the plugin again by giving the config (``socium run CONFIG --resume``).
    """
    db = Path(run_dir) / "trace.duckdb"
    if not db.exists():
        raise RunDirError(f"{run_dir}: no trace.duckdb")
    row = read_run_row(db)
    if row is None:
        raise RunDirError(f"{run_dir}: no committed set-up to resume; give the CONFIG to start the run")
    try:
        data = json.loads(row["config"])
    except (TypeError, ValueError):
        raise TraceError(f"{db}: runs.config is not JSON") from None
    if not isinstance(data, dict):
        raise TraceError(f"{db}: runs.config is not a config mapping")
    if not allow_plugins and (plugins := recorded_plugins(data)):
        raise RunDirError(
            f"{run_dir}: the run's recorded config names code to import ({', '.join(plugins)}); socium never "
            f"imports code named by a trace: give the run's config again, `socium run CONFIG --resume --out {run_dir}`"
        )
    return config_from_dict(data, source=str(db))
