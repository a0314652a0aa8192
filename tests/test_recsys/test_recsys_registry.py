"""Choosing a recommender from the config, custom classes by dotted path, and the exposures log."""

import duckdb
import numpy as np
import pytest

from conftest import small_config
from socium.config.world import RecsysConfig
from socium.errors import ConfigError
from socium.recsys.base import Feed, Recommender
from socium.recsys.registry import BUILTIN, make_recommender
from socium.recsys.x import XRecommender
from socium.simulator.simulation import Simulation
from socium.trace.store import trace_digest


class RecordingRecommender:
    """A user's recommender: wraps the X-like one and remembers every feed it hands out."""

    def __init__(self, window_steps: int = 48, context=None, **params) -> None:
        self.inner = XRecommender(window_steps, context, **params)
        self.shown: list[tuple[int, int, int, int, str]] = []
        self.observed_steps: list[int] = []

    def observe(self, state, new_posts, step):
        self.observed_steps.append(step)
        self.inner.observe(state, new_posts, step)

    def feeds(self, state, users, k, step, rng):
        out = self.inner.feeds(state, users, k, step, rng)
        for u, f in zip(users.tolist(), out):
            for rank, (p, s) in enumerate(zip(f.post_ids, f.sources)):
                self.shown.append((step, u, p, rank, s))
        return out


class OnlyNewest:
    """The smallest possible custom recommender: takes no arguments at all."""

    def observe(self, state, new_posts, step):
        pass

    def feeds(self, state, users, k, step, rng):
        ids = tuple(range(len(state.posts) - 1, max(len(state.posts) - 1 - k, -1), -1))
        return [Feed(ids, ("global",) * len(ids)) for _ in users]


def test_builtins_by_name():
    assert set(BUILTIN) == {"chronological", "random", "reddit_hot", "x", "global", "foryou"}
    for name in BUILTIN:
        params = {"embedder": "hashing"} if name in ("x", "foryou") else {}
        assert isinstance(make_recommender(RecsysConfig(kind=name, params=params)), Recommender)


def test_bad_names_and_params_are_config_errors():
    with pytest.raises(ConfigError, match="not one of"):
        make_recommender(RecsysConfig(kind="tiktok"))
    with pytest.raises(ConfigError, match="cannot import"):
        make_recommender(RecsysConfig(kind="no_such_module_xyz:Rec"))
    with pytest.raises(ConfigError, match=r"unknown key\(s\) in_netwrk.*allowed: .*in_network"):
        make_recommender(RecsysConfig(kind="x", params={"embedder": "hashing", "in_netwrk": 3}))
    with pytest.raises(ConfigError, match="ann"):
        make_recommender(RecsysConfig(kind="x", params={"embedder": "hashing", "ann": "hnsw"}))
    with pytest.raises(ConfigError, match="does not implement"):
        make_recommender(RecsysConfig(kind="collections:OrderedDict"))


def test_custom_recommender_by_dotted_path_is_used_and_exposures_match(tmp_path):
    cfg = small_config(
        steps=5,
        recsys={
            "kind": "test_recsys_registry:RecordingRecommender",
            "k": 4,
            "params": {"embedder": "hashing", "in_network": 1, "out_of_network": 1},
        },
    )
    sim = Simulation(cfg, tmp_path / "run")
    rec = sim.world.recsys
    assert isinstance(rec, RecordingRecommender) and rec.inner.window_steps == cfg.recsys.window_steps
    sim.run()
    assert rec.observed_steps == list(range(5)) and rec.shown
    con = duckdb.connect(str(tmp_path / "run" / "trace.duckdb"), read_only=True)
    rows = con.execute(
        "SELECT step, agent_id, post_id, rank, source FROM exposures WHERE source NOT IN ('search', 'trend') "
        "ORDER BY step, agent_id, rank"
    ).fetchall()
    assert sorted(rows) == sorted(rec.shown)
    assert {r[4] for r in rows} == {"in_network", "out_of_network"}
    # the in/out split is 1:1, so with 4 slots both sources appear in most feeds
    per_feed = con.execute("SELECT count(DISTINCT source) FROM exposures GROUP BY step, agent_id").fetchall()
    assert np.mean([r[0] for r in per_feed]) > 1.5


def test_custom_recommender_without_arguments(tmp_path):
    cfg = small_config(steps=2, recsys={"kind": "test_recsys_registry.OnlyNewest"})
    sim = Simulation(cfg, tmp_path / "run")
    assert isinstance(sim.world.recsys, OnlyNewest)
    sim.run()


@pytest.mark.parametrize(
    "kind,params", [("x", {"embedder": "hashing"}), ("random", {}), ("reddit_hot", {}), ("global", {})]
)
def test_whole_run_is_deterministic_per_recommender(tmp_path, kind, params):
    cfg = small_config(steps=4, recsys={"kind": kind, "params": params})
    a, b = tmp_path / "a", tmp_path / "b"
    Simulation(cfg, a).run()
    Simulation(cfg, b).run()
    assert trace_digest(a / "trace.duckdb") == trace_digest(b / "trace.duckdb")


def test_docs_example_recommender_runs(tmp_path, monkeypatch):
    """The custom-recommender example in docs/recsys.md works as written."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "recsys.md").read_text(encoding="utf-8")
    code = doc.split("# mypkg/recs.py\n", 1)[1].split("```", 1)[0]
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "recs.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = small_config(
        steps=4, recsys={"kind": "mypkg.recs:MostCommented", "k": 10, "window_steps": 24, "params": {"min_comments": 0}}
    )
    sim = Simulation(cfg, tmp_path / "run")
    assert type(sim.world.recsys).__name__ == "MostCommented" and sim.world.recsys.min_comments == 0
    sim.run()
    con = duckdb.connect(str(tmp_path / "run" / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM exposures WHERE source = 'global'").fetchone()[0] > 0


class OldStyle:
    """A plugin written before issue 35: it asks for the whole simulation."""

    def __init__(self, window_steps: int = 48, sim=None) -> None:
        self.sim = sim

    def observe(self, state, new_posts, step):
        pass

    def feeds(self, state, users, k, step, rng):
        return [Feed((), ()) for _ in users]


class SeesContext(OldStyle):
    def __init__(self, window_steps: int = 48, context=None) -> None:
        self.context = context


def test_recommender_gets_a_typed_context_and_an_old_sim_plugin_one_clear_error(tmp_path):
    """A recommender is told the run through ``RecsysContext`` (agents, seed, profiles), never the simulation;
    a class still taking ``sim`` is refused before the run directory is made, naming the change."""
    from socium.recsys.base import RecsysContext

    cfg = small_config(steps=1, recsys={"kind": "test_recsys_registry:SeesContext"})
    sim = Simulation(cfg, tmp_path / "run")
    ctx = sim.world.recsys.context
    pop = sim.world.population
    assert isinstance(ctx, RecsysContext) and ctx.n_agents == len(pop) and ctx.seed == cfg.seed
    assert list(ctx.bios) == list(pop.bios) and list(ctx.usernames) == list(pop.usernames)
    assert ctx.profile_texts()[0].startswith(pop.bios[0])
    sim.close()
    old = small_config(steps=1, recsys={"kind": "test_recsys_registry:OldStyle"})
    with pytest.raises(ConfigError, match=r"takes 'sim'.*no longer passes.*rename the parameter to 'context'"):
        Simulation(old, tmp_path / "old")
    assert not (tmp_path / "old").exists()
