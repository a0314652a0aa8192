"""OASIS parity, driven step by step from Python (runs in seconds, no model needed).

What a researcher coming from OASIS does with ``env.step(actions)``, done with socium:
manual actions mixed with LLM agents' own, choosing who acts each step, group chat, an interview
recorded in the trace mid-run, agents signing up mid-run, two models in one run, a real start
date, OASIS's refresh mix and the agents' stated reasons. The "models" are socium.llm's model-free
stand-ins: a fake OpenAI-compatible server on loopback (``backend: fake``, real HTTP) and a
schema-valid random answerer (``backend: random``); swap in ``{backend: openai, base_urls: [...],
model: ...}`` or ``{backend: embedded}`` for real ones.

    python examples/oasis-parity.py [RUN_DIR]        # default: a fresh temporary directory
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import duckdb

from socium.config.loading import config_from_dict
from socium.core.actions import CreateGroup, CreatePost, JoinGroup, SendToGroup
from socium.simulator.simulation import Simulation

CONFIG = {
    "name": "oasis-parity",
    "seed": 11,
    "steps": 4,
    "step_minutes": 30,
    "time_magnification": 2.0,  # a step stands for an hour of platform time (OASIS Clock k)
    "start_datetime": "2024-03-01T09:00:00",
    "platform": {"preset": "x"},
    "population": {
        "n_agents": 12, "activity": "uniform", "mean_activity": 0.5,
        "llms": ["fake", "random"],  # agent i talks to llms[i % 2]: two models in one run
        "join_schedule": [{"step": 2, "agents": [10, 11]}],  # two users sign up later
    },
    "graph": {"kind": "barabasi_albert", "params": {"m": 2}},
    "recsys": {"kind": "global", "following_k": 2, "recommended_k": 2, "rec_probability": 0.7},
    "policy": {"kind": "llm"},
    "llms": {"fake": {"backend": "fake", "model": "fake-model", "max_tokens": 128},
             "random": {"backend": "random", "model": "random-model", "max_tokens": 128}},
    "llm_agents": {
        "actions": ["create_post", "repost", "like_post", "follow", "join_group", "send_to_group", "do_nothing"],
        "max_actions_per_activation": 2, "record_reason": True, "group_messages": 3,
    },
    "seed_posts": [{"author": 0, "content": "The council approved protected bike lanes on Main Street."}],
    "interviews": [{"step": 1, "agents": [2, 3], "question": "What do you make of the bike-lane debate so far?"}],
}  # fmt: skip


def main(run_dir: Path) -> dict[str, object]:
    cfg = config_from_dict(CONFIG)
    with Simulation(cfg, run_dir, force=True) as sim:
        # Step 0: an experimenter's hand. Agent 0 opens a group and posts; 1 and 2 join; only 3..6
        # decide through their models this step (OASIS: a ManualAction for some, an LLMAction for others).
        sim.step(actions={0: [CreateGroup(name="Main Street cyclists"), CreatePost(content="Who rides Main Street daily?")],
                          1: [JoinGroup(group_id=0)], 2: [JoinGroup(group_id=0)]},
                 active=[3, 4, 5, 6])  # fmt: skip
        # Step 1: a manual group message, then everyone the hourly draw activates; the config's
        # interview of agents 2 and 3 is asked after this step's actions, in its transaction.
        sim.step(actions={1: [SendToGroup(group_id=0, content="Ride together on Friday morning?")]})
        # Steps 2-3: agents 10 and 11 sign up at step 2 (join_schedule) with their follows.
        sim.step()
        sim.step(active=[0, 1, 2, 10, 11])
        # An interview between steps from Python: memory as of step 3, stored with its LLM call.
        answers = sim.interview([0, 10], "Would you join a group ride on Main Street?")
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        summary = {
            "actions by origin": dict(con.execute("SELECT origin, count(*) FROM actions GROUP BY 1 ORDER BY 1").fetchall()),
            "group messages": con.execute("SELECT count(*) FROM group_messages").fetchone()[0],
            "interviews": con.execute("SELECT step, agent_id, origin FROM interviews ORDER BY step, agent_id").fetchall(),
            "calls per model": dict(con.execute("SELECT model, count(*) FROM llm_calls GROUP BY 1 ORDER BY 1").fetchall()),
            "sign-ups": con.execute("SELECT step, agent_id FROM sign_ups ORDER BY 2").fetchall(),
            "reasons stored": con.execute("SELECT count(*) FROM actions WHERE rationale IS NOT NULL").fetchone()[0],
            "last step's date": str(con.execute("SELECT max(sim_datetime) FROM steps").fetchone()[0]),
        }  # fmt: skip
    finally:
        con.close()
    summary["answers"] = answers
    return summary


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="socium-oasis-parity-"))
    for key, value in main(out).items():
        print(f"{key}: {value}")
    print(f"trace: {out / 'trace.duckdb'}")
