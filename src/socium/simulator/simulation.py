"""The simulation loop: activate, observe, decide, apply in a fixed order, commit one step.

``Simulation`` is a ``mesa.Model`` so Mesa users find the familiar face (``step()``, ``steps``),
but agents are columnar (see ``Population``) rather than one Mesa ``Agent`` object each, which is
what lets a million rule-based agents fit on a laptop.
"""

from __future__ import annotations

import gc
import json
import platform as _stdlib_platform  # the standard library module; socium never shadows it
import shutil
import time
import uuid
from collections import deque
from datetime import datetime, timezone
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import duckdb
import mesa
import numpy as np
import pyarrow as pa

import socium
from socium.agents.groups import group_views
from socium.agents.observation import Decision, FeedItem, Observation
from socium.agents.rules import RULE_POLICIES
from socium.config import ExperimentConfig, config_from_dict
from socium.errors import ConfigError, RunDirError, TraceError
from socium.platform.actions import CreatePost, parse_action
from socium.platform.posts import KIND_NAMES
from socium.platform.state import PlatformState
from socium.platform.text import quote_untrusted
from socium.recsys.registry import make_recommender
from socium.simulator.executors import Executor, make_executor
from socium.agents.llm_policy import call_rows
from socium.simulator.recording import StepRecorder, clean_action
from socium.simulator.rng import ACTIVATION, RECSYS, component_rng, root_key, uniform
from socium.simulator.store import TraceStore
from socium.llm.cache import llm_calls_ddl
from socium.simulator.surveys import run_surveys
from socium.simulator.world import build_follows, build_population


