"""The world of a run, as one value built in one place from a config, deterministically from its seed.

:class:`World` holds what a run's step works on: the platform state, the population, the agents' memory
and pending search results, the recommender, moderation, the exposure-driven timing, the sign-up schedule
and the clock. :func:`build_world` is the only place it is made (a fresh run and a resumed one alike;
resume then replays the trace into it). The loop (``simulation.Simulation``), the agents' part of a step
(``step_agents.StepAgents``) and resume (``run_setup.RunSetUp``) receive it whole; ``agents/`` reads it
through the small :class:`~socium.agents.perspectives.ObservedWorld` protocol, recommenders through a
:class:`~socium.recsys.base.RecsysContext`. :meth:`World.after_actions` is the one sequence that follows
a step's actions (moderation, then the recommender, then the timing), live and on resume.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from socium.agents.activity_coupling import couple_activity
from socium.agents.group_policy import make_group_policy
from socium.agents.llm_policy import make_llm_policy
from socium.agents.memory import MemoryStream, WindowMemory, make_memory
from socium.agents.profile_text import MAX_GOAL_CHARS, clean_field, clean_goals, clean_population
from socium.agents.profiles import Population, goal_for, stance_side
from socium.agents.routing import llm_route
from socium.agents.rules import RULE_POLICIES
from socium.agents.sources import load_oasis_csv, load_reddit_json, synthetic_population
from socium.config.experiment import ExperimentConfig
from socium.core.contracts import Observation
from socium.core.policy import Policy, PolicyCapabilities, capabilities_of
from socium.core.rng import GENERATOR, component_rng, root_key
from socium.errors import ConfigError
from socium.moderation.engine import ModerationLayer
from socium.platform.graph import FollowIndex, generate_edges, graph_from_following, graph_to_edges, read_edgelist
from socium.platform.state import PlatformState
from socium.recsys.base import Recommender, RecsysContext, ServedHook, served_hook
from socium.recsys.registry import make_recommender
from socium.simulator.signups import SignUps
from socium.simulator.timing import ExposureTiming, params_from_config

#: Search / trend results waiting for an agent's next observation: ``{agent: (action type, query, ids)}``.
PendingResults = dict[int, tuple[str, str, list[int]]]


@dataclass(frozen=True)
class Clock:
    """Simulated time of a step: ``step_minutes`` x ``time_magnification`` per step from ``start_hour``
    (and ``start_datetime``, when the run stands for real dates)."""

    step_minutes: float
    magnification: float
    start_hour: int
    start: datetime | None = None

    @classmethod
    def of(cls, cfg: ExperimentConfig) -> Clock:
        return cls(cfg.step_minutes, cfg.time_magnification, cfg.start_hour, cfg.start_datetime)

    def sim_time(self, step: int) -> float:
        """Simulated seconds since step 0."""
        return step * self.step_minutes * self.magnification * 60.0

    def hour(self, step: int) -> int:
        """The hour of day of a step (activity is per hour)."""
        minutes = (self.start.minute + self.start.second / 60.0) if self.start is not None else 0.0
        elapsed_min = step * self.step_minutes * self.magnification  # not via seconds: no rounding drift
        return int(self.start_hour + (minutes + elapsed_min) // 60) % 24

    def sim_datetime(self, step: int) -> datetime | None:
        """The real date and time a step stands for (``start_datetime``), or None without one."""
        return None if self.start is None else self.start + timedelta(seconds=self.sim_time(step))


@dataclass(frozen=True)
class World:
    """Everything a run's steps work on (see the module docstring); its parts are fixed once built."""

    cfg: ExperimentConfig
    key: Any  # the root key of the counter-based streams (core.rng.root_key)
    clock: Clock
    population: Population
    state: PlatformState
    signups: SignUps
    moderation: ModerationLayer
    recsys: Recommender
    timing: ExposureTiming | None
    memory: WindowMemory | MemoryStream
    #: the policy reads profiles, memory and perspectives (LLM agents): observations are filled for it
    needs_profile: bool
    pending_results: PendingResults = field(default_factory=dict)
    #: a recommender that remembers what it served (``foryou``): told each step's exposures, live and on resume
    served: ServedHook | None = None

    @property
    def n(self) -> int:
        return len(self.population)

    def after_actions(
        self,
        step: int,
        observations: list[Observation] | None = None,
        recorded: Any = None,
        shown: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> dict[str, Any]:
        """What follows a step's actions, in the one order both a live step and a resume keep: moderation
        (live: its verdicts on ``observations``, returned as rows to commit; on resume: the ``recorded``
        events re-applied), then a recommender that remembers what it served is told the step's exposures
        (``shown``: their agent and post ids, read only when one does), then the recommender and the
        timing learn the step's new posts."""
        st = self.state
        new_posts = range(st.events.first_post, len(st.posts))
        moderated: dict[str, Any] = {}
        if recorded is None:
            moderated = self.moderation.after_actions(
                st, step, self.population.stance, st.events.first_post, observations or []
            )
        else:
            self.moderation.replay(st, step, recorded)
        if self.served is not None and shown is not None:
            agents, posts = shown()
            self.served(st, step, agents, posts)
        self.recsys.observe(st, new_posts, step)
        if self.timing is not None:
            self.timing.observe(st, new_posts, step)
        return moderated


@dataclass(frozen=True)
class Built:
    """A built world and the policy made for it (the policy is not part of the world: it decides)."""

    world: World
    policy: Policy
    caps: PolicyCapabilities


def build_world(cfg: ExperimentConfig, policy: Policy | None = None) -> Built:
    """The one place a run's world is made: population, graph, platform, moderation, recommender, timing,
    the policy (``policy`` or the one ``policy.kind`` names) and memory. Nothing is written."""
    key = root_key(cfg.seed)
    population, following = build_population(cfg)
    check_agent_ids(cfg, population)
    n = len(population)
    signups = SignUps(cfg.population.join_schedule, n)
    follows = build_follows(cfg, n, following)
    couple_to_followers(cfg, population, follows)  # population.activity_follower_corr
    follows = signups.withhold(follows)
    pc = cfg.platform
    state = PlatformState(
        n,
        follows,
        pc.preset,
        pc.max_post_chars,
        pc.trend_window_steps,
        pc.search_limit,
        usernames=population.usernames,
        allow_self_rating=pc.allow_self_rating,
    )
    state.joined = signups.initial_joined()
    moderation = ModerationLayer(cfg.moderation, cfg.roles, n, key, cfg.perspective)
    moderation.apply_goals(population)
    context = RecsysContext(n, cfg.seed, cfg.step_minutes, population.bios, population.interests, population.usernames)
    recsys = moderation.wrap(make_recommender(cfg.recsys, context))  # removal/down-ranking in every feed
    tc = cfg.timing
    timing = (
        None
        if tc.kind == "activation"
        else ExposureTiming(
            params_from_config(tc),
            key,
            n,
            cfg.step_minutes * cfg.time_magnification,
            tc.max_delay_min,
            [x.get("user_id") for x in population.extra] if population.extra else None,
            tc.condition_minute,
        )
    )
    policy = policy if policy is not None else make_policy(cfg, population)
    caps = capabilities_of(policy)  # what the policy can do, found once (one without the core is refused)
    if caps.route is not None:  # before the executor ships the policy to workers
        caps.route.set_route(*llm_route(cfg, population))
    ac = cfg.llm_agents
    # one memory slot per agent up front where agents remember (window: 8 bytes each until used)
    memory = make_memory(ac.memory, ac.memory_size, n_agents=n if caps.needs_profile else 0)
    world = World(
        cfg,
        key,
        Clock.of(cfg),
        population,
        state,
        signups,
        moderation,
        recsys,
        timing,
        memory,
        caps.needs_profile,
        served=served_hook(recsys),  # foryou remembers what it served (None for the others)
    )
    return Built(world, policy, caps)


def make_policy(cfg: ExperimentConfig, population: Population) -> Policy:
    """The policy ``policy.kind`` names, built for this run's population."""
    kind = cfg.policy.kind
    if kind == "llm":
        return make_llm_policy(cfg)
    if kind == "group_llm":
        return make_group_policy(cfg, population)
    return RULE_POLICIES[kind](cfg.policy, cfg.seed)


def check_agent_ids(cfg: ExperimentConfig, population: Population) -> None:
    """Config keys that name agents name agents of this population; a policy's needs are met."""
    n = len(population)
    if cfg.policy.kind == "bounded_confidence" and np.isnan(population.stance).all():
        raise ConfigError(
            "policy.kind 'bounded_confidence' needs stances: set population.stance to 'uniform' or 'bimodal'"
        )
    for sp in cfg.seed_posts:
        if sp.author >= n:
            raise ConfigError(f"seed_posts: author {sp.author} is not an agent id (population has {n})")
    for sa in cfg.seed_actions:
        if sa.agent >= n:
            raise ConfigError(f"seed_actions: agent {sa.agent} is not an agent id (population has {n})")
    for i, q in enumerate(cfg.interviews):
        if bad := [a for a in q.agents if not 0 <= a < n]:
            raise ConfigError(f"interviews[{i}].agents: {bad} are not agent ids (population has {n})")


def derived_seed(seed: int, *key: int) -> int:
    """A 32-bit seed for a library that wants an int (networkx, the population generator)."""
    return int(np.random.SeedSequence(seed, spawn_key=(GENERATOR, *key)).generate_state(1)[0])


def build_population(cfg: ExperimentConfig) -> tuple[Population, list[list[int]] | None]:
    pc = cfg.population
    if pc.source == "synthetic":
        pop = synthetic_population(
            pc.n_agents,
            derived_seed(cfg.seed, 1),
            stance=pc.stance,
            activity=pc.activity,
            mean_activity=pc.mean_activity,
        )
        following = None
    elif pc.source == "oasis_csv":
        pop, following = clean_population_text(load_oasis_csv(pc.path or ""))
    else:
        pop, following = clean_population(load_reddit_json(pc.path or "")), None
    issue = None if pc.issue is None else clean_field(pc.issue, MAX_GOAL_CHARS, single_line=True)
    goals = pc.goals if isinstance(pc.goals, list) else {str(side): g for side, g in pc.goals.items()}
    assign_goals(pop, clean_goals(goals), issue)
    return pop, following


def clean_population_text(loaded: tuple[Population, list[list[int]]]) -> tuple[Population, list[list[int]]]:
    """File populations are data from elsewhere: cleaned and bounded (synthetic text is socium's own)."""
    return clean_population(loaded[0]), loaded[1]


def assign_goals(pop: Population, goals: list[str] | dict[str, list[str]], issue: str | None) -> None:
    """``population.goals`` / ``population.issue``: a list cycles; a mapping goes by each agent's stance side,
    so a goal never contradicts its agent's stance; with neither, an issue and stances give each agent
    :func:`goal_for` its stance (agents that already have a goal from their source keep it)."""
    n = len(pop)
    if isinstance(goals, dict):
        taken = {"for": 0, "against": 0, "undecided": 0}
        out: list[str | None] = []
        for i in range(n):
            side = stance_side(float(pop.stance[i]))
            lst = goals.get(side) or []
            out.append(lst[taken[side] % len(lst)] if lst else None)
            taken[side] += 1
        pop.goals = out
    elif goals:
        pop.goals = [goals[i % len(goals)] for i in range(n)]
    elif issue and not np.isnan(pop.stance).all():
        pop.goals = [g if g is not None else goal_for(float(s), issue) for g, s in zip(pop.goals, pop.stance)]


def build_follows(cfg: ExperimentConfig, n: int, following: list[list[int]] | None) -> FollowIndex:
    gc = cfg.graph
    if gc.kind == "edgelist":
        if not gc.path:
            raise ConfigError("graph.path is required when graph.kind is 'edgelist'")
        src, dst = graph_to_edges(read_edgelist(gc.path, n=n, directed=gc.directed))
    elif gc.kind == "profiles":
        if following is None:
            raise ConfigError(
                f"graph.kind 'profiles' needs a population source with following lists, not '{cfg.population.source}'"
            )
        src, dst = graph_to_edges(graph_from_following(following))
    else:
        src, dst = generate_edges(gc.kind, n, derived_seed(cfg.seed, 2), **gc.params)
    return FollowIndex.from_edges(src, dst, n)


_COUPLING_STREAM = 3  # derived_seed uses (GENERATOR, 1) for the population and (GENERATOR, 2) for the graph


def couple_to_followers(cfg: ExperimentConfig, pop: Population, follows: FollowIndex) -> None:
    """``population.activity_follower_corr``: hand the population's activity rows out by follower count in the
    initial graph (before sign-ups withhold any edge), so heavy users can be the big accounts. A pure function
    of seed + config, hence the same on resume; 0 leaves the population untouched."""
    rho = cfg.population.activity_follower_corr
    if rho == 0.0:
        return
    followers = np.bincount(follows.edges()[1], minlength=len(pop))
    pop.activity = np.ascontiguousarray(
        couple_activity(pop.activity, followers, rho, component_rng(cfg.seed, GENERATOR, _COUPLING_STREAM))
    )
