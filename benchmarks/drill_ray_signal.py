"""Signal drill for the Ray executor: every request a server received is in the stopped run's trace.

    python benchmarks/drill_ray_signal.py [--runs 10] [--delay 0.3] [--actors 2]

Each run is a real ``socium run`` on Ray (2 actors, joining one Ray runtime the drill starts, so no run pays
for a Ray start) against a loopback fake server that answers after ``--delay`` seconds. SIGTERM is sent just
after a request arrived, at a random request count past the first step, so the stop lands at a different
point of a step each time: shards still waiting for answers, shards that answered while the driver was
unwinding, shards already read. Printed per run: requests the server received, ``sum(attempts)`` of
``llm_calls`` (answered and interrupted rows), the stopped step's rows, and the requests missing from the
trace; then the machine and its load. Issue 36 item 16: before the stop protocol
(:mod:`socium.simulator.ray_actor`) 6-16 requests per stop were missing; the target is 0 in every run.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import yaml

from socium.llm.fake_server import FakeOpenAIServer


def cfg(url: str, address: str, actors: int) -> dict:
    return {
        "name": "ray-drill",
        "seed": 3,
        "steps": 1000,
        "population": {"n_agents": 30, "mean_activity": 0.6},
        "graph": {"kind": "random_out", "params": {"out_degree": 4}},
        "policy": {"kind": "llm"},
        "llm": {"backend": "openai", "base_urls": [url], "model": "m", "max_concurrency": 64, "timeout_s": 30.0},
        "seed_posts": [{"author": i, "content": f"opening post {i}"} for i in range(4)],
        "executor": {"kind": "ray", "actors": actors, "address": address},
    }


def one(tmp: Path, address: str, delay: float, after: int, actors: int) -> tuple[int, int, int, int, str]:
    """(received, sum of attempts, rows of the stopped step, its interrupted rows, the run's last line)."""
    with FakeOpenAIServer(delay_s=delay) as srv:
        path = tmp / "c.yaml"
        path.write_text(yaml.safe_dump(cfg(srv.base_url, address, actors)))
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "RAY_DISABLE_USAGE_STATS": "1"}
        cmd = [sys.executable, "-m", "socium.cli", "run", str(path), "--out", str(tmp / "run")]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            while True:
                if proc.poll() is not None:
                    raise SystemExit(proc.communicate()[0])
                before = srv.n_requests
                time.sleep(0.01)
                if before >= after and srv.n_requests > before:
                    break
            proc.send_signal(signal.SIGTERM)
            log, _ = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        received = srv.n_requests
    con = duckdb.connect(str(tmp / "run" / "trace.duckdb"), read_only=True)
    try:
        attempts = int(con.execute("SELECT coalesce(sum(attempts), 0) FROM llm_calls").fetchone()[0])
        cut, interrupted = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE outcome = 'interrupted') FROM llm_calls "
            "WHERE metadata->>'aborted_step' IS NOT NULL"
        ).fetchone()
    finally:
        con.close()
    return received, attempts, int(cut), int(interrupted), log.strip().splitlines()[-1][:60]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--delay", type=float, default=0.3)
    ap.add_argument("--actors", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    import ray  # lazy: the drill's one Ray runtime, joined by every run

    os.environ["RAY_DISABLE_USAGE_STATS"] = "1"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    address = ray.get_runtime_context().gcs_address
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    print(
        f"{'run':>3} {'signal at':>9} {'received':>8} {'in trace':>8} {'stopped step':>12} {'interrupted':>11} {'lost':>4}"
    )
    lost_total = runs_lost = 0
    try:
        for i in range(args.runs):
            after = int(rng.integers(18, 60))
            with tempfile.TemporaryDirectory() as d:
                received, attempts, cut, interrupted, _last = one(Path(d), address, args.delay, after, args.actors)
            lost = received - attempts
            lost_total += lost
            runs_lost += lost != 0
            print(f"{i:>3} {after:>9} {received:>8} {attempts:>8} {cut:>12} {interrupted:>11} {lost:>4}", flush=True)
    finally:
        ray.shutdown()
    print(f"runs with a request missing: {runs_lost} of {args.runs}; requests missing: {lost_total}")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, Ray {ray.__version__}; "
        f"server delay {args.delay} s, {args.actors} actors; load average: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {time.perf_counter() - t0:.0f}s"
    )


if __name__ == "__main__":
    main()
