"""A real two-node Ray cluster on loopback (a head and a worker, each `ray start` with its own
resources): socium joins it by address and its actors land on both nodes.

The test starts both nodes with ``--block`` in their own process sessions and ends exactly those
process groups afterwards, rather than ``ray stop --force``, which would kill every Ray process on
the machine, other users' included.
"""

from __future__ import annotations

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
from socium.simulator.simulation import Simulation

RAY_BIN = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A throwaway loopback cluster: no token auth, so the test never depends on ~/.ray/auth_token.
ENV = {**os.environ, "RAY_DISABLE_USAGE_STATS": "1", "RAY_AUTH_MODE": "disabled"}


def _start(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([RAY_BIN, "start", "--block", *args], stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env=ENV, start_new_session=True)  # fmt: skip


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


def _wait_nodes(ray, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(1 for nd in ray.nodes() if nd["Alive"]) >= n:
            return
        time.sleep(0.5)
    raise AssertionError(f"cluster never reached {n} nodes: {ray.nodes()}")


@pytest.mark.ray
def test_actors_land_on_both_nodes_of_a_real_cluster(tmp_path):
    ray = pytest.importorskip("ray")
    ray.shutdown()
    port = _free_port()
    temp = Path(tempfile.mkdtemp(prefix="srt", dir="/tmp"))  # short: Ray's socket paths are length-limited
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--object-store-memory=80000000",
              f"--temp-dir={temp}", "--disable-usage-stats"]  # fmt: skip
    head = _start(["--head", f"--port={port}", "--include-dashboard=false", '--resources={"head_node": 1}', *common],
                  tmp_path / "head.log")  # fmt: skip
    worker = None
    try:
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while subprocess.run([RAY_BIN, "status", f"--address={address}"], capture_output=True, timeout=30, env=ENV).returncode != 0:
            assert head.poll() is None, (tmp_path / "head.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "head never came up"
            time.sleep(1)
        worker = _start([f"--address={address}", '--resources={"worker_node": 1}', *common], tmp_path / "worker.log")
        cfg = small_config(executor={"kind": "ray", "address": address, "actors": 2, "placement": "spread",
                                     "cpus_per_actor": 0.5, "ray_init": {"log_to_driver": False}})  # fmt: skip
        ray.init(address=address, log_to_driver=False)
        _wait_nodes(ray, 2, 60)
        node_ids = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        ray.shutdown()  # the executor joins through executor.address itself
        sim = Simulation(cfg, tmp_path / "run")
        info = sim.executor.actor_info()
        stats = sim.run()
        assert len(stats) == cfg.steps and sum(s.n_actions for s in stats) > 0
        used = {i["node_id"] for i in info}
        assert len(used) == 2 and used <= node_ids, info
    finally:
        ray.shutdown()
        if worker is not None:
            _stop(worker)
        _stop(head)
        shutil.rmtree(temp, ignore_errors=True)
