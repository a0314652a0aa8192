from __future__ import annotations

import os
from pathlib import Path

import pytest

def _shared_data() -> Path:
    """../shared/data beside the checkout (as CI has it), or $SOCIUM_SHARED_DATA, or the workspace copy."""
    env = os.environ.get("SOCIUM_SHARED_DATA")
    candidates = [Path(env)] if env else []
    candidates += [Path(__file__).resolve().parents[2] / "shared" / "data", Path("/work/shared/data")]
    return next((c for c in candidates if c.is_dir()), candidates[0])


SHARED_DATA = _shared_data()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data folder not found at {SHARED_DATA}; set SOCIUM_SHARED_DATA")
    return SHARED_DATA


def small_config(**over):
    """A tiny, fast rule-based config used across tests."""
    from socium.config import config_from_dict

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
