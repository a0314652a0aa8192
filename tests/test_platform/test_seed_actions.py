"""Seed actions: validated at config time, applied after seed posts with origin 'seed', visible in votes."""

import duckdb
import pytest

from conftest import small_config
from socium.errors import ConfigError
from socium.simulator.simulation import Simulation


def test_seed_vote_is_applied_and_recorded(tmp_path):
    cfg = small_config(
        steps=2,
        platform={"preset": "reddit"},
        policy={"kind": "random", "p_repost": 0.0},
        seed_posts=[{"author": 0, "content": "a"}, {"author": 0, "content": "b"}],
        seed_actions=[
            {"agent": 5, "action": {"type": "dislike_post", "post_id": 1}},
            {"agent": 6, "step": 1, "action": {"type": "like_post", "post_id": 0}},
        ],
    )
    Simulation(cfg, tmp_path / "r").run()
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    rows = con.execute("SELECT step, agent_id, target, delta FROM votes WHERE origin = 'seed' ORDER BY step").fetchall()
    first = con.execute("SELECT type FROM actions WHERE step = 0 ORDER BY seq LIMIT 3").fetchall()
    con.close()
    assert rows == [(0, 5, 1, -1), (1, 6, 0, 1)]
    assert [t for (t,) in first] == ["create_post", "create_post", "dislike_post"]


def test_bad_seed_actions_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="not a valid action"):
        small_config(seed_actions=[{"agent": 1, "action": {"type": "teleport"}}])
    cfg = small_config(seed_actions=[{"agent": 10_000, "action": {"type": "like_post", "post_id": 0}}])
    with pytest.raises(ConfigError, match="seed_actions: agent 10000"):
        Simulation(cfg, tmp_path / "r")
