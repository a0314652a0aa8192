"""Build the initial world (population + follow graph) from a config, deterministically from its seed."""

from __future__ import annotations

import numpy as np

from socium.agents.profiles import Population
from socium.agents.sources import load_oasis_csv, load_reddit_json, synthetic_population
from socium.config import ExperimentConfig
from socium.errors import ConfigError
from socium.platform.graph import FollowIndex, generate_edges, graph_from_following, graph_to_edges, read_edgelist
from socium.simulator.rng import GENERATOR


def derived_seed(seed: int, *key: int) -> int:
    """A 32-bit seed for a library that wants an int (networkx, the population generator)."""
    return int(np.random.SeedSequence(seed, spawn_key=(GENERATOR, *key)).generate_state(1)[0])


def build_population(cfg: ExperimentConfig) -> tuple[Population, list[list[int]] | None]:
    pc = cfg.population
    if pc.source == "synthetic":
        pop = synthetic_population(
            pc.n_agents, derived_seed(cfg.seed, 1), stance=pc.stance, activity=pc.activity, mean_activity=pc.mean_activity
        )
        following = None
    elif pc.source == "oasis_csv":
        pop, following = load_oasis_csv(pc.path or "")
    else:
        pop, following = load_reddit_json(pc.path or ""), None
    if pc.goals:
        pop.goals = [pc.goals[i % len(pc.goals)] for i in range(len(pop))]
    return pop, following


def build_follows(cfg: ExperimentConfig, n: int, following: list[list[int]] | None) -> FollowIndex:
    gc = cfg.graph
    if gc.kind == "edgelist":
        if not gc.path:
            raise ConfigError("graph.path is required when graph.kind is 'edgelist'")
        src, dst = graph_to_edges(read_edgelist(gc.path, n=n, directed=gc.directed))
    elif gc.kind == "profiles":
        if following is None:
            raise ConfigError(f"graph.kind 'profiles' needs a population source with following lists, not '{cfg.population.source}'")
        src, dst = graph_to_edges(graph_from_following(following))
    else:
        src, dst = generate_edges(gc.kind, n, derived_seed(cfg.seed, 2), **gc.params)
    return FollowIndex.from_edges(src, dst, n)
