"""Perspective: building exactly what an agent is shown, as the perspective table says.

The table (names, what each perspective sees, narrated or not, episode mode, description) is
``socium.core.perspective``; this module turns a row into an observation: network runs
(:func:`fill_observation`, called by the simulator for LLM agents) and the Simulation Card
(:func:`who_saw_what`). Dyadic episodes ask the same table (:func:`for_episode_mode`).

=================  ========================================================================
local              own profile (``llm_agents.persona_fields``), own private goal, own memory,
                   own feed; reposts / quotes show the post they share
                   (``llm_agents.quote_depth``); results of its own search / trend request in
                   its next activation; its groups
mindreader         local + the private bio, goal and stance of the author of every post shown
                   (feed, results, the posts those share, comments under them) and of every
                   group message shown; each author's once per prompt
omniscient         one narrator call per ``llm_agents.group_size`` active agents sees every
                   member's local view, profile and goal, plus the global trending feed and
                   platform stats (split or trimmed to the context: ``agents/narrator_fit.py``)
omniscient_agents  the omniscient knowledge, one call per active agent: its own local view,
                   plus its group's members' views, profiles and goals, the global feed and stats
=================  ========================================================================

Environment-only facts (``llm_agents.ground_truth``, posts' veracity) go only to the perspectives
listed in ``llm_agents.ground_truth_visible_to`` / ``moderation.veracity_visible_to`` or whose row
has ``environment_facts``. Exposures are recorded here, for exactly the posts an observation holds,
so the trace's ``exposures`` are what the prompts contained (search / trend results: when shown).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from socium.agents.groups import group_views
from socium.agents.memory import MemoryStream, WindowMemory
from socium.agents.profiles import Population
from socium.config.experiment import ExperimentConfig
from socium.core import actions as A
from socium.core.contracts import FeedItem, Observation, SharedPost
from socium.core.exposure import ExposureSink
from socium.core.perspective import Perspective, perspective, perspective_names, sees_environment_facts
from socium.core.perspective import for_episode_mode as for_episode_mode
from socium.platform.posts import KIND_NAMES, QUOTE, REPOST
from socium.platform.state import PlatformState


class Dated(Protocol):
    """The world's clock, as far as an observation shows it."""

    def sim_datetime(self, step: int) -> datetime | None: ...


class ObservedWorld(Protocol):
    """What filling an LLM agent's observation reads of a run's world (``simulator.world.World`` is one).

    Why a protocol: ``agents/`` sits below the simulator, so it names only what it reads, and a test or
    another loop can hand it anything that has these parts.
    """

    @property
    def cfg(self) -> ExperimentConfig: ...
    @property
    def population(self) -> Population: ...
    @property
    def state(self) -> PlatformState: ...
    @property
    def memory(self) -> WindowMemory | MemoryStream: ...
    @property
    def pending_results(self) -> dict[int, tuple[str, str, list[int]]]: ...
    @property
    def clock(self) -> Dated: ...
    @property
    def n(self) -> int: ...


class _TableView(Mapping[str, Perspective]):
    """A read-only, always-current view of the perspective table keyed by name (old ``PERSPECTIVES``)."""

    def __getitem__(self, name: str) -> Perspective:
        return perspective(name)

    def __iter__(self) -> Iterator[str]:
        return iter(perspective_names())

    def __len__(self) -> int:
        return len(perspective_names())


OTHERS_PRIVATE = ("bio", "goal", "stance")  # what "private" means of another agent in a network run
GLOBAL_FEED_SIZE = 10
# The table itself lives on the ground floor (socium.core.perspective); these names stay importable here.
PERSPECTIVES = _TableView()


# ---- building what is shown ----------------------------------------------------------------------
def feed_item(
    state: Any,
    usernames: list[str],
    stance: np.ndarray,
    viewer: int,
    pid: int,
    source: str,
    rank: int,
    followees: set[int] | None = None,
) -> FeedItem:
    """One post as ``viewer`` sees it in a list (feed, results, global feed): text, counts, author."""
    return feed_items(state, usernames, stance, viewer, (pid,), (source,), followees, rank)[0]


def feed_items(
    state: Any,
    usernames: list[str],
    stance: np.ndarray,
    viewer: int,
    post_ids: Sequence[int],
    sources: Sequence[str],
    followees: set[int] | None = None,
    first_rank: int = 0,
) -> list[FeedItem]:
    """:func:`feed_item` of each post of one list (ranked from ``first_rank`` in order), the state's
    columns and sets looked up once per list rather than once per post."""
    p = state.posts
    v = p.ints  # memoryviews: a Python int per read (see platform.posts)
    text, likes, dislikes, adopters = p.text, state.likes, state.dislikes, state.adopters
    sv: Any = stance  # a memoryview where it can be: a Python float per read, as float(x) gives
    if isinstance(stance, np.ndarray) and stance.ndim == 1 and stance.flags.c_contiguous:
        sv = stance.data
    out = []
    for rank, (pid, source) in enumerate(zip(post_ids, sources), first_rank):
        root = v.root[pid]
        author = v.author[pid]
        s = float(sv[author])
        out.append(
            FeedItem(
                pid,
                author,
                KIND_NAMES[v.kind[pid]],
                text[pid],
                root,
                v.likes[pid],
                v.dislikes[pid],
                v.reposts[pid],
                v.comments[pid],
                source,
                rank,
                adopters.has(root, viewer),
                (viewer, pid) in likes,
                (viewer, pid) in dislikes,
                (len(followees & adopters.get(root, set())) / len(followees)) if followees else 0.0,
                None if s != s else s,  # NaN: no stance
                usernames[author],
            )
        )
    return out


