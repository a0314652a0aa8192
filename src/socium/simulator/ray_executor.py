"""Ray executor: agents sharded over Ray actors, the platform, recsys and trace store on the driver.

Shape of one step. The driver builds every active agent's ``Observation`` (feed, stance and, for
LLM agents, the memory it rebuilt from the trace), splits them by shard ``agent_id % actors``
(stable, so an agent always meets the same actor and its warm caches), sends each actor its
batch, gathers the decisions as they arrive and returns them sorted by agent id. Only then does
the driver apply and commit the step, so nothing an actor does is visible in the trace until every
shard has answered.

Why a dead actor is harmless. Actors are stateless across steps apart from the policy object they
were created with: memory travels in the observations and every random draw is
``agent_rng(seed, POLICY, agent_id, step)``. "Restoring an actor's agents to the last committed
step" is therefore just creating a new actor from the same policy object, and re-running the
shard's batch gives the same decisions. The driver catches ``RayActorError`` for that shard,
re-creates the actor and re-submits; because nothing of the step was applied or committed
yet, the trace gets exactly one copy of every row. (Ray's own ``max_restarts`` is not used: an
explicit restart keeps the count per step, lets the driver log it, and works the same for async
actors.) A killed *driver* takes its actors with it (they are owned by the driver) and the run
resumes from the trace with ``socium run --resume``.

Concurrency inside an actor. The actor calls, in this order of preference: the policy's own
``async adecide_batch(observations)`` (an LLM policy: it groups agents for script mode and
attaches its call log to the decisions' ``meta``, which the driver records); else
``async adecide(obs)`` overlapped on the actor's event loop with at most
``concurrency_per_actor`` in flight; else ``decide_batch``/``decide`` in a loop. Throughput of
LLM agents is thus bounded by ``actors * concurrency_per_actor / latency``.

Hooks a policy may implement (all optional; the protocols of :mod:`socium.core.policy`, found once
per policy by ``capabilities_of``):
- ``for_actor(ctx: ActorContext) -> policy`` (``ActorLocal``): specialise the policy inside the actor, e.g. to
  build its LLM backend against ``ctx.base_urls`` (the servers this actor is assigned), cap its
  in-flight requests at ``ctx.concurrency``, or load an engine on the GPU Ray gave it. Backends
  must be created lazily inside the actor, never pickled.
- ``partition(observations, n) -> list[list[Observation]]`` (``Partitioner``): how to split one step over ``n``
  shards when ``agent_id % n`` would change results (script mode's narrator groups are chunks
  of the *sorted active set*; a partition keeps each group on one shard).
- Trace rows an actor produces must travel with its decisions (as LLM calls do, in ``Decision.calls``). Rows a
  policy returns from ``drain_rows()`` inside an actor are handed to the driver policy's
  ``absorb_rows(rows)``; without that hook the run stops rather than lose them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import operator
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import ray
from pydantic import BaseModel
from ray.exceptions import RayActorError

from socium.config.executor import ExecutorConfig
from socium.core.contracts import Decision, FeedItem, Observation
from socium.core.policy import Policy, PolicyCapabilities, capabilities_of
from socium.errors import SociumError
from socium.simulator.deciding import adecide_all, decide_sync
from socium.simulator.ray_start import start_ray
from socium.simulator.step_gc import step_gc

log = logging.getLogger(__name__)


#: Seconds a stopped driver waits for its actors' cancelled steps and their calls (each of two waits).
SALVAGE_WAIT_S = 5.0


class ExecutorError(SociumError):
    """A shard could not be computed even after re-creating its actor."""


@dataclass(frozen=True)
class ActorContext:
    """What an actor tells its policy about where it runs (passed to ``policy.for_actor``)."""

    shard: int
    n_shards: int
    seed: int
    concurrency: int
    base_urls: list[str] = field(default_factory=list)
    num_gpus: float = 0.0


def shard_urls(urls: Sequence[str], shard: int, n_shards: int) -> list[str]:
    """The servers one actor talks to: with more servers than actors each actor gets every
    ``n_shards``-th URL (its own disjoint share, round-robined by the backend); with fewer, actors
    are spread over the servers ``shard mod len(urls)`` so load stays balanced."""
    if not urls:
        return []
    if len(urls) >= n_shards:
        return list(urls[shard::n_shards])
    return [urls[shard % len(urls)]]


# ---- wire format -----------------------------------------------------------------------------
# Pickling a slotted dataclass goes through Python-level __reduce_ex__ per object; for 10^5
# observations of 5 feed items that dominated a rule-based step. Observations travel as nested
# tuples (half the bytes, about half the time). Actions (pydantic models) travel as (class, state)
# and are rebuilt through pydantic's own ``__setstate__``, without re-validation: they were
# validated where they were made; this saves the reduce machinery on the actor's side.
_FEED_FIELDS = [f.name for f in dataclasses.fields(FeedItem)]
_feed_tuple = operator.attrgetter(*_FEED_FIELDS)


def pack_observations(obs: Sequence[Observation]) -> list[tuple]:
    """LLM agents' views (groups, search results) travel only when present, keeping rule-based packing lean."""
    return [
        (
            o.agent_id,
            o.step,
            o.time_s,
            o.hour,
            [_feed_tuple(i) for i in o.feed],
            o.stance,
            o.extra,
            (o.groups, [_feed_tuple(i) for i in o.results], o.results_from, o.found_users)
            if (o.groups or o.results_from)
            else None,
            o.marks or None,  # the platform's marks the answer schema narrows ids by (LLM agents only)
            _pack_shown(o) if o.profile is not None or o.platform_notice is not None else None,
        )
        for o in obs
    ]


