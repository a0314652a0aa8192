"""Fault drill: LLM runs against a server that breaks every way it can, and one that goes away.

    python benchmarks/drill_llm_faults.py [--runs 4] [--agents 16] [--steps 4]

For each seed: (a) a reference run against a healthy fake server; (b) a run against the
fault-injection server (every fault kind, ~45% of attempts broken, retries on) that must finish with
exactly one typed outcome per activation; (c) a run whose server disappears after step 1: it must
stop with the step uncommitted and the cause named, then resume against the revived server and
match (a) row for row. Prints faults injected, runs, rows compared and lost rows (rows of (a) that
(c) lacks or differs in), plus the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import duckdb

from socium.config.loading import config_from_dict
from socium.errors import LLMUnavailable
from socium.simulator.simulation import Simulation
from socium.testing.fault_server import FAULT_KINDS, FaultyOpenAIServer

TABLES = ("posts", "actions", "exposures", "follow_events", "surveys", "stances")


def cfg(url: str, seed: int, n: int, steps: int, **llm: object) -> dict:
    return {"name": "drill", "seed": seed, "steps": steps,
            "population": {"n_agents": n, "mean_activity": 0.6},
            "graph": {"kind": "random_out", "params": {"out_degree": 4}}, "policy": {"kind": "llm"},
            "llm": {"backend": "openai", "base_urls": [url], "model": "m", "retry_base_delay_s": 0.001,
                    "retry_max_delay_s": 0.01, "timeout_s": 1.0, **llm},
            "seed_posts": [{"author": i, "content": f"opening post {i}"} for i in range(4)],
            "surveys": [{"every": 1, "question": "Do you trust the news?", "sample_fraction": 0.5}]}


def rows(path: Path) -> dict[str, set]:
    con = duckdb.connect(str(path / "trace.duckdb"), read_only=True)
    try:
        return {t: set(con.execute(f"SELECT * FROM {t}").fetchall()) for t in TABLES}
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args()
    t0 = time.perf_counter()
    faults = runs = compared = lost = stopped = 0
    typed = 0
    rates = {k: 0.05 for k in FAULT_KINDS if k not in ("slow", "hang")} | {"slow": 0.03, "hang": 0.02}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(a.runs):
            d = Path(tmp) / f"s{seed}"
            with FaultyOpenAIServer() as ok:
                Simulation(config_from_dict(cfg(ok.base_url, seed, a.agents, a.steps)), d / "ref").run()
            with FaultyOpenAIServer(rates, seed=seed, hang_s=5.0) as bad:
                c = cfg(bad.base_url, seed, a.agents, a.steps, retries=3, max_invalid_fraction=None,
                        circuit_breaker_threshold=None)
                Simulation(config_from_dict(c), d / "faulty").run()
                faults += sum(bad.injected.values())
            con = duckdb.connect(str(d / "faulty" / "trace.duckdb"), read_only=True)
            bad_rows = con.execute("SELECT count(*) FROM (SELECT step, agent_id FROM actions WHERE origin != 'seed' "
                                   "GROUP BY ALL HAVING count(*) != 1)").fetchone()[0]
            n_act = con.execute("SELECT sum(n_active) FROM steps").fetchone()[0]
            con.close()
            assert bad_rows == 0, f"seed {seed}: activations without exactly one outcome: {bad_rows}"
            typed += n_act
            srv = FaultyOpenAIServer().start()
            port = srv.port
            c = config_from_dict(cfg(srv.base_url, seed, a.agents, a.steps, retries=1, circuit_breaker_threshold=3))
            sim = Simulation(c, d / "down")
            try:
                sim.run(on_step=lambda s: srv.stop() if s.step == 1 else None)
            except LLMUnavailable as exc:
                assert "connection refused" in str(exc)
                stopped += 1
            with FaultyOpenAIServer(port=port):
                Simulation(c, d / "down", resume=True).run()
            ref, got = rows(d / "ref"), rows(d / "down")
            for t in TABLES:
                compared += len(ref[t])
                lost += len(ref[t] ^ got[t])
            runs += 4  # reference, faulty, stopped, resumed
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {time.perf_counter() - t0:.0f}s")
    print(f"faults injected {faults:,}; runs {runs} ({a.runs} seeds x reference, faulty, stopped, resumed); "
          f"stopped by a dead server {stopped}; activations with one typed outcome under faults {typed:,}; "
          f"rows compared {compared:,}; lost or differing rows {lost}")


if __name__ == "__main__":
    main()
