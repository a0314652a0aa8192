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

from socium.agents import prompts as P
from socium.agents.narrator_fit import FittedCall, Render, collect_unshown, fit_calls, mark_unshown
from socium.agents.observation import Decision, Observation
from socium.agents.profiles import AgentProfile
from socium.config import ExperimentConfig
from socium.errors import TraceError
from socium.llm.base import run_coro_sync
from socium.llm.cache import MemoryCache
from socium.llm.config import build_backend
from socium.llm.context import context_window, prompt_counter
from socium.llm.parsing import parse_json_lenient
from socium.llm.replay import ReplayBackend
from socium.llm.types import ChatMessage, LLMRequest, LLMResult
from socium.llm.wrappers import BudgetLedger, find_wrapper
from socium.platform.actions import parse_action
from socium.platform.text import clean_text, quote_untrusted
from socium.simulator.budget_shares import Allowance, apply_allowance, count_calls, shard_allowances
from socium.simulator.rng import LLM
from socium.simulator.seed_ints import SeedInts


class RecordingCache(MemoryCache):
    """Serves repeats and remembers each fresh call so the driver can write it with the step."""

    #: Recent answers kept for repeats; older ones live only in the trace (bounded memory per run).
    MAX_ENTRIES = 4096

    def __init__(self) -> None:
        super().__init__(max_entries=self.MAX_ENTRIES)
        self.pending: list[tuple[str, LLMRequest, LLMResult, str]] = []

    def put(self, key, request, result, model, meta=None) -> None:  # type: ignore[override]
        super().put(key, request, result, model, meta)
        self.pending.append((key, request, result, model))

    def drain(self) -> list[tuple[str, LLMRequest, LLMResult, str]]:
        out, self.pending = self.pending, []
        return out


def load_recorded(trace_path: str) -> MemoryCache:
    """The successful calls of a recorded run, as a cache the replay backend answers from."""
    from pathlib import Path

    from socium.simulator.store import open_trace, require_store

    con = open_trace(require_store(Path(trace_path)))
    cache = MemoryCache()
    try:
        rows = con.execute(
            "SELECT request_hash, response, prompt_tokens, completion_tokens, finish_reason "
            "FROM llm_calls WHERE outcome = 'ok' ORDER BY call_id"
        ).fetchall()
    finally:
        con.close()
    for key, text, pt, ct, fr in rows:
        cache.put(
            key,
            None,
            LLMResult(
                request_id="recorded",
                text=text or "",
                prompt_tokens=pt or 0,  # type: ignore[arg-type]
                completion_tokens=ct or 0,
                finish_reason=fr,
            ),
            "",
        )
    return cache


def recorded_context(trace_path: str) -> int | None:
    """The context window that bounded a recorded run's narrator prompts (None: none did), so its replay
    splits and trims them the same way and asks exactly the recorded requests."""
    from pathlib import Path

    import duckdb

    from socium.simulator.store import require_store

    con = duckdb.connect(str(require_store(Path(trace_path))), read_only=True)
    try:
        sql = "SELECT max(CAST(json_extract(metadata, '$.context_tokens') AS BIGINT)) FROM llm_calls"
        found = con.execute(sql).fetchone()
    finally:
        con.close()
    return None if found is None or found[0] is None else int(found[0])


def recorded_model(trace_path: str) -> str:
    """The model a recorded run called (read from its ``llm_calls``), so replay needs no ``llm.model``."""
    from pathlib import Path

    import duckdb

    from socium.errors import ConfigError
    from socium.simulator.store import require_store

    con = duckdb.connect(str(require_store(Path(trace_path))), read_only=True)
    try:
        sql = "SELECT DISTINCT model FROM llm_calls WHERE outcome = 'ok' AND model IS NOT NULL ORDER BY model"
        models = [r[0] for r in con.execute(sql).fetchall()]
    finally:
        con.close()
    if len(models) != 1:
        found = ", ".join(repr(m) for m in models) or "none"
        raise ConfigError(f"llm.model: replay of {trace_path} needs one recorded model, found {found}; set llm.model")
    return str(models[0])