def _pack_shown(o: Observation) -> tuple:
    """What an LLM agent is shown besides its feed (the typed fields ``fill_observation`` sets)."""
    return (
        o.profile,
        o.memory,
        o.show_score,
        o.datetime,
        [_feed_tuple(i) for i in o.global_feed],
        o.stats,
        None if o.co_acting is None else pack_observations(o.co_acting),
        o.platform_notice,
        o.prebunk_shown,
    )


def unpack_observations(packed: list[tuple]) -> list[Observation]:
    out = []
    for a, s, t, h, feed, st, ex, more, marks, shown in packed:
        o = Observation(a, s, t, h, [FeedItem(*i) for i in feed], st, ex)
        if marks is not None:
            o.marks = marks
        if more is not None:
            o.groups, results, o.results_from, o.found_users = more
            o.results = [FeedItem(*i) for i in results]
        if shown is not None:
            o.profile, o.memory, o.show_score, o.datetime, top, o.stats, co, notice, pb = shown
            o.global_feed = [FeedItem(*i) for i in top]
            o.co_acting = None if co is None else unpack_observations(co)
            o.platform_notice, o.prebunk_shown = notice, pb
        out.append(o)
    return out


def _pack_action(a: Any) -> tuple[Any, Any]:
    return (type(a), a.__getstate__()) if isinstance(a, BaseModel) else (None, a)


def _unpack_action(cls: Any, state: Any) -> Any:
    if cls is None:
        return state
    obj = cls.__new__(cls)
    obj.__setstate__(state)
    return obj


def pack_decisions(decisions: Sequence[Decision]) -> list[tuple]:
    return [
        (
            d.agent_id,
            [_pack_action(a) for a in d.actions],
            d.stance,
            d.invalid_reason,
            d.raw,
            d.meta,
            d.origin,
            d.reason,
            d.calls,
        )
        for d in decisions
    ]


def unpack_decisions(packed: list[tuple]) -> list[Decision]:
    return [
        Decision(aid, [_unpack_action(c, a) for c, a in acts], st, inv, raw, meta, origin, reason, calls)
        for aid, acts, st, inv, raw, meta, origin, reason, calls in packed
    ]


