"""Group agents (GA-S3): one LLM call decides for the active members of a persona cluster.

Why: at 10^5-10^6 agents the number of LLM calls, not the platform, sets the cost. Users with
similar personas and stances, facing similar feeds, tend to act alike; one call that writes an
action for each of several such users (with per-member variation) buys scale. Whether the trick
changes a study's conclusions is an empirical question, so it is a policy kind
(``policy.kind: group_llm``) that runs on the same world as per-agent ``llm`` and records every
member's action separately, and ``benchmarks/bench_group_agents.py`` compares the two.

What the call sees is the *local* view of each member (own persona, own goal, own memory, own
feed), written once for the group: a post in several members' feeds is quoted once, and each
member lists which post ids it was shown. Members never see other clusters. The answer is an
object keyed by member (``agent_<id>``), each value constrained to *that member's* feed ids, so a
member cannot act on a post it was not shown; members the model skipped or answered invalidly
are re-asked once in a smaller call, then recorded as ``invalid_llm_output``. A chunk whose prompt
plus ``llm.max_tokens`` per member exceeds the backend's context window is split and, down to one
member, trimmed like a narrator's (:mod:`socium.agents.narrator_fit`; calls record ``split_from``,
``trimmed`` and ``context_tokens``), and the trimmed posts' exposure rows are withdrawn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import ValidationError

from socium.agents import action_prompts as AP
from socium.agents import prompt_blocks as PB
from socium.agents.answer_validation import _short_error, validate_answer
from socium.agents.call_log import rendered_calls
from socium.agents.clustering import cluster_population
from socium.agents.llm_narrator import backend_failed
from socium.agents.llm_policy import LLMPolicy
from socium.agents.narrator_fit import FittedCall, collect_unshown, mark_unshown
from socium.agents.profiles import Population
from socium.config.experiment import ExperimentConfig
from socium.core.contracts import Decision, Observation
from socium.core.policy import ShardPlacement
from socium.llm.parsing import parse_json_lenient
from socium.platform.text import clean_text, quote_inline, quote_untrusted
from socium.recsys.embeddings import make_embedder

_SYSTEM = (
    "You act for a group of similar users of {site}. For EACH listed user choose what that user does now, "
    "in that user's own voice and consistent with that user's profile, stance and goal; similar users may still "
    "act differently. Each user may act only on the posts listed as in their feed. {items} Answer with one JSON "
    'object with one key per user ("agent_<id>") whose value is that user\'s answer.\n'
    "Answer format per user: {fmt}\nActions:\n{catalogue}"
)


class GroupLLMPolicy(LLMPolicy):
    """``policy.kind: group_llm``: clusters of similar agents share a call (see module docstring)."""

    def __init__(self, cfg: ExperimentConfig, labels: np.ndarray, backend_factory: Any = None) -> None:
        super().__init__(cfg, backend_factory)
        self.labels = np.asarray(labels, dtype=np.int32)
        site = "an X-like microblogging site" if cfg.platform.preset == "x" else "a Reddit-like forum"
        ac = self.ac
        catalogue = "\n".join(f"- {AP.ACTION_HELP[a]}" for a in self.allowed if a in AP.ACTION_HELP)
        self.group_system = _SYSTEM.format(
            items=AP.ITEMS_ARE_DATA,
            site=site,
            catalogue=catalogue,
            fmt=AP.answer_format(ac.max_actions_per_activation, ac.record_reason),
        )
        self._cluster_rows_written = False

    def for_actor(self, ctx: ShardPlacement) -> GroupLLMPolicy:
        base = super().for_actor(ctx)
        pol = GroupLLMPolicy(base.cfg, self.labels, backend_factory=self.backend_factory)
        pol.set_route(self.route_names, self.route)
        return pol

    def partition(self, observations: Sequence[Observation], n: int) -> list[list[Observation]]:
        """A cluster's members stay on one shard, so the trace is the same on any actor count."""
        out: list[list[Observation]] = [[] for _ in range(n)]
        for o in observations:
            out[int(self.labels[o.agent_id]) % n].append(o)
        return out

    def step_chunk(self, size: int) -> int | None:
        """Clusters are formed over the whole active set of a step: a step is never split."""
        return None

    # ---- one call for a chunk of a cluster -----------------------------------------------------
    def group_messages(self, members: Sequence[Observation]) -> list[dict[str, str]]:
        ac = self.ac
        posts: dict[int, Any] = {}
        for o in members:
            for it in (*o.feed, *o.results):  # search / trend results are shown like feed posts
                posts.setdefault(it.post_id, it)
        shared = PB.feed_block(
            Observation(
                -1, members[0].step, members[0].time_s, members[0].hour, [posts[k] for k in sorted(posts)], None
            ),
            ac.max_item_chars,
            False,
        )
        parts = [f"## Posts in these users' feeds (hour {members[0].hour:02d}:00)\n{shared}"]
        for o in members:
            prof, mem = o.own_profile(), o.memory
            feed_ids = ", ".join(str(i.post_id) for i in o.feed) or "(empty feed)"
            asked = ""
            if o.results_from:
                found = (
                    ", ".join(f"@{quote_inline(u, 60)} (user_id={i})" for i, u in o.found_users)
                    or ", ".join(str(i.post_id) for i in o.results)
                    or "nothing"
                )
                asked = f"\nThey asked for {quote_untrusted(o.results_from, 240)}: {found}"
            you = PB.persona_block(prof, fields=ac.persona_fields, issue=self.cfg.population.issue, third_person=True)
            groups = f"\nTheir groups:\n{PB.groups_block(o, ac.max_item_chars, narrated=True)}" if o.groups else ""
            parts.append(
                f"## User agent_{o.agent_id}\n{you}\nRecently:\n{PB.memory_block(mem)}\n"
                f"In their feed: post ids {feed_ids}{asked}{groups}"
            )
        parts.append("## Your answer\nOne JSON object with a key for every user above.")
        return [{"role": "system", "content": self.group_system}, {"role": "user", "content": "\n\n".join(parts)}]

    def group_schema(self, members: Sequence[Observation]) -> dict[str, Any]:
        props = {f"agent_{o.agent_id}": self.answer_schema(o) for o in members}
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    async def _group_calls(
        self,
        members: list[Observation],
        attempt: int,
        whole: list[Observation],
        unshown: dict[int, list[tuple[int, str]]],
    ) -> tuple[list[Decision], list[Observation]]:
        """``members`` asked in as many calls as their prompt needs to fit the backend's context (split,
        then trimmed: :mod:`socium.agents.narrator_fit`); posts trimmed away are added to ``unshown``."""
        calls = self.narrator.fit_group(members, self.group_messages)
        collect_unshown(calls, unshown)
        answers = await asyncio.gather(*(self._group_call(c, attempt, whole) for c in calls))
        return [d for got, _ in answers for d in got], [o for _, bad in answers for o in bad]

    async def _group_call(
        self, call: FittedCall, attempt: int, whole: list[Observation]
    ) -> tuple[list[Decision], list[Observation]]:
        """Decisions for members answered validly; the rest (to re-ask) with their reasons kept. The
        members are the call's (trimmed ones included), so answers are checked against what was shown."""
        members = call.members
        first = members[0]
        meta: dict[str, Any] = {
            "step": first.step,
            "agent_id": first.agent_id,
            "group": [o.agent_id for o in members],
            "cluster": int(self.labels[first.agent_id]),
            "attempt": attempt,
        }
        call.record(meta, whole, attempt, "split_from")  # split / trimmed / the window that bounded it
        rid = f"s{first.step}-c{int(self.labels[first.agent_id])}-a{first.agent_id}-{attempt}"
        res = await self.narrator.ask_members(call, rid, self.group_schema(members), meta, 500 + attempt)
        if not res.ok:
            return backend_failed(res, members), []
        try:
            data = parse_json_lenient(res.text)
            if not isinstance(data, dict):
                raise ValueError("expected a JSON object keyed by agent_<id>")
        except ValueError as exc:
            data, err = {}, _short_error(exc)
        else:
            err = "no answer for this user"
        done, retry = [], []
        for o in members:
            key = f"agent_{o.agent_id}"
            try:
                if key not in data:
                    raise ValueError(err)
                actions, why = validate_answer(
                    data[key], o, self.allowed, self.ac.max_actions_per_activation, self.ac.record_reason
                )
                reason = None if why is None else clean_text(why, self.ac.max_reason_chars).text
                m: dict[str, Any] = {"cluster": int(self.labels[o.agent_id])}
                done.append(Decision(o.agent_id, actions, meta=m, origin="llm", reason=reason))
            except (ValueError, ValidationError) as exc:
                o.extra["_group_error"] = _short_error(exc)
                o.extra["_group_raw"] = clean_text(res.text, 2000).text
                retry.append(o)
        return done, retry

    async def _decide_chunk(self, members: list[Observation]) -> list[Decision]:
        unshown: dict[int, list[tuple[int, str]]] = {}
        done, retry = await self._group_calls(members, 0, members, unshown)
        if retry and self.ac.reask:
            more, retry = await self._group_calls(retry, 1, members, unshown)
            done += more
        for o in retry:
            done.append(
                Decision(
                    o.agent_id,
                    [],
                    invalid_reason=f"group output: {o.extra.pop('_group_error', '')}",
                    raw=o.extra.pop("_group_raw", None),
                )
            )
        mark_unshown(done, unshown)  # posts trimmed from the prompts: not exposures after all
        return done

    def chunks(self, observations: Sequence[Observation]) -> list[list[Observation]]:
        """Active members of each cluster, in agent order, cut into calls of at most ``group_max_members``."""
        by: dict[int, list[Observation]] = {}
        for o in sorted(observations, key=lambda x: x.agent_id):
            by.setdefault(int(self.labels[o.agent_id]), []).append(o)
        size = self.cfg.policy.group_max_members
        return [obs[i : i + size] for c in sorted(by) for obs in [by[c]] for i in range(0, len(obs), size)]

    async def adecide_batch(self, observations: Sequence[Observation]) -> list[Decision]:
        if observations:
            self._deciding_step = observations[0].step
        decided = await asyncio.gather(*(self._decide_chunk(ch) for ch in self.chunks(observations)))
        decisions = sorted((d for ds in decided for d in ds), key=lambda d: d.agent_id)
        calls = rendered_calls(self.drain_calls())
        if decisions:
            decisions[0].calls.extend(calls)
        return decisions

    # ---- the cluster assignment goes into the trace once ---------------------------------------
    def drain_rows(self) -> dict[str, dict[str, list]]:
        out = super().drain_rows()
        if self._cluster_rows_written:
            return out
        self._cluster_rows_written = True
        sizes = np.bincount(self.labels)
        return {
            **out,
            "agent_clusters": {
                "agent_id": list(range(len(self.labels))),
                "cluster": self.labels.tolist(),
                "cluster_size": sizes[self.labels].tolist(),
            },
        }

    def restore(self, last_step: int) -> None:
        """Resumed: the cluster assignment is already in the trace (written with the first step)."""
        self._cluster_rows_written = True


def make_group_policy(cfg: ExperimentConfig, population: Population) -> GroupLLMPolicy:
    """Cluster the run's population (deterministic in the seed) and build the policy."""

    pc = cfg.policy
    labels = cluster_population(
        population, pc.group_cluster_size, cfg.seed, make_embedder(pc.group_embedder), pc.group_stance_weight
    )
    return GroupLLMPolicy(cfg, labels)
