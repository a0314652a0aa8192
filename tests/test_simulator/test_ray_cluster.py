"""A real two-node Ray cluster on loopback (a head and a worker, each `ray start` with its own
resources): socium joins it by address and its actors land on both nodes.

The test starts both nodes with ``--block`` in their own process sessions and ends exactly those
process groups afterwards, rather than ``ray stop --force``, which would kill every Ray process on
the machine, other users' included.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import small_config

RAY_BIN = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A throwaway loopback cluster: no token auth, so the test never depends on ~/.ray/auth_token.
ENV = {**os.environ, "RAY_DISABLE_USAGE_STATS": "1", "RAY_AUTH_MODE": "disabled"}


def _start(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [RAY_BIN, "start", "--block", *args],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env=ENV,
        start_new_session=True,
    )


def _stop(p: subprocess.Popen) -> None:
    """SIGTERM the node's own process group, then SIGKILL whatever of that group is left."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass


# The driver runs in its own process with the cluster's environment: a pytest process that already
# ran a local Ray runtime carries that runtime's auth mode, which this cluster does not share.
DRIVER = """
import json, sys, time
import ray
from conftest import small_config
from socium.simulator.simulation import Simulation
address, out = sys.argv[1], sys.argv[2]
ray.init(address=address, log_to_driver=False)
deadline = time.monotonic() + 60
while sum(1 for n in ray.nodes() if n["Alive"]) < 2:
    assert time.monotonic() < deadline, ray.nodes()
    time.sleep(0.5)
node_ids = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
ray.shutdown()  # the executor joins through executor.address itself
cfg = small_config(executor={"kind": "ray", "address": address, "actors": 2, "placement": "spread",
                             "cpus_per_actor": 0.5, "ray_init": {"log_to_driver": False}})
sim = Simulation(cfg, out)
info = sim.executor.actor_info()
stats = sim.run()
print(json.dumps({"nodes": node_ids, "actors": info, "steps": len(stats), "actions": sum(s.n_actions for s in stats)}))
"""


@pytest.mark.ray
def test_actors_land_on_both_nodes_of_a_real_cluster(tmp_path):
    ray = pytest.importorskip("ray")
    ray.shutdown()  # this test's Ray is the cluster it starts, reached from a separate driver process
    port = _free_port()
    temp = Path(tempfile.mkdtemp(prefix="srt", dir="/tmp"))  # short: Ray's socket paths are length-limited
    common = [
        "--node-ip-address=127.0.0.1",
        "--num-cpus=1",
        "--object-store-memory=80000000",
        f"--temp-dir={temp}",
        "--disable-usage-stats",
    ]
    head = _start(
        ["--head", f"--port={port}", "--include-dashboard=false", '--resources={"head_node": 1}', *common],
        tmp_path / "head.log",
    )
    worker = None
    try:
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while (
            subprocess.run(
                [RAY_BIN, "status", f"--address={address}"], capture_output=True, timeout=30, env=ENV
            ).returncode
            != 0
        ):
            assert head.poll() is None, (tmp_path / "head.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "head never came up"
            time.sleep(1)
        worker = _start([f"--address={address}", '--resources={"worker_node": 1}', *common], tmp_path / "worker.log")
        res = subprocess.run(
            [sys.executable, "-c", DRIVER, address, str(tmp_path / "run")],
            env=ENV,
            cwd=os.path.dirname(os.path.dirname(__file__)),
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert res.returncode == 0, res.stderr[-3000:]
        got = json.loads(res.stdout.strip().splitlines()[-1])
        assert got["steps"] == small_config().steps and got["actions"] > 0
        used = {a["node_id"] for a in got["actors"]}
        assert len(got["nodes"]) == 2 and used == set(got["nodes"]), got
    finally:
        if worker is not None:
            _stop(worker)
        _stop(head)
        shutil.rmtree(temp, ignore_errors=True)
