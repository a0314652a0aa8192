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

Concurrency inside an actor. A policy with ``async def adecide(obs)`` (an LLM policy) has its
shard's observations overlapped on the actor's event loop, at most ``concurrency_per_actor`` in
flight; otherwise ``decide_batch``/``decide`` run in a loop. Throughput of LLM agents is thus
bounded by ``actors * concurrency_per_actor / latency``.

Hooks a policy may implement (all optional):
- ``for_actor(ctx: ActorContext) -> policy``: specialise the policy inside the actor, e.g. to
  build its LLM backend against ``ctx.base_urls`` (the servers this actor is assigned) or on the
  GPU Ray gave it. Backends must be created lazily inside the actor, never pickled.
- ``drain_rows() -> dict[table, rows]``: extra trace rows (LLM calls) produced in the actor; they
  are returned with the decisions and handed to the driver policy's ``absorb_rows(rows)``, or
  kept for :meth:`RayExecutor.drain_rows` when it has none.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass, field
from typing import Any, Sequence

import pyarrow as pa
import ray
from ray.exceptions import RayActorError

from socium.agents.observation import Decision, Observation
from socium.config import ExecutorConfig
from socium.errors import SociumError
from socium.simulator.executors import adecide_all, decide_sync

log = logging.getLogger(__name__)


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


class ShardActor:
    """Holds one shard's policy; runs its observations. Created through ``ray.remote`` below."""

    def __init__(self, policy: Any, ctx: ActorContext) -> None:
        hook = getattr(policy, "for_actor", None)
        self.policy = hook(ctx) if hook is not None else policy
        self.ctx = ctx

    async def info(self) -> dict[str, Any]:
        """Where this actor runs: pid, node id and host (tests kill the pid; docs show placement)."""
        return {"shard": self.ctx.shard, "pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id(),
                "host": socket.gethostname()}  # fmt: skip

    async def decide(self, observations: list[Observation]) -> tuple[list[Decision], dict[str, Any]]:
        policy = self.policy
        if hasattr(policy, "adecide"):
            decisions = await adecide_all(policy, observations, self.ctx.concurrency)
        else:
            decisions = decide_sync(policy, observations)
        drain = getattr(policy, "drain_rows", None)
        return decisions, (drain() if drain is not None else {})

    async def close(self) -> None:
        close = getattr(self.policy, "close", None)
        if close is not None:
            close()


_RemoteShardActor = ray.remote(ShardActor)


def connect(cfg: ExecutorConfig) -> bool:
    """Join the cluster at ``cfg.address`` or start Ray locally; True when this call started it.

    Inside a Ray worker (a sweep's run task) Ray is already connected and nothing is done.
    """
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    kwargs: dict[str, Any] = {"ignore_reinit_error": True}
    if cfg.address is None:
        kwargs.update(num_cpus=os.cpu_count() or 1, include_dashboard=False)
    else:
        kwargs["address"] = cfg.address
    kwargs.update(cfg.ray_init)
    ray.init(**kwargs)
    return True


class RayExecutor:
    """Shards agents over ``cfg.actors`` Ray actors; see the module docstring for the protocol."""

    def __init__(self, cfg: ExecutorConfig, policy: Any, seed: int) -> None:
        self.cfg = cfg
        self.policy = policy
        self.seed = seed
        self.n = cfg.actors
        self.actors: list[Any] = []
        self.restarts = 0  # actor re-creations over the run (for tests and logs)
        self._owns_ray = False
        self._policy_ref: Any = None
        self._rows: dict[str, list[Any]] = {}

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
        opts: dict[str, Any] = {"num_cpus": cpus, "num_gpus": self.cfg.num_gpus, "max_restarts": 0, "max_concurrency": 1000}
        if self.cfg.resources:
            opts["resources"] = dict(self.cfg.resources)
        if self.cfg.placement == "spread":
            opts["scheduling_strategy"] = "SPREAD"
        return opts

    def _create(self, shard: int) -> Any:
        ctx = ActorContext(shard, self.n, self.seed, self.cfg.concurrency_per_actor,
                           shard_urls(self.cfg.base_urls, shard, self.n), self.cfg.num_gpus)  # fmt: skip
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
        self.start()
        batches: list[list[Observation]] = [[] for _ in range(self.n)]
        for o in observations:
            batches[o.agent_id % self.n].append(o)
        refs = {s: ray.put(b) for s, b in enumerate(batches) if b}  # put once; a re-run reuses it
        pending = {self.actors[s].decide.remote(ref): s for s, ref in refs.items()}
        attempts = [0] * self.n
        results: dict[int, tuple[list[Decision], dict[str, Any]]] = {}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            shard = pending.pop(done[0])
            try:
                results[shard] = ray.get(done[0])
            except RayActorError as exc:
                attempts[shard] += 1
                if attempts[shard] > self.cfg.max_actor_restarts:
                    raise ExecutorError(f"shard {shard}: actor died {attempts[shard]} times in one step; giving up") from exc
                self._restart(shard, exc)
                pending[self.actors[shard].decide.remote(refs[shard])] = shard
        decisions = [d for s in sorted(results) for d in results[s][0]]
        self._collect_rows([results[s][1] for s in sorted(results)])
        return sorted(decisions, key=lambda d: d.agent_id)

    def _collect_rows(self, per_shard: list[dict[str, Any]]) -> None:
        merged: dict[str, list[Any]] = {}
        for rows in per_shard:
            for table, batch in rows.items():
                merged.setdefault(table, []).append(batch)
        if not merged:
            return
        out = {t: _concat(bs) for t, bs in merged.items()}
        absorb = getattr(self.policy, "absorb_rows", None)
        if absorb is not None:
            absorb(out)
        else:
            for t, b in out.items():
                self._rows.setdefault(t, []).append(b)

    def drain_rows(self) -> dict[str, Any]:
        """Rows produced in actors that no driver-side ``absorb_rows`` took (then cleared)."""
        out = {t: _concat(bs) for t, bs in self._rows.items()}
        self._rows = {}
        return out

    def close(self) -> None:
        for a in self.actors:
            try:
                ray.get(a.close.remote(), timeout=30)
            except Exception:  # closing is best effort; the actor is killed next anyway
                pass
            ray.kill(a, no_restart=True)
        self.actors = []
        close = getattr(self.policy, "close", None)
        if close:
            close()
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False


def _concat(batches: list[Any]) -> Any:
    """Merge one table's row batches (all dict-of-lists, or anything pyarrow can make a table of)."""
    if all(isinstance(b, dict) for b in batches):
        keys = list(batches[0])
        return {k: [v for b in batches for v in b.get(k, [])] for k in keys}
    tables = [b if isinstance(b, pa.Table) else pa.table(b) for b in batches]
    return pa.concat_tables(tables, promote_options="default")


__all__ = ["ActorContext", "ExecutorError", "RayExecutor", "ShardActor", "connect", "shard_urls"]
