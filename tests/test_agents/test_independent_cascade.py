"""Independent cascade on a star matches its analytical expectation, and p is recoverable from the trace."""

import duckdb
import numpy as np

from conftest import small_config
from socium.simulator.simulation import Simulation

N, P, T = 2000, 0.1, 5


def test_star_adoption_matches_geometric_law(tmp_path):
    edges = tmp_path / "star.txt"
    edges.write_text("# followers -> hub\n" + "".join(f"{i} 0\n" for i in range(1, N + 1)))
    cfg = small_config(
        steps=T,
        population={"n_agents": N + 1, "activity": "uniform", "mean_activity": 1.0},
        graph={"kind": "edgelist", "path": str(edges), "directed": True, "params": {}},
        policy={"kind": "independent_cascade", "p_repost": P, "p_post": 0.0},
        seed_posts=[{"author": 0, "content": "the rumour"}],
    )
    Simulation(cfg, tmp_path / "r").run()
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    per_step = dict(con.execute("SELECT step, count(*) FROM posts WHERE kind = 'repost' GROUP BY step").fetchall())
    adopted = sum(per_step.values())
    expected = N * (1 - (1 - P) ** T)
    sd = np.sqrt(N * (1 - (1 - P) ** T) * (1 - P) ** T)
    assert abs(adopted - expected) < 4 * sd, (adopted, expected)
    for t in range(T):
        e_t = N * (1 - P) ** t * P
        assert abs(per_step.get(t, 0) - e_t) < 4 * np.sqrt(e_t) + 1, (t, per_step)
    # recover p: adoptions per exposure of a not-yet-adopted follower to the rumour
    trials = con.execute("""
        SELECT count(*) FROM exposures e
        WHERE e.post_id = 0 AND NOT EXISTS (
            SELECT 1 FROM posts p WHERE p.author = e.agent_id AND p.root_id = 0 AND p.step < e.step)
    """).fetchone()[0]
    p_hat = adopted / trials
    assert abs(p_hat - P) < 4 * np.sqrt(P * (1 - P) / trials), p_hat
