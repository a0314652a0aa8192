"""The simulation loop: activate, observe, decide, apply in a fixed order, commit one step.

``Simulation`` is a ``mesa.Model`` so Mesa users find the familiar face (``step()``, ``steps``),
but agents are columnar (see ``Population``) rather than one Mesa ``Agent`` object each, which is
what lets a million rule-based agents fit on a laptop.

Composed of parts it holds and calls: ``setup`` (``RunSetUp``: run directory, set-up commit, resume)
and ``agent_steps`` (``StepAgents``: observe, decide, apply, remember). The policy is asked only
through ``caps`` (:class:`~socium.core.policy.PolicyCapabilities`, found once when it is built).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any

import mesa
import numpy as np

from socium.agents import perspectives
from socium.agents.call_log import CallLog
from socium.agents.llm_policy import call_rows
from socium.agents.memory import make_memory
from socium.agents.routing import llm_route
from socium.config.experiment import ExperimentConfig
from socium.core.contracts import Decision, Observation
from socium.core.policy import Policy, PolicyCapabilities, capabilities_of
from socium.core.rng import ACTIVATION, root_key, uniform
from socium.errors import ConfigError, UsageError
from socium.llm.cache import llm_calls_ddl
from socium.moderation.engine import ModerationLayer
from socium.platform.state import PlatformState
from socium.recsys.base import served_hook
from socium.recsys.registry import make_recommender
from socium.simulator import interviews as iv
from socium.simulator import steering
from socium.simulator.executors import Executor, make_executor
from socium.simulator.inputs import preflight
from socium.simulator.interviews import table as interview_table
from socium.simulator.llm_health import OutputHealth, log_aborted_calls, spent_from_trace, step_committed, step_problem
from socium.simulator.recording import StepRecorder
from socium.simulator.run_setup import RunSetUp, _now, load_run_config
from socium.simulator.signups import SignUps
from socium.simulator.steering import seed_truth
from socium.simulator.step_agents import StepAgents, memory_line
from socium.simulator.step_gc import step_gc
from socium.simulator.surveys import run_surveys
from socium.simulator.timing import ExposureTiming, params_from_config
from socium.simulator.world import build_follows, build_population, couple_to_followers
from socium.trace.rundir import RunDirLock, check_out_path, describe_owner
from socium.trace.store import TraceStore

#: Names that moved to run_setup / step_agents / interviews and are still imported from here.
__all__ = [
    "Simulation",
    "StepStats",
    "interview_table",
    "load_run_config",
    "memory_line",
    "seed_truth",
]

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
        policy: Policy | None = None,
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
        self.executor: Executor | None = None
        self.setup = RunSetUp(self.run_dir, cfg, self.inputs, self.notes)
        try:
            self._lock.acquire()  # before anything in the directory is read, deleted or written
            if self._lock.stale_owner:
                self.notes.append(f"took over a stale lock left by {describe_owner(self._lock.stale_owner)}")
            resume = self.setup.check_run_dir(resume, force, self._lock.existed)
            self._build(policy, executor)
            self.store = TraceStore(self.run_dir / "trace.duckdb")
            self.store.ensure_table("llm_calls", llm_calls_ddl())
            if not (resume and self._restore()):
                self.setup.write_setup(self.store, self.population, self.state, self._since_last_commit)
            if self.caps.budgets is not None:  # budgets continue from what the trace already holds
                self.caps.budgets.spent = spent_from_trace(self.store.con)
        except BaseException:
            self._abandon(created)
            raise
        # The world built so far lives for the whole run: moving it out of the collector's view cuts
        # per-step GC pauses from ~0.5 s to ~0.01 s at 10^5 agents (benchmarks/bench_ray.py --gc-freeze).
        gc.collect()
        gc.freeze()

    def _build(self, policy: Policy | None, executor: Executor | None) -> None:
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
        follows = build_follows(cfg, self.n, following)
        couple_to_followers(cfg, self.population, follows)  # population.activity_follower_corr
        follows = self.signups.withhold(follows)
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
        self._served = served_hook(self.recsys)  # foryou remembers what it served (None for the others)
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
                tc.condition_minute,
            )
        )
        self.policy: Policy = policy if policy is not None else self.setup.make_policy(self.population)
        # what the policy can do, found once (a policy without the required core is refused here)
        self.caps: PolicyCapabilities = capabilities_of(self.policy)
        if self.caps.route is not None:  # before the executor ships the policy to workers
            self.caps.route.set_route(*llm_route(cfg, self.population))
        self.executor = (
            executor if executor is not None else make_executor(cfg.executor, self.policy, cfg.seed, self.caps)
        )
        ac = cfg.llm_agents
        self.needs_profile = self.caps.needs_profile
        # one memory slot per agent up front where agents remember (window: 8 bytes each until used)
        self.memory = make_memory(ac.memory, ac.memory_size, n_agents=self.n if self.needs_profile else 0)
        # search / trend results waiting for the agent's next observation: (action type, query, ids)
        self.pending_results: dict[int, tuple[str, str, list[int]]] = {}
        self.next_call_id = self.next_step = 0
        self.health = OutputHealth(getattr(cfg.llm, "min_valid_fraction", None))  # llm.min_valid_fraction
        self.agent_steps = StepAgents(
            cfg,
            state=self.state,
            population=self.population,
            recsys=self.recsys,
            moderation=self.moderation,
            executor=self.executor,
            caps=self.caps,
            memory=self.memory,
            pending_results=self.pending_results,
            hour=self.hour,
            fill=partial(perspectives.fill_observation, self),
        )

    def _restore(self) -> bool:
        """Resume: replay the committed trace (``RunSetUp.restore``), then let the policy restore its own
        state; False when the trace holds no committed step to replay."""
        got = self.setup.restore(
            self.trace_store,
            state=self.state,
            signups=self.signups,
            moderation=self.moderation,
            recsys=self.recsys,
            timing=self.timing,
            population=self.population,
            memory=self.memory,
            pending_results=self.pending_results,
            needs_profile=self.needs_profile,
            sim_time=self.sim_time,
            remember=self.agent_steps.remember,
        )
        if got is None:
            return False
        self.next_call_id, last = got
        if self.caps.restorer is not None:
            self.caps.restorer.restore(self)
        self.next_step = last + 1
        return True

    def _abandon(self, created: bool) -> None:
        """Undo a failed start: close what was opened, unlock, and remove a directory this call made."""
        for part in (self.executor, self.store):
            if part is not None:
                try:
                    part.close()
                except Exception:
                    pass
        if self._lock.held and not self._lock.existed:
            self._lock.path.unlink(missing_ok=True)  # leave the directory as it was (unlinked while held)
        self._lock.release()
        if created and self.run_dir.is_dir() and not any(self.run_dir.iterdir()):
            self.run_dir.rmdir()

    @property
    def trace_store(self) -> TraceStore:
        """The run's open trace store (opened in set-up, before anything is written or replayed)."""
        if self.store is None:
            raise UsageError(f"{self.run_dir}: the trace store is not open")
        return self.store

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

    # ---- the agents' part of a step (socium.simulator.step_agents) ---------------------------
    def observe(
        self, users: np.ndarray, step: int, rec: StepRecorder, feeds: Sequence[Any] | None = None
    ) -> list[Observation]:
        """Observations of ``users``; ``feeds``: their feeds, already ranked (else ranked here)."""
        return self.agent_steps.observe(users, step, rec, feeds)

    def apply_decisions(self, decisions: list[Decision], rec: StepRecorder) -> int:
        """Apply decisions in order to the platform, record them, and let the agents remember them."""
        return self.agent_steps.apply_decisions(decisions, rec)

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

    def advance(
        self,
        actions: Mapping[int, Sequence[Any]] | None = None,
        active: Sequence[int] | None = None,
        sign_up: Sequence[int] | None = None,
    ) -> StepStats:
        """Simulate and commit one step (see :meth:`step` for the arguments)."""
        with step_gc():
            return self._advance(actions, active, sign_up)

    def _advance(
        self,
        actions: Mapping[int, Sequence[Any]] | None,
        active: Sequence[int] | None,
        sign_up: Sequence[int] | None,
    ) -> StepStats:
        t0 = time.perf_counter()
        step = self.next_step
        st = self.state
        manual = steering.manual_decisions(actions, self.n)  # checked first: a bad call leaves the world as it was
        chosen = None if active is None else steering.chosen_agents(active, self.n)
        asked = sorted({int(a) for a in sign_up or ()})
        self.signups.check(st, asked)
        steering.check_signed_up(chosen, st, self.signups, step, asked)
        st.begin_step(step, self.sim_time(step))
        rec = StepRecorder(step)
        steering.sign_up_agents(self.signups, st, step, asked, rec)
        n_actions = self.apply_decisions(steering.seed_decisions(self.cfg, step), rec)
        n_actions += self.apply_decisions(manual, rec)
        who = self.active_agents(step) if chosen is None else chosen
        try:
            decisions, observations = self.agent_steps.decide(who, step, rec)
            decisions += self.moderation.extra_decisions(observations, st)  # fact-checkers' reports
            n_actions += self.apply_decisions(decisions, rec)
            new_posts = range(st.events.first_post, len(st.posts))
            moderated = self.moderation.after_actions(
                st, step, self.population.stance, st.events.first_post, observations
            )
            if self._served is not None:
                shown = rec.exposures
                self._served(st, step, np.asarray(shown["agent_id"], np.int64), np.asarray(shown["post_id"], np.int64))
            self.recsys.observe(st, new_posts, step)
            if self.timing is not None:
                self.timing.observe(st, new_posts, step)
            run_surveys(
                self.cfg.surveys,
                step,
                rec,
                asker=self.caps.surveys,
                population=self.population,
                memory=self.memory,
                joined=st.joined,
                key=self.key,
            )
            asked_q = []
            for q in self.cfg.interviews:
                if q.step == step:
                    answered, calls = iv.ask(
                        self.caps.interviews, self.population, self.memory, q.agents, q.question, step
                    )
                    rec.calls.extend(calls)
                    asked_q.append((q.question, answered))
            memories = self.agent_steps.memory_step(who, rec)
        except BaseException:
            if self.caps.calls is not None:
                rec.calls.extend(self.caps.calls.drain_calls())
            self._log_aborted_calls(step, rec.calls)
            raise
        problem = step_problem(rec.calls.n, rec.calls.kept, self.cfg.llm, step) or self.health.check(step, rec.actions)
        if problem is not None:
            self._log_aborted_calls(step, rec.calls)
            raise problem
        first_call_id = self.next_call_id
        try:
            batches = rec.batches(st)
            batches.update(moderated)
            if memories:
                batches["memories"] = memories
            ids: dict[str, int] = {}
            if rec.calls:
                calls = batches["llm_calls"] = rec.calls.rows(self.next_call_id)
                self.next_call_id += len(rec.calls)
                if asked_q:
                    ids = dict(zip(calls["request_id"].to_pylist(), calls["call_id"].to_pylist()))
            if asked_q:
                batches["interviews"] = interview_table([iv.rows(step, q, a, ids, "config") for q, a in asked_q])
            if self.caps.rows is not None:
                for name, extra in self.caps.rows.drain_rows().items():
                    batches[name] = extra
            wall = time.perf_counter() - t0
            self.trace_store.append_step(
                step,
                batches,
                {
                    "sim_time_s": st.time,
                    "n_active": len(who),
                    "n_actions": n_actions,
                    "n_posts": len(new_posts),
                    "n_exposures": len(rec.exposures["step"]),
                    "wall_s": self._since_last_commit(),
                    "committed_at": _now(),
                    "sim_datetime": _naive(self.sim_datetime(step)),
                },
            )
        except BaseException:  # a signal or a failed write before the commit: its calls were still made
            if not step_committed(self.trace_store, step):
                self.next_call_id = first_call_id
                self._log_aborted_calls(step, rec.calls)
            raise
        self.next_step = step + 1
        return StepStats(step, st.time, len(who), n_actions, len(new_posts), wall, len(rec.calls), rec.calls.tokens)

    def interview(self, agents: Sequence[int], question: str) -> dict[int, str]:
        """Ask agents a question now, with their memory as of the last committed step; the answers are
        stored in ``interviews`` (origin 'python') with their ``llm_calls`` rows, in one transaction."""
        step = self.next_step - 1
        answered, calls = iv.ask(
            self.caps.interviews, self.population, self.memory, [int(a) for a in agents], question, step
        )
        batches: dict[str, Any] = {}
        ids: dict[str, int] = {}
        if calls:
            batches["llm_calls"] = call_rows(calls, self.next_call_id)
            ids = dict(zip(batches["llm_calls"]["request_id"], batches["llm_calls"]["call_id"]))
        batches["interviews"] = interview_table([iv.rows(step, question, answered, ids, "python")])
        self.trace_store.append_rows(batches)
        self.next_call_id += len(calls)
        return {a: text for a, _rid, text in answered}

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _log_aborted_calls(self, step: int, calls: CallLog) -> None:
        """The calls of a step that will not be committed, marked aborted (see ``llm_health.log_aborted_calls``)."""
        self.next_call_id = log_aborted_calls(self.trace_store, calls, self.next_call_id, step)

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
            if self.executor is not None:
                self.executor.close()
            if self.store is not None:
                self.store.close()
        finally:
            self._lock.release()


def _naive(t: datetime | None) -> datetime | None:
    return t if t is None or t.tzinfo is None else t.astimezone(timezone.utc).replace(tzinfo=None)
