"""Cascade size/depth/breadth per step from SQL over hand-built trees with known answers."""

import duckdb

from conftest import small_config
from socium.core.actions import CreateComment, CreatePost, QuotePost, Repost
from socium.core.contracts import Decision
from socium.simulator.simulation import Simulation

# step -> list of (agent, action-factory taking a post-id map)
PLAN = {
    0: [(1, lambda m: CreatePost(content="root A")), (2, lambda m: CreatePost(content="root B"))],
    1: [
        (3, lambda m: Repost(post_id=m["A"])),
        (4, lambda m: Repost(post_id=m["A"])),
        (5, lambda m: QuotePost(post_id=m["A"], content="q")),
    ],
    2: [(6, lambda m: Repost(post_id=m["r3"])), (7, lambda m: CreateComment(post_id=m["A"], content="c"))],
    3: [(8, lambda m: Repost(post_id=m["r6"])), (9, lambda m: Repost(post_id=m["B"]))],
}
NAMES = {(0, 1): "A", (0, 2): "B", (1, 3): "r3", (2, 6): "r6"}


class PlanPolicy:
    def __init__(self):
        self.ids = {}

    def decide(self, obs):  # the Policy contract's core; the loop uses decide_batch (a capability) instead
        return Decision(obs.agent_id, [])

    def decide_batch(self, observations):
        step = observations[0].step if observations else None
        return [Decision(a, [f(self.ids)]) for a, f in PLAN.get(step, [])]


def test_cascade_metrics_on_hand_built_tree(tmp_path):
    cfg = small_config(
        steps=5, seed_posts=[], population={"n_agents": 12, "mean_activity": 1.0}, graph={"kind": "empty", "params": {}}
    )
    pol = PlanPolicy()
    sim = Simulation(cfg, tmp_path / "r", policy=pol)
    orig = sim.world.state.apply

    def apply(agent, action):
        out = orig(agent, action)
        key = (sim.world.state.step, agent)
        if key in NAMES and out.post_id is not None:
            pol.ids[NAMES[key]] = out.post_id
        return out

    sim.world.state.apply = apply
    sim.run()
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    a = pol.ids["A"]
    got = con.execute(
        "SELECT step, size, depth, max_breadth FROM cascade_metrics WHERE root_id = ? ORDER BY step", [a]
    ).fetchall()
    # A: step0 {A}; step1 +3 children (2 reposts, 1 quote); step2 +r6 under r3 (comment excluded);
    # step3 +r8 under r6.
    assert got == [(0, 1, 0, 1), (1, 4, 1, 3), (2, 5, 2, 3), (3, 6, 3, 3), (4, 6, 3, 3)]
    b = pol.ids["B"]
    got_b = con.execute(
        "SELECT step, size, depth, max_breadth FROM cascade_metrics WHERE root_id = ? ORDER BY step", [b]
    ).fetchall()
    assert got_b[-1] == (4, 2, 1, 1) and got_b[0] == (0, 1, 0, 1)
