"""The simulation loop: activate, observe, decide, apply in a fixed order, commit one step.

``Simulation`` is a ``mesa.Model`` so Mesa users find the familiar face (``step()``, ``steps``),
but agents are columnar (see ``Population``) rather than one Mesa ``Agent`` object each, which is
what lets a million rule-based agents fit on a laptop.
"""

from __future__ import annotations

import gc
import json
import logging
import platform as _stdlib_platform  # the standard library module; socium never shadows it
import shutil
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import mesa
import numpy as np
import pyarrow as pa

import socium
from socium.agents import perspectives
from socium.agents.llm_policy import call_rows
from socium.agents.memory import MemoryStream, feed_query, make_memory
from socium.agents.observation import Decision, Observation
from socium.agents.routing import llm_route
from socium.agents.rules import RULE_POLICIES
from socium.config import ExperimentConfig, config_from_dict
from socium.errors import ConfigError, RunDirError, TraceError, UsageError
from socium.llm.base import event_loop_kind
from socium.llm.cache import llm_calls_ddl
from socium.moderation.engine import ModerationLayer
from socium.platform.actions import CreatePost, parse_action
from socium.platform.state import PlatformState
from socium.platform.text import quote_inline
from socium.recsys.registry import make_recommender
from socium.simulator import interviews as iv
from socium.simulator.executors import Executor, make_executor
from socium.simulator.inputs import changed_inputs, config_diff, inputs_json, preflight
from socium.simulator.llm_health import mark_aborted, spent_from_trace, step_problem
from socium.simulator.recording import StepRecorder, clean_action
from socium.simulator.rng import ACTIVATION, RECSYS, component_rng, root_key, uniform
from socium.simulator.rundir import REPLACED_BY_FORCE, RunDirLock, check_out_path, describe_owner, refuse_foreign
from socium.simulator.signups import SignUps
from socium.simulator.store import TraceStore, open_trace, read_run_row
from socium.simulator.surveys import run_surveys
from socium.simulator.timing import ExposureTiming, params_from_config
from socium.simulator.world import build_follows, build_population

log = logging.getLogger(__name__)


@dataclass
class StepStats:
    step: int
    sim_time_s: float
    n_active: int
    n_actions: int
    n_posts: int
    wall_s: float
    llm_calls: int = 0
    tokens: int = 0


