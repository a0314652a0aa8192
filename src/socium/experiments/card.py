"""The Simulation Card: what a reader needs to judge a run (perspective, visibility, model, costs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from socium.simulator.store import require_store

VISIBILITY = {
    "local": "own profile, own private goal, own memory, own feed; nothing private of anyone else",
    "mindreader": "local + private profiles, goals and stances of the authors in its feed",
    "omniscient": "one narrator per group sees every member's profile and goal plus the global feed and platform statistics",
}


def simulation_card(run_dir: str | Path) -> dict[str, Any]:
    db = require_store(Path(run_dir))
    con = duckdb.connect(str(db), read_only=True)
    try:
        run = con.execute("SELECT name, config, config_hash, seed, perspective, socium_version, created_at FROM runs").fetchone()
        cfg = json.loads(run[1])
        steps = con.execute("SELECT count(*) FILTER (WHERE step >= 0), sum(n_actions), sum(wall_s) FROM steps").fetchone()
        outcomes = dict(con.execute("SELECT outcome, count(*) FROM actions GROUP BY 1").fetchall())
        n_agents = con.execute("SELECT count(*) FROM agents").fetchone()[0]
        n_posts = con.execute("SELECT count(*) FROM posts").fetchone()[0]
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        llm: dict[str, Any] = {}
        if "llm_calls" in tables:
            r = con.execute("SELECT count(*), sum(prompt_tokens), sum(completion_tokens), avg(latency_s) FROM llm_calls").fetchone()
            llm = {"calls": r[0], "prompt_tokens": r[1], "completion_tokens": r[2], "mean_latency_s": r[3]}
            if cfg.get("llm_agents", {}).get("record_reason"):
                llm["reason"] = _reason_cost(con)
    finally:
        con.close()
    total = sum(outcomes.values()) or 1
    card: dict[str, Any] = {
        "name": run[0], "seed": run[3], "config_hash": run[2][:16], "socium_version": run[5], "created_at": str(run[6]),
        "perspective": run[4], "who_saw_what": VISIBILITY.get(run[4], run[4]),
        "policy": cfg["policy"]["kind"], "platform": cfg["platform"]["preset"], "recsys": cfg["recsys"]["kind"],
        "agents": n_agents, "steps_committed": f"{steps[0]} of {cfg['steps']}", "step_minutes": cfg["step_minutes"],
        "posts": n_posts, "actions": dict(outcomes), "invalid_rate": round((total - outcomes.get("ok", 0)) / total, 4),
        "wall_seconds": round(steps[2] or 0.0, 2),
    }  # fmt: skip
    if cfg.get("llm"):
        card["llm"] = {k: cfg["llm"].get(k) for k in ("backend", "model", "server_kind", "temperature", "max_tokens")
                       if cfg["llm"].get(k) is not None}  # never the key's env name or value
    if llm:
        card["llm_usage"] = llm
    return card


def _reason_cost(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """What ``llm_agents.record_reason`` cost: each answer's completion tokens shared out by characters
    between its ``reason`` and the rest (an estimate: the tokenizer is the server's, not ours)."""
    r = con.execute(
        "SELECT count(*), sum(completion_tokens * length(why) / greatest(length(response), 1)) FROM ("
        "  SELECT completion_tokens, response, json_extract_string(response, '$.reason') AS why FROM llm_calls"
        "  WHERE outcome = 'ok' AND json_valid(response)) WHERE why IS NOT NULL").fetchone()  # fmt: skip
    return {"answers_with_reason": int(r[0]), "estimated_completion_tokens": round(float(r[1] or 0.0), 1)}