def validate_action(data: Any, obs: Observation, allowed: Sequence[str]) -> Any:
    """Typed action from model output; ids the observation did not show are invalid (ValueError)."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    action = parse_action(data)
    if action.type not in allowed:
        raise ValueError(f"action '{action.type}' is not offered; choose one of {', '.join(allowed)}")
    pid = getattr(action, "post_id", None)
    if pid is not None and pid not in obs.shown_posts():
        raise ValueError(f"post_id {pid} is not a post shown to you")
    cid = getattr(action, "comment_id", None)
    if cid is not None and cid not in obs.shown_comments():
        raise ValueError(f"comment_id {cid} is not a comment shown to you")
    uid = getattr(action, "user_id", None)
    if uid is not None and uid not in obs.shown_users() | {obs.agent_id}:
        raise ValueError(f"user_id {uid} is not a user shown to you")
    gid = getattr(action, "group_id", None)
    if gid is not None:
        member = action.type != "join_group"
        if gid not in {g.group_id for g in obs.groups if g.member == member}:
            raise ValueError(f"group_id {gid} is not a group {'you are in' if member else 'you were offered to join'}")
    return action


def state_aware_ids(
    obs: Observation, posts: set[int] | None = None, users: set[int] | None = None
) -> dict[str, list[int]]:
    """Ids each vote / share / follow action may take given what the agent already did, so the schema
    never offers what the platform would reject (liking twice, following a followee, reposting oneself).
    ``posts`` / ``users``: ``obs.shown_posts()`` / ``obs.shown_users()`` when the caller has them."""
    posts = obs.shown_posts() if posts is None else posts
    users = obs.shown_users() if users is None else users
    items = (*obs.feed, *obs.results)
    liked = {it.post_id for it in items if it.liked}
    disliked = {it.post_id for it in items if it.disliked}
    own = {it.post_id for it in items if it.author == obs.agent_id}  # and shares of its own posts:
    for it in items:  # the platform refuses both
        mine = {s.post_id for s in it.shared if s.author == obs.agent_id}
        own |= mine | ({it.post_id} if mine else set())
    following = set(obs.extra.get("following", ())) & users
    return {
        k: sorted(v)
        for k, v in (
            ("like_post", posts - liked),
            ("unlike_post", liked),
            ("dislike_post", posts - disliked),
            ("undo_dislike_post", disliked),
            ("repost", posts - own),
            ("follow", users - following),
            ("unfollow", following),
        )
    }


def validate_answer(
    data: Any, obs: Observation, allowed: Sequence[str], max_actions: int = 1, reason: bool = False
) -> tuple[list[Any], str | None]:
    """The actions (and the stated reason) of one answer shaped as :func:`prompts.answer_schema` says."""
    if max_actions <= 1 and not reason:
        return [validate_action(data, obs, allowed)], None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    why = data.get("reason")
    why = clean_text(why, 2000).text if isinstance(why, str) else None
    if max_actions > 1:
        items = data.get("actions")
        if not isinstance(items, list) or not items:
            raise ValueError("'actions' must be a non-empty list")
        if len(items) > max_actions:
            raise ValueError(f"at most {max_actions} actions per turn, got {len(items)}")
        return [validate_action(a, obs, allowed) for a in items], why
    if "action" not in data:
        raise ValueError("missing 'action'")
    return [validate_action(data["action"], obs, allowed)], why


#: Rendered posts kept per step (~0.3-1 KB each): bounds the memo at ~10-40 MB in a huge step.
POSTS_MEMO_MAX = 40_000


class LLMPolicy:
    """One LLM call per active agent (local / mindreader), or one per group (omniscient)."""

    needs_adoption = False
    needs_stance = False
    needs_profile = True

    def __init__(self, cfg: ExperimentConfig, backend_factory: Any = None) -> None:
        """``backend_factory(cache) -> LLMBackend`` replaces the config's backend stack (tests, custom servers)."""
        self.cfg = cfg
        self.backend_factory = backend_factory
        self._seeds = SeedInts(cfg.seed, LLM)
        self.ac = cfg.llm_agents
        self.allowed = [a for a in self.ac.actions if a in P.ACTION_HELP]
        self.system = P.system_prompt(
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
        self._posts_memo: dict[tuple, str] = {}  # rendered feed posts of the current step (P.render_post_memo)
        self._posts_memo_step: int | None = None
        self._deciding_step: int | None = None  # the step of the batch being decided (llm_engines rows)
        self._engine_rows: dict[str, list] = {"step": [], "llm": [], "engine": []}  # not yet in the trace

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
                from socium.errors import ConfigError

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
        count_calls(self._budgeted(), [c for d in decisions for c in d.meta.get("llm_calls", ())])

    def backend_for(self, name: str) -> Any:
        """The backend of one of ``llms`` (``default``: the ``llm`` section), sharing the run's call log."""
        default = self.backend  # also creates the shared recording cache
        if name == "default":
            return default
        if name not in self._named:
            self._named[name] = self._build(self.cfg.llms[name], name)
            self._note_engine(name, self._named[name])
        return self._named[name]

    async def _generate(self, reqs: Sequence[LLMRequest]) -> list[LLMResult]:
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

    def _seed(self, *key: int) -> int:
        """``component_rng(seed, LLM, *key).integers(0, 2**31 - 1)``, without building numpy objects."""
        return self._seeds.integer(2**31 - 1, *key)

    def _request(
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
            messages=[ChatMessage(**m) for m in messages],
            json_schema=schema,
            max_tokens=max_tokens or llm.max_tokens,
            temperature=llm.temperature,
            seed=seed,
            metadata={**meta, "perspective": self.cfg.perspective},
        )

    async def _ask(self, req: LLMRequest) -> LLMResult:
        return (await self.backend_for(req.metadata.get("llm", "default")).generate([req]))[0]

    def _drain_calls(self) -> list[tuple[str, LLMRequest, LLMResult, str]]:
        return self._cache.drain() if self._cache is not None else []

    def drain_calls(self) -> list[tuple[str, LLMRequest, LLMResult, str]]:
        """Calls made but not yet handed to the driver (a step that failed midway still logs them)."""
        return self._drain_calls()

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
        profile: AgentProfile = obs.extra["profile"]
        gt = self.ac.ground_truth if self.cfg.perspective in self.ac.ground_truth_visible_to else None
        return P.agent_messages(
            profile,
            obs,
            obs.extra.get("memory", ()),
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
        return P.answer_schema(
            self.action_schema(obs), ac.max_actions_per_activation, ac.record_reason, ac.max_reason_chars
        )

    def action_schema(self, obs: Observation) -> dict[str, Any]:
        """One action's schema for this observation; the narrator's per-member schema too, so a narrated
        character is offered exactly what the same agent would be offered alone (groups, state-aware ids)."""
        ac = self.ac
        posts, users = obs.shown_posts(), obs.shown_users()
        return P.action_schema(
            self.allowed,
            sorted(posts),
            sorted(users),
            ac.max_content_chars,
            join_ids=[g.group_id for g in obs.groups if not g.member],
            member_ids=[g.group_id for g in obs.groups if g.member],
            comment_ids=sorted(obs.shown_comments()),
            ids_for=state_aware_ids(obs, posts, users),
        )

    async def adecide(self, obs: Observation) -> Decision:
        msgs = self._messages(obs)
        schema = self.answer_schema(obs)
        meta = {"step": obs.step, "agent_id": obs.agent_id}
        last_err, raw = "", None
        for attempt in range(2 if self.ac.reask else 1):
            req = self._request(
                f"s{obs.step}-a{obs.agent_id}-{attempt}",
                msgs,
                schema,
                meta,
                self._seed(obs.agent_id, obs.step, attempt),
            )
            res = await self._ask(req)
            if not res.ok:
                return Decision(
                    obs.agent_id, [], invalid_reason=f"backend error ({res.error_kind}): {res.error}"[:500], raw=None
                )
            raw = res.text
            try:
                actions, why = validate_answer(
                    parse_json_lenient(raw),
                    obs,
                    self.allowed,
                    self.ac.max_actions_per_activation,
                    self.ac.record_reason,
                )
                meta: dict[str, Any] = {"origin": "llm"}
                if why is not None:
                    meta["reason"] = clean_text(why, self.ac.max_reason_chars).text
                return Decision(obs.agent_id, actions, meta=meta)
            except (ValueError, ValidationError) as exc:
                last_err = _short_error(exc)
                msgs = msgs + [
                    {"role": "assistant", "content": clean_text(raw, 2000).text},
                    {
                        "role": "user",
                        "content": f"That answer was invalid: {last_err}. Reply with one valid JSON object.",
                    },
                ]
        return Decision(obs.agent_id, [], invalid_reason=f"invalid output after re-ask: {last_err}", raw=raw)

    # ---- omniscient (script mode) -------------------------------------------------------------
    async def _narrate(self, group: list[Observation]) -> list[Decision]:
        """Script mode: narrator calls for the group, as many as its prompt needs to fit the context
        (see :mod:`socium.agents.narrator_fit`); members a call skipped or answered wrongly (ids from
        another member's feed, an action not offered) are asked once more, alone together."""
        unshown: dict[int, list[tuple[int, str]]] = {}
        done, retry = await self._narrator_calls(self._fitted(group, {}), 0, group, unshown)
        if retry and self.ac.reask:
            errors = {o.agent_id: e for o, e, _ in retry}
            more, retry = await self._narrator_calls(self._fitted([o for o, _, _ in retry], errors), 1, group, unshown)
            done += more
        done += [Decision(o.agent_id, [], invalid_reason=f"narrator output: {err}", raw=raw) for o, err, raw in retry]
        mark_unshown(done, unshown)  # posts trimmed from the prompts: not exposures after all
        return sorted(done, key=lambda d: d.agent_id)

    async def _narrator_calls(
        self,
        calls: list[FittedCall],
        attempt: int,
        whole: list[Observation],
        unshown: dict[int, list[tuple[int, str]]],
    ) -> tuple[list[Decision], list[tuple[Observation, str, str | None]]]:
        collect_unshown(calls, unshown)
        answers = await asyncio.gather(*(self._narrator_call(c, attempt, whole) for c in calls))
        return [d for got, _ in answers for d in got], [r for _, bad in answers for r in bad]

    def _fitted(self, group: list[Observation], errors: dict[int, str]) -> list[FittedCall]:
        """The narrator calls writing ``group``, each within the backend's context window."""
        return self.fit_group(group, lambda members: self._narrator_messages(members, errors))

    def fit_group(self, group: list[Observation], render: Render) -> list[FittedCall]:
        """The calls speaking for ``group`` (prompts from ``render``), each within the context window of
        the first member's backend when it has one, ``max_tokens`` per member kept for the answer
        (see :mod:`socium.agents.narrator_fit`)."""
        backend = self.backend_for(self.llm_of(group[0].agent_id))
        llm = self.cfg.llm
        assert llm is not None
        return fit_calls(group, render, prompt_counter(backend), context_window(backend), llm.max_tokens)

    def _narrator_messages(self, group: list[Observation], errors: dict[int, str]) -> list[dict[str, str]]:
        members = [(o.extra["profile"], o, o.extra.get("memory", ())) for o in group]
        gt = self.ac.ground_truth if "omniscient" in self.ac.ground_truth_visible_to else None
        msgs = P.narrator_messages(
            members,
            group[0].extra.get("global_feed", ()),
            group[0].extra.get("stats", ""),
            actions=self.allowed,
            platform=self.cfg.platform.preset,
            ground_truth=gt,
            **self.persona_kw(),
        )
        mine = {o.agent_id for o in group}
        if errors.keys() & mine:  # the re-ask says what was wrong, member by member
            notes = "\n".join(f"- agent_{a}: {e}" for a, e in sorted(errors.items()) if a in mine)
            msgs.append(
                {
                    "role": "user",
                    "content": f"Your previous answer was invalid for these characters:\n{notes}\n"
                    "Answer again for exactly the characters above.",
                }
            )
        return msgs

    async def _narrator_call(
        self, call: FittedCall, attempt: int, whole: list[Observation]
    ) -> tuple[list[Decision], list[tuple[Observation, str, str | None]]]:
        group = call.members
        schema = P.narrator_schema({o.agent_id: self.action_schema(o) for o in group})
        first = group[0]
        meta: dict[str, Any] = {"step": first.step, "agent_id": first.agent_id, "group": [o.agent_id for o in group]}
        if attempt:
            meta["attempt"] = attempt
        call.record(meta, whole, attempt, "narrator_group")  # split / trimmed / the window that bounded it
        llm = self.cfg.llm
        assert llm is not None
        req = self._request(
            f"s{first.step}-g{first.agent_id}" + (f"-{attempt}" if attempt else ""),
            call.messages,
            schema,
            meta,
            self._seed(first.agent_id, first.step, 99 + attempt),
            max_tokens=llm.max_tokens * len(group),
        )
        res = await self._ask(req)
        if not res.ok:
            reason = clean_text(f"backend error ({res.error_kind}): {res.error}", 500).text
            return [Decision(o.agent_id, [], invalid_reason=reason) for o in group], []
        raw = clean_text(res.text, 2000).text
        try:
            data = parse_json_lenient(res.text)
            if not isinstance(data, dict):
                raise ValueError("expected a JSON object keyed by agent_<id>")
            missing = "no action for this character"
        except ValueError as exc:
            data, missing = {}, _short_error(exc)
        done, retry = [], []
        for o in group:
            try:
                key = f"agent_{o.agent_id}"
                if key not in data:
                    raise ValueError(missing)
                done.append(Decision(o.agent_id, [validate_action(data[key], o, self.allowed)], meta={"origin": "llm"}))
            except (ValueError, ValidationError) as exc:
                retry.append((o, _short_error(exc), raw))
        return done, retry

    # ---- Ray hooks (see socium.simulator.ray_executor) ------------------------------------------
    def partition(self, observations: Sequence[Observation], n: int) -> list[list[Observation]]:
        """Keep each narrator group on one shard so script mode gives the same trace on any actor count."""
        from socium.simulator.ray_executor import partition_in_groups

        if self.cfg.perspective != "omniscient":
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
        if self.cfg.perspective == "omniscient":
            g = self.ac.group_size
            return max(1, size // g) * g
        return size

    def for_actor(self, ctx: Any) -> LLMPolicy:
        """Inside a Ray actor: talk to the servers assigned to it, at its own concurrency."""
        llm = self.cfg.llm
        if llm is None:
            return self
        update: dict[str, Any] = {"max_concurrency": ctx.concurrency}
        if getattr(ctx, "base_urls", None):
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
        if self.cfg.perspective == "omniscient":
            g = self.ac.group_size
            groups = [obs[i : i + g] for i in range(0, len(obs), g)]
            decided = await asyncio.gather(*(self._narrate(gr) for gr in groups))
            decisions = [d for ds in decided for d in ds]
        else:
            decisions = await started_in_slices(self.adecide, obs)
        calls = rendered_calls(self._drain_calls())
        if decisions:
            decisions[0].meta.setdefault("llm_calls", []).extend(calls)
        return decisions

    def decide_batch(self, observations: Sequence[Observation]) -> list[Decision]:
        return run_coro_sync(self.adecide_batch(observations))

    def decide(self, obs: Observation) -> Decision:
        return self.decide_batch([obs])[0]

    # ---- surveys and interviews ---------------------------------------------------------------
    def survey(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], question: str, scale: tuple[float, float], step: int
    ) -> tuple[list[tuple[str, float | None, str | None]], list]:
        """Answers (text, value, reason when there is no value) and the calls made; see socium.simulator.surveys."""
        from socium.simulator.surveys import ask_llm_survey

        self._deciding_step = step
        return ask_llm_survey(self, people, question, scale, step), self._drain_calls()

    def _structured_batch(
        self,
        people: Sequence[tuple[AgentProfile, list[dict[str, str]]]],
        schema: dict,
        parse: Any,
        step: int,
        kind: str,
        salt: int,
    ) -> tuple[list[Any], list]:
        """One constrained request per person; a reply that fails ``parse`` is re-asked once, then None."""
        reqs = [
            self._request(
                f"{kind}-s{step}-a{p.id}",
                msgs,
                schema,
                {"step": step, "agent_id": p.id, kind: True},
                self._seed(p.id, step, salt),
            )
            for p, msgs in people
        ]
        results = run_coro_sync(self.backend.generate(reqs)) if reqs else []
        out: list[Any] = [None] * len(reqs)
        again = []
        for k, (req, res) in enumerate(zip(reqs, results)):
            try:
                out[k] = parse(parse_json_lenient(res.text)) if res.ok else None
            except ValueError as exc:
                again.append(
                    (
                        k,
                        req.model_copy(
                            update={
                                "request_id": req.request_id + "-reask",
                                "messages": req.messages
                                + [
                                    ChatMessage(role="assistant", content=clean_text(res.text, 2000).text),
                                    ChatMessage(
                                        role="user",
                                        content=f"That answer was invalid: "
                                        f"{_short_error(exc)}. Reply with one valid JSON object.",
                                    ),
                                ],
                            }
                        ),
                    )
                )
        if again and self.ac.reask:
            for (k, _), res in zip(again, run_coro_sync(self.backend.generate([r for _, r in again]))):
                try:
                    out[k] = parse(parse_json_lenient(res.text)) if res.ok else None
                except ValueError:
                    out[k] = None
        return out, self._drain_calls()

    def reflect(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], step: int, n_insights: int
    ) -> tuple[list[list[str]], list]:
        """Generative Agents' reflection: a few high-level insights from an agent's recent memories."""
        from socium.agents.memory import parse_insights, reflection_schema

        task = (
            f"What {n_insights} high-level insights can you infer from these memories about yourself, the people "
            "you see and the issue? Write each as one short sentence in the first person. Answer as JSON "
            '{"insights": [sentence, ...]}.'
        )
        batch = [
            (p, P.interview_messages(p, [quote_untrusted(m, 300) for m in mem], task, **self.persona_kw()))
            for p, mem in people
        ]
        got, calls = self._structured_batch(
            batch, reflection_schema(n_insights), lambda d: parse_insights(d, n_insights), step, "reflection", 2000
        )
        return [g or [] for g in got], calls

    def rate_importance(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], step: int
    ) -> tuple[list[list[float] | None], list]:
        """Generative Agents' poignancy rating: 1 (mundane) .. 10 (life-changing) for each new memory."""
        from socium.agents.memory import importance_schema, parse_ratings

        batch, ns = [], []
        for p, texts in people:
            items = "\n".join(f"{k + 1}. {quote_untrusted(t, 200)}" for k, t in enumerate(texts))
            q = (
                f"Rate how important each of these {len(texts)} memories is to you, from 1 (mundane, like scrolling "
                f"past a post) to 10 (life-changing):\n{items}\nAnswer as JSON " + '{"ratings": [integers]}.'
            )
            batch.append((p, P.interview_messages(p, (), q, **self.persona_kw())))
            ns.append(len(texts))
        results: list[Any] = []
        calls: list = []
        for n in sorted(set(ns)):  # one schema per list length
            idx = [k for k, m in enumerate(ns) if m == n]
            got, c = self._structured_batch(
                [batch[k] for k in idx],
                importance_schema(n),
                lambda d, n=n: parse_ratings(d, n),
                step,
                "importance",
                3000,
            )
            results.extend(zip(idx, got))
            calls.extend(c)
        by = dict(results)
        return [by.get(k) for k in range(len(batch))], calls

    def interview(self, profile: AgentProfile, memory: Sequence[str], question: str) -> str:
        msgs = P.interview_messages(profile, memory, question, **self.persona_kw())
        req = self._request("interview", msgs, None, {"agent_id": profile.id}, 0)
        res = run_coro_sync(self.backend.generate([req]))[0]
        return res.text if res.ok else f"(no answer: {res.error})"

    def interview_batch(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], question: str, step: int, key: int
    ) -> tuple[list[tuple[str, str]], list]:
        """Free-text answers ``(request_id, answer)`` of each person (persona + memory at ``step``), plus
        the calls made, for the driver to write with the ``interviews`` rows; ``key`` tells questions apart."""
        ask = lambda p, mem: P.interview_messages(p, mem, question, **self.persona_kw())  # noqa: E731
        reqs = [
            self._request(
                f"interview-s{step}-a{p.id}-q{key}",
                ask(p, mem),
                None,
                {"step": step, "agent_id": p.id, "interview": True},
                self._seed(p.id, step + 1, 2000, key),
            )
            for p, mem in people
        ]
        results = run_coro_sync(self._generate(reqs)) if reqs else []
        answers = [
            (req.request_id, clean_text(res.text, 4000).text if res.ok else f"(no answer: {res.error_kind})")
            for req, res in zip(reqs, results)
        ]
        return answers, self._drain_calls()


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
        raise


