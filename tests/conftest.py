from __future__ import annotations

from pathlib import Path

import pytest


def _shared_data() -> Path:
    """The one resolver code and tests share: $SOCIUM_DATA_DIR, else ../shared/data beside the checkout."""
    from socium.data.datadir import data_dir

    return data_dir()


SHARED_DATA = _shared_data()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (README: ``-n auto --dist loadgroup``) every Ray test runs on one worker, in turn.

    Why: ``ray.init()`` without an address joins a cluster already running on the machine (test_ray_cluster
    starts a head node), so two workers starting Ray at once would meet in one runtime instead of two.
    """
    for item in items:
        if item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.xdist_group("ray"))


def needs_data(relpath: str) -> pytest.MarkDecorator:
    """Skip a test whose research data set (never packaged, see socium.data.datadir) is not on this machine."""
    return pytest.mark.skipif(not (SHARED_DATA / relpath).exists(), reason=f"research data not present: {relpath}")


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED_DATA}; set SOCIUM_DATA_DIR")
    return SHARED_DATA


def small_config(**over):
    """A tiny, fast rule-based config used across tests."""
    from socium.config.loading import config_from_dict

    base = {
        "name": "t",
        "seed": 1,
        "steps": 6,
        "population": {"n_agents": 120, "mean_activity": 0.3},
        "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
        "policy": {"kind": "random", "p_post": 0.3, "p_like": 0.3, "p_repost": 0.2},
        "seed_posts": [{"author": 0, "content": "seed post"}],
    }
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            base[k] = {**base[k], **v}
        else:
            base[k] = v
    return config_from_dict(base)


def herding_inputs(folder, n_items=6, n_people=6):
    """Small herding item and persona files (items cycle up / control / down); returns their paths as str."""
    import json

    items = [{"text": f"claim {i}", "group": ("up", "control", "down")[i % 3]} for i in range(n_items)]
    people = [{"realname": f"P {i}", "username": f"p{i}", "bio": "b", "persona": "p"} for i in range(n_people)]
    (folder / "items.json").write_text(json.dumps(items))
    (folder / "people.json").write_text(json.dumps(people))
    return str(folder / "items.json"), str(folder / "people.json")


def post_block(text: str, pid: int) -> str:
    """Post ``pid`` as rendered in a prompt: its ``<<<pid u...>>>`` item and the lines that belong to
    it (shared posts, comments, notes), up to the next post, a blank line or a section heading."""
    import re

    m = re.search(rf"^<<<{pid} u\d.*?(?=^<<<\d|^$|^## |\Z)", text, re.S | re.M)
    assert m, f"post {pid} not in prompt"
    return m.group(0)


def replayed_like_recorded(c, recorded, out) -> bool:
    """Replay the run in ``recorded`` (its run folder) under config ``c`` (``llm.backend: replay``) into
    ``out``; True when both traces hold the same actions and exposures. A replay miss raises."""
    import duckdb

    from socium.simulator.simulation import Simulation

    c = c.model_copy(update={"llm_agents": c.llm_agents.model_copy(update={"replay_from": str(recorded)})})
    Simulation(c, out).run()
    digest = []
    for run_dir in (recorded, out):
        con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
        digest.append(
            [
                con.execute("SELECT step, agent_id, type, args, outcome FROM actions ORDER BY ALL").fetchall(),
                con.execute("SELECT step, agent_id, post_id, source FROM exposures ORDER BY ALL").fetchall(),
            ]
        )
        con.close()
    return digest[0] == digest[1]
