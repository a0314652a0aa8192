"""Hostile agent text is data: it never crashes a run, never reaches SQL as code, is bounded."""

import duckdb

from conftest import small_config
from socium.core.actions import CreatePost, QuotePost
from socium.core.contracts import Decision
from socium.simulator.simulation import Simulation

HOSTILE = [
    "'); DROP TABLE posts; --",
    "x" * 1_000_000,
    "nul\x00byte",
    "lone \ud800 surrogate",
    '"; DELETE FROM actions WHERE 1=1; --',
]


class HostilePolicy:
    def decide(self, obs):
        if obs.agent_id % 2 == 0:
            return Decision(obs.agent_id, [CreatePost(content=HOSTILE[(obs.agent_id // 2 + obs.step) % len(HOSTILE)])])
        acts = [QuotePost(post_id=i.post_id, content=HOSTILE[1]) for i in obs.feed[:1]]
        return Decision(obs.agent_id, acts)


def test_hostile_text_is_stored_bounded_and_flagged(tmp_path):
    cfg = small_config(platform={"max_post_chars": 280}, population={"mean_activity": 0.6}, steps=4)
    Simulation(cfg, tmp_path / "r", policy=HostilePolicy()).run()
    con = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM steps WHERE step >= 0").fetchone()[0] == 4
    rows = con.execute("SELECT content, truncated, sanitized FROM posts WHERE kind != 'repost'").fetchall()
    contents = [r[0] for r in rows]
    assert "'); DROP TABLE posts; --" in contents  # stored verbatim, as data
    assert max(len(c) for c in contents) == 280
    assert any(r[1] for r in rows) and any(r[2] for r in rows)
    assert all("\x00" not in c for c in contents)
    for c, trunc, _ in rows:
        assert trunc == (len(c) == 280 and set(c) == {"x"})
    n_actions = con.execute("SELECT count(*) FROM actions").fetchone()[0]
    assert n_actions == con.execute("SELECT sum(n_actions) FROM steps").fetchone()[0] > 0
    # arguments are bounded in the trace as well, not just the post
    assert con.execute("SELECT max(length(args)) FROM actions").fetchone()[0] < 400