@dataclass
class StepStats:
    step: int
    sim_time_s: float
    n_active: int
    n_actions: int
    n_posts: int
    wall_s: float


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
        self._check_run_dir(resume, force)
        self.population, following = build_population(cfg)
        if cfg.policy.kind == "bounded_confidence" and np.isnan(self.population.stance).all():
            raise ConfigError("policy.kind 'bounded_confidence' needs stances: set population.stance to 'uniform' or 'bimodal'")
        self.n = len(self.population)
        for sp in cfg.seed_posts:
            if sp.author >= self.n:
                raise ConfigError(f"seed_posts: author {sp.author} is not an agent id (population has {self.n})")
        for sa in cfg.seed_actions:
            if sa.agent >= self.n:
                raise ConfigError(f"seed_actions: agent {sa.agent} is not an agent id (population has {self.n})")
        follows = build_follows(cfg, self.n, following)
        pc = cfg.platform
        self.state = PlatformState(self.n, follows, pc.preset, pc.max_post_chars, pc.trend_window_steps,
                                   pc.search_limit, usernames=self.population.usernames)  # fmt: skip
        self.recsys = make_recommender(cfg.recsys, self)
        self.policy = policy if policy is not None else self._make_policy()
        self.executor = executor if executor is not None else make_executor(cfg.executor, self.policy, cfg.seed)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.store = TraceStore(self.run_dir / "trace.duckdb")
        self.store.ensure_table("llm_calls", llm_calls_ddl())
        self.memory: dict[int, deque[str]] = {}
        self.next_call_id = 0
        self.needs_profile = bool(getattr(self.policy, "needs_profile", False))
        self.next_step = 0
        if resume:
            self._restore()
        else:
            self._write_setup()
        # The world built so far lives for the whole run: moving it out of the collector's view cuts
        # per-step GC pauses from ~0.5 s to ~0.01 s at 10^5 agents (benchmarks/bench_ray.py --gc-freeze).
        gc.collect()
        gc.freeze()

    # ---- set-up and resume ------------------------------------------------------------------
    def _check_run_dir(self, resume: bool, force: bool) -> None:
        db = self.run_dir / "trace.duckdb"
        if resume:
            if not db.exists():
                raise RunDirError(f"{self.run_dir}: nothing to resume (no trace.duckdb)")
            return
        if db.exists():
            if not force:
                last = _peek_last_step(db)
                state = "a finished run" if last is not None and last >= self.cfg.steps - 1 else "an unfinished run (use --resume)"
                raise RunDirError(f"{self.run_dir} already holds {state}; pass --force to overwrite")
            for p in (db, db.with_suffix(".duckdb.wal")):
                p.unlink(missing_ok=True)
            shutil.rmtree(self.run_dir / "report", ignore_errors=True)

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
        runs = {"run_id": [uuid.uuid4().hex], "name": [cfg.name], "config": [cfg.canonical_json()],
                "config_hash": [cfg.config_hash()], "seed": [cfg.seed], "perspective": [cfg.perspective],
                "socium_version": [socium.__version__], "python_version": [_stdlib_platform.python_version()],
                "duckdb_version": [duckdb.__version__], "created_at": [_now()]}  # fmt: skip
        act = pa.FixedSizeListArray.from_arrays(pa.array(pop.activity.ravel()), 24).cast(pa.list_(pa.float32()))
        agents = pa.table({
            "agent_id": pa.array(np.arange(self.n, dtype=np.int64)), "name": pop.names, "username": pop.usernames,
            "bio": pop.bios, "interests": pa.array(pop.interests, pa.list_(pa.string())),
            "stance": pa.array(pop.stance.astype(np.float64), from_pandas=True), "goal": pa.array(pop.goals, pa.string()),
            "activity": act,
        })  # fmt: skip
        src, dst = self.state.follows.edges()
        follows = pa.table({"step": pa.array(np.full(len(src), -1, np.int32)), "seq": pa.array(np.arange(len(src), dtype=np.int32)),
                            "src": pa.array(src.astype(np.int64)), "dst": pa.array(dst.astype(np.int64)),
                            "event": pa.array(np.ones(len(src), np.int8))})  # fmt: skip
        self.store.append_step(-1, {"runs": runs, "agents": agents, "follow_events": follows},
                               {"sim_time_s": 0.0, "n_active": 0, "n_actions": 0, "n_posts": 0, "n_exposures": 0,
                                "wall_s": self._since_last_commit(), "committed_at": _now()})

    def _restore(self) -> None:
        """Rebuild platform, recommender and agent state by replaying the committed trace."""
        last = self.store.last_step()
        if last is None:  # killed before the set-up transaction committed: nothing was written
            self._write_setup()
            return
        row = self.store.run_row()
        if row is None:
            raise TraceError(f"{self.run_dir}: trace has committed steps but no run row")
        if row["config_hash"] != self.cfg.config_hash():
            self.store.close()
            raise RunDirError(f"{self.run_dir}: config differs from the one this run started with (hash {row['config_hash'][:12]})")
        if last >= self.cfg.steps:
            self.store.close()
            raise RunDirError(f"{self.run_dir}: {last + 1} steps are already committed; steps={self.cfg.steps} "
                              "would shorten the run (a run can be extended, not cut)")
        con = self.store.con
        if json.loads(row["config"]).get("steps") != self.cfg.steps:
            self._extend_to(self.cfg.steps)
        for step in range(0, last + 1):
            self.state.begin_step(step, self.sim_time(step))
            rows = con.execute(
                "SELECT agent_id, type, args, outcome, post_id FROM actions WHERE step = ? ORDER BY seq", [step]
            ).fetchall()
            for agent, typ, args, outcome, post_id in rows:
                if typ == "invalid_llm_output":
                    continue
                got = self.state.apply(agent, parse_action({"type": typ, **json.loads(args)}))
                if got.status != outcome or (got.post_id != post_id and post_id is not None):
                    raise TraceError(f"replay diverged at step {step}, agent {agent}, action {typ}: "
                                     f"recorded {outcome}/{post_id}, replayed {got.status}/{got.post_id}")  # fmt: skip
            self.recsys.observe(self.state, range(self.state.events.first_post, len(self.state.posts)), step)
        for agent, stance in con.execute(
            "SELECT agent_id, arg_max(stance, step) FROM stances GROUP BY agent_id"
        ).fetchall():
            self.population.stance[agent] = stance
        if self.needs_profile and self.cfg.llm_agents.memory_size:
            rows = con.execute(
                "SELECT step, agent_id, type, args, outcome FROM (SELECT *, row_number() OVER "
                "(PARTITION BY agent_id ORDER BY step DESC, seq DESC) AS r FROM actions WHERE origin != 'seed') "
                "WHERE r <= ? ORDER BY step, seq", [self.cfg.llm_agents.memory_size]).fetchall()  # fmt: skip
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
        return step * self.cfg.step_minutes * 60.0

    def hour(self, step: int) -> int:
        return int(self.cfg.start_hour + (step * self.cfg.step_minutes) // 60) % 24

    def active_agents(self, step: int) -> np.ndarray:
        """Agents active this step: one per-agent draw against that agent's probability for the hour."""
        p = self.population.activity[:, self.hour(step)]
        u = uniform(self.key, ACTIVATION, step, np.arange(self.n))
        return np.flatnonzero(u < p)

    # ---- one step ---------------------------------------------------------------------------
    def observe(self, users: np.ndarray, step: int, rec: StepRecorder) -> list[Observation]:
        st = self.state
        feeds = self.recsys.feeds(st, users, self.cfg.recsys.k, step, component_rng(self.cfg.seed, RECSYS, step))
        need_adopt = getattr(self.policy, "needs_adoption", False)
        stance = self.population.stance
        p = st.posts
        obs = []
        for u, feed in zip(users.tolist(), feeds):
            rec.exposure(u, feed.post_ids, feed.sources)
            followees = set(st.follows.followees(u).tolist()) if need_adopt else None
            items = []
            for rank, (pid, src) in enumerate(zip(feed.post_ids, feed.sources)):
                root = p.get("root", pid)
                adopters = st.adopters.get(root, ())
                author = p.get("author", pid)
                s = float(stance[author])
                items.append(FeedItem(
                    post_id=pid, author=author, kind=KIND_NAMES[p.get("kind", pid)], text=p.text[pid], root_id=root,
                    likes=p.get("likes", pid), dislikes=p.get("dislikes", pid), reposts=p.get("reposts", pid),
                    comments=p.get("comments", pid), source=src, rank=rank, adopted=u in adopters,
                    liked=(u, pid) in st.likes, disliked=(u, pid) in st.dislikes,
                    adoption=(len(followees & adopters) / len(followees)) if followees else 0.0,
                    author_stance=None if np.isnan(s) else s, author_username=self.population.usernames[author],
                ))  # fmt: skip
            s_u = float(stance[u])
            o = Observation(u, step, st.time, self.hour(step), items, None if np.isnan(s_u) else s_u)
            if self.needs_profile:
                self._enrich(o, rec)
            obs.append(o)
        return obs

    def _enrich(self, o: Observation, rec: StepRecorder) -> None:
        """Add what an LLM agent's perspective allows it to see (and nothing more)."""
        pop = self.population
        o.extra["profile"] = pop.profile(o.agent_id)
        o.extra["memory"] = list(self.memory.get(o.agent_id, ()))
        ac = self.cfg.llm_agents
        if self.state.groups:
            o.groups = group_views(self.state, o.agent_id, ac.group_messages,
                                   ac.groups_listed if "join_group" in ac.actions else 0, pop.usernames)  # fmt: skip
        persp = self.cfg.perspective
        if persp == "mindreader":
            for it in o.feed:
                if it.author != o.agent_id:
                    s = float(pop.stance[it.author])
                    it.author_private = {"bio": pop.bios[it.author][:300], "goal": pop.goals[it.author],
                                         "stance": None if np.isnan(s) else round(s, 2)}  # fmt: skip
        elif persp == "omniscient":
            top = self.state.trend(10)
            rec.exposure(o.agent_id, top, "global")
            p = self.state.posts
            o.extra["global_feed"] = "\n".join(
                f"<<<POST id={i} by user_id={p.get('author', i)} likes={p.get('likes', i)} reposts={p.get('reposts', i)}>>>\n"
                f"{quote_untrusted(p.text[i], 160)}\n<<<END POST>>>" for i in top) or "(empty)"
            o.extra["stats"] = (f"{self.n} users, {len(p)} posts so far, step {o.step}, "
                                f"{len(self.state.likes)} likes, {self.state.follows.n_edges} follows")  # fmt: skip

    def _remember(self, agent: int, line: str) -> None:
        m = self.memory.get(agent)
        if m is None:
            m = self.memory[agent] = deque(maxlen=max(self.cfg.llm_agents.memory_size, 1))
        m.append(line)

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
                    self._remember(d.agent_id, f"step {self.state.step}: (your answer was invalid)")
                n += 1
            for action in d.actions:
                action, trunc, san = clean_action(action, maxc)
                out = self.state.apply(d.agent_id, action)
                if out.post_id is not None and (trunc or san):
                    rec.flags[out.post_id] = (trunc, san)
                rec.action(d.agent_id, d.meta.get("origin", "policy"), action, out, d.meta.get("reason"))
                if self.needs_profile and d.meta.get("origin") != "seed":
                    self._remember(d.agent_id, memory_line(self.state.step, action.type, action.model_dump(exclude={"type"}), out.status))
                if out.results:
                    rec.exposure(d.agent_id, out.results, "trend" if action.type == "trend" else "search")
                n += 1
            if d.stance is not None:
                self.population.stance[d.agent_id] = d.stance
                rec.stance(d.agent_id, d.stance)
        return n

    def step(self) -> None:
        """Mesa's entry point (Mesa wraps it and drops the return value); see :meth:`advance`."""
        self.advance()

    def advance(self) -> StepStats:
        """Simulate and commit one step."""
        t0 = time.perf_counter()
        step = self.next_step
        st = self.state
        st.begin_step(step, self.sim_time(step))
        rec = StepRecorder(step)
        seeds = [Decision(sp.author, [CreatePost(content=sp.content)], meta={"origin": "seed"})
                 for sp in self.cfg.seed_posts if sp.step == step]  # fmt: skip
        seeds += [Decision(sa.agent, [parse_action(sa.action)], meta={"origin": "seed"})
                  for sa in self.cfg.seed_actions if sa.step == step]  # fmt: skip
        n_actions = self.apply_decisions(seeds, rec)
        active = self.active_agents(step)
        observations = self.observe(active, step, rec)
        decisions = self.executor.run(observations)
        n_actions += self.apply_decisions(decisions, rec)
        new_posts = range(st.events.first_post, len(st.posts))
        self.recsys.observe(st, new_posts, step)
        run_surveys(self, step, rec)
        batches = rec.batches(st)
        if rec.calls:
            batches["llm_calls"] = call_rows(rec.calls, self.next_call_id)
            self.next_call_id += len(rec.calls)
        for name, extra in getattr(self.policy, "drain_rows", lambda: {})().items():
            batches[name] = extra
        wall = time.perf_counter() - t0
        self.store.append_step(step, batches, {
            "sim_time_s": st.time, "n_active": len(active), "n_actions": n_actions, "n_posts": len(new_posts),
            "n_exposures": len(rec.exposures["step"]), "wall_s": self._since_last_commit(),
            "committed_at": _now(),
        })  # fmt: skip
        self.next_step = step + 1
        return StepStats(step, st.time, len(active), n_actions, len(new_posts), wall)

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
        gc.unfreeze()
        self.executor.close()
        self.store.close()


def memory_line(step: int, typ: str, args: dict, outcome: str) -> str:
    """One remembered own action, short and bounded (agent text is cut to 80 characters)."""
    parts = []
    for k, v in sorted(args.items()):
        if isinstance(v, str):
            v = quote_untrusted(v, 80)
        parts.append(f"{k}={v}")
    note = "" if outcome == "ok" else f" [{outcome}]"
    return f"step {step}: {typ} {' '.join(parts)}{note}".strip()


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _peek_last_step(db: Path) -> int | None:
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error:
        return None
    try:
        row = con.execute("SELECT max(step) FROM steps").fetchone()
        return None if row is None or row[0] is None else int(row[0])
    except duckdb.Error:
        return None
    finally:
        con.close()


def load_run_config(run_dir: str | Path) -> ExperimentConfig:
    """The config a run started with, read from its trace (the source of truth)."""
    db = Path(run_dir) / "trace.duckdb"
    if not db.exists():
        raise RunDirError(f"{run_dir}: no trace.duckdb")
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute("SELECT config FROM runs LIMIT 1").fetchone()
    finally:
        con.close()
    if row is None:
        raise TraceError(f"{run_dir}: trace has no run row")
    return config_from_dict(json.loads(row[0]), source=str(db))
