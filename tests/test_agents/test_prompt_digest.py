"""Prompts byte-identical across driver optimisations (issue 41.1): every prompt, schema and sampling
parameter sent by two workloads from a fixed seed, hashed, against the digest the code produced
before the CPU work (caches, orjson, request ordering) started.

The workloads: the main job (``examples/llm-agents.yaml``) and the OASIS-parity workload of
``benchmarks/bench_http.py`` (its config; and on the reddit preset with OASIS's 13 Reddit actions),
both on the schema-sampling ``random`` backend so no model is needed; the answers are a function of
each request, so a changed prompt also changes what follows. If a prompt change is intended, the
digests here change with it, in the same commit, with the reason.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from socium.config.loading import config_from_dict, load_config
from socium.simulator.simulation import Simulation

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

#: Computed with the code at main 7c470c3, before issue 41's changes.
DIGESTS = {
    "main_job": "cbee7250e09fb7c730cc0717e5f7cbaa64a675aa8dde0a894dee3ccf8853b976",
    "bench_http": "8520beb4a39bc71f3257a60d5f0d705019a0f75b47fe0a997d68459ff5e3ba46",
    "bench_http_reddit": "ac5f1b537f51b04b9846d2c74b28cb7098a175eb034b03ba5546e306ccf7b725",
}


def _bench_http(n: int, reddit: bool) -> dict[str, Any]:
    from bench_http import _config

    cfg = _config(n, 3, "http://127.0.0.1:9", None, 8)
    cfg["llm"] = {"backend": "random"}
    if reddit:
        cfg["platform"] = {"preset": "reddit"}
        cfg["llm_agents"] = {
            "actions": [
                "create_post",
                "like_post",
                "dislike_post",
                "create_comment",
                "like_comment",
                "dislike_comment",
                "search_posts",
                "search_user",
                "trend",
                "refresh",
                "follow",
                "mute",
                "do_nothing",
            ],  # fmt: skip
            "comments_per_post": 5,
        }
    return cfg


def _digest(cfg: Any, out: Path) -> tuple[str, int]:
    sim = Simulation(cfg, out, force=True)
    try:
        sim.run()
    finally:
        sim.close()
    con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT step, agent_id, request_id, request_hash, params, prompt FROM llm_calls ORDER BY call_id"
        ).fetchall()
    finally:
        con.close()
    h = hashlib.sha256()
    for r in rows:
        h.update(repr(r).encode())
    return h.hexdigest(), len(rows)


def _workload(name: str) -> Any:
    if name == "main_job":
        c = load_config(ROOT / "examples" / "llm-agents.yaml")
        return c.model_copy(update={"steps": 6, "llm": c.llm.model_copy(update={"backend": "random"})})
    return config_from_dict(_bench_http(150, reddit=name.endswith("reddit")))


@pytest.mark.parametrize("name", sorted(DIGESTS))
def test_prompts_unchanged(name: str, tmp_path: Path) -> None:
    digest, n = _digest(_workload(name), tmp_path / name)
    assert n > 40, f"{name}: only {n} calls: the workload no longer exercises the prompts"
    assert digest == DIGESTS[name], f"{name}: prompts changed ({n} calls): {digest}"