def shared_chain(state: Any, usernames: list[str], pid: int, depth: int) -> tuple[list[SharedPost], bool]:
    """What post ``pid`` shares: for a repost or quote its parent, then the parent's parent while that
    is itself a repost or quote, at most ``depth`` links; the flag says the chain continues."""
    v = state.posts.ints
    n = len(state.posts)
    out: list[SharedPost] = []
    cur = pid
    while v.kind[cur] in (REPOST, QUOTE):
        parent = v.parent[cur]
        if not 0 <= parent < n:
            break
        if len(out) >= depth:
            return out, True
        out.append(_linked(state, usernames, parent))
        cur = parent
    return out, False


def _linked(state: Any, usernames: list[str], pid: int) -> SharedPost:
    p = state.posts
    v = p.ints
    a = v.author[pid]
    return SharedPost(
        pid,
        a,
        usernames[a],
        KIND_NAMES[v.kind[pid]],
        p.text[pid],
        v.likes[pid],
        v.dislikes[pid],
        v.reposts[pid],
        v.comments[pid],
    )


def private_of(population: Any, agent: int) -> dict[str, Any]:
    """Another agent's private side as a mindreader sees it (:data:`OTHERS_PRIVATE`)."""
    s = float(population.stance[agent])
    return {
        "bio": population.bios[agent][:300],
        "goal": population.goals[agent],
        "stance": None if np.isnan(s) else round(s, 2),
    }


def fill_observation(world: ObservedWorld, o: Observation, rec: ExposureSink) -> None:
    """Add to an LLM agent's observation what ``world.cfg.perspective`` allows, and nothing more.

    ``o.feed`` already holds the feed (its exposures recorded by the simulator); this adds the rest
    and records an exposure for every other post it puts in front of the agent.
    """
    cfg, pop, st = world.cfg, world.population, world.state
    ac = cfg.llm_agents
    persp = perspective(cfg.perspective)
    o.profile = pop.profile(o.agent_id)
    if not isinstance(world.memory, MemoryStream):  # a stream memory recalls for all observations at once
        o.memory = world.memory.recall(o.agent_id, o.step)
    o.show_score = cfg.platform.show_score
    if (when := world.clock.sim_datetime(o.step)) is not None:
        o.datetime = when.strftime("%a %Y-%m-%d %H:%M")
    if st.groups:
        o.groups = group_views(
            st,
            o.agent_id,
            ac.group_messages,
            ac.groups_listed if any(A.meta_of(a).needs == "listed_groups" for a in ac.actions) else 0,
            pop.usernames,
        )
    pending = world.pending_results.pop(o.agent_id, None)
    if pending is not None:
        kind, query, ids = pending
        if kind == A.SearchUser.type_name:
            o.results_from = f'users matching "{query}"'
            o.found_users = [(u, pop.usernames[u]) for u in ids if u != o.agent_id]
        else:
            trend = kind == A.Trend.type_name
            o.results_from = "trending posts" if trend else f'posts matching "{query}"'
            src = "trend" if trend else "search"  # the exposure source
            ids = [pid for pid in ids if not st.hidden(pid)]  # removed by moderation since the request
            o.results = [feed_item(st, pop.usernames, pop.stance, o.agent_id, pid, src, r) for r, pid in enumerate(ids)]
            rec.exposure(o.agent_id, [it.post_id for it in o.results], src)
    for it in (*o.feed, *o.results):
        if it.kind in ("repost", "quote"):
            it.shared, it.shared_more = shared_chain(st, pop.usernames, it.post_id, ac.quote_depth)
        if ac.comments_per_post:
            latest = st.comments_of.get(it.post_id, [])[-ac.comments_per_post :]
            it.replies = [_linked(st, pop.usernames, c) for c in latest]
    o.marks = target_marks(st, o, ac.actions)
    if persp.others_private == "shown_authors":  # "everyone": its group's views, joined by the policy
        for it in (*o.feed, *o.results):
            if it.author != o.agent_id:
                it.author_private = private_of(pop, it.author)
            for s in (*it.shared, *it.replies):
                if s.author != o.agent_id:
                    s.author_private = private_of(pop, s.author)
        for g in o.groups:
            g.authors_private = {a: private_of(pop, a) for _s, a, _u, _t in g.messages if a != o.agent_id}
    if persp.global_view:
        top = st.trend(GLOBAL_FEED_SIZE)
        rec.exposure(o.agent_id, top, "global")
        o.global_feed = [
            feed_item(st, pop.usernames, pop.stance, o.agent_id, pid, "global", r) for r, pid in enumerate(top)
        ]
        for it in o.global_feed:  # a trending repost shows what it shares, as in any feed
            if it.kind in ("repost", "quote"):
                it.shared, it.shared_more = shared_chain(st, pop.usernames, it.post_id, ac.quote_depth)
        o.stats = (
            f"{world.n} users, {len(st.posts)} posts so far, step {o.step}, "
            f"{len(st.likes)} likes, {st.follows.n_edges} follows"
        )


