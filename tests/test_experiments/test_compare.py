"""Perspective comparison runs one spec under every perspective and accounts for each one's tokens."""

import json

import duckdb
import pytest

from socium.errors import ConfigError
from socium.experiments.designs.compare import run_compare
from socium.experiments.opinions.herding import HerdingSpec, run_herding
from socium.experiments.report import write_report


def test_four_perspectives_same_design_different_cost(tmp_path, monkeypatch):
    items = [{"text": f"claim {i}", "group": ("up", "control", "down")[i % 3]} for i in range(6)]
    people = [{"realname": f"P {i}", "username": f"p{i}", "bio": "b", "persona": "p"} for i in range(16)]
    (tmp_path / "i.json").write_text(json.dumps(items))
    (tmp_path / "p.json").write_text(json.dumps(people))
    spec = HerdingSpec(
        items=str(tmp_path / "i.json"),
        personas=str(tmp_path / "p.json"),
        n_items=6,
        activation=1.0,
        bootstrap=10,
        base={"seed": 1, "steps": 2, "llm": {"backend": "random"}, "llm_agents": {"group_size": 8}},
    )
    res = run_compare(spec, tmp_path / "cmp", run_herding)
    rows = res["perspectives"]
    assert list(rows) == ["local", "mindreader", "omniscient", "omniscient_agents"]
    for p, r in rows.items():
        con = duckdb.connect(f"{r['dir']}/runs/model/trace.duckdb", read_only=True)
        persp, calls = con.execute("SELECT perspective, (SELECT count(*) FROM llm_calls) FROM runs").fetchone()
        seeded = con.execute("SELECT count(*) FROM posts WHERE step = 0 AND author = 16").fetchone()[0]
        con.close()
        assert persp == p and calls == r["totals"]["llm_calls"] and seeded == 6
        assert r["totals"]["prompt_tokens"] > 0 and not (tmp_path / "cmp" / p / "runs" / "null").exists()
    # 16 always-active voters: one call each per step locally, one narrator call per 8 agents in script mode
    assert rows["local"]["totals"]["llm_calls"] == 32 and rows["omniscient"]["totals"]["llm_calls"] == 4
    # the same knowledge as the narrator, one call per agent: information and narration are separate contrasts
    assert rows["omniscient_agents"]["totals"]["llm_calls"] == 32
    assert set(res["differences"]["omniscient vs omniscient_agents"]) == {"calls", "prompt text"}
    assert "calls" not in res["differences"]["local vs omniscient_agents"]
    assert rows["omniscient"]["totals"]["prompt_tokens"] < rows["local"]["totals"]["prompt_tokens"]
    from socium.reporting import plots as P

    legends = []
    real_bars = P.group_bars
    monkeypatch.setattr(P, "group_bars", lambda *a, **k: legends.append(k["labels"]) or real_bars(*a, **k))
    rep = write_report(tmp_path / "cmp")
    assert {"perspective_tokens.png", "perspective_next_positive.png"} <= {p.name for p in rep.images}
    # the model is named with each perspective, not the perspective alone
    assert legends == [{p: f"LLM (random, smoke): {p}" for p in rows}]
    page = rep.html.read_text()
    assert "unchanged except" not in page and "omniscient vs omniscient_agents: calls, prompt text" in page
    with pytest.raises(ConfigError, match="perspective"):
        run_compare(
            spec.model_copy(update={"base": {**spec.base, "perspective": "local"}}), tmp_path / "x", run_herding
        )