def _short_error(exc: Exception) -> str:
    """A bounded, storable reason; parse errors quote the model's text, which may be hostile."""
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        return clean_text(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}", 300).text
    return clean_text(str(exc), 300).text


def make_llm_policy(sim: Any) -> LLMPolicy:
    return LLMPolicy(sim.cfg)


class RenderedRequest:
    """A request as the call log stores it: its prompt and parameters already serialised to the JSON
    strings of ``llm_calls``. Why: a step holds every call until it commits, and a live
    :class:`LLMRequest` (message objects, a per-call JSON schema of nested dicts) costs several times
    its two strings in small Python objects; with Ray it also crosses the wire that way."""

    __slots__ = ("metadata", "params_json", "prompt_json", "request_id")

    def __init__(self, req: LLMRequest) -> None:
        self.request_id = req.request_id
        self.metadata = req.metadata
        self.params_json = req.params_json()  # compact, keys sorted (LLMRequest.params_json)
        self.prompt_json = json.dumps(
            [{"role": m.role, "content": clean_text(m.content, 200_000).text} for m in req.messages],
            ensure_ascii=False,
        )  # always valid UTF-8 JSON

    def __getstate__(self) -> tuple[str, dict[str, Any], str, str]:
        return self.request_id, self.metadata, self.params_json, self.prompt_json

    def __setstate__(self, state: tuple[str, dict[str, Any], str, str]) -> None:
        self.request_id, self.metadata, self.params_json, self.prompt_json = state