@lru_cache(maxsize=64)
def mark_plan(offered: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(mark, target kinds whose shown ids it is asked about) for the marks the offered actions' rows read."""
    plan: dict[str, list[str]] = {}
    for a in offered:
        meta = A.meta_of(a)
        for m in meta.marks:
            kinds = plan.setdefault(m, [])
            if meta.target not in kinds:
                kinds.append(meta.target)
    return tuple((m, tuple(k)) for m, k in plan.items())


_SHOWN = {"post": Observation.shown_posts, "comment": Observation.shown_comments, "user": Observation.shown_users}


def target_marks(state: Any, o: Observation, offered: Sequence[str]) -> dict[str, set[int]]:
    """The platform's marks (liked, following, ...) on the ids ``o`` shows that the ``offered`` actions'
    rules read (the action table's ``requires`` / ``excludes``), so the schema offers each action only
    where the platform would accept it. Marks no shown id carries are left out."""
    shown: dict[str, set[int]] = {}
    out: dict[str, set[int]] = {}
    for m, kinds in mark_plan(tuple(offered)):
        for k in kinds:
            if k not in shown:
                shown[k] = _SHOWN[k](o)
        ids = shown[kinds[0]] if len(kinds) == 1 else set().union(*(shown[k] for k in kinds))
        if ids and (got := state.marked(o.agent_id, m, ids)):
            out[m] = got
    return out


def show_groups(observations: Sequence[Observation], size: int) -> None:
    """Show each agent its group, for a perspective that sees its group (``others_private: everyone``) but
    is asked one agent at a time: the other members' observations go to ``co_acting``.

    Groups are runs of ``size`` of the sorted active agents -- exactly a narrator's groups -- so such a
    perspective knows what the narrator knows and differs from it only in the call structure.
    """
    obs = sorted(observations, key=lambda o: o.agent_id)
    for i in range(0, len(obs), size):
        group = obs[i : i + size]
        for o in group:
            o.co_acting = [m for m in group if m is not o]


def pending_from(action_type: str, query: str, results: tuple[int, ...]) -> tuple[str, str, list[int]] | None:
    """What a search / trend request leaves to show in the agent's next observation (None: nothing)."""
    cls = A.BY_TYPE.get(action_type)
    if cls is None or cls.meta.needs != "results":
        return None
    return action_type, query, list(results)


def pending_for(action: Any, results: tuple[int, ...]) -> tuple[str, str, list[int]] | None:
    """:func:`pending_from` for an applied action object; its query is read only for a search / trend
    request (asking a pydantic action for a field it lacks costs ~5 µs, and most actions lack one)."""
    cls = A.BY_TYPE.get(action.type)
    if cls is None or cls.meta.needs != "results":
        return None
    return action.type, getattr(action, "query", ""), list(results)


# ---- documentation ---------------------------------------------------------------------------------
def who_saw_what(cfg: dict[str, Any]) -> dict[str, str] | None:
    """The Simulation Card's "who saw what", generated from the perspective table and the run's config.

    ``None`` for rule-based runs: their policies read feed items as numbers and see no prompt.
    """
    kind = cfg.get("policy", {}).get("kind")
    if kind not in ("llm", "group_llm"):
        return None
    ac = cfg.get("llm_agents", {})
    p = perspective(cfg.get("perspective", "local"))
    fields = ", ".join(ac.get("persona_fields") or ()) or "none"
    own = (
        f"own profile ({fields}), own private goal, own last {ac.get('memory_size', 5)} actions, "
        f"a feed of {cfg.get('recsys', {}).get('k', 5)} posts (reposts and quotes show what they share, "
        f"{ac.get('quote_depth', 2)} levels deep), results of its own search / trend request in its next "
        "activation, its groups' recent messages"
    )
    row = p.knowledge()
    out = {
        "perspective": p.name,
        "description": p.description,
        "calls": p.calls,
        "own": own,
        "others": row["others"],
        "global": row["global"],
    }
    if kind == "group_llm":
        out["calls"] = "one call per persona cluster's active members (policy.kind group_llm): it sees all their views"
    gt = ac.get("ground_truth")
    visible = ac.get("ground_truth_visible_to") or []
    out["ground_truth"] = (
        "none configured"
        if not gt
        else "shown"
        if sees_environment_facts(p.name, visible)
        else "configured but not shown to this perspective"
    )
    return out
