"""LLM-backed agents: prompt, constrained JSON action, validation, one re-ask, typed failure.

The policy is a pure function of its observation plus the model's answers: the driver hands it
the agent's profile and memory inside the observation, so the same object can be shipped to Ray
actors and a restarted actor needs no state. Every call made is returned with the decision and
written by the driver in the step's transaction (``llm_calls``), never outside it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import ValidationError

from socium.agents import action_prompts as AP
from socium.agents import prompts as P
from socium.agents.answer_validation import _short_error, state_aware_ids, validate_answer
from socium.agents.call_log import rendered_calls
from socium.agents.call_recording import RecordingCache, load_recorded, recorded_context, recorded_model
from socium.agents.llm_narrator import Narrator
from socium.agents.llm_questions import Questions
from socium.agents.perspectives import show_groups
from socium.agents.profiles import AgentProfile
from socium.agents.retry import repeats_note, retry_turns
from socium.agents.sharding import partition_in_groups
from socium.agents.survey_answers import SurveyAnswer
from socium.config.experiment import ExperimentConfig
from socium.core.contracts import Decision, Observation
from socium.core.perspective import perspective, sees_environment_facts
from socium.core.policy import ShardPlacement
from socium.core.rng import LLM, component_seed31
from socium.errors import ConfigError, TraceError
from socium.llm.base import run_coro_sync
from socium.llm.budget_shares import Allowance, apply_allowance, count_calls, shard_allowances
from socium.llm.factory import build_backend
from socium.llm.parsing import parse_json_lenient
from socium.llm.priority_gate import refills_sent
from socium.llm.replay import ReplayBackend
from socium.llm.types import ChatMessage, LLMRequest, LLMResult
from socium.llm.wrappers import BudgetLedger, find_wrapper
from socium.platform.text import clean_text

#: Rendered posts kept per step (~0.3-1 KB each): bounds the memo at ~10-40 MB in a huge step.
POSTS_MEMO_MAX = 40_000


class LLMPolicy:
    """One LLM call per active agent (local / mindreader), or one per group (omniscient).

    Composed of two parts it holds and calls: ``narrator`` (script mode's group calls,
    :mod:`socium.agents.llm_narrator`) and ``questions`` (surveys, reflection, importance, interviews,
    :mod:`socium.agents.llm_questions`)."""

    needs_adoption = False
    needs_stance = False
    needs_profile = True

    def __init__(self, cfg: ExperimentConfig, backend_factory: Any = None) -> None:
        """``backend_factory(cache) -> LLMBackend`` replaces the config's backend stack (tests, custom servers)."""
        self.cfg = cfg
        self.backend_factory = backend_factory
        self.ac = cfg.llm_agents
        self.allowed = [a for a in self.ac.actions if a in AP.ACTION_HELP]
        self.system = AP.system_prompt(
            self.allowed,
            cfg.platform.preset,
            max_actions=self.ac.max_actions_per_activation,
            reason=self.ac.record_reason,
        )
        self._backend: Any = None
        self._cache: RecordingCache | None = None
        self._named: dict[str, Any] = {}  # backends of cfg.llms, built on first use
        self.route: np.ndarray | None = None  # per agent: index into route_names (None: everyone on `llm`)
        self.route_names: list[str] = ["default"]
        self.spent: dict[str, tuple[int, int]] = {}  # per llms name: (calls, tokens) in the trace; set by the driver
        self._ledgers: dict[str, BudgetLedger] = {}  # per llms name with a budget; the run's, on the driver
        self._posts_memo: dict[tuple, str] = {}  # this step's rendered feed posts (prompt_blocks.render_post_memo)
        self._posts_memo_step: int | None = None
        self._system_messages: dict[str, ChatMessage] = {}  # system prompt text -> its message (request)
        self._deciding_step: int | None = None  # the step of the batch being decided (llm_engines rows)
        self._engine_rows: dict[str, list] = {"step": [], "llm": [], "engine": []}  # not yet in the trace
        self.narrator = Narrator(self, cfg, self.allowed)
        self.questions = Questions(self, cfg)

    def __getstate__(self) -> dict[str, Any]:  # backends hold sockets/models: rebuilt where unpickled
        return {
            **self.__dict__,
            "_backend": None,
            "_cache": None,
            "_named": {},
            "_ledgers": {},
            "_posts_memo": {},
            "_posts_memo_step": None,
            "_engine_rows": {"step": [], "llm": [], "engine": []},
        }

    def set_route(self, names: Sequence[str], route: np.ndarray | None) -> None:
        """Which named backend (``llms``) answers for each agent; set by the simulation before any call."""
        self.route_names, self.route = list(names), route

    def llm_of(self, agent: int) -> str:
        return "default" if self.route is None else self.route_names[int(self.route[agent])]

    # ---- backend ------------------------------------------------------------------------------
    @property
    def backend(self) -> Any:
        if self._backend is None:
            assert self.cfg.llm is not None
            self._cache = RecordingCache()
            if self.backend_factory is not None:
                self._backend = self.backend_factory(self._cache)
            else:
                self._backend = self._build(self.cfg.llm)
            self._note_engine("default", self._backend)
        return self._backend

    def _note_engine(self, name: str, backend: Any) -> None:
        """Keep for ``llm_engines`` how an in-process engine runs (the first layer of the stack with a
        ``describe()``, e.g. EmbeddedBackend): its threads are chosen from the machine's load when it
        starts, so the config alone cannot say what ran, and the Simulation Card reads it from here."""
        layer, seen = backend, 0
        while layer is not None and seen < 64 and not callable(getattr(layer, "describe", None)):
            layer, seen = getattr(layer, "inner", None), seen + 1
        if layer is None or seen >= 64:
            return
        rows = self._engine_rows
        rows["step"].append(self._deciding_step)
        rows["llm"].append(name)
        rows["engine"].append(json.dumps(layer.describe(), sort_keys=True, default=str))

    def drain_rows(self) -> dict[str, dict[str, list]]:
        """Rows for the step being committed: engines started since the last commit (``llm_engines``)."""
        if not self._engine_rows["engine"]:
            return {}
        rows, self._engine_rows = self._engine_rows, {"step": [], "llm": [], "engine": []}
        return {"llm_engines": rows}

    def absorb_rows(self, rows: dict[str, Any]) -> None:
        """Rows a Ray actor's copy of this policy drained (its own engines), written by the driver."""
        unknown = set(rows) - {"llm_engines"}
        if unknown:
            raise TraceError(f"LLMPolicy.absorb_rows: unexpected tables from an actor: {sorted(unknown)}")
        batch = rows["llm_engines"]
        cols = batch.to_pydict() if hasattr(batch, "to_pydict") else batch
        for k in self._engine_rows:
            self._engine_rows[k].extend(cols[k])

    def _build(self, llm: Any, name: str = "default") -> Any:
        if llm.backend == "replay":
            if not self.ac.replay_from:
                raise ConfigError("llm_agents.replay_from: required when llm.backend is 'replay'")
            if not llm.model:  # the model is part of every cache key: take the one the recording used
                llm = llm.model_copy(update={"model": recorded_model(self.ac.replay_from)})
            backend = build_backend(llm, cache=load_recorded(self.ac.replay_from))
            replay = find_wrapper(backend, ReplayBackend)
            assert replay is not None
            replay.context_tokens = recorded_context(self.ac.replay_from)
            return backend
        return build_backend(llm, cache=self._cache, ledger=self.ledger(name), typed_budget=True)

    def ledger(self, name: str = "default") -> BudgetLedger:
        """The budget ledger of one backend; it starts from what the trace holds (``spent``)."""
        if name not in self._ledgers:
            llm = self.cfg.llm if name == "default" else self.cfg.llms[name]
            assert llm is not None
            calls, tokens = self.spent.get(name, (0, 0))
            self._ledgers[name] = BudgetLedger(
                llm.token_budget, llm.call_budget, spent_calls=calls, spent_tokens=tokens
            )
        return self._ledgers[name]

    def _budgeted(self) -> dict[str, BudgetLedger]:
        named = {"default": self.cfg.llm, **self.cfg.llms}
        return {
            n: self.ledger(n)
            for n, c in named.items()
            if c is not None and c.backend != "replay" and (c.call_budget is not None or c.token_budget is not None)
        }

    # Ray: the run's budget is the driver's; each actor spends a share of it per step (see budget_shares)
    def shard_allowances(self, batches: Sequence[Sequence[Observation]]) -> list[Allowance] | None:
        return shard_allowances(self._budgeted(), [len(b) for b in batches])

    def set_allowance(self, allowance: Allowance, where: str) -> None:
        for name, share in allowance.items():
            apply_allowance(self.ledger(name), share, where)

    def count_shard_calls(self, decisions: Sequence[Decision]) -> None:
        count_calls(self._budgeted(), [c for d in decisions for c in d.calls])

    def backend_for(self, name: str) -> Any:
        """The backend of one of ``llms`` (``default``: the ``llm`` section), sharing the run's call log."""
        default = self.backend  # also creates the shared recording cache
        if name == "default":
            return default
        if name not in self._named:
            self._named[name] = self._build(self.cfg.llms[name], name)
            self._note_engine(name, self._named[name])
        return self._named[name]

    async def generate(self, reqs: Sequence[LLMRequest]) -> list[LLMResult]:
        """Each request on its agent's backend (``metadata['llm']``), all backends at once, in order."""
        by: dict[str, list[int]] = {}
        for i, r in enumerate(reqs):
            by.setdefault(r.metadata.get("llm", "default"), []).append(i)
        out: list[Any] = [None] * len(reqs)
        names = sorted(by)
        answers = await asyncio.gather(*(self.backend_for(n).generate([reqs[i] for i in by[n]]) for n in names))
        for n, res in zip(names, answers):
            for i, r in zip(by[n], res):
                out[i] = r
        return out

    @property
    def model_name(self) -> str:
        return self.backend.model_name

    def close(self) -> None:
        for b in [self._backend, *self._named.values()]:
            if b is not None:
                b.close()

    def seed(self, *key: int) -> int:
        """A model call's sampling seed: one draw of the counter-based stream of (run seed, LLM, *key),
        so a call's seed depends on its key only, whichever shard or order asks (computed without
        building the Generator: :func:`socium.core.rng.component_seed31`)."""
        return component_seed31(self.cfg.seed, LLM, *key)

    def request(
        self,
        rid: str,
        messages: list[dict[str, str]],
        schema: dict | None,
        meta: dict,
        seed: int,
        max_tokens: int | None = None,
    ) -> LLMRequest:
        name = self.llm_of(meta["agent_id"]) if self.route is not None and "agent_id" in meta else "default"
        llm = self.cfg.llm if name == "default" else self.cfg.llms[name]
        assert llm is not None
        if name != "default":
            meta = {**meta, "llm": name}
        return LLMRequest(
            request_id=rid,
            messages=[self._message(m) for m in messages],
            json_schema=schema,
            max_tokens=max_tokens or llm.max_tokens,
            temperature=llm.temperature,
            seed=seed,
            metadata={**meta, "perspective": self.cfg.perspective},
        )

    def _message(self, m: dict[str, str]) -> ChatMessage:
        """A request's message; the system prompt's (the same text for every agent) built once per text."""
        if m["role"] != "system":
            return ChatMessage(**m)
        got = self._system_messages.get(m["content"])
        if got is None:
            if len(self._system_messages) >= 16:
                self._system_messages.clear()
            got = self._system_messages[m["content"]] = ChatMessage(**m)  # frozen: safe to share
        return got

    async def ask(self, req: LLMRequest) -> LLMResult:
        return (await self.backend_for(req.metadata.get("llm", "default")).generate([req]))[0]

    def drain_calls(self) -> list[tuple[str, LLMRequest, LLMResult, str]]:
        """Calls made but not yet handed to the driver (a step that failed midway still logs them)."""
        return self._cache.drain() if self._cache is not None else []

    def keep_calls(self, calls: list[tuple[str, Any, LLMResult, str]]) -> None:
        """Calls made elsewhere for this policy (a Ray actor's, salvaged when a signal cut its step off), to be
        handed over by the next :meth:`drain_calls` with this process's own."""
        if self._cache is None:
            self._cache = RecordingCache()
        self._cache.pending.extend(calls)

    def persona_kw(self) -> dict[str, Any]:
        """How an agent's own profile is shown in every prompt about it (turns, surveys, interviews)."""
        return {"persona_fields": self.ac.persona_fields, "issue": self.cfg.population.issue}

    # ---- local / mindreader -------------------------------------------------------------------
    def _posts_memo_for(self, step: int) -> dict[tuple, str]:
        """The step's rendered posts; emptied when the step changes or it holds POSTS_MEMO_MAX posts."""
        if step != self._posts_memo_step or len(self._posts_memo) >= POSTS_MEMO_MAX:
            self._posts_memo = {}
            self._posts_memo_step = step
        return self._posts_memo

    def _messages(self, obs: Observation) -> list[dict[str, str]]:
        profile = obs.own_profile()
        seen = sees_environment_facts(self.cfg.perspective, self.ac.ground_truth_visible_to)  # perspective table
        gt = self.ac.ground_truth if seen else None
        return P.agent_messages(
            profile,
            obs,
            obs.memory,
            system=self.system,
            perspective=self.cfg.perspective,
            max_item_chars=self.ac.max_item_chars,
            ground_truth=gt,
            memo=self._posts_memo_for(obs.step),
            **self.persona_kw(),
        )

    def answer_schema(self, obs: Observation) -> dict[str, Any]:
        """The schema for this observation: ids limited to what it shows (feed posts, authors, groups)."""
        ac = self.ac
        return AP.answer_schema(
            self.action_schema(obs), ac.max_actions_per_activation, ac.record_reason, ac.max_reason_chars
        )

    def action_schema(self, obs: Observation) -> dict[str, Any]:
        """One action's schema for this observation; the narrator's per-member schema too, so a narrated
        character is offered exactly what the same agent would be offered alone (groups, state-aware ids)."""
        ac = self.ac
        posts, users = obs.shown_posts(), obs.shown_users()
        comments = obs.shown_comments()
        ids_for: dict[str, Sequence[int]] = dict(state_aware_ids(obs, self.allowed, posts, users, comments))
        return AP.action_schema(
            self.allowed,
            sorted(posts),
            sorted(users),
            ac.max_content_chars,
            join_ids=[g.group_id for g in obs.groups if not g.member],
            member_ids=[g.group_id for g in obs.groups if g.member],
            comment_ids=sorted(comments),
            ids_for=ids_for,
        )

    async def adecide(self, obs: Observation) -> Decision:
        msgs = self._messages(obs)
        schema = self.answer_schema(obs)
        asked = {"step": obs.step, "agent_id": obs.agent_id}
        last_err, raw = "", None
        for attempt in range(2 if self.ac.reask else 1):
            req = self.request(
                f"s{obs.step}-a{obs.agent_id}-{attempt}",
                msgs,
                schema,
                asked,
                self.seed(obs.agent_id, obs.step, attempt),
            )
            res = await self.ask(req)
            await refills_sent()  # the slot this answer freed is refilled before the answer is parsed
            if not res.ok:
                return Decision(
                    obs.agent_id, [], invalid_reason=f"backend error ({res.error_kind}): {res.error}"[:500], raw=None
                )
            raw = res.text
            try:
                if attempt and repeats_note(raw):  # the retry note pasted into the answer never reaches a post
                    raise ValueError("the answer repeats the platform's note instead of answering")
                actions, why = validate_answer(
                    parse_json_lenient(raw),
                    obs,
                    self.allowed,
                    self.ac.max_actions_per_activation,
                    self.ac.record_reason,
                )
                reason = None if why is None else clean_text(why, self.ac.max_reason_chars).text
                return Decision(obs.agent_id, actions, origin="llm", reason=reason)
            except (ValueError, ValidationError) as exc:
                last_err = _short_error(exc)
                msgs = msgs + retry_turns(clean_text(raw, 2000).text, last_err)
        return Decision(obs.agent_id, [], invalid_reason=f"invalid output after re-ask: {last_err}", raw=raw)

    # ---- questions outside the turns (socium.agents.llm_questions; socium.core.policy protocols) ---
    def survey(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], question: str, scale: tuple[float, float], step: int
    ) -> tuple[list[SurveyAnswer], list]:
        """Every person's survey answer and the calls made (``Surveyable``)."""
        self._deciding_step = step  # engines started by the survey are noted at its step (llm_engines)
        return self.questions.survey(people, question, scale, step)

    def reflect(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], step: int, n_insights: int
    ) -> tuple[list[list[str]], list]:
        """Reflections from recent memories (``Reflector``)."""
        return self.questions.reflect(people, step, n_insights)

    def rate_importance(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], step: int
    ) -> tuple[list[list[float] | None], list]:
        """Importance ratings of new memories (``ImportanceRater``)."""
        return self.questions.rate_importance(people, step)

    def interview(self, profile: AgentProfile, memory: Sequence[str], question: str) -> str:
        """One free-text answer, not recorded (``socium interview`` without ``--record``)."""
        return self.questions.interview(profile, memory, question)

    def interview_batch(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], question: str, step: int, key: int
    ) -> tuple[list[tuple[str, str]], list]:
        """Recorded interview answers ``(request_id, answer)`` and the calls made (``Interviewable``)."""
        return self.questions.interview_batch(people, question, step, key)

    # ---- Ray hooks (see socium.simulator.ray_executor) ------------------------------------------
    def partition(self, observations: Sequence[Observation], n: int) -> list[list[Observation]]:
        """Keep each narrator group on one shard so script mode gives the same trace on any actor count."""
        if not perspective(self.cfg.perspective).grouped:
            out: list[list[Observation]] = [[] for _ in range(n)]
            for o in observations:
                out[o.agent_id % n].append(o)
            return out
        return partition_in_groups(observations, n, self.ac.group_size)

    def step_chunk(self, size: int) -> int | None:
        """Policy-bound observations per chunk of a step that give the decisions of the whole step
        (``executor.step_chunk``); None: only the whole step does. Each agent's call depends on its own
        observation alone; script mode's narrator groups are runs of ``group_size`` of the sorted
        active set, so its chunks hold whole groups."""
        if perspective(self.cfg.perspective).grouped:
            g = self.ac.group_size
            return max(1, size // g) * g
        return size

    def for_actor(self, ctx: ShardPlacement) -> LLMPolicy:
        """Inside a Ray actor: talk to the servers assigned to it, at its own concurrency."""
        llm = self.cfg.llm
        if llm is None:
            return self
        update: dict[str, Any] = {"max_concurrency": ctx.concurrency}
        if ctx.base_urls:
            update["base_urls"] = list(ctx.base_urls)
        llms = {k: v.model_copy(update={"max_concurrency": ctx.concurrency}) for k, v in self.cfg.llms.items()}
        cfg = self.cfg.model_copy(update={"llm": llm.model_copy(update=update), "llms": llms})
        pol = LLMPolicy(cfg, backend_factory=self.backend_factory)
        pol.set_route(self.route_names, self.route)
        return pol

    # ---- batch entry points -------------------------------------------------------------------
    async def adecide_batch(self, observations: Sequence[Observation]) -> list[Decision]:
        obs = sorted(observations, key=lambda o: o.agent_id)
        if obs:
            self._deciding_step = obs[0].step
        row = perspective(self.cfg.perspective)  # the perspective table: narrated, sees its group
        if row.narrated:
            g = self.ac.group_size
            groups = [obs[i : i + g] for i in range(0, len(obs), g)]
            decided = await asyncio.gather(*(self.narrator.narrate(gr) for gr in groups))
            decisions = [d for ds in decided for d in ds]
        else:
            if row.grouped:
                show_groups(obs, self.ac.group_size)
            decisions = await started_in_slices(self.adecide, obs)
        calls = rendered_calls(self.drain_calls())
        if decisions:
            decisions[0].calls.extend(calls)
        return decisions

    def decide_batch(self, observations: Sequence[Observation]) -> list[Decision]:
        return run_coro_sync(self.adecide_batch(observations))

    def decide(self, obs: Observation) -> Decision:
        return self.decide_batch([obs])[0]


#: Tasks :func:`started_in_slices` starts between two looks at the sockets.
START_SLICE = 16


async def started_in_slices(fn: Any, items: Sequence[Any], size: int = START_SLICE) -> list[Any]:
    """``gather(fn(x) for x in items)``, but the tasks start ``size`` at a time, each slice in its own
    turn of the event loop, so answers that arrive meanwhile are read and their slots refilled.

    Why: each task builds its prompt before it waits for a connection slot. Started all at once, a
    step's tasks built every prompt in one turn of the loop (~0.3 s for 1,280 agents) while the
    first answers of a 200 ms server sat unread and its slots idle. Same tasks, same order of
    starts and slot acquisition, so the same requests: only when answers are read changes.
    """
    tasks: list[asyncio.Future[Any]] = []
    try:
        for i, x in enumerate(items):
            tasks.append(asyncio.ensure_future(fn(x)))
            if i % size == size - 1:
                await asyncio.sleep(0)
        return list(await asyncio.gather(*tasks))
    except BaseException:  # cancelled (or a task failed): leave no task of this batch running
        for t in tasks:
            t.cancel()
        # and wait for them to unwind: each notes its request cut off on the wire (socium.llm.interrupted)
        # before the caller drains the call log (a Ray actor stopped mid-step hands it over at once)
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def make_llm_policy(cfg: ExperimentConfig) -> LLMPolicy:
    """The ``policy.kind: llm`` policy of a run (its backends are built on first use)."""
    return LLMPolicy(cfg)
