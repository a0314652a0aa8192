"""Script mode (omniscient perspective) of :class:`~socium.agents.llm_policy.LLMPolicy`: one narrator
call writes a group of agents' turns, split to fit the context window, with one re-ask of the members
it got wrong.

A part the policy is composed of (``LLMPolicy.narrator``), so the narrator's methods read together
apart from the per-agent turn; it holds no state of its own, only the policy it speaks for (whose
backends, seeds and schemas it uses), typed as :class:`NarratedPolicy` (what the narrator calls, so
this module never imports the policy class that imports it), and the run's config and allowed
actions. ``GroupLLMPolicy`` reuses its fitting and sending of a multi-member call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import ValidationError

from socium.agents import prompts as P
from socium.agents.answer_validation import _short_error, validate_action
from socium.agents.narrator_fit import FittedCall, Render, collect_unshown, fit_calls, mark_unshown
from socium.agents.policy_calls import PolicyCalls
from socium.config.experiment import ExperimentConfig
from socium.core.contracts import Decision, Observation
from socium.core.perspective import sees_environment_facts
from socium.llm.context import context_window, prompt_counter
from socium.llm.parsing import parse_json_lenient
from socium.llm.types import LLMResult
from socium.platform.text import clean_text


class NarratedPolicy(PolicyCalls, Protocol):
    """What the narrator needs from the policy it speaks for, besides its calls."""

    def llm_of(self, agent: int) -> str:
        """The name of the backend (``llms``) that answers for ``agent``."""
        ...

    def action_schema(self, obs: Observation) -> dict[str, Any]:
        """One action's schema for this observation (what the agent alone would be offered)."""
        ...


class Narrator:
    """The narrator calls of script mode (see the module docstring)."""

    def __init__(self, policy: NarratedPolicy, cfg: ExperimentConfig, allowed: Sequence[str]) -> None:
        self.policy = policy
        self.cfg = cfg
        self.ac = cfg.llm_agents
        self.allowed = list(allowed)

    # ---- omniscient (script mode) -------------------------------------------------------------
    async def narrate(self, group: list[Observation]) -> list[Decision]:
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
        backend = self.policy.backend_for(self.policy.llm_of(group[0].agent_id))
        llm = self.cfg.llm
        assert llm is not None
        return fit_calls(group, render, prompt_counter(backend), context_window(backend), llm.max_tokens)

    def _narrator_messages(self, group: list[Observation], errors: dict[int, str]) -> list[dict[str, str]]:
        members = [(o.own_profile(), o, o.memory) for o in group]
        seen = sees_environment_facts(self.cfg.perspective, self.ac.ground_truth_visible_to)  # perspective table
        gt = self.ac.ground_truth if seen else None
        msgs = P.narrator_messages(
            members,
            group[0].global_feed,
            group[0].stats or "",
            actions=self.allowed,
            platform=self.cfg.platform.preset,
            ground_truth=gt,
            perspective=self.cfg.perspective,
            **self.policy.persona_kw(),
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

    async def ask_members(
        self, call: FittedCall, rid: str, schema: dict[str, Any], meta: dict[str, Any], salt: int
    ) -> LLMResult:
        """Send one call that answers for all of ``call.members`` (a narrator group, or a persona
        cluster's members in ``group_policy``), its seed drawn for the first member and ``salt``, with
        room for every member's answer. The callers' request ids, schemas, metadata and salts differ;
        only the sending is shared."""
        first = call.members[0]
        llm = self.cfg.llm
        assert llm is not None
        seed = self.policy.seed(first.agent_id, first.step, salt)
        req = self.policy.request(rid, call.messages, schema, meta, seed, max_tokens=llm.max_tokens * len(call.members))
        return await self.policy.ask(req)

    async def _narrator_call(
        self, call: FittedCall, attempt: int, whole: list[Observation]
    ) -> tuple[list[Decision], list[tuple[Observation, str, str | None]]]:
        group = call.members
        schema = P.narrator_schema({o.agent_id: self.policy.action_schema(o) for o in group})
        first = group[0]
        meta: dict[str, Any] = {"step": first.step, "agent_id": first.agent_id, "group": [o.agent_id for o in group]}
        if attempt:
            meta["attempt"] = attempt
        call.record(meta, whole, attempt, "narrator_group")  # split / trimmed / the window that bounded it
        rid = f"s{first.step}-g{first.agent_id}" + (f"-{attempt}" if attempt else "")
        res = await self.ask_members(call, rid, schema, meta, 99 + attempt)
        if not res.ok:
            return backend_failed(res, group), []
        raw = clean_text(res.text, 2000).text
        try:
            data = parse_json_lenient(res.text)
            if not isinstance(data, dict):
                raise ValueError("expected a JSON object keyed by agent_<id>")
            missing = "no action for this character"
        except ValueError as exc:
            data, missing = {}, _short_error(exc)
        done: list[Decision] = []
        retry: list[tuple[Observation, str, str | None]] = []
        for o in group:
            try:
                key = f"agent_{o.agent_id}"
                if key not in data:
                    raise ValueError(missing)
                done.append(Decision(o.agent_id, [validate_action(data[key], o, self.allowed)], origin="llm"))
            except (ValueError, ValidationError) as exc:
                retry.append((o, _short_error(exc), raw))
        return done, retry


def backend_failed(res: LLMResult, members: list[Observation]) -> list[Decision]:
    """Every member of a multi-member call gets an invalid decision naming the backend error (the call
    failed after retries, so there is no answer to validate, and nothing is re-asked)."""
    reason = clean_text(f"backend error ({res.error_kind}): {res.error}", 500).text
    return [Decision(o.agent_id, [], invalid_reason=reason) for o in members]