class ShardActor:
    """Holds one shard's policy; runs its observations. Created through ``ray.remote`` below."""

    def __init__(self, policy: Policy, ctx: ActorContext) -> None:
        shipped = capabilities_of(policy)
        self.policy = shipped.actor_local.for_actor(ctx) if shipped.actor_local is not None else policy
        self.caps = capabilities_of(self.policy) if self.policy is not policy else shipped
        self.ctx = ctx
        self._limit: asyncio.Semaphore | None = None  # shared by the chunks of a step; made on the actor's loop
        self._cut_calls: list[Any] = []  # calls of a step cancelled by the driver, until drain_calls
        self._deciding: set[asyncio.Task[Any]] = set()  # running decide tasks (drain_calls waits for them)
        # The policy lives as long as the actor: out of the collector's view, as the driver's world is
        # after it is built (Simulation.__init__), so full collections do not walk it every time.
        gc.collect()
        gc.freeze()

    async def info(self) -> dict[str, Any]:
        """Where this actor runs: pid, node id and host (tests kill the pid; docs show placement)."""
        return {
            "shard": self.ctx.shard,
            "pid": os.getpid(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "host": socket.gethostname(),
        }

    async def decide(self, packed: list[tuple], allowance: Any = None) -> tuple[list[tuple], dict[str, Any]]:
        """One shard's step: packed observations in, packed decisions (and any drained rows) out.

        ``allowance``: this shard's share of the run's budgets for the step (``policy.shard_allowances``).
        """
        task = asyncio.current_task()
        if task is not None:
            self._deciding.add(task)
            task.add_done_callback(self._deciding.discard)
        caps = self.caps
        if allowance is not None:
            if caps.shard_budgets is None:
                raise ExecutorError(f"shard {self.ctx.shard}: a budget share was sent to a policy that keeps none")
            caps.shard_budgets.set_allowance(allowance, f"Ray shard {self.ctx.shard} of {self.ctx.n_shards}")
        with step_gc():  # as in the driver's step (socium.simulator.step_gc)
            observations = unpack_observations(packed)
            if caps.adecide_batch is not None:
                decisions = list(await caps.adecide_batch.adecide_batch(observations))
            elif caps.adecide is not None:
                if self._limit is None:
                    self._limit = asyncio.Semaphore(self.ctx.concurrency)
                finished: list[Decision] = []
                try:
                    decisions = await adecide_all(
                        caps.adecide, observations, self.ctx.concurrency, self._limit, finished
                    )
                except BaseException:  # cancelled by a stopped driver: the calls of the decisions made are kept
                    self._cut_calls += [c for d in finished for c in (d.meta.get("llm_calls") or [])]
                    raise
            else:
                decisions = decide_sync(caps, observations)
            return pack_decisions(decisions), (caps.rows.drain_rows() if caps.rows is not None else {})

    async def drain_calls(self) -> list[Any]:
        """Calls made here that no decision carried back: those of a ``decide`` cancelled by a stopped driver,
        answered and interrupted alike (``socium.llm.interrupted``), for the driver to log with the aborted step."""
        running = {t for t in self._deciding if t is not asyncio.current_task()}
        if running:  # the driver's cancel reaches them asynchronously: let them unwind and note their calls first
            await asyncio.wait(running, timeout=SALVAGE_WAIT_S)
        cut, self._cut_calls = self._cut_calls, []
        return cut + (self.caps.calls.drain_calls() if self.caps.calls is not None else [])

    async def close(self) -> None:
        if self.caps.closer is not None:
            self.caps.closer.close()


_RemoteShardActor = ray.remote(ShardActor)


def connect(cfg: ExecutorConfig) -> bool:
    """Join the cluster at ``cfg.address`` or start Ray locally; True when this call started it.

    Inside a Ray worker (a sweep's run task) Ray is already connected and nothing is done.
    """
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"ignore_reinit_error": True}
    if cfg.address is None:
        kwargs.update(num_cpus=os.cpu_count() or 1, include_dashboard=False)
    else:
        kwargs["address"] = cfg.address
    kwargs.update(cfg.ray_init)
    start_ray(**kwargs)
    return True


