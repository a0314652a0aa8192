"""Group agents (policy.kind: group_llm): persona clusters, one call per cluster chunk, per-member records."""

from __future__ import annotations

import json

import duckdb
import numpy as np

from socium.agents.clustering import cluster_population
from socium.agents.group_policy import GroupLLMPolicy
from socium.agents.sources import synthetic_population
from socium.config.loading import config_from_dict
from socium.llm.model_free import ScriptedBackend
from socium.recsys.embeddings import HashingEmbedder
from socium.simulator.simulation import Simulation
from socium.trace.store import trace_digest

N = 40


def cfg(**over):
    base = {
        "name": "grp",
        "seed": 5,
        "steps": 3,
        "population": {
            "n_agents": N,
            "mean_activity": 0.6,
            "stance": "bimodal",
            "goals": [f"zq{i}zq plan" for i in range(N)],
        },
        "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
        "policy": {
            "kind": "group_llm",
            "group_cluster_size": 8,
            "group_max_members": 4,
            "group_embedder": "hashing",
            "group_stance_weight": 5.0,
        },
        "llm": {"backend": "random"},
        "seed_posts": [{"author": i, "content": f"opening post {i}"} for i in range(6)],
    }
    base.update(over)
    return config_from_dict(base)


def _rows(path, sql):
    con = duckdb.connect(str(path / "trace.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_clusters_are_deterministic_sized_and_never_mix_opposed_camps():
    pop = synthetic_population(200, 1, stance="bimodal")
    a = cluster_population(pop, 20, seed=4, embedder=HashingEmbedder(64), stance_weight=5.0)
    b = cluster_population(pop, 20, seed=4, embedder=HashingEmbedder(64), stance_weight=5.0)
    assert np.array_equal(a, b) and a[0] == 0
    assert 2 <= len(np.unique(a)) <= 10
    for c in np.unique(a):
        signs = np.sign(pop.stance[a == c])
        assert len(set(signs.tolist())) == 1, f"cluster {c} mixes stances"


def test_one_call_per_cluster_chunk_and_one_outcome_per_active_member(tmp_path):
    sim = Simulation(cfg(), tmp_path / "r")
    assert isinstance(sim.policy, GroupLLMPolicy)
    sim.run()
    clusters = dict(_rows(tmp_path / "r", "SELECT agent_id, cluster FROM agent_clusters"))
    assert len(clusters) == N
    calls = _rows(tmp_path / "r", "SELECT step, metadata FROM llm_calls ORDER BY call_id")
    per_step: dict[int, list[int]] = {}
    for step, md in calls:
        group = json.loads(md)["group"]
        assert 1 <= len(group) <= 4
        assert len({clusters[a] for a in group}) == 1, "one call mixed clusters"
        per_step.setdefault(step, []).extend(group)
    acted = _rows(tmp_path / "r", "SELECT step, agent_id, count(*) FROM actions WHERE origin != 'seed' GROUP BY 1, 2")
    assert all(n == 1 for _, _, n in acted)
    for step, members in per_step.items():
        assert sorted(members) == sorted(a for s, a, _ in acted if s == step)
    n_active = sum(r[0] for r in _rows(tmp_path / "r", "SELECT n_active FROM steps WHERE step >= 0"))
    assert len(calls) < n_active  # the point of group agents: fewer calls than activations


def test_prompt_shows_each_member_and_quotes_shared_posts_once(tmp_path):
    seen = []

    def respond(req):
        seen.append(req)
        return "{}"  # answers no member: everyone re-asked, then invalid

    sim = Simulation(cfg(steps=1, llm={"backend": "random", "min_valid_fraction": None}), tmp_path / "r", policy=None)
    sim.policy.backend_factory = lambda cache: __import__("socium.llm.wrappers", fromlist=["x"]).CachingBackend(
        ScriptedBackend(respond), cache
    )
    sim.run()
    first = [r for r in seen if r.metadata["attempt"] == 0][0]
    text = first.messages[1].content
    for a in first.metadata["group"]:
        assert f"## User agent_{a}" in text and f"zq{a}zq" in text
    ids = [int(x) for x in __import__("re").findall(r"(?m)^<<<(\d+) u\d", text)]
    assert len(ids) == len(set(ids))
    reasks = [r for r in seen if r.metadata["attempt"] == 1]
    assert reasks and set(reasks[0].metadata["group"]) == set(first.metadata["group"])  # all skipped: all re-asked
    inv = _rows(
        tmp_path / "r",
        "SELECT count(*) FROM actions WHERE type = 'invalid_llm_output' AND reason LIKE '%no answer for this user%'",
    )
    assert inv[0][0] == _rows(tmp_path / "r", "SELECT n_active FROM steps WHERE step = 0")[0][0]


def test_member_cannot_act_on_a_post_outside_its_own_feed(tmp_path):
    sim = Simulation(cfg(steps=1), tmp_path / "r")
    obs = sim.agent_steps.observe(
        sim.active_agents(0), 0, __import__("socium.simulator.recording", fromlist=["x"]).StepRecorder(0)
    )
    pol = sim.policy
    chunk = pol.chunks(obs)[0]
    schema = pol.group_schema(chunk)
    for o in chunk:
        member = schema["properties"][f"agent_{o.agent_id}"]
        ids = set()
        for v in member.get("anyOf", []):
            ids |= set(v["properties"].get("post_id", {}).get("enum", []))
        assert ids <= {i.post_id for i in o.feed}
    sim.close()


def test_group_run_resumes_to_the_same_trace(tmp_path):
    Simulation(cfg(), tmp_path / "full").run()
    s = Simulation(cfg(), tmp_path / "cut")
    s.run(steps=2)
    Simulation(cfg(), tmp_path / "cut", resume=True).run()
    a, b = trace_digest(tmp_path / "full" / "trace.duckdb"), trace_digest(tmp_path / "cut" / "trace.duckdb")
    for t in a:
        if t not in ("runs", "steps", "llm_calls"):
            assert a[t] == b[t], t
    assert _rows(tmp_path / "cut", "SELECT count(*) FROM agent_clusters")[0][0] == N


def test_ray_partition_keeps_a_cluster_on_one_shard(tmp_path):
    sim = Simulation(cfg(steps=1), tmp_path / "r")
    obs = sim.agent_steps.observe(
        np.arange(N), 0, __import__("socium.simulator.recording", fromlist=["x"]).StepRecorder(0)
    )
    shards = sim.policy.partition(obs, 3)
    where = {}
    for k, sh in enumerate(shards):
        for o in sh:
            where.setdefault(int(sim.policy.labels[o.agent_id]), set()).add(k)
    assert all(len(v) == 1 for v in where.values())
    sim.close()


def test_examples_run_on_the_fake_backend(tmp_path):
    """examples/group-agents.yaml and examples/memory-stream.yaml run end to end over HTTP (fake server)."""
    from pathlib import Path

    from typer.testing import CliRunner

    from socium.cli.main import app

    root = Path(__file__).resolve().parents[2] / "examples"
    for name, table in (("group-agents", "agent_clusters"), ("memory-stream", "memories")):
        out = tmp_path / name
        r = CliRunner().invoke(app, ["run", str(root / f"{name}.yaml"), "--out", str(out), "--quiet"])
        assert r.exit_code == 0, r.output
        assert _rows(out, f"SELECT count(*) FROM {table}")[0][0] > 0
        assert _rows(out, "SELECT count(*) FROM llm_calls WHERE outcome = 'ok'")[0][0] > 0