class Simulation(mesa.Model):
    """One run: a config, a seed, a run directory holding ``trace.duckdb``."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        run_dir: str | Path,
        *,
        resume: bool = False,
        force: bool = False,
        policy: Any | None = None,
        executor: Executor | None = None,
    ) -> None:
        super().__init__(seed=cfg.seed)
        # Every commit records the real seconds since the previous one (or since this session began),
        # so summing ``steps.wall_s`` gives the run's real wall time: set-up, model loading and resume
        # included, not just the time spent inside steps.
        self._last_commit = time.perf_counter()
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.key = root_key(cfg.seed)
        self.notes: list[str] = []  # things the caller should tell the user (e.g. a resume that started fresh)
        # Everything that can be checked without the run directory is checked before it is created.
        check_out_path(self.run_dir)
        self.inputs = preflight(cfg)
        created = not self.run_dir.exists()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._lock = RunDirLock(self.run_dir)
        self.store: TraceStore | None = None
        self.executor: Any = None
        try:
            self._lock.acquire()  # before anything in the directory is read, deleted or written
            if self._lock.stale_owner:
                self.notes.append(f"took over a stale lock left by {describe_owner(self._lock.stale_owner)}")
            resume = self._check_run_dir(resume, force)
            self._build(policy, executor)
            self.store = TraceStore(self.run_dir / "trace.duckdb")
            self.store.ensure_table("llm_calls", llm_calls_ddl())
            if resume:
                self._restore()
            else:
                self._write_setup()
            if hasattr(self.policy, "spent"):  # budgets continue from what the trace already holds
                self.policy.spent = spent_from_trace(self.store.con)
        except BaseException:
            self._abandon(created)
            raise
        # The world built so far lives for the whole run: moving it out of the collector's view cuts
        # per-step GC pauses from ~0.5 s to ~0.01 s at 10^5 agents (benchmarks/bench_ray.py --gc-freeze).
        gc.collect()
        gc.freeze()

    def _build(self, policy: Any | None, executor: Executor | None) -> None:
        """Population, graph, platform, recommender, policy and executor (nothing is written)."""
        cfg = self.cfg
        self.population, following = build_population(cfg)
        if cfg.policy.kind == "bounded_confidence" and np.isnan(self.population.stance).all():
            raise ConfigError(
                "policy.kind 'bounded_confidence' needs stances: set population.stance to 'uniform' or 'bimodal'"
            )
        self.n = len(self.population)
        for sp in cfg.seed_posts:
            if sp.author >= self.n:
                raise ConfigError(f"seed_posts: author {sp.author} is not an agent id (population has {self.n})")
        for sa in cfg.seed_actions:
            if sa.agent >= self.n:
                raise ConfigError(f"seed_actions: agent {sa.agent} is not an agent id (population has {self.n})")
        for i, q in enumerate(cfg.interviews):
            if bad := [a for a in q.agents if not 0 <= a < self.n]:
                raise ConfigError(f"interviews[{i}].agents: {bad} are not agent ids (population has {self.n})")
        self.signups = SignUps(cfg.population.join_schedule, self.n)
        follows = self.signups.withhold(build_follows(cfg, self.n, following))
        pc = cfg.platform
        self.state = PlatformState(
            self.n,
            follows,
            pc.preset,
            pc.max_post_chars,
            pc.trend_window_steps,
            pc.search_limit,
            usernames=self.population.usernames,
            allow_self_rating=pc.allow_self_rating,
        )
        self.state.joined = self.signups.initial_joined()
        self.moderation = ModerationLayer(cfg.moderation, cfg.roles, self.n, self.key, cfg.perspective)
        self.moderation.apply_goals(self.population)
        self.recsys = self.moderation.wrap(make_recommender(cfg.recsys, self))  # removal/down-ranking in every feed
        tc = cfg.timing
        self.timing = (
            None
            if tc.kind == "activation"
            else ExposureTiming(
                params_from_config(tc),
                self.key,
                self.n,
                cfg.step_minutes * cfg.time_magnification,
                tc.max_delay_min,
                [x.get("user_id") for x in self.population.extra] if self.population.extra else None,
            )
        )
        self.policy = policy if policy is not None else self._make_policy()
        if hasattr(self.policy, "set_route"):  # before the executor ships the policy to workers
            self.policy.set_route(*llm_route(cfg, self.population))
        self.executor = executor if executor is not None else make_executor(cfg.executor, self.policy, cfg.seed)
        ac = cfg.llm_agents
        self.needs_profile = bool(getattr(self.policy, "needs_profile", False))
        # one memory slot per agent up front where agents remember (window: 8 bytes each until used)
        self.memory = make_memory(ac.memory, ac.memory_size, n_agents=self.n if self.needs_profile else 0)
        # search / trend results waiting for the agent's next observation: (action type, query, ids)
        self.pending_results: dict[int, tuple[str, str, list[int]]] = {}
        self.next_call_id = 0
        self.next_step = 0

    def _abandon(self, created: bool) -> None:
        """Undo a failed start: close what was opened, unlock, and remove a directory this call made."""
        for closer in (getattr(self.executor, "close", None), getattr(self.store, "close", None)):
            if closer is not None:
                try:
                    closer()
                except Exception:
                    pass
        if self._lock.held and not self._lock.existed:
            self._lock.path.unlink(missing_ok=True)  # leave the directory as it was (unlinked while held)
        self._lock.release()
        if created and self.run_dir.is_dir() and not any(self.run_dir.iterdir()):
            self.run_dir.rmdir()

    # ---- set-up and resume ------------------------------------------------------------------
    def _check_run_dir(self, resume: bool, force: bool) -> bool:
        """Decide (holding the lock) whether this is a resume or a fresh run; returns ``resume``."""
        db = self.run_dir / "trace.duckdb"
        if resume:
            if _has_setup(db):
                self._check_same_world(db)
                return True
            self.notes.append(f"{self.run_dir}: no committed set-up to resume, so the run starts from step 0")
        if db.exists() and not resume:
            if not force:
                last = _peek_last_step(db)
                state = (
                    "a finished run"
                    if last is not None and last >= self.cfg.steps - 1
                    else "an unfinished run (use --resume)"
                )
                raise RunDirError(f"{self.run_dir} already holds {state}; pass --force to overwrite")
        elif not force:
            refuse_foreign(self.run_dir, lock_is_ours=self._lock.existed)
        if force or db.exists():  # a trace with no committed set-up holds nothing worth keeping
            for name in REPLACED_BY_FORCE:
                (self.run_dir / name).unlink(missing_ok=True)
            shutil.rmtree(self.run_dir / "report", ignore_errors=True)
        return False

    def _check_same_world(self, db: Path) -> None:
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

    def _make_policy(self) -> Any:
        kind = self.cfg.policy.kind
        if kind == "llm":
            from socium.agents.llm_policy import make_llm_policy  # optional heavy import

            return make_llm_policy(self)
        if kind == "group_llm":
            from socium.agents.group_policy import make_group_policy

            return make_group_policy(self)
        return RULE_POLICIES[kind](self.cfg.policy, self.cfg.seed)

    def _write_setup(self) -> None:
        pop = self.population
        cfg = self.cfg
        (self.run_dir / "config.json").write_text(cfg.canonical_json(), encoding="utf-8")
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
                "agent_id": pa.array(np.arange(self.n, dtype=np.int64)),
                "name": pop.names,
                "username": pop.usernames,
                "bio": pop.bios,
                "interests": pa.array(pop.interests, pa.list_(pa.string())),
                "stance": pa.array(pop.stance.astype(np.float64), from_pandas=True),
                "goal": pa.array(pop.goals, pa.string()),
                "activity": act,
            }
        )
        src, dst = self.state.follows.edges()
        follows = pa.table(
            {
                "step": pa.array(np.full(len(src), -1, np.int32)),
                "seq": pa.array(np.arange(len(src), dtype=np.int32)),
                "src": pa.array(src.astype(np.int64)),
                "dst": pa.array(dst.astype(np.int64)),
                "event": pa.array(np.ones(len(src), np.int8)),
            }
        )
        self.store.append_step(
            -1,
            {"runs": runs, "agents": agents, "follow_events": follows},
            {
                "sim_time_s": 0.0,
                "n_active": 0,
                "n_actions": 0,
                "n_posts": 0,
                "n_exposures": 0,
                "wall_s": self._since_last_commit(),
                "committed_at": _now(),
            },
        )

    def _restore(self) -> None:
        """Rebuild platform, recommender and agent state by replaying the committed trace."""
        last = self.store.last_step()
        if last is None:  # cannot happen under the lock (checked by _check_run_dir); kept for safety
            self._write_setup()
            return
        row = self.store.run_row()  # config and inputs were compared in _check_same_world
        if row is None:
            raise TraceError(f"{self.run_dir}: trace has committed steps but no run row")
        if last >= self.cfg.steps:
            raise RunDirError(
                f"{self.run_dir}: {last + 1} steps are already committed; steps={self.cfg.steps} "
                "would shorten the run (a run can be extended, not cut)"
            )
        con = self.store.con
        if json.loads(row["config"]).get("steps") != self.cfg.steps:
            self._extend_to(self.cfg.steps)
        joins: dict[int, list[int]] = {}
        for step, agent in con.execute("SELECT step, agent_id FROM sign_ups ORDER BY step, agent_id").fetchall():
            joins.setdefault(step, []).append(agent)
        mod_events = self.moderation.recorded_events(con)
        for step in range(0, last + 1):
            self.state.begin_step(step, self.sim_time(step))
            for agent in joins.get(step, ()):
                self.signups.join(self.state, agent, record=False)
            rows = con.execute(
                "SELECT agent_id, type, args, outcome, post_id, origin FROM actions WHERE step = ? ORDER BY seq", [step]
            ).fetchall()
            acted: set[int] = set()
            for agent, typ, args, outcome, post_id, origin in rows:
                if origin != "seed" and agent not in acted:  # it was observed this step: its pending
                    acted.add(agent)  # results were shown (and consumed) then
                    self.pending_results.pop(agent, None)
                if typ == "invalid_llm_output":
                    continue
                action = parse_action({"type": typ, **json.loads(args)})
                got = self.state.apply(agent, action)
                if got.status != outcome or (got.post_id != post_id and post_id is not None):
                    raise TraceError(
                        f"replay diverged at step {step}, agent {agent}, action {typ}: "
                        f"recorded {outcome}/{post_id}, replayed {got.status}/{got.post_id}"
                    )
                if self.needs_profile and origin != "seed":
                    pending = perspectives.pending_from(typ, getattr(action, "query", ""), got.results)
                    if pending is not None:
                        self.pending_results[agent] = pending
            self.moderation.replay(self.state, step, mod_events.get(step, ()))
            self.recsys.observe(self.state, range(self.state.events.first_post, len(self.state.posts)), step)
            if self.timing is not None:
                self.timing.observe(self.state, range(self.state.events.first_post, len(self.state.posts)), step)
                if step < last:
                    self.timing.due(step + 1)  # that wake-up already happened before the interruption
        self.moderation.restore_veracity(self.state, con)
        for agent, stance in con.execute(
            "SELECT agent_id, arg_max(stance, step) FROM stances GROUP BY agent_id"
        ).fetchall():
            self.population.stance[agent] = stance
        if self.needs_profile and isinstance(self.memory, MemoryStream):
            self.memory.restore(
                con.execute("SELECT step, agent_id, kind, text, importance FROM memories ORDER BY step, seq").fetchall()
            )
            self.memory.active_steps = {
                int(a): int(n)
                for a, n in con.execute(
                    "SELECT agent_id, count(DISTINCT step) FROM actions WHERE origin = 'llm' GROUP BY 1"
                ).fetchall()
            }
        elif self.needs_profile and self.cfg.llm_agents.memory_size:
            rows = con.execute(
                "SELECT step, agent_id, type, args, outcome FROM (SELECT *, row_number() OVER "
                "(PARTITION BY agent_id ORDER BY step DESC, seq DESC) AS r FROM actions WHERE origin != 'seed') "
                "WHERE r <= ? ORDER BY step, seq",
                [self.cfg.llm_agents.memory_size],
            ).fetchall()
            for step, agent, typ, args, outcome in rows:
                self._remember(agent, memory_line(step, typ, json.loads(args), outcome))
        self.next_call_id = int(con.execute("SELECT coalesce(max(call_id), -1) + 1 FROM llm_calls").fetchone()[0])
        if hasattr(self.policy, "restore"):
            self.policy.restore(self)
        self.next_step = last + 1

    def _extend_to(self, steps: int) -> None:
        """Record a new stopping point: ``steps`` is not part of the world (it is left out of the config
        hash), so the run row and config.json are updated to say how far the run now goes."""
        con = self.store.con
        con.begin()
        try:
            con.execute("UPDATE runs SET config = ?", [self.cfg.canonical_json()])
            con.commit()
        except Exception:
            con.rollback()
            raise
        (self.run_dir / "config.json").write_text(self.cfg.canonical_json(), encoding="utf-8")

    def _since_last_commit(self) -> float:
        now = time.perf_counter()
        dt, self._last_commit = now - self._last_commit, now
        return dt

    # ---- the clock --------------------------------------------------------------------------
    def sim_time(self, step: int) -> float:
        """Simulated seconds since step 0: ``step_minutes`` x ``time_magnification`` per step."""
        return step * self.cfg.step_minutes * self.cfg.time_magnification * 60.0

    def hour(self, step: int) -> int:
        start = self.cfg.start_datetime
        minutes = (start.minute + start.second / 60.0) if start is not None else 0.0
        elapsed_min = step * self.cfg.step_minutes * self.cfg.time_magnification  # not via seconds: no rounding drift
        return int(self.cfg.start_hour + (minutes + elapsed_min) // 60) % 24

    def sim_datetime(self, step: int) -> datetime | None:
        """The real date and time a step stands for (``start_datetime``), or None without one."""
        start = self.cfg.start_datetime
        return None if start is None else start + timedelta(seconds=self.sim_time(step))

    def active_agents(self, step: int) -> np.ndarray:
        """Agents active this step: one per-agent draw against that agent's probability for the hour,
        plus (``timing.kind: exposure``) the agents whose response delay to a post ends this step."""
        if self.timing is not None and not self.cfg.timing.background:
            on = np.zeros(self.n, dtype=bool)
        else:
            p = self.population.activity[:, self.hour(step)]
            on = uniform(self.key, ACTIVATION, step, np.arange(self.n)) < p
        if self.timing is not None:
            on[self.timing.due(step)] = True
        if self.state.joined is not None:
            on &= self.state.joined
        if self.state.mod.suspended:  # a suspended account is never woken (and could not act if it were)
            on[list(self.state.mod.suspended)] = False
        return np.flatnonzero(on)

    # ---- one step ---------------------------------------------------------------------------
    def _decide(self, active: np.ndarray, step: int, rec: StepRecorder) -> tuple[list[Decision], list[Observation]]:
        """Observe and decide for the active agents, ``executor.step_chunk`` policy-bound agents at a time.

        Why chunks: a step's observations, prompts and answers in flight cost ~20-35 KB per activation,
        so at 5% of 10^6 agents a whole step at once peaks at GBs; a chunk bounds that by its size.
        The results are those of the whole step: every feed is ranked for all active agents at once
        (the recommender's draws are per step), observations are built before any decision of the step
        is applied, and each chunk's calls are kept only as their ``llm_calls`` rows. Returns the
        decisions sorted by agent id (bots' rule decisions included) and the observations moderation
        still needs after the step's actions (fact-checkers', prebunked ones)."""
        st = self.state
        feeds = self.recsys.feeds(st, active, self.cfg.recsys.k, step, component_rng(self.cfg.seed, RECSYS, step))
        decisions: list[Decision] = []
        fixed: list[Decision] = []
        kept: list[Observation] = []
        for lo, hi in self._chunks(active):
            observations = self.observe(active[lo:hi], step, rec, feeds[lo:hi])
            observations, bots = self.moderation.split(observations, st)  # bots act by rule, not by the policy
            self.moderation.annotate(observations, st)  # labels, notes, ground truth, prebunking: as users see them
            got = self.executor.run(observations)
            for d in got:  # the calls leave the decisions now, as log rows only (RenderedRequest)
                calls = d.meta.pop("llm_calls", None)
                if calls:
                    rec.calls.extend(calls)
                if unshown := d.meta.pop("unshown", None):  # trimmed to fit the context: not shown after all
                    rec.withdraw_exposures(d.agent_id, unshown)
            decisions += got
            fixed += bots
            kept += [o for o in observations if self.moderation.needed_after_actions(o)]
            del observations, got
        return (sorted(fixed + decisions, key=lambda d: d.agent_id) if fixed else decisions), kept

    def _chunks(self, active: np.ndarray) -> list[tuple[int, int]]:
        """``[lo, hi)`` slices of ``active`` (sorted) that each hold the policy's chunk of policy-bound
        agents (bots are not counted: they make no call); one slice when the policy cannot be split
        or agents use the stream memory."""
        ex = self.cfg.executor
        size = ex.step_chunk
        hook = getattr(self.policy, "step_chunk", None)
        if not size or hook is None or not self.needs_profile or isinstance(self.memory, MemoryStream):
            # stream memory embeds a step's queries and new entries in batches, and a model's batch
            # (padding, kernel shapes) can move a float: its steps stay whole so the trace cannot depend on it
            return [(0, len(active))]
        # never below twice what can be in flight at once, or the chunks would starve the servers: with Ray
        # each actor's backend is capped at concurrency_per_actor, in-process the backend at llm.max_concurrency
        llm = self.cfg.llm
        in_flight = ex.actors * ex.concurrency_per_actor if ex.kind == "ray" else ex.concurrency_per_actor
        if ex.kind != "ray" and llm is not None:
            in_flight = max(in_flight, llm.max_concurrency)
        floor = 2 * in_flight
        per = hook(max(size, floor))
        if per is None or per >= len(active):
            return [(0, len(active))]
        counted = np.cumsum(self.moderation.policy_bound(active))
        cuts = np.searchsorted(counted, np.arange(per, int(counted[-1]), per), side="right").tolist()
        bounds = [0, *cuts, len(active)]
        return [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]

    def observe(
        self, users: np.ndarray, step: int, rec: StepRecorder, feeds: Sequence[Any] | None = None
    ) -> list[Observation]:
        """Observations of ``users``; ``feeds``: their feeds, already ranked (else ranked here)."""
        st = self.state
        if feeds is None:
            feeds = self.recsys.feeds(st, users, self.cfg.recsys.k, step, component_rng(self.cfg.seed, RECSYS, step))
        need_adopt = getattr(self.policy, "needs_adoption", False)
        stance = self.population.stance
        names = self.population.usernames
        obs = []
        for u, feed in zip(users.tolist(), feeds):
            rec.exposure(u, feed.post_ids, feed.sources)
            followees = set(st.follows.followees(u).tolist()) if need_adopt else None
            items = [
                perspectives.feed_item(st, names, stance, u, pid, src, rank, followees)
                for rank, (pid, src) in enumerate(zip(feed.post_ids, feed.sources))
            ]
            s_u = float(stance[u])
            o = Observation(u, step, st.time, self.hour(step), items, None if np.isnan(s_u) else s_u)
            if self.needs_profile:  # what the perspective shows an LLM agent: agents/perspectives.py
                perspectives.fill_observation(self, o, rec)
            obs.append(o)
        if self.needs_profile and isinstance(self.memory, MemoryStream):
            self._recall_stream(obs)
        return obs

    def _recall_stream(self, obs: list[Observation]) -> None:
        """Stream memory: retrieve for every observation at once (one embedding batch for all queries),
        then store what each agent is shown now as observations for later steps."""
        mem = self.memory
        assert isinstance(mem, MemoryStream)
        queries = [feed_query([it.text for it in o.feed]) for o in obs]
        mem.prime_queries(queries)
        hours = self.cfg.step_minutes / 60.0
        for o, q in zip(obs, queries):
            o.extra["memory"] = mem.recall(o.agent_id, o.step, q, hours)
        if mem.cfg.observe_feed:
            names = self.population.usernames
            for o in obs:
                for it in (*o.feed, *o.results):  # search / trend results are shown like feed posts
                    mem.add(
                        o.agent_id,
                        o.step,
                        "observation",
                        f"@{names[it.author]} ({it.kind}): {it.text[:200]}",
                        engagement=it.likes + it.reposts + it.comments,
                        ref_post_id=it.post_id,
                    )
                for g in o.groups:  # what others said in its groups, once each (its own messages are actions)
                    for at, author, username, text in g.messages if g.member else ():
                        line = f"@{username} in group {g.name} (step {at}): {text[:200]}"
                        if author != o.agent_id and not mem.holds(o.agent_id, "message", line):
                            mem.add(o.agent_id, o.step, "message", line)

    def _remember(self, agent: int, line: str, action_type: str | None = None) -> None:
        """An own action (or an invalid answer) goes into the agent's memory."""
        step = self.state.step
        if isinstance(self.memory, MemoryStream):
            line = line.split(": ", 1)[1] if line.startswith(f"step {step}: ") else line
        self.memory.add(agent, step, "action", line, action_type=action_type or "invalid")

    def _memory_step(self, active: np.ndarray, rec: StepRecorder) -> dict[str, list] | None:
        """Stream memory only: LLM-rated importance, reflections due, and the step's ``memories`` rows."""
        mem = self.memory
        if not isinstance(mem, MemoryStream) or not self.needs_profile:
            return None
        step = self.state.step
        agents = [int(a) for a in active]
        if mem.cfg.importance == "llm" and hasattr(self.policy, "rate_importance"):
            pending = mem.pending_by_agent()
            todo = [(self.population.profile(a), [mem.texts[i] for i in pending[a]]) for a in sorted(pending)]
            ratings, calls = self.policy.rate_importance(todo, step)
            rec.calls.extend(calls)
            for a, vals in zip(sorted(pending), ratings):
                if vals is not None:
                    mem.set_importance(pending[a], vals)
        mem.note_active(agents)
        due = mem.due_for_reflection(agents)
        if due and hasattr(self.policy, "reflect"):
            n_src = mem.cfg.reflection_sources
            people = [(self.population.profile(a), mem.recent(a, n_src)) for a in due]
            insights, calls = self.policy.reflect(people, step, mem.cfg.reflection_insights)
            rec.calls.extend(calls)
            for a, got in zip(due, insights):
                for text in got:
                    mem.add(a, step, "reflection", text)
        return mem.drain_rows()

    def apply_decisions(self, decisions: list[Decision], rec: StepRecorder) -> int:
        n = 0
        maxc = self.cfg.platform.max_post_chars
        for d in decisions:
            calls = d.meta.get("llm_calls")
            if calls:
                rec.calls.extend(calls)
            if d.invalid_reason is not None:
                rec.invalid_output(d.agent_id, "llm", d.invalid_reason, d.raw)
                if self.needs_profile:
                    self._remember(d.agent_id, f"step {self.state.step}: (your answer was invalid)", "invalid")
                n += 1
            for action in d.actions:
                action, trunc, san = clean_action(action, maxc)
                out = self.state.apply(d.agent_id, action)
                if out.post_id is not None and "veracity" in d.meta:  # a seed post's configured ground truth
                    self.moderation.seed_veracity[out.post_id] = d.meta["veracity"]
                if out.post_id is not None and (trunc or san):
                    rec.flags[out.post_id] = (trunc, san)
                rec.action(d.agent_id, d.meta.get("origin", "policy"), action, out, d.meta.get("reason"))
                if self.needs_profile and d.meta.get("origin") != "seed":
                    self._remember(
                        d.agent_id,
                        memory_line(self.state.step, action.type, action.model_dump(exclude={"type"}), out.status),
                        action.type,
                    )
                if self.needs_profile:  # shown (and only then recorded as exposures) in its next observation
                    pending = perspectives.pending_from(action.type, getattr(action, "query", ""), out.results)
                    if pending is not None:
                        self.pending_results[d.agent_id] = pending
                n += 1
            if d.stance is not None:
                self.population.stance[d.agent_id] = d.stance
                rec.stance(d.agent_id, d.stance)
        return n

    def _wrapped_step(self, *args: Any, **kwargs: Any) -> StepStats:
        """Mesa wraps :meth:`step` to count steps and drops its value; keep the count, return the stats."""
        self.steps += 1
        return self._user_step(*args, **kwargs)

    def step(
        self,
        actions: Mapping[int, Sequence[Any]] | None = None,
        active: Sequence[int] | None = None,
        sign_up: Sequence[int] | None = None,
    ) -> StepStats:
        """Simulate and commit one step, optionally steered from Python (an environment-style API).

        ``actions``: ``{agent_id: [Action or action dict, ...]}`` applied first, in agent-id order, with
        ``origin = 'manual'`` (they enter the agents' memory like their own choices); ``active``: exactly
        who decides through the policy this step instead of the hourly draw (``[]``: nobody);
        ``sign_up``: agents that join the platform at the start of this step. Everything lands in the
        step's transaction, so a resumed run rebuilds the same world from the trace. Driving stops
        at ``cfg.steps`` (what resume and the card read as the run's length); raise it to go further.
        """
        if self.next_step >= self.cfg.steps:
            raise UsageError(f"step {self.next_step}: all steps={self.cfg.steps} of the config are committed")
        return self.advance(actions=actions, active=active, sign_up=sign_up)

    def _manual(self, actions: Mapping[int, Sequence[Any]] | None) -> list[Decision]:
        out = []
        for agent in sorted(actions or {}):
            if not 0 <= agent < self.n:
                raise UsageError(f"actions: agent {agent} is not an agent id (population has {self.n})")
            parsed = []
            for a in actions[agent]:  # type: ignore[index]
                try:
                    parsed.append(parse_action(a.model_dump() if hasattr(a, "model_dump") else a))
                except ValueError as exc:
                    raise UsageError(f"actions[{agent}]: {a!r} is not a valid action: {exc}") from None
            out.append(Decision(agent, parsed, meta={"origin": "manual"}))
        return out

    def _chosen(self, active: Sequence[int]) -> np.ndarray:
        ids = np.unique(np.asarray(list(active), dtype=np.int64))
        for a in ids.tolist():
            if not 0 <= a < self.n:
                raise UsageError(f"active: agent {a} is not an agent id (population has {self.n})")
        return ids

    def _sign_up(self, step: int, asked: Sequence[int], rec: StepRecorder) -> None:
        st = self.state
        due = [(a, "schedule") for a in self.signups.due.get(step, ()) if st.joined is not None and not st.joined[a]]
        who = sorted(due + [(int(a), "manual") for a in asked])
        for agent, origin in who:
            self.signups.join(st, agent)
            rec.extra.setdefault("sign_ups", {"step": [], "agent_id": [], "origin": []})
            for k, v in (("step", step), ("agent_id", agent), ("origin", origin)):
                rec.extra["sign_ups"][k].append(v)

    def advance(
        self,
        actions: Mapping[int, Sequence[Any]] | None = None,
        active: Sequence[int] | None = None,
        sign_up: Sequence[int] | None = None,
    ) -> StepStats:
        """Simulate and commit one step (see :meth:`step` for the arguments)."""
        t0 = time.perf_counter()
        step = self.next_step
        st = self.state
        manual = self._manual(actions)  # checked before anything changes, so a bad call leaves the world as it was
        chosen = None if active is None else self._chosen(active)
        asked = sorted({int(a) for a in sign_up or ()})
        self.signups.check(st, asked)
        if chosen is not None and st.joined is not None:
            will = st.joined.copy()
            will[asked + list(self.signups.due.get(step, ()))] = True
            if (out := chosen[~will[chosen]]).size:
                raise UsageError(f"active: agent(s) {out.tolist()} have not signed up")
        st.begin_step(step, self.sim_time(step))
        rec = StepRecorder(step)
        self._sign_up(step, asked, rec)
        seeds = [
            Decision(sp.author, [CreatePost(content=sp.content)], meta={"origin": "seed", **seed_truth(sp)})
            for sp in self.cfg.seed_posts
            if sp.step == step
        ]
        seeds += [
            Decision(sa.agent, [parse_action(sa.action)], meta={"origin": "seed"})
            for sa in self.cfg.seed_actions
            if sa.step == step
        ]
        n_actions = self.apply_decisions(seeds, rec)
        n_actions += self.apply_decisions(manual, rec)
        active = self.active_agents(step) if chosen is None else chosen
        try:
            decisions, observations = self._decide(active, step, rec)
            decisions += self.moderation.extra_decisions(observations, st)  # fact-checkers' reports
            n_actions += self.apply_decisions(decisions, rec)
            new_posts = range(st.events.first_post, len(st.posts))
            moderated = self.moderation.after_actions(
                st, step, self.population.stance, st.events.first_post, observations
            )
            self.recsys.observe(st, new_posts, step)
            if self.timing is not None:
                self.timing.observe(st, new_posts, step)
            run_surveys(self, step, rec)
            asked_q = []
            for q in self.cfg.interviews:
                if q.step == step:
                    answered, calls = iv.ask(self, q.agents, q.question, step)
                    rec.calls.extend(calls)
                    asked_q.append((q.question, answered))
            memories = self._memory_step(active, rec)
        except BaseException:
            self._log_aborted_calls(step, rec.calls + getattr(self.policy, "drain_calls", list)())
            raise
        problem = step_problem(rec.calls, self.cfg.llm, step)
        if problem is not None:
            self._log_aborted_calls(step, rec.calls)
            raise problem
        batches = rec.batches(st)
        batches.update(moderated)
        if memories:
            batches["memories"] = memories
        ids: dict[str, int] = {}
        if rec.calls:
            batches["llm_calls"] = call_rows(rec.calls, self.next_call_id)
            self.next_call_id += len(rec.calls)
            ids = dict(zip(batches["llm_calls"]["request_id"], batches["llm_calls"]["call_id"]))
        if asked_q:
            batches["interviews"] = interview_table([iv.rows(step, q, a, ids, "config") for q, a in asked_q])
        for name, extra in getattr(self.policy, "drain_rows", lambda: {})().items():
            batches[name] = extra
        wall = time.perf_counter() - t0
        self.store.append_step(
            step,
            batches,
            {
                "sim_time_s": st.time,
                "n_active": len(active),
                "n_actions": n_actions,
                "n_posts": len(new_posts),
                "n_exposures": len(rec.exposures["step"]),
                "wall_s": self._since_last_commit(),
                "committed_at": _now(),
                "sim_datetime": _naive(self.sim_datetime(step)),
            },
        )
        self.next_step = step + 1
        tokens = sum((c[2].prompt_tokens or 0) + (c[2].completion_tokens or 0) for c in rec.calls)
        return StepStats(step, st.time, len(active), n_actions, len(new_posts), wall, len(rec.calls), tokens)

    def interview(self, agents: Sequence[int], question: str) -> dict[int, str]:
        """Ask agents a question now, with their memory as of the last committed step; the answers are
        stored in ``interviews`` (origin 'python') with their ``llm_calls`` rows, in one transaction."""
        step = self.next_step - 1
        answered, calls = iv.ask(self, [int(a) for a in agents], question, step)
        batches: dict[str, Any] = {}
        ids: dict[str, int] = {}
        if calls:
            batches["llm_calls"] = call_rows(calls, self.next_call_id)
            ids = dict(zip(batches["llm_calls"]["request_id"], batches["llm_calls"]["call_id"]))
        batches["interviews"] = interview_table([iv.rows(step, question, answered, ids, "python")])
        self.store.append_rows(batches)
        self.next_call_id += len(calls)
        return {a: text for a, _rid, text in answered}

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _log_aborted_calls(self, step: int, calls: list) -> None:
        """Write the model calls of a step that will not be committed, in their own transaction.

        They were made (and paid for): the call log and the budgets of a resumed run must count
        them. The step itself stays uncommitted, so a resume redoes it from the same state.
        """
        if not calls:
            return
        try:
            rows = mark_aborted(call_rows(calls, self.next_call_id), step)
            self.store.append_rows({"llm_calls": rows})
            self.next_call_id += len(calls)
        except Exception as exc:  # noqa: BLE001 - never hide the error that stopped the step
            log.warning("could not log the %d model calls of aborted step %d: %s", len(calls), step, exc)

    def run(self, steps: int | None = None, on_step: Callable[[StepStats], None] | None = None) -> list[StepStats]:
        """Run until ``cfg.steps`` steps are committed (or ``steps`` more)."""
        end = self.cfg.steps if steps is None else min(self.cfg.steps, self.next_step + steps)
        out = []
        try:
            while self.next_step < end:
                stats = self.advance()
                out.append(stats)
                if on_step:
                    on_step(stats)
        finally:
            self.close()
        return out

    def close(self) -> None:
        if getattr(self, "_closed", False):  # run() closes, and so does leaving a `with` block
            return
        self._closed = True
        gc.unfreeze()
        try:
            self.executor.close()
            if self.store is not None:
                self.store.close()
        finally:
            self._lock.release()


def seed_truth(sp: Any) -> dict[str, int]:
    """A seed post's configured veracity as decision metadata (nothing when it has none)."""
    from socium.moderation.config import VERACITY

    return {"veracity": VERACITY.index(sp.veracity)} if sp.veracity else {}


def interview_table(parts: list[dict[str, list]]) -> pa.Table:
    cols: dict[str, list] = {k: [] for k in iv.COLUMNS}
    for p in parts:
        cols = iv.merge(cols, p)
    return pa.table(
        {k: pa.array(v, type=pa.int64() if k in ("call_id", "agent_id") else None) for k, v in cols.items()}
    )


def memory_line(step: int, typ: str, args: dict, outcome: str) -> str:
    """One remembered own action, one line, short and bounded (agent text is cut to 80 characters)."""
    parts = []
    for k, v in sorted(args.items()):
        if isinstance(v, str):
            v = quote_inline(v, 80)
        parts.append(f"{k}={v}")
    note = "" if outcome == "ok" else f" [{outcome}]"
    return f"step {step}: {typ} {' '.join(parts)}{note}".strip()


def _naive(t: datetime | None) -> datetime | None:
    return t if t is None or t.tzinfo is None else t.astimezone(timezone.utc).replace(tzinfo=None)


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _has_setup(db: Path) -> bool:
    """Whether a trace holds the committed set-up (the ``steps`` row of step -1)."""
    return db.exists() and _peek_last_step(db, strict=True) is not None


def _peek_last_step(db: Path, strict: bool = False) -> int | None:
    """The last committed step; with ``strict`` a corrupt trace raises :class:`TraceError` instead of None."""
    try:
        con = open_trace(db)
    except TraceError:
        if strict:
            raise
        return None
    try:
        row = con.execute("SELECT max(step) FROM steps").fetchone()
        return None if row is None or row[0] is None else int(row[0])
    except duckdb.CatalogException:
        return None  # killed before the schema was created
    except duckdb.Error as exc:
        if strict:
            raise TraceError(f"{db}: not a readable socium trace: {str(exc).splitlines()[0]}") from None
        return None
    finally:
        con.close()


def load_run_config(run_dir: str | Path) -> ExperimentConfig:
    """The config a run started with, read from its trace (the source of truth)."""
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
    return config_from_dict(data, source=str(db))