class RayExecutor:
    """Shards agents over ``cfg.actors`` Ray actors; see the module docstring for the protocol."""

    def __init__(self, cfg: ExecutorConfig, policy: Policy, seed: int, caps: PolicyCapabilities | None = None) -> None:
        self.cfg = cfg
        self.policy = policy
        self._caps = caps  # the driver's record; found on first use when built without one
        self.seed = seed
        self.n = cfg.actors
        self.actors: list[Any] = []
        self.restarts = 0  # actor re-creations over the run (for tests and logs)
        self._owns_ray = False
        self._policy_ref: Any = None

    @property
    def caps(self) -> PolicyCapabilities:
        if self._caps is None:
            self._caps = capabilities_of(self.policy)
        return self._caps

    # ---- actor lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        """Connect and create the actors. Lazy (first :meth:`run`) so that a resumed driver has
        already restored its policy before the policy is shipped to actors."""
        if self.actors:
            return
        self._owns_ray = connect(self.cfg)
        self._policy_ref = ray.put(self.policy)
        self.actors = [self._create(i) for i in range(self.n)]

    def _actor_options(self) -> dict[str, Any]:
        cpus = self.cfg.cpus_per_actor
        if cpus is None:
            total = float(ray.cluster_resources().get("CPU", 1.0))
            cpus = min(1.0, total / self.n)
        opts: dict[str, Any] = {
            "num_cpus": cpus,
            "num_gpus": self.cfg.num_gpus,
            "max_restarts": 0,
            "max_concurrency": 1000,
        }
        if self.cfg.resources:
            opts["resources"] = dict(self.cfg.resources)
        if self.cfg.placement == "spread":
            opts["scheduling_strategy"] = "SPREAD"
        return opts

    def _create(self, shard: int) -> Any:
        ctx = ActorContext(
            shard,
            self.n,
            self.seed,
            self.cfg.concurrency_per_actor,
            shard_urls(self.cfg.base_urls, shard, self.n),
            self.cfg.num_gpus,
        )
        return _RemoteShardActor.options(**self._actor_options()).remote(self._policy_ref, ctx)

    def _restart(self, shard: int, exc: BaseException) -> None:
        self.restarts += 1
        log.warning("actor for shard %d died (%s); re-creating it and re-running its batch", shard, type(exc).__name__)
        try:
            ray.kill(self.actors[shard], no_restart=True)
        except Exception:  # already gone
            pass
        self.actors[shard] = self._create(shard)

    def actor_info(self) -> list[dict[str, Any]]:
        """pid / node id / host of every actor, in shard order (starts the actors if needed)."""
        self.start()
        return list(ray.get([a.info.remote() for a in self.actors]))

    # ---- one step --------------------------------------------------------------------------
    def run(self, observations: Sequence[Observation]) -> list[Decision]:
        """One message per shard and step. (Splitting a shard into pipelined chunks was measured
        slower for async policies: ~25% fewer activations/s at 10^4 calls per actor and step.)"""
        self.start()
        batches = self._partition(observations)
        budgets = self.caps.shard_budgets
        shares = budgets.shard_allowances(batches) if budgets is not None else None  # the run's budgets, split
        refs = {s: ray.put(pack_observations(b)) for s, b in enumerate(batches) if b}  # a re-run reuses it
        share = {s: None if shares is None else shares[s] for s in refs}
        pending = {self.actors[s].decide.remote(ref, share[s]): (s, self.actors[s]) for s, ref in refs.items()}
        attempts = [0] * self.n
        results: dict[int, tuple[list[tuple], dict[str, Any]]] = {}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                s, actor = pending.pop(done[0])
                try:
                    results[s] = ray.get(done[0])
                except RayActorError as exc:
                    if actor is self.actors[s]:  # not already replaced
                        attempts[s] += 1
                        if attempts[s] > self.cfg.max_actor_restarts:
                            raise ExecutorError(
                                f"shard {s}: actor died {attempts[s]} times in one step; giving up"
                            ) from exc
                        self._restart(s, exc)
                    pending[self.actors[s].decide.remote(refs[s], share[s])] = (s, self.actors[s])
        except BaseException:  # a signal (or an error) mid-step: the step's calls must still reach the trace
            self._salvage(pending, results)
            raise
        keys = sorted(results)
        decisions = [d for k in keys for d in unpack_decisions(results[k][0])]
        if budgets is not None:  # the driver's ledgers now hold what the actors spent
            budgets.count_shard_calls(decisions)
        self._collect_rows([results[k][1] for k in keys])
        return sorted(decisions, key=lambda d: d.agent_id)

    def _salvage(self, pending: dict[Any, tuple[int, Any]], results: dict[int, Any]) -> None:
        """Hand the driver's policy every call of a step cut off mid-wait, for the aborted step's log.

        Why: a stopped driver read no answer of the shards still deciding, and not the calls inside the answers
        it had read: 48 of 1,419 requests the server received were in no trace. Each pending ``decide`` is
        cancelled (the actor's requests unwind and are noted as interrupted, ``socium.llm.interrupted``), then
        each actor hands over what it holds; the finished shards' calls are taken from their decisions. Best
        effort within a few seconds: a second signal (the default handler again) ends it at once.
        """
        keep = getattr(self.policy, "keep_calls", None)
        if keep is None:
            return
        calls: list[Any] = [
            c for r in results.values() for d in unpack_decisions(r[0]) for c in (d.meta.get("llm_calls") or [])
        ]
        actors = [actor for _s, actor in pending.values()]
        try:
            for ref in pending:
                ray.cancel(ref)
            ray.wait(list(pending), num_returns=len(pending), timeout=SALVAGE_WAIT_S)
            for got in ray.get([a.drain_calls.remote() for a in actors], timeout=SALVAGE_WAIT_S):
                calls += got
        except Exception as exc:  # a dead actor or a timeout: keep what was salvaged, say what was not
            logging.getLogger(__name__).warning("could not collect the in-flight calls of every Ray actor: %s", exc)
        if calls:
            keep(calls)

    def _partition(self, observations: Sequence[Observation]) -> list[list[Observation]]:
        hook = self.caps.partitioner
        if hook is not None:
            batches = [list(b) for b in hook.partition(list(observations), self.n)]
            if len(batches) != self.n or sum(map(len, batches)) != len(observations):
                raise ExecutorError(
                    f"policy.partition returned {len(batches)} shards / {sum(map(len, batches))} "
                    f"observations for {self.n} shards / {len(observations)} observations"
                )
            return batches
        out: list[list[Observation]] = [[] for _ in range(self.n)]
        for o in observations:
            out[o.agent_id % self.n].append(o)
        return out

    def _collect_rows(self, per_shard: list[dict[str, Any]]) -> None:
        merged: dict[str, list[Any]] = {}
        for rows in per_shard:
            for table, batch in rows.items():
                if _n_rows(batch):
                    merged.setdefault(table, []).append(batch)
        if not merged:
            return
        absorb = self.caps.absorb
        if absorb is None:
            raise ExecutorError(
                f"the policy produced trace rows ({sorted(merged)}) inside Ray actors but has no "
                "absorb_rows(rows) to hand them to the driver; return them in Decision.meta instead"
            )
        absorb.absorb_rows({t: _concat(bs) for t, bs in merged.items()})

    def close(self) -> None:
        for a in self.actors:
            try:
                ray.get(a.close.remote(), timeout=30)
            except Exception:  # closing is best effort; the actor is killed next anyway
                pass
            ray.kill(a, no_restart=True)
        self.actors = []
        if self.caps.closer is not None:
            self.caps.closer.close()
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False


def _n_rows(batch: Any) -> int:
    if isinstance(batch, dict):
        return max((len(v) for v in batch.values()), default=0)
    return int(getattr(batch, "num_rows", len(batch)))


def _concat(batches: list[Any]) -> Any:
    """Merge one table's row batches (all dict-of-lists, or anything pyarrow can make a table of)."""
    if all(isinstance(b, dict) for b in batches):
        keys = list(batches[0])
        return {k: [v for b in batches for v in b.get(k, [])] for k in keys}
    tables = [b if isinstance(b, pa.Table) else pa.table(b) for b in batches]
    return pa.concat_tables(tables, promote_options="default")


__all__ = [
    "ActorContext",
    "ExecutorError",
    "RayExecutor",
    "ShardActor",
    "connect",
    "pack_decisions",
    "pack_observations",
    "shard_urls",
    "unpack_decisions",
    "unpack_observations",
]
