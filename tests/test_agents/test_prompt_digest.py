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
from pathlib import Path
from typing import Any

import duckdb
import pytest

from socium.config.loading import config_from_dict, load_config
from socium.simulator.simulation import Simulation
from socium.testing.workloads import bench_http_config, oasis_reddit

ROOT = Path(__file__).resolve().parents[2]

#: Computed with the code of main alone (first at 7c470c3; re-pinned at 30c352d, where the action-table
#: rewrite and the state-aware schema, issue 41.5, changed the schemas), before this branch's changes.
DIGESTS = {
    "main_job": "4579a8bdcb9e8ab719a0db0e19fed30f04bad11629568fe281ad871d17a10e02",
    "bench_http": "78655247d1013b643385c4b76c0f4b2afd1b151712ab62bef06a0d82f05b62b8",
    "bench_http_reddit": "3a4b5b7167757c61714c89796427433431f116b49f3338971536fdcb63081daf",
}


def _bench_http(n: int, reddit: bool) -> dict[str, Any]:
    cfg = bench_http_config(n, 3, "http://127.0.0.1:9", None, 8)
    cfg["llm"] = {"backend": "random"}
    return oasis_reddit(cfg) if reddit else cfg


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
