"""The one contract between the simulation loop and a policy: a small required core, optional
capabilities, and the record of which capabilities a policy has, computed once when it is built.

Why: the loop used to probe the policy with ``getattr``/``hasattr`` for two dozen optional hooks,
spread over the driver, the executors and the Ray actors, so what a policy must (or may) implement
was written nowhere and a misspelled hook was silently skipped. Here each hook is one small
``Protocol``; :func:`capabilities_of` checks the required core once (a class without it is refused
with a :class:`~socium.errors.ConfigError` naming it) and returns a frozen
:class:`PolicyCapabilities` whose fields are the policy itself seen through each protocol it
implements, or None. The loop branches on those fields, and the type checker follows the branch.

Only types of :mod:`socium.core` appear here (the policies live two layers up, in
:mod:`socium.agents`); values the loop merely passes through (profiles, call records, budget
shares) are ``Any``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

from socium.core.contracts import Decision, Observation
from socium.errors import ConfigError

#: ``(profile, memory lines)`` of one agent asked a question outside its turn.
Person = tuple[Any, Sequence[str]]


@runtime_checkable
class Policy(Protocol):
    """The required core: every policy, rule-based or LLM, decides for one observation.

    Its decision must be a pure function of the observation and the per-(agent, step) random
    stream (``socium.core.rng.agent_rng``), so any executor gives the same trace."""

    def decide(self, obs: Observation) -> Decision: ...


# ---- how decisions are made ------------------------------------------------------------------
@runtime_checkable
class BatchDecider(Protocol):
    """Decides a whole chunk at once, synchronously (preferred by the in-process executor)."""

    def decide_batch(self, observations: Sequence[Observation]) -> list[Decision]: ...


@runtime_checkable
class AsyncDecider(Protocol):
    """Decides one observation as a coroutine, so many model calls overlap."""

    async def adecide(self, obs: Observation) -> Decision: ...


@runtime_checkable
class AsyncBatchDecider(Protocol):
    """Decides a whole shard as one coroutine (a Ray actor prefers this)."""

    async def adecide_batch(self, observations: Sequence[Observation]) -> list[Decision]: ...


# ---- what the driver hands the policy, and what it reads back --------------------------------
@runtime_checkable
class ProfileReader(Protocol):
    """Reads agents' profiles, memory and the perspective's view (an LLM agent): the driver fills them in."""

    needs_profile: bool


@runtime_checkable
class AdoptionReader(Protocol):
    """Reads ``FeedItem.adoption`` (fraction of followees who adopted): the driver computes it when True."""

    needs_adoption: bool


@runtime_checkable
class Routable(Protocol):
    """Sends each agent's calls to a named backend (``llms``); set once before any call."""

    def set_route(self, names: Sequence[str], route: Any) -> None: ...


@runtime_checkable
class BudgetKeeper(Protocol):
    """Keeps call/token budgets; the driver sets what the trace already holds, per ``llms`` name."""

    spent: dict[str, tuple[int, int]]


@runtime_checkable
class CallDrainer(Protocol):
    """Hands over calls made but not yet returned with a decision (a step that failed midway)."""

    def drain_calls(self) -> list[Any]: ...


@runtime_checkable
class RowDrainer(Protocol):
    """Adds rows of its own tables to the step being committed (``{table: columns}``)."""

    def drain_rows(self) -> dict[str, Any]: ...


@runtime_checkable
class RowAbsorber(Protocol):
    """Takes the rows its copies drained inside Ray actors, for the driver to write."""

    def absorb_rows(self, rows: dict[str, Any]) -> None: ...


@runtime_checkable
class Closable(Protocol):
    """Holds resources (sockets, loaded models) to release when the run ends."""

    def close(self) -> None: ...


@runtime_checkable
class Restorable(Protocol):
    """Rebuilds its own state when a run is resumed, after the trace up to ``last_step`` was replayed."""

    def restore(self, last_step: int) -> None: ...


# ---- how a step is split ---------------------------------------------------------------------
@runtime_checkable
class StepChunker(Protocol):
    """Says how many policy-bound observations a chunk of a step may hold (None: the step stays whole)."""

    def step_chunk(self, size: int) -> int | None: ...


