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
resumes from the trace with ``socium run --resume``. A *stopped* driver (a signal, or an error in one
shard) first has every shard still deciding stop and hand over the calls it made, so they reach the
aborted step's log (the stop protocol: :mod:`socium.simulator.ray_actor`).

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

import logging
import os
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import ray
from ray.exceptions import RayActorError

from socium.config.executor import ExecutorConfig
from socium.core.contracts import Decision, Observation
from socium.core.policy import Policy, PolicyCapabilities, capabilities_of
from socium.errors import ExecutorError
from socium.llm import resume_replay
from socium.simulator.ray_actor import ActorContext, RemoteShardActor, ShardAnswer, shard_urls
from socium.simulator.ray_start import start_ray
from socium.simulator.ray_wire import pack_observations, unpack_decisions

log = logging.getLogger(__name__)


#: Seconds a stopped driver waits for its actors to hand over the calls of the step it cut off (one wait
#: for all of them). Unwinding takes milliseconds; the bound is for an actor that cannot answer (its node
#: lost), and stays under the usual grace between SIGTERM and SIGKILL (Slurm, Kubernetes: 30 s).
STOP_WAIT_S = 10.0


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
        self._batch = 0  # number of the last run (one per step or chunk); the actors' stop names it

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
        return RemoteShardActor.options(**self._actor_options()).remote(self._policy_ref, ctx)

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
        self._batch += 1
        batch = self._batch
        batches = self._partition(observations)
        budgets = self.caps.shard_budgets
        shares = budgets.shard_allowances(batches) if budgets is not None else None  # the run's budgets, split
        refs = {s: ray.put(pack_observations(b)) for s, b in enumerate(batches) if b}  # a re-run reuses it
        share = {s: None if shares is None else shares[s] for s in refs}
        told = _answers_by_shard(batches, refs)  # a resumed step's recorded answers, each shard its agents'
        pending: dict[Any, tuple[int, Any]] = {}
        results: dict[int, ShardAnswer] = {}
        try:  # everything up to the return: a signal anywhere in it must not lose a shard's calls
            for s, ref in refs.items():
                pending[self.actors[s].decide.remote(ref, share[s], batch, told[s])] = (s, self.actors[s])
            attempts = [0] * self.n
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                s, actor = pending[done[0]]
                try:
                    answer = ray.get(done[0])
                except RayActorError as exc:
                    del pending[done[0]]
                    if actor is self.actors[s]:  # not already replaced
                        attempts[s] += 1
                        if attempts[s] > self.cfg.max_actor_restarts:
                            raise ExecutorError(
                                f"shard {s}: actor died {attempts[s]} times in one step; giving up"
                            ) from exc
                        self._restart(s, exc)
                    pending[self.actors[s].decide.remote(refs[s], share[s], batch, told[s])] = (s, self.actors[s])
                    continue
                if answer.stopped is not None:
                    raise ExecutorError(f"shard {s}: its actor was stopped by another driver mid-step")
                results[s] = answer  # then out of pending: a signal in between finds it in results only
                del pending[done[0]]
            keys = sorted(results)
            decisions = [d for k in keys for d in unpack_decisions(results[k].decisions)]
            if budgets is not None:  # the driver's ledgers now hold what the actors spent
                budgets.count_shard_calls(decisions)
            self._collect_rows([results[k].rows for k in keys])
            return sorted(decisions, key=lambda d: d.agent_id)
        except BaseException:  # a signal (or an error) mid-step: the step's calls must still reach the trace
            self._salvage(batch, pending, results)
            raise

    def _salvage(self, batch: int, pending: dict[Any, tuple[int, Any]], results: dict[int, ShardAnswer]) -> None:
        """Hand the driver's policy every call of a step cut off mid-way (``LLMPolicy.keep_calls``), for the
        aborted step's log: those of the shards already read, and those each shard still deciding hands over
        when stopped (the stop protocol of :mod:`socium.simulator.ray_actor`). What cannot be had (a dead
        actor, one that does not answer within ``STOP_WAIT_S``) is logged by shard. A second signal (the
        default handler again) ends it at once."""
        calls = [c for a in results.values() for c in self._calls_in(a)]
        waiting = {ref: sa for ref, sa in pending.items() if sa[0] not in results}
        missing: list[str] = []
        try:
            for actor in {id(a): a for _s, a in waiting.values()}.values():
                actor.stop.remote(batch)
            deadline = time.monotonic() + STOP_WAIT_S
            while waiting:
                left = deadline - time.monotonic()
                done, _ = ray.wait(list(waiting), num_returns=1, timeout=max(0.0, left))
                if not done:
                    missing += [f"shard {s}: no answer within {STOP_WAIT_S:.0f} s" for s, _a in waiting.values()]
                    break
                s, _a = waiting.pop(done[0])
                try:
                    answer = ray.get(done[0])
                except Exception as exc:  # the actor died, or its policy raised
                    missing.append(f"shard {s}: {type(exc).__name__}")
                    continue
                calls += answer.stopped if answer.stopped is not None else self._calls_in(answer)
        except Exception as exc:  # Ray itself failed on the way out: keep what was salvaged, say what was not
            missing.append(f"{type(exc).__name__}: {exc}")
        if missing:
            log.warning(
                "the calls in flight inside some Ray actors at the stop are not in the trace (%s)", "; ".join(missing)
            )
        keep = getattr(self.policy, "keep_calls", None)
        if not calls:
            return
        if keep is None:
            log.warning(
                "%d calls made inside Ray actors in the stopped step cannot be logged: the policy has no keep_calls",
                len(calls),
            )
            return
        keep(calls)

    @staticmethod
    def _calls_in(answer: ShardAnswer) -> list[Any]:
        return [c for d in unpack_decisions(answer.decisions) for c in d.calls]

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


def _answers_by_shard(batches: Sequence[Sequence[Observation]], shards: Any) -> dict[int, Any]:
    """Each shard's part of the answers a stopped step received, while a resume redoes that step
    (:mod:`socium.llm.resume_replay`): its own agents' only, put once (a re-run after an actor died reuses it)."""
    answers = resume_replay.current()
    if answers is None:
        return {s: None for s in shards}
    parts = {s: answers.for_agents({o.agent_id for o in batches[s]}) for s in shards}
    return {s: None if part is None else ray.put(part) for s, part in parts.items()}


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


__all__ = ["RayExecutor", "connect"]
