"""What the agents of a :class:`~socium.simulator.simulation.Simulation` do within one step: observe
(feeds ranked for the whole step), decide in chunks through the executor, have their decisions applied
to the platform, and remember.

A part the simulation is composed of (``Simulation.agent_steps``), so the agents' part of a step reads
apart from the step's commit; it holds no state of its own, only the run's
:class:`~socium.simulator.world.World` (never the simulation itself, which imports this module), and
asks the policy only through its :class:`~socium.core.policy.PolicyCapabilities`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import TypeVar

import numpy as np

from socium.agents import perspectives
from socium.agents.memory import MemoryStream, feed_query
from socium.core.actions import action_args
from socium.core.contracts import Decision, Observation
from socium.core.policy import PolicyCapabilities
from socium.core.rng import RECSYS, component_rng
from socium.llm.base import run_coro_sync
from socium.platform.text import quote_inline
from socium.recsys.base import Feed
from socium.simulator.deciding import decide_overlapped
from socium.simulator.executors import Executor, InProcessExecutor
from socium.simulator.recording import StepRecorder, clean_action
from socium.simulator.world import World

#: Observations built per turn of the event loop while a step's chunks overlap (the calls of the previous
#: chunk are read between slices); also the slices of a chunk decided alone, where nothing is in flight.
OBSERVE_SLICE = 16

T = TypeVar("T")


def _drained(work: Generator[None, None, T]) -> T:
    """A sliced generator run to its end at once (nothing to interleave it with)."""
    while True:
        try:
            next(work)
        except StopIteration as done:
            return done.value


class StepAgents:
    """Observation, decisions, actions and memory of a step (see the module docstring)."""

    def __init__(self, world: World, executor: Executor, caps: PolicyCapabilities) -> None:
        self.world = world
        self.cfg = world.cfg
        self.state = world.state
        self.population = world.population
        self.recsys = world.recsys
        self.moderation = world.moderation
        self.memory = world.memory
        self.pending_results = world.pending_results
        self.needs_profile = world.needs_profile
        self.executor = executor
        self.caps = caps

    # ---- one step ---------------------------------------------------------------------------
    def decide(self, active: np.ndarray, step: int, rec: StepRecorder) -> tuple[list[Decision], list[Observation]]:
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
        chunks = self.chunks(active, lead=self.overlapped_batch(2) is not None)

        Prepared = tuple[list[Observation], list[Decision]]  # a chunk's observations and its bots' decisions

        def prepare(i: int, size: int = OBSERVE_SLICE) -> Generator[None, None, Prepared]:
            lo, hi = chunks[i]
            observations: list[Observation] = []
            for a in range(lo, hi, size):  # a slice per turn of the loop when chunks overlap
                b = min(hi, a + size)
                observations += self.observe(active[a:b], step, rec, feeds[a:b])
                yield
            observations, bots = self.moderation.split(observations, st)  # bots act by rule, not by the policy
            self.moderation.annotate(observations, st)  # labels, notes, ground truth, prebunking: as users see them
            return observations, bots

        def collect(i: int, observations: list[Observation], bots: list[Decision], got: list[Decision]) -> None:
            nonlocal decisions
            for d in got:  # the calls leave the decisions now, as log rows only (RenderedRequest)
                if d.calls:
                    rec.calls.extend(d.calls)
                    d.calls = []
                if unshown := d.meta.pop("unshown", None):  # trimmed to fit the context: not shown after all
                    rec.withdraw_exposures(d.agent_id, unshown)
            decisions += got
            fixed.extend(bots)
            kept.extend(o for o in observations if self.moderation.needed_after_actions(o))

        batch = self.overlapped_batch(len(chunks))
        if batch is not None:
            run_coro_sync(decide_overlapped(batch, len(chunks), prepare, collect))
        else:
            for i in range(len(chunks)):
                observations, bots = _drained(prepare(i, max(1, chunks[i][1] - chunks[i][0])))  # whole, as before
                collect(i, observations, bots, self.executor.run(observations))
                del observations
        return (sorted(fixed + decisions, key=lambda d: d.agent_id) if fixed else decisions), kept

    def overlapped_batch(self, n_chunks: int) -> Callable[[list[Observation]], Awaitable[list[Decision]]] | None:
        """The policy's async batch when a step's chunks can overlap (:func:`decide_overlapped`): more than one
        chunk, the in-process executor, a policy that decides a batch both ways (its ``decide_batch`` runs
        its ``adecide_batch``: :class:`~socium.agents.llm_policy.LLMPolicy`); None: one chunk after another."""
        caps = self.caps
        if n_chunks < 2 or caps.batch is None or caps.adecide_batch is None:
            return None
        if not isinstance(self.executor, InProcessExecutor) or self.cfg.executor.kind != "inprocess":
            return None
        adecide = caps.adecide_batch.adecide_batch

        async def batch(observations: list[Observation]) -> list[Decision]:
            return sorted(await adecide(observations), key=lambda d: d.agent_id)  # as InProcessExecutor.run

        return batch

    def chunks(self, active: np.ndarray, lead: bool = False) -> list[tuple[int, int]]:
        """``[lo, hi)`` slices of ``active`` (sorted) that each hold the policy's chunk of policy-bound
        agents (bots are not counted: they make no call); one slice when the policy cannot be split,
        agents use the stream memory or ``step_chunk`` is 0. ``lead`` (the chunks of the step overlap): the
        first slice holds only twice what can be in flight, so the server waits for that slice's
        observations rather than a whole chunk's before the first request, and the rest is observed while
        its requests are out."""
        ex = self.cfg.executor
        size = ex.step_chunk
        hook = self.caps.chunker
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
        per = hook.step_chunk(max(size, floor))
        first = hook.step_chunk(floor) if lead else per
        if per is None or first is None or not len(active):
            return [(0, len(active))]
        counted = np.cumsum(self.moderation.policy_bound(active))
        total = int(counted[-1])
        marks = [first, *range(first + per, total, per)]
        cuts = np.searchsorted(counted, [m for m in marks if m < total], side="right").tolist()
        bounds = [0, *cuts, len(active)]
        return [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]

    def observe(
        self, users: np.ndarray, step: int, rec: StepRecorder, feeds: Sequence[Feed] | None = None
    ) -> list[Observation]:
        """Observations of ``users``; ``feeds``: their feeds, already ranked (else ranked here)."""
        st = self.state
        if feeds is None:
            feeds = self.recsys.feeds(st, users, self.cfg.recsys.k, step, component_rng(self.cfg.seed, RECSYS, step))
        need_adopt = self.caps.needs_adoption
        stance = self.population.stance
        names = self.population.usernames
        obs = []
        for u, feed in zip(users.tolist(), feeds):
            rec.exposure(u, feed.post_ids, feed.sources, getattr(feed, "explain", None))
            followees = set(st.follows.followees(u).tolist()) if need_adopt else None
            items = perspectives.feed_items(st, names, stance, u, feed.post_ids, feed.sources, followees)
            s_u = float(stance[u])
            o = Observation(u, step, st.time, self.world.clock.hour(step), items, None if np.isnan(s_u) else s_u)
            if self.needs_profile:  # what the perspective shows an LLM agent: agents/perspectives.py
                perspectives.fill_observation(self.world, o, rec)
            obs.append(o)
        if self.needs_profile and isinstance(self.memory, MemoryStream):
            self.recall_stream(obs)
        return obs

    def recall_stream(self, obs: list[Observation]) -> None:
        """Stream memory: retrieve for every observation at once (one embedding batch for all queries),
        then store what each agent is shown now as observations for later steps."""
        mem = self.memory
        assert isinstance(mem, MemoryStream)
        queries = [feed_query([it.text for it in o.feed]) for o in obs]
        mem.prime_queries(queries)
        hours = self.cfg.step_minutes / 60.0
        for o, q in zip(obs, queries):
            o.memory = mem.recall(o.agent_id, o.step, q, hours)
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

    def remember(self, agent: int, line: str, action_type: str | None = None) -> None:
        """An own action (or an invalid answer) goes into the agent's memory."""
        remember(self.world, agent, line, action_type)

    def memory_step(self, active: np.ndarray, rec: StepRecorder) -> dict[str, list] | None:
        """Stream memory only: LLM-rated importance, reflections due, and the step's ``memories`` rows."""
        mem = self.memory
        if not isinstance(mem, MemoryStream) or not self.needs_profile:
            return None
        step = self.state.step
        agents = [int(a) for a in active]
        rater, reflector = self.caps.importance, self.caps.reflection
        if mem.cfg.importance == "llm" and rater is not None:
            pending = mem.pending_by_agent()
            todo = [(self.population.profile(a), [mem.texts[i] for i in pending[a]]) for a in sorted(pending)]
            ratings, calls = rater.rate_importance(todo, step)
            rec.calls.extend(calls)
            for a, vals in zip(sorted(pending), ratings):
                if vals is not None:
                    mem.set_importance(pending[a], vals)
        mem.note_active(agents)
        due = mem.due_for_reflection(agents)
        if due and reflector is not None:
            n_src = mem.cfg.reflection_sources
            people = [(self.population.profile(a), mem.recent(a, n_src)) for a in due]
            insights, calls = reflector.reflect(people, step, mem.cfg.reflection_insights)
            rec.calls.extend(calls)
            for a, got in zip(due, insights):
                for text in got:
                    mem.add(a, step, "reflection", text)
        return mem.drain_rows()

    def apply_decisions(self, decisions: list[Decision], rec: StepRecorder) -> int:
        n = 0
        maxc = self.cfg.platform.max_post_chars
        for d in decisions:
            if d.calls:
                rec.calls.extend(d.calls)
            if d.invalid_reason is not None:
                rec.invalid_output(d.agent_id, "llm", d.invalid_reason, d.raw)
                if self.needs_profile:
                    self.remember(d.agent_id, f"step {self.state.step}: (your answer was invalid)", "invalid")
                n += 1
            for action in d.actions:
                action, trunc, san = clean_action(action, maxc)
                out = self.state.apply(d.agent_id, action)
                if out.post_id is not None and "veracity" in d.meta:  # a seed post's configured ground truth
                    self.moderation.seed_veracity[out.post_id] = d.meta["veracity"]
                if out.post_id is not None and (trunc or san):
                    rec.flags[out.post_id] = (trunc, san)
                args = action_args(action)  # dumped once: the trace row and the memory line read it
                rec.action(d.agent_id, d.origin, action, out, d.reason, args)
                if self.needs_profile and d.origin != "seed":
                    self.remember(d.agent_id, memory_line(self.state.step, action.type, args, out.status), action.type)
                if self.needs_profile:  # shown (and only then recorded as exposures) in its next observation
                    pending = perspectives.pending_for(action, out.results)
                    if pending is not None:
                        self.pending_results[d.agent_id] = pending
                n += 1
            if d.stance is not None:
                self.population.stance[d.agent_id] = d.stance
                rec.stance(d.agent_id, d.stance)
        return n


def remember(world: World, agent: int, line: str, action_type: str | None = None) -> None:
    """An own action (or an invalid answer) goes into the agent's memory (live, and replayed on resume)."""
    step = world.state.step
    if isinstance(world.memory, MemoryStream):
        line = line.split(": ", 1)[1] if line.startswith(f"step {step}: ") else line
    world.memory.add(agent, step, "action", line, action_type=action_type or "invalid")


def memory_line(step: int, typ: str, args: dict, outcome: str) -> str:
    """One remembered own action, one line, short and bounded (agent text is cut to 80 characters)."""
    parts = []
    for k, v in sorted(args.items()):
        if isinstance(v, str):
            v = quote_inline(v, 80)
        parts.append(f"{k}={v}")
    note = "" if outcome == "ok" else f" [{outcome}]"
    return f"step {step}: {typ} {' '.join(parts)}{note}".strip()
