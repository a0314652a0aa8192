"""Build the initial world (population + follow graph) from a config, deterministically from its seed."""

from __future__ import annotations

import numpy as np

from socium.agents.activity_coupling import couple_activity
from socium.agents.profile_text import MAX_GOAL_CHARS, clean_field, clean_goals, clean_population
from socium.agents.profiles import Population, goal_for, stance_side
from socium.agents.sources import load_oasis_csv, load_reddit_json, synthetic_population
from socium.config.experiment import ExperimentConfig
from socium.core.rng import GENERATOR, component_rng
from socium.errors import ConfigError
from socium.platform.graph import FollowIndex, generate_edges, graph_from_following, graph_to_edges, read_edgelist


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
            lst = goals.get(side) or []  # type: ignore[call-overload]
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
