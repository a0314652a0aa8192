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
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

import mesa
import numpy as np

from socium.agents.call_log import CallLog, call_rows
from socium.config.experiment import ExperimentConfig
from socium.core.policy import Policy
from socium.core.rng import ACTIVATION, uniform
from socium.errors import UsageError
from socium.llm.cache import llm_calls_ddl
from socium.llm.resume_replay import StoppedAnswers, serving
from socium.llm.slot_meter import SlotWindow
from socium.simulator import interviews as iv
from socium.simulator import steering
from socium.simulator.executors import Executor, make_executor
from socium.simulator.inputs import preflight
from socium.simulator.llm_health import (
    OutputHealth,
    log_aborted_calls,
    note_slots,
    spent_from_trace,
    step_committed,
    step_problem,
    stopped_answers,
    take_slots,
)
from socium.simulator.recording import StepRecorder
from socium.simulator.run_setup import RunSetUp, _now
from socium.simulator.step_agents import StepAgents
from socium.simulator.step_gc import step_gc
from socium.simulator.surveys import run_surveys
from socium.simulator.world import World, build_world
from socium.trace.rundir import RunDirLock, check_out_path, describe_owner
from socium.trace.store import TraceStore

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
    replayed_calls: int = 0  # of llm_calls: answers a resume read from the stopped step's record
    slots: SlotWindow | None = None  # how busy the connection limit kept its slots (None: not measured)


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
                self.setup.write_setup(self.store, self.world, self._since_last_commit)
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
        """The world (``world.build_world``, the one place it is made), the executor and the agents' part of
        a step; nothing is written."""
        built = build_world(self.cfg, policy)
        self.world: World = built.world
        self.policy, self.caps = built.policy, built.caps
        self.executor = (
            executor
            if executor is not None
            else make_executor(self.cfg.executor, self.policy, self.cfg.seed, self.caps)
        )
        self.next_call_id = self.next_step = 0
        self.stopped_answers: StoppedAnswers | None = None  # set on resume (socium.llm.resume_replay)
        self.health = OutputHealth(getattr(self.cfg.llm, "min_valid_fraction", None))  # llm.min_valid_fraction
        self.agent_steps = StepAgents(self.world, self.executor, self.caps)

    def _restore(self) -> bool:
        """Resume: replay the committed trace into the world (``RunSetUp.restore``), then let the policy
        restore its own state; False when the trace holds no committed step to replay."""
        got = self.setup.restore(self.trace_store, self.world)
        if got is None:
            return False
        self.next_call_id, last = got
        if self.caps.restorer is not None:
            self.caps.restorer.restore(last)
        self.next_step = last + 1
        self.stopped_answers = stopped_answers(self.trace_store, self.next_step)
        if self.stopped_answers is not None:
            self.notes.append(
                f"step {self.next_step}: {len(self.stopped_answers):,} answers the stopped run had received are served "
                "from its trace, not asked again"
            )
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

    def active_agents(self, step: int) -> np.ndarray:
        """Agents active this step: one per-agent draw against that agent's probability for the hour,
        plus (``timing.kind: exposure``) the agents whose response delay to a post ends this step."""
        w, n = self.world, self.world.n
        if w.timing is not None and not self.cfg.timing.background:
            on = np.zeros(n, dtype=bool)
        else:
            p = w.population.activity[:, w.clock.hour(step)]
            on = uniform(w.key, ACTIVATION, step, np.arange(n)) < p
        if w.timing is not None:
            on[w.timing.due(step)] = True
        if w.state.joined is not None:
            on &= w.state.joined
        if w.state.mod.suspended:  # a suspended account is never woken (and could not act if it were)
            on[list(w.state.mod.suspended)] = False
        return np.flatnonzero(on)

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
        answers = self.stopped_answers
        if answers is not None and answers.step != self.next_step:
            answers = None
        with step_gc(), serving(answers):  # the stopped step's answered calls are not asked again
            stats = self._advance(actions, active, sign_up)
        if answers is not None:
            self.stopped_answers = None
        return stats

    def _advance(
        self,
        actions: Mapping[int, Sequence[Any]] | None,
        active: Sequence[int] | None,
        sign_up: Sequence[int] | None,
    ) -> StepStats:
        t0 = time.perf_counter()
        step, w = self.next_step, self.world
        st, n = w.state, w.n
        manual = steering.manual_decisions(actions, n)  # checked first: a bad call leaves the world as it was
        chosen = None if active is None else steering.chosen_agents(active, n)
        asked = sorted({int(a) for a in sign_up or ()})
        w.signups.check(st, asked)
        steering.check_signed_up(chosen, st, w.signups, step, asked)
        st.begin_step(step, w.clock.sim_time(step))
        rec = StepRecorder(step)
        steering.sign_up_agents(w.signups, st, step, asked, rec)
        apply = self.agent_steps.apply_decisions
        n_actions = apply(steering.seed_decisions(self.cfg, step), rec) + apply(manual, rec)
        who = self.active_agents(step) if chosen is None else chosen
        try:
            decisions, observations = self.agent_steps.decide(who, step, rec)
            decisions += w.moderation.extra_decisions(observations, st)  # fact-checkers' reports
            n_actions += apply(decisions, rec)
            n_posts = len(st.posts) - st.events.first_post
            moderated = w.after_actions(step, observations, shown=partial(_shown, rec))  # moderation, served, recsys...
            run_surveys(
                self.cfg.surveys,
                step,
                rec,
                asker=self.caps.surveys,
                population=w.population,
                memory=w.memory,
                joined=st.joined,
                key=w.key,
            )
            asked_q = []
            for q in self.cfg.interviews:
                if q.step == step:
                    answered, calls = iv.ask(self.caps.interviews, w.population, w.memory, q.agents, q.question, step)
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
                batches["interviews"] = iv.table([iv.rows(step, q, a, ids, "config") for q, a in asked_q])
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
                    "n_posts": n_posts,
                    "n_exposures": len(rec.exposures["step"]),
                    "wall_s": self._since_last_commit(),
                    "committed_at": _now(),
                    "sim_datetime": _naive(w.clock.sim_datetime(step)),
                },
            )
        except BaseException:  # a signal or a failed write before the commit: its calls were still made
            if not step_committed(self.trace_store, step):
                self.next_call_id = first_call_id
                self._log_aborted_calls(step, rec.calls)
            raise
        self.next_step = step + 1
        made = rec.calls
        # the limits of this process's backends (Ray actors hold their own, unseen here: not measured there)
        slots = take_slots(self.policy) if made and self.cfg.executor.kind == "inprocess" else None
        if slots is not None:
            note_slots(self.run_dir, slots)
        return StepStats(
            step, st.time, len(who), n_actions, n_posts, wall, len(made), made.tokens, made.replayed, slots
        )

    def interview(self, agents: Sequence[int], question: str) -> dict[int, str]:
        """Ask agents a question now, with their memory as of the last committed step; the answers are
        stored in ``interviews`` (origin 'python') with their ``llm_calls`` rows, in one transaction."""
        step, w = self.next_step - 1, self.world
        answered, calls = iv.ask(self.caps.interviews, w.population, w.memory, [int(a) for a in agents], question, step)
        batches: dict[str, Any] = {}
        ids: dict[str, int] = {}
        if calls:
            batches["llm_calls"] = call_rows(calls, self.next_call_id)
            ids = dict(zip(batches["llm_calls"]["request_id"], batches["llm_calls"]["call_id"]))
        batches["interviews"] = iv.table([iv.rows(step, question, answered, ids, "python")])
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


def _shown(rec: StepRecorder) -> tuple[np.ndarray, np.ndarray]:
    """The agent and post ids of the step's exposures, as recorded (what a remembering recommender is told)."""
    return np.asarray(rec.exposures["agent_id"], np.int64), np.asarray(rec.exposures["post_id"], np.int64)


def _naive(t: datetime | None) -> datetime | None:
    return t if t is None or t.tzinfo is None else t.astimezone(timezone.utc).replace(tzinfo=None)