def rendered_calls(calls: list[tuple[str, Any, LLMResult, str]]) -> list[tuple[str, Any, LLMResult, str]]:
    """Calls with their requests replaced by :class:`RenderedRequest` (same ``llm_calls`` rows)."""
    return [(k, r if isinstance(r, RenderedRequest) else RenderedRequest(r), res, m) for k, r, res, m in calls]


def call_rows(calls: list[tuple[str, Any, LLMResult, str]], first_id: int) -> dict[str, list]:
    """``llm_calls`` columns for the calls of one step, in a deterministic order."""
    cols: dict[str, list] = {
        k: []
        for k in (
            "call_id",
            "step",
            "agent_id",
            "perspective",
            "request_id",
            "request_hash",
            "model",
            "params",
            "prompt",
            "response",
            "prompt_tokens",
            "completion_tokens",
            "latency_s",
            "finish_reason",
            "outcome",
            "error",
            "attempts",
            "metadata",
        )
    }
    keyed = [
        ((c[1].metadata.get("step") or 0), (c[1].metadata.get("agent_id") or 0), c[1].request_id, i)
        for i, c in enumerate(calls)
    ]
    calls = rendered_calls([calls[k[3]] for k in sorted(keyed)])
    for i, (key, req, res, model) in enumerate(calls):
        md = req.metadata
        for k, v in (
            ("call_id", first_id + i),
            ("step", md.get("step")),
            ("agent_id", md.get("agent_id")),
            ("perspective", md.get("perspective")),
            ("request_id", req.request_id),
            ("request_hash", key),
            ("model", model),
            ("params", req.params_json),
            ("prompt", req.prompt_json),
            ("response", clean_text(res.text, 100_000).text if res.ok else None),
            ("prompt_tokens", res.prompt_tokens),
            ("completion_tokens", res.completion_tokens),
            ("latency_s", res.latency_s),
            ("finish_reason", res.finish_reason),
            ("outcome", "ok" if res.ok else (res.error_kind or "other")),
            ("error", None if res.error is None else clean_text(res.error, 2000).text),
            ("attempts", res.attempts),
            ("metadata", json.dumps(md, sort_keys=True, default=str)),
        ):
            cols[k].append(v)
    return cols
