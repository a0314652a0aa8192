"""Surveys, reflection, importance ratings and interviews of :class:`~socium.agents.llm_policy.LLMPolicy`:
questions asked of agents outside their turns, each answered by one constrained (or free-text) call.

A part the policy is composed of (``LLMPolicy.questions``), so these read apart from the turn logic;
it holds no state of its own, only the policy whose backends and seeds it asks through, typed as
:class:`~socium.agents.policy_calls.PolicyCalls` (so this module never imports the policy class that
imports it), and the run's config.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from socium.agents import prompts as P
from socium.agents.answer_validation import _short_error
from socium.agents.memory import importance_schema, parse_insights, parse_ratings, reflection_schema
from socium.agents.policy_calls import PolicyCalls
from socium.agents.profiles import AgentProfile
from socium.agents.retry import retry_message
from socium.agents.survey_answers import SurveyAnswer, ask_llm_survey
from socium.config.experiment import ExperimentConfig
from socium.llm.base import run_coro_sync
from socium.llm.parsing import parse_json_lenient
from socium.llm.types import ChatMessage
from socium.platform.text import clean_text, quote_untrusted


class Questions:
    """Questions outside the agents' turns (see the module docstring)."""

    def __init__(self, policy: PolicyCalls, cfg: ExperimentConfig) -> None:
        self.policy = policy
        self.ac = cfg.llm_agents

    # ---- surveys and interviews ---------------------------------------------------------------
    def survey(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], question: str, scale: tuple[float, float], step: int
    ) -> tuple[list[SurveyAnswer], list]:
        """Answers (text, value, reason when there is no value, outcome, stated value) and the calls made;
        see socium.agents.survey_answers."""
        return ask_llm_survey(self.policy, people, question, scale, step), self.policy.drain_calls()

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
            self.policy.request(
                f"{kind}-s{step}-a{p.id}",
                msgs,
                schema,
                {"step": step, "agent_id": p.id, kind: True},
                self.policy.seed(p.id, step, salt),
            )
            for p, msgs in people
        ]
        results = run_coro_sync(self.policy.backend_for("default").generate(reqs)) if reqs else []
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
                                    ChatMessage(role="user", content=retry_message(_short_error(exc))),
                                ],
                            }
                        ),
                    )
                )
        if again and self.ac.reask:
            default = self.policy.backend_for("default")
            for (k, _), res in zip(again, run_coro_sync(default.generate([r for _, r in again]))):
                try:
                    out[k] = parse(parse_json_lenient(res.text)) if res.ok else None
                except ValueError:
                    out[k] = None
        return out, self.policy.drain_calls()

    def reflect(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], step: int, n_insights: int
    ) -> tuple[list[list[str]], list]:
        """Generative Agents' reflection: a few high-level insights from an agent's recent memories."""

        task = (
            f"What {n_insights} high-level insights can you infer from these memories about yourself, the people "
            "you see and the issue? Write each as one short sentence in the first person. Answer as JSON "
            '{"insights": [sentence, ...]}.'
        )
        batch = [
            (p, P.interview_messages(p, [quote_untrusted(m, 300) for m in mem], task, **self.policy.persona_kw()))
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

        batch, ns = [], []
        for p, texts in people:
            items = "\n".join(f"{k + 1}. {quote_untrusted(t, 200)}" for k, t in enumerate(texts))
            q = (
                f"Rate how important each of these {len(texts)} memories is to you, from 1 (mundane, like scrolling "
                f"past a post) to 10 (life-changing):\n{items}\nAnswer as JSON " + '{"ratings": [integers]}.'
            )
            batch.append((p, P.interview_messages(p, (), q, **self.policy.persona_kw())))
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
        msgs = P.interview_messages(profile, memory, question, **self.policy.persona_kw())
        req = self.policy.request("interview", msgs, None, {"agent_id": profile.id}, 0)
        res = run_coro_sync(self.policy.backend_for("default").generate([req]))[0]
        return res.text if res.ok else f"(no answer: {res.error})"

    def interview_batch(
        self, people: Sequence[tuple[AgentProfile, Sequence[str]]], question: str, step: int, key: int
    ) -> tuple[list[tuple[str, str]], list]:
        """Free-text answers ``(request_id, answer)`` of each person (persona + memory at ``step``), plus
        the calls made, for the driver to write with the ``interviews`` rows; ``key`` tells questions apart."""
        ask = lambda p, mem: P.interview_messages(p, mem, question, **self.policy.persona_kw())
        reqs = [
            self.policy.request(
                f"interview-s{step}-a{p.id}-q{key}",
                ask(p, mem),
                None,
                {"step": step, "agent_id": p.id, "interview": True},
                self.policy.seed(p.id, step + 1, 2000, key),
            )
            for p, mem in people
        ]
        results = run_coro_sync(self.policy.generate(reqs)) if reqs else []
        answers = [
            (req.request_id, clean_text(res.text, 4000).text if res.ok else f"(no answer: {res.error_kind})")
            for req, res in zip(reqs, results)
        ]
        return answers, self.policy.drain_calls()
