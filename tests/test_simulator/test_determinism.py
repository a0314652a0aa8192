from conftest import small_config
from socium.simulator.simulation import Simulation
from socium.trace.store import check_no_duplicates, trace_digest


def run(cfg, path):
    Simulation(cfg, path).run()
    return trace_digest(path / "trace.duckdb")


def test_same_seed_same_trace_different_seed_different(tmp_path):
    a = run(small_config(), tmp_path / "a")
    b = run(small_config(), tmp_path / "b")
    c = run(small_config(seed=2), tmp_path / "c")
    assert a == b
    assert a["posts"] != c["posts"] and a["actions"] != c["actions"]


def test_every_policy_is_deterministic(tmp_path):
    for kind in ("independent_cascade", "threshold", "bounded_confidence"):
        cfg = small_config(policy={"kind": kind}, population={"stance": "uniform"})
        assert run(cfg, tmp_path / f"{kind}1") == run(cfg, tmp_path / f"{kind}2"), kind


def test_trace_has_one_row_per_step_and_no_duplicates(tmp_path):
    import duckdb

    run(small_config(), tmp_path / "a")
    con = duckdb.connect(str(tmp_path / "a" / "trace.duckdb"), read_only=True)
    assert [r[0] for r in con.execute("SELECT step FROM steps ORDER BY step").fetchall()] == list(range(-1, 6))
    assert set(check_no_duplicates(con).values()) == {0}
    # every exposure refers to a post that existed at that step
    bad = con.execute("SELECT count(*) FROM exposures e JOIN posts p USING (post_id) WHERE p.step > e.step").fetchone()[
        0
    ]
    assert bad == 0
    # n_active is the activation draw, and only active agents were shown a feed
    sim = Simulation(small_config(), tmp_path / "b")
    active = {s: set(sim.active_agents(s).tolist()) for s in range(6)}
    sim.close()
    recorded = dict(con.execute("SELECT step, n_active FROM steps WHERE step >= 0").fetchall())
    assert recorded == {s: len(a) for s, a in active.items()} and sum(recorded.values()) > 0
    exposed = con.execute("SELECT DISTINCT step, agent_id FROM exposures").fetchall()
    assert exposed and all(a in active[s] for s, a in exposed)
