"""Whole runs against a faulty or vanishing OpenAI-compatible server (issue 11, points 4 and 5).

A faulty server never kills a run nor leaves an activation without a typed outcome; a server that
is down stops the run with the step uncommitted, a message naming the real cause and a resume
that continues once the server is back; budgets count what the trace already holds.
"""

from __future__ import annotations

import json

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app
from socium.config.loading import config_from_dict
from socium.errors import BudgetExceeded, LLMUnavailable
from socium.simulator.simulation import Simulation
from socium.testing.fault_server import FAULT_KINDS, FaultyOpenAIServer
from socium.trace.store import trace_digest

N = 12
FAST_RETRY = {"retry_base_delay_s": 0.001, "retry_max_delay_s": 0.01, "timeout_s": 1.0}


def cfg_dict(url: str, steps: int = 3, **llm: object) -> dict:
    return {
        "name": "faulty",
        "seed": 5,
        "steps": steps,
        "population": {"n_agents": N, "mean_activity": 0.6},
        "graph": {"kind": "random_out", "params": {"out_degree": 4}},
        "policy": {"kind": "llm"},
        "llm": {"backend": "openai", "base_urls": [url], "model": "m", **FAST_RETRY, **llm},
        "seed_posts": [{"author": i, "content": f"opening post {i}"} for i in range(4)],
        "surveys": [{"every": 1, "question": "Do you trust the news?", "sample_fraction": 0.5}],
    }


def db(path):
    return duckdb.connect(str(path / "trace.duckdb"), read_only=True)


def test_every_fault_kind_in_a_run_each_activation_one_typed_outcome(tmp_path) -> None:
    rates = {k: 0.05 for k in FAULT_KINDS if k not in ("slow", "hang")} | {"hang": 0.02}
    with FaultyOpenAIServer(rates, seed=3, hang_s=5.0) as srv:
        c = config_from_dict(
            cfg_dict(srv.base_url, retries=1, max_invalid_fraction=None, circuit_breaker_threshold=None)
        )
        Simulation(c, tmp_path / "r").run()  # must not raise, whatever the server does
    con = db(tmp_path / "r")
    per = con.execute("""SELECT s.step, s.n_active, count(a.agent_id), count(DISTINCT a.agent_id)
                         FROM steps s LEFT JOIN actions a ON a.step = s.step AND a.origin != 'seed'
                         WHERE s.step >= 0 GROUP BY ALL ORDER BY 1""").fetchall()
    assert len(per) == 3
    for step, n_active, n_rows, n_agents in per:
        assert n_rows == n_agents == n_active, step
    faults = sum(srv.injected.values())
    assert faults > 10 and len(srv.injected) >= 6
    outcomes = dict(con.execute("SELECT outcome, count(*) FROM llm_calls GROUP BY 1").fetchall())
    assert outcomes.get("ok", 0) > 0 and set(outcomes) <= {
        "ok",
        "bad_response",
        "connection",
        "rate_limit",
        "server",
        "timeout",
    }
    # a call that still failed after its retry is a recorded invalid_llm_output naming the failure
    n_failed = sum(v for k, v in outcomes.items() if k != "ok")
    survey_failed = con.execute(
        "SELECT count(*) FROM llm_calls WHERE outcome != 'ok' AND metadata->>'survey' = 'true'"
    ).fetchone()[0]
    invalid = con.execute("SELECT reason FROM actions WHERE outcome = 'invalid_llm_output'").fetchall()
    assert len(invalid) == n_failed - survey_failed
    assert all(r.startswith("backend error (") for (r,) in invalid)
    # every survey row has a value or a reason
    assert (
        con.execute("SELECT count(*) FROM surveys WHERE value IS NULL AND coalesce(reason, '') = ''").fetchone()[0] == 0
    )


def test_server_down_stops_uncommitted_names_cause_and_resume_matches_uninterrupted(tmp_path) -> None:
    with FaultyOpenAIServer() as ref_srv:
        Simulation(config_from_dict(cfg_dict(ref_srv.base_url)), tmp_path / "ref").run()
    srv = FaultyOpenAIServer().start()
    port = srv.port
    c = config_from_dict(cfg_dict(srv.base_url, retries=1, circuit_breaker_threshold=3))
    sim = Simulation(c, tmp_path / "r")

    def after(stats) -> None:
        if stats.step == 0:
            srv.stop()  # the server goes away after step 0 is committed

    with pytest.raises(LLMUnavailable, match="connection refused") as err:
        sim.run(on_step=after)
    assert "step 1 was not committed" in str(err.value) and "--resume" in str(err.value)
    con = db(tmp_path / "r")
    assert con.execute("SELECT max(step) FROM steps").fetchone()[0] == 0
    for t in ("actions", "posts", "exposures", "surveys"):
        assert con.execute(f"SELECT count(*) FROM {t} WHERE step >= 1").fetchone()[0] == 0, t
    errors = con.execute("SELECT outcome, error, metadata FROM llm_calls WHERE step = 1").fetchall()
    con.close()
    assert errors and all("connection refused" in e for _, e, _ in errors)  # circuit_open rows name it too
    assert {o for o, _, _ in errors} <= {"connection", "circuit_open"}
    assert all(json.loads(m)["aborted_step"] == 1 for _, _, m in errors)
    # the server comes back on the same address: resume finishes the run as if nothing happened
    with FaultyOpenAIServer(port=port):
        Simulation(c, tmp_path / "r", resume=True).run()
    a, b = trace_digest(tmp_path / "ref" / "trace.duckdb"), trace_digest(tmp_path / "r" / "trace.duckdb")
    for t in ("posts", "actions", "exposures", "follow_events", "surveys", "stances"):
        assert a[t] == b[t], t


def test_cli_exits_non_zero_naming_the_http_status_when_every_call_fails(tmp_path) -> None:
    with FaultyOpenAIServer({"server_error": 1.0}) as srv:
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(cfg_dict(srv.base_url, retries=1, max_invalid_fraction=0.5)))
        r = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "r"), "--quiet"])
    assert r.exit_code == 4, r.output
    assert "HTTP 503" in r.output and "step 0 was not committed" in r.output
    con = db(tmp_path / "r")
    assert con.execute("SELECT max(step) FROM steps").fetchone()[0] == -1
    n, named = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE error LIKE '%HTTP 503: overloaded%') FROM llm_calls"
    ).fetchone()
    assert n > 0 and named == n  # open-breaker rows too name the HTTP status that opened it


def test_call_budget_is_global_exact_and_continues_across_resume(tmp_path) -> None:
    with FaultyOpenAIServer({"server_error": 0.2}, seed=1) as srv:
        c = config_from_dict(cfg_dict(srv.base_url, steps=6, retries=2, call_budget=25, max_concurrency=64))
        with pytest.raises(BudgetExceeded, match="call budget"):
            Simulation(c, tmp_path / "r").run()
        sent_first = len(srv.requests)
        con = db(tmp_path / "r")
        logged = con.execute("SELECT sum(attempts) FROM llm_calls").fetchone()[0]
        last = con.execute("SELECT max(step) FROM steps").fetchone()[0]
        con.close()
        assert sent_first == logged <= 25  # every request the server saw is in the log, aborted step included
        # a resumed run continues the same budget: it may only use what is left
        with pytest.raises(BudgetExceeded):
            Simulation(c, tmp_path / "r", resume=True).run()
        assert len(srv.requests) <= 25
    con = db(tmp_path / "r")
    assert con.execute("SELECT sum(attempts) FROM llm_calls").fetchone()[0] == len(srv.requests)
    assert con.execute("SELECT max(step) FROM steps").fetchone()[0] == last