@runtime_checkable
class ShardPlacement(Protocol):
    """Where a Ray actor runs, as told to its policy (``socium.simulator.ray_actor.ActorContext``)."""

    @property
    def shard(self) -> int: ...
    @property
    def n_shards(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def base_urls(self) -> list[str]: ...
    @property
    def num_gpus(self) -> float: ...


@runtime_checkable
class ActorLocal(Protocol):
    """Makes the copy of itself that a Ray actor runs (its own servers, its own concurrency)."""

    def for_actor(self, ctx: ShardPlacement) -> Any: ...


@runtime_checkable
class Partitioner(Protocol):
    """Chooses which observations go to which of ``n`` shards (e.g. a group stays on one shard)."""

    def partition(self, observations: Sequence[Observation], n: int) -> list[list[Observation]]: ...


@runtime_checkable
class ShardBudgeter(Protocol):
    """Splits the run's budgets over Ray shards each step and counts what the shards spent."""

    def shard_allowances(self, batches: Sequence[Sequence[Observation]]) -> Any: ...
    def set_allowance(self, allowance: Any, where: str) -> None: ...
    def count_shard_calls(self, decisions: Sequence[Decision]) -> None: ...


# ---- questions outside the agents' turns -----------------------------------------------------
@runtime_checkable
class Surveyable(Protocol):
    """Answers scheduled surveys itself (else the driver records each agent's numeric stance): per
    person ``(text, value, reason[, outcome, stated value])`` (``socium.agents.survey_answers``)."""

    def survey(
        self, people: Sequence[Person], question: str, scale: tuple[float, float], step: int
    ) -> tuple[Sequence[tuple[Any, ...]], list[Any]]: ...


@runtime_checkable
class Interviewable(Protocol):
    """Answers free-text interview questions: ``(request_id, answer)`` per person, and the calls made."""

    def interview_batch(
        self, people: Sequence[Person], question: str, step: int, key: int
    ) -> tuple[list[tuple[str, str]], list[Any]]: ...


@runtime_checkable
class ImportanceRater(Protocol):
    """Rates new memories' importance (stream memory with ``importance: llm``)."""

    def rate_importance(self, people: Sequence[Person], step: int) -> tuple[list[list[float] | None], list[Any]]: ...


@runtime_checkable
class Reflector(Protocol):
    """Writes reflections (high-level insights) from an agent's recent memories."""

    def reflect(self, people: Sequence[Person], step: int, n_insights: int) -> tuple[list[list[str]], list[Any]]: ...


@dataclass(frozen=True)
class PolicyCapabilities:
    """What one policy can do, found once when it is built (:func:`capabilities_of`).

    Each capability field is the policy itself, typed as that protocol, or None when it lacks it,
    so ``if (b := caps.batch) is not None: b.decide_batch(...)`` is both the branch and the call."""

    policy: Policy = field(repr=False)
    policy_class: str
    needs_profile: bool = False
    needs_adoption: bool = False
    batch: BatchDecider | None = field(default=None, repr=False)
    adecide: AsyncDecider | None = field(default=None, repr=False)
    adecide_batch: AsyncBatchDecider | None = field(default=None, repr=False)
    route: Routable | None = field(default=None, repr=False)
    budgets: BudgetKeeper | None = field(default=None, repr=False)
    calls: CallDrainer | None = field(default=None, repr=False)
    rows: RowDrainer | None = field(default=None, repr=False)
    absorb: RowAbsorber | None = field(default=None, repr=False)
    closer: Closable | None = field(default=None, repr=False)
    restorer: Restorable | None = field(default=None, repr=False)
    chunker: StepChunker | None = field(default=None, repr=False)
    actor_local: ActorLocal | None = field(default=None, repr=False)
    partitioner: Partitioner | None = field(default=None, repr=False)
    shard_budgets: ShardBudgeter | None = field(default=None, repr=False)
    surveys: Surveyable | None = field(default=None, repr=False)
    interviews: Interviewable | None = field(default=None, repr=False)
    importance: ImportanceRater | None = field(default=None, repr=False)
    reflection: Reflector | None = field(default=None, repr=False)

    def names(self) -> list[str]:
        """The optional capabilities present, by field name (for logs, errors and tests)."""
        flags = [n for n in ("needs_profile", "needs_adoption") if getattr(self, n)]
        skip = {"policy", "policy_class", "needs_profile", "needs_adoption"}
        return flags + [f.name for f in fields(self) if f.name not in skip and getattr(self, f.name) is not None]


_CAPABILITIES: dict[str, type] = {
    "batch": BatchDecider,
    "adecide": AsyncDecider,
    "adecide_batch": AsyncBatchDecider,
    "route": Routable,
    "budgets": BudgetKeeper,
    "calls": CallDrainer,
    "rows": RowDrainer,
    "absorb": RowAbsorber,
    "closer": Closable,
    "restorer": Restorable,
    "chunker": StepChunker,
    "actor_local": ActorLocal,
    "partitioner": Partitioner,
    "shard_budgets": ShardBudgeter,
    "surveys": Surveyable,
    "interviews": Interviewable,
    "importance": ImportanceRater,
    "reflection": Reflector,
}


def capabilities_of(policy: object) -> PolicyCapabilities:
    """The capabilities of ``policy``; :class:`ConfigError` naming its class when it lacks the core.

    Called once per built policy (the driver's in set-up, each Ray actor's own copy when it starts):
    the loop then reads the record and never probes the policy again."""
    name = type(policy).__qualname__
    if not isinstance(policy, Policy) or not callable(policy.decide):
        raise ConfigError(
            f"policy {type(policy).__module__}.{name}: does not implement the Policy contract "
            "(socium.core.policy.Policy): it needs a decide(obs: Observation) -> Decision method"
        )
    found = {k: policy if isinstance(policy, proto) else None for k, proto in _CAPABILITIES.items()}
    return PolicyCapabilities(
        policy=policy,
        policy_class=name,
        needs_profile=isinstance(policy, ProfileReader) and bool(policy.needs_profile),
        needs_adoption=isinstance(policy, AdoptionReader) and bool(policy.needs_adoption),
        **found,  # type: ignore[arg-type]  # each value implements its field's protocol (isinstance above)
    )


__all__ = [
    "ActorLocal",
    "AdoptionReader",
    "AsyncBatchDecider",
    "AsyncDecider",
    "BatchDecider",
    "BudgetKeeper",
    "CallDrainer",
    "Closable",
    "ImportanceRater",
    "Interviewable",
    "Partitioner",
    "Person",
    "Policy",
    "PolicyCapabilities",
    "ProfileReader",
    "Reflector",
    "Restorable",
    "Routable",
    "RowAbsorber",
    "RowDrainer",
    "ShardBudgeter",
    "ShardPlacement",
    "StepChunker",
    "Surveyable",
    "capabilities_of",
]
