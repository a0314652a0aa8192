"""Ray executor: same trace as in-process for any actor count; a killed actor changes nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import duckdb
import pytest
import yaml

from conftest import small_config
from socium.config.executor import ExecutorConfig
from socium.config.loading import config_from_dict
from socium.core.contracts import Decision, Observation
from socium.llm.fake_server import FakeOpenAIServer, FakeReply, default_responder
from socium.simulator.executors import InProcessExecutor, make_executor
from socium.simulator.ray_actor import shard_urls
from socium.simulator.simulation import Simulation
from socium.testing.fake_policies import SleepyPolicy
from socium.trace.store import VOLATILE, check_no_duplicates, trace_digest


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    os.environ["RAY_DISABLE_USAGE_STATS"] = "1"
    ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 2**20, log_to_driver=False)
    yield ray
    ray.shutdown()


def comparable_digest(run_dir) -> dict[str, str]:
    """Trace digest with the executor section taken out of the recorded config: where agents ran is
    not part of what happened, and is the one thing these runs are meant to differ in."""
    db = run_dir / "trace.duckdb"
    digest = trace_digest(db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        (cfg,) = con.execute("SELECT config FROM runs").fetchone()
    finally:
        con.close()
    data = json.loads(cfg)
    data.pop("executor")
    digest["runs"] = json.dumps(data, sort_keys=True)
    return digest


def _run(cfg, path, policy=None):
    sim = Simulation(cfg, path, policy=policy)
    info = sim.executor.actor_info() if hasattr(sim.executor, "actor_info") else []
    sim.run()
    return comparable_digest(path), info


@pytest.mark.ray
def test_rule_based_inprocess_equals_ray_1_2_4_actors(ray_local, tmp_path):
    ref, _ = _run(small_config(), tmp_path / "inproc")
    for k in (1, 2, 4):
        got, info = _run(small_config(executor={"kind": "ray", "actors": k}), tmp_path / f"ray{k}")
        assert len({i["pid"] for i in info}) == k and all(i["pid"] != os.getpid() for i in info)
        assert got == ref, k


@pytest.mark.ray
def test_fake_llm_inprocess_equals_ray_1_2_4_actors(ray_local, tmp_path):
    cfg = small_config(steps=4)
    ref, _ = _run(cfg, tmp_path / "inproc", SleepyPolicy(0.002, cfg.seed))
    for k in (1, 2, 4):
        c = small_config(steps=4, executor={"kind": "ray", "actors": k, "concurrency_per_actor": 8})
        got, _ = _run(c, tmp_path / f"ray{k}", SleepyPolicy(0.002, c.seed))
        assert got == ref, k
    # and a different seed really changes the trace (the comparison is not vacuous)
    other, _ = _run(small_config(steps=4, seed=2), tmp_path / "seed2", SleepyPolicy(0.002, 2))
    assert other["actions"] != ref["actions"]


@pytest.mark.ray
@pytest.mark.parametrize("perspective", ["local", "omniscient"])
def test_llm_policy_inprocess_equals_ray_with_its_call_log(ray_local, tmp_path, perspective):
    """The real LLM policy on the model-free 'random' backend: decisions and the llm_calls log (which
    travels back from actors in Decision.meta) are identical with 2 actors."""
    import functools

    from socium.agents.llm_policy import LLMPolicy
    from socium.agents.sharding import partition_in_groups

    def policy(cfg):
        pol = LLMPolicy(cfg)
        if not hasattr(pol, "partition"):  # script mode's narrator groups must stay whole on one shard
            pol.partition = functools.partial(partition_in_groups, group_size=cfg.llm_agents.group_size)
        return pol

    base = {
        "steps": 3,
        "perspective": perspective,
        "population": {"n_agents": 40, "mean_activity": 0.3},
        "policy": {"kind": "llm"},
        "llm": {"backend": "random"},
    }
    c0 = small_config(**base)
    ref, _ = _run(c0, tmp_path / "inproc", policy(c0))
    c2 = small_config(**base, executor={"kind": "ray", "actors": 2})
    got, _ = _run(c2, tmp_path / "ray2", policy(c2))
    assert got == ref
    # a step split into chunks (executor.step_chunk; 4 agents a chunk here) gives the same trace on Ray
    c3 = small_config(**base, executor={"kind": "ray", "actors": 2, "step_chunk": 4, "concurrency_per_actor": 1})
    got, _ = _run(c3, tmp_path / "ray2-chunks", policy(c3))
    assert got == ref
    con = duckdb.connect(str(tmp_path / "ray2" / "trace.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM llm_calls").fetchone()[0] > 0
    finally:
        con.close()


def _obs(n: int, step: int = 0) -> list[Observation]:
    return [Observation(agent_id=i, step=step, time_s=0.0, hour=8, feed=[]) for i in range(n)]


@pytest.mark.ray
def test_arrival_order_and_input_order_do_not_matter_and_calls_overlap(ray_local):
    # One actor, concurrency 20, 0.2 s per call: 100 calls take ~5 rounds (~1 s on a quiet machine), not 20 s.
    ex = make_executor(
        ExecutorConfig(kind="ray", actors=1, concurrency_per_actor=20), SleepyPolicy(0.2, 3, p_post=0.5), 3
    )
    try:
        ex.actor_info()  # actor started before timing
        obs = _obs(100, step=1)
        t0 = time.perf_counter()
        a = ex.run(obs)
        elapsed = time.perf_counter() - t0
        # one at a time the 100 calls take 20 s: half of that is loose enough for a loaded machine and still
        # impossible without overlap (the in-process test below counts the overlap itself)
        assert elapsed < 10.0, elapsed
    finally:
        ex.close()
    # Shards whose latencies differ (so results arrive in a different order) and a shuffled input.
    ex2 = make_executor(ExecutorConfig(kind="ray", actors=3), SleepyPolicy(0.0, 3, p_post=0.5), 3)
    try:
        b = ex2.run(list(reversed(obs)))
    finally:
        ex2.close()
    ref = InProcessExecutor(SleepyPolicy(0.0, 3, p_post=0.5)).run(obs)
    assert [d.agent_id for d in a] == list(range(100))
    assert (
        [(d.agent_id, d.actions) for d in a]
        == [(d.agent_id, d.actions) for d in b]
        == [(d.agent_id, d.actions) for d in ref]
    )
    assert any(d.actions for d in a)


@pytest.mark.ray
def test_killed_actor_mid_step_is_restarted_and_trace_is_unchanged(ray_local, tmp_path):
    cfg = small_config(steps=5, executor={"kind": "ray", "actors": 2, "concurrency_per_actor": 4})
    clean, _ = _run(cfg, tmp_path / "clean", SleepyPolicy(0.001, cfg.seed))
    flag = tmp_path / "stall.flag"
    flag.write_text("stall")
    pid_file = tmp_path / "stall.flag.pid"
    sim = Simulation(cfg, tmp_path / "killed", policy=SleepyPolicy(0.001, cfg.seed, stall_file=str(flag), stall_step=2))
    before = {i["pid"] for i in sim.executor.actor_info()}
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text().strip():
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGKILL)  # the actor is hanging inside step 2: the driver is mid-step
        killed.append(pid)
        flag.unlink()  # the re-created actor runs the step normally

    th = threading.Thread(target=killer)
    th.start()
    sim.run()
    th.join()
    assert killed and killed[0] in before
    assert sim.executor.restarts == 1
    assert comparable_digest(tmp_path / "killed") == clean
    con = duckdb.connect(str(tmp_path / "killed" / "trace.duckdb"), read_only=True)
    try:
        assert set(check_no_duplicates(con).values()) == {0}
        assert [r[0] for r in con.execute("SELECT step FROM steps ORDER BY step").fetchall()] == list(range(-1, 5))
    finally:
        con.close()


def test_server_urls_are_shared_out_among_actors():
    urls = ["http://a/v1", "http://b/v1", "http://c/v1", "http://d/v1"]
    assert [shard_urls(urls, s, 2) for s in range(2)] == [
        ["http://a/v1", "http://c/v1"],
        ["http://b/v1", "http://d/v1"],
    ]
    assert [shard_urls(urls[:2], s, 3) for s in range(3)] == [["http://a/v1"], ["http://b/v1"], ["http://a/v1"]]
    assert shard_urls([], 0, 2) == []


def test_default_executor_is_inprocess_and_socium_does_not_import_ray():
    code = (
        "import sys; import socium, socium.simulator.simulation, socium.experiments.designs.sweep; "
        "from conftest import small_config; from socium.simulator.executors import make_executor, InProcessExecutor; "
        "c = small_config(); assert isinstance(make_executor(c.executor, None, 0), InProcessExecutor); "
        "assert 'ray' not in sys.modules, 'ray imported'"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=os.path.dirname(os.path.dirname(__file__)), timeout=120
    )


class _CountingPolicy(SleepyPolicy):
    """SleepyPolicy that counts its decisions in flight: overlap counted, not inferred from a wall time."""

    in_flight = most_in_flight = 0

    async def adecide(self, obs: Observation) -> Decision:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await super().adecide(obs)
        finally:
            self.in_flight -= 1


def test_inprocess_executor_overlaps_async_policies():
    policy = _CountingPolicy(0.1, 1)
    ex = InProcessExecutor(policy, concurrency=50)
    out = ex.run(list(reversed(_obs(100))))
    # up to the concurrency limit in flight together (2 rounds of 0.1 s, not 100 one after another), never more
    assert 1 < policy.most_in_flight <= 50, policy.most_in_flight
    assert [d.agent_id for d in out] == list(range(100))


DRIVER = """
import sys
from conftest import small_config
from socium.simulator.simulation import Simulation
from socium.testing.fake_policies import SleepyPolicy
address, out, resume = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
ex = {"kind": "ray", "address": address, "actors": 2, "ray_init": {"log_to_driver": False}}
cfg = small_config(steps=8, executor=ex)
sim = Simulation(cfg, out, resume=resume, policy=SleepyPolicy(0.2, cfg.seed))
sim.run(on_step=lambda s: print(s.step, flush=True))
"""


@pytest.mark.ray
def test_killed_driver_resumes_on_ray_to_the_clean_trace(ray_local, tmp_path):
    """SIGKILL the driver in the middle of step 3 (its actors die with it), resume, compare."""
    address = ray_local.get_runtime_context().gcs_address  # join the running runtime: no second Ray start
    out = tmp_path / "killed"
    cmd = [sys.executable, "-c", DRIVER, address, str(out)]
    here = os.path.dirname(os.path.dirname(__file__))
    p = subprocess.Popen([*cmd, "0"], cwd=here, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for line in p.stdout:
            if line.strip() == "2":  # step 2 committed; step 3 (>= 0.2 s of fake latency) is under way
                break
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.wait(timeout=60)
    con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT max(step) FROM steps").fetchone()[0] in (2, 3)
    con.close()
    subprocess.run([*cmd, "1"], cwd=here, check=True, capture_output=True, timeout=120)
    cfg = small_config(steps=8)
    clean, _ = _run(cfg, tmp_path / "clean", SleepyPolicy(0.0, cfg.seed))
    assert comparable_digest(out) == clean
    con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
    try:
        assert set(check_no_duplicates(con).values()) == {0}
    finally:
        con.close()


@pytest.mark.ray
def test_call_budget_is_global_across_ray_actors(ray_local, tmp_path):
    """llm.call_budget bounds the whole run, not each actor: with 2 actors each holding its own ledger a
    step could spend up to twice the budget. The driver hands each shard a share of what is left."""
    from socium.errors import BudgetExceeded

    base = {
        "population": {"n_agents": 40, "mean_activity": 0.5},
        "policy": {"kind": "llm"},
    }
    probe = tmp_path / "probe"
    Simulation(small_config(**base, steps=1, llm={"backend": "random"}), probe).run()
    con = duckdb.connect(str(probe / "trace.duckdb"), read_only=True)
    first_step = con.execute("SELECT sum(attempts) FROM llm_calls").fetchone()[0]
    con.close()
    budget = first_step - 2  # less than one step's calls, more than either shard's half of it
    assert budget > first_step // 2 + 2
    for actors in (2, 3):
        cfg = small_config(
            **base,
            steps=4,
            llm={"backend": "random", "call_budget": budget},
            executor={"kind": "ray", "actors": actors},
        )
        with pytest.raises(BudgetExceeded, match="call budget.*share of the run's budget"):
            Simulation(cfg, tmp_path / f"r{actors}").run()
        con = duckdb.connect(str(tmp_path / f"r{actors}" / "trace.duckdb"), read_only=True)
        spent = con.execute("SELECT sum(attempts) FROM llm_calls").fetchone()[0]
        committed = con.execute("SELECT count(*) FROM steps WHERE step >= 0").fetchone()[0]
        con.close()
        assert spent <= budget and committed == 0, (actors, spent, budget, committed)
        # a resume continues the same budget: nothing is left, so nothing more is sent
        with pytest.raises(BudgetExceeded):
            Simulation(cfg, tmp_path / f"r{actors}", resume=True).run()
        con = duckdb.connect(str(tmp_path / f"r{actors}" / "trace.duckdb"), read_only=True)
        assert con.execute("SELECT sum(attempts) FROM llm_calls").fetchone()[0] <= budget
        con.close()


# ---- a signal mid-step (issue 36 item 16; the actor's side: tests/test_simulator/test_ray_stop.py) -------
STOP_STEPS, CUT = 4, 2  # the run is stopped in step CUT


def _stop_cfg(urls: list[str], **extra: object) -> dict:
    return {
        "name": "ray-stop",
        "seed": 3,
        "steps": STOP_STEPS,
        "population": {"n_agents": 30, "mean_activity": 0.6},
        "graph": {"kind": "random_out", "params": {"out_degree": 4}},
        "policy": {"kind": "llm"},
        "llm": {"backend": "openai", "base_urls": urls, "model": "m", "max_concurrency": 64, "timeout_s": 300.0},
        "seed_posts": [{"author": i, "content": f"opening post {i}"} for i in range(4)],
        **extra,
    }


def _q(path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(path / "trace.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _without_aborted_calls(path) -> dict[str, str]:
    """:func:`comparable_digest` with the call log's rows of the stopped step (``aborted_step``, in the stopped
    run only) left out, and ``call_id`` with them: they shift the ids of the later rows; ``attempts`` too: an
    answer a resume served from the stopped step's record has 0 (nothing was sent), checked apart."""
    digest = comparable_digest(path)
    drop = VOLATILE["llm_calls"] | {"call_id", "attempts"}
    cols = [c for (c, *_r) in _q(path, "DESCRIBE llm_calls") if c not in drop]
    where = "metadata->>'aborted_step' IS NULL"
    digest["llm_calls"] = repr(_q(path, f"SELECT {', '.join(cols)} FROM llm_calls WHERE {where} ORDER BY ALL"))
    return digest


@pytest.mark.ray
def test_sigterm_mid_step_keeps_every_call_made_in_actors_and_resume_equals_uninterrupted(ray_local, tmp_path):
    """Before: the calls of shards that had answered (read, or dropped by ``ray.cancel``) and some of those cut
    off were in no trace: 6-16 of ~16 requests per stop (benchmarks/drill_ray_signal.py). Deterministic by its
    servers, not by timing: shard 1's server hangs on step CUT, so shard 1 must be cut off, while shard 0's
    answers at once; SIGTERM comes once the servers hold exactly the requests the reference run's step makes
    (so the count is final), and then the resumed run must equal the uninterrupted one."""
    hang: dict[str, int | None] = {"after": None}  # server B: every request past this count hangs

    def b_responder(body: dict) -> str | FakeReply:
        if hang["after"] is not None and srv_b.n_requests > hang["after"]:
            return FakeReply(fault="hang")
        return default_responder(body)

    with FakeOpenAIServer() as srv_a, FakeOpenAIServer(b_responder) as srv_b:
        urls = [srv_a.base_url]  # the run's server; on Ray, executor.base_urls: shard s talks to server s only
        ref = tmp_path / "ref"  # the uninterrupted run, in process
        Simulation(config_from_dict(_stop_cfg(urls)), ref).run()
        per = {
            (step, shard): (n, first)
            for step, shard, n, first in _q(
                ref,
                "SELECT step, agent_id % 2, count(*), count(*) FILTER (WHERE request_id LIKE '%-0') "
                "FROM llm_calls GROUP BY ALL",
            )
        }
        a_calls = sum(n for (step, shard), (n, _f) in per.items() if shard == 0 and step <= CUT)
        b_before = sum(n for (step, shard), (n, _f) in per.items() if shard == 1 and step < CUT)
        b_cut = per[(CUT, 1)][1]  # shard 1's first attempts in step CUT: all hang, so none is re-asked
        assert per[(CUT, 0)][0] > 0 and b_cut > 0
        a0, b0 = srv_a.n_requests, srv_b.n_requests
        hang["after"] = b0 + b_before
        executor = {
            "kind": "ray",
            "actors": 2,
            "address": ray_local.get_runtime_context().gcs_address,  # join it: no Ray start of its own
            "base_urls": [srv_a.base_url, srv_b.base_url],
        }
        cfg_path = tmp_path / "ray.yaml"
        cfg_path.write_text(yaml.safe_dump(_stop_cfg(urls, executor=executor)))
        out = tmp_path / "run"
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "RAY_DISABLE_USAGE_STATS": "1"}
        cmd = [sys.executable, "-m", "socium.cli", "run", str(cfg_path), "--out", str(out)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            deadline = time.monotonic() + 240
            want = (a0 + a_calls, b0 + b_before + b_cut)
            while (srv_a.n_requests, srv_b.n_requests) != want:  # step CUT wholly on the wire, shard 1 hanging
                assert proc.poll() is None, proc.communicate()[0]
                assert time.monotonic() < deadline, ((srv_a.n_requests, srv_b.n_requests), want)
                time.sleep(0.02)
            # let shard 0 finish and the driver read it (that shard's calls were the ones lost before the fix;
            # the assertions below hold whenever the signal comes, this only makes the old loss show)
            time.sleep(1.5)
            proc.send_signal(signal.SIGTERM)
            log, _ = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        received = srv_a.n_requests - a0 + srv_b.n_requests - b0
        assert proc.returncode == 128 + signal.SIGTERM, log
        assert f"stopped after step {CUT - 1}" in log and "Traceback" not in log and "not in the trace" not in log
        # every request either server received is a call-log row, once; the stopped step's are aborted rows
        sql = "SELECT sum(attempts), count(*), count(DISTINCT request_id) FROM llm_calls"
        assert _q(out, sql)[0] == (received, received, received)
        sql = f"SELECT outcome, count(*) FROM llm_calls WHERE step = {CUT} AND metadata->>'aborted_step' = '{CUT}'"
        aborted = dict(_q(out, sql + " GROUP BY ALL"))
        assert sum(aborted.values()) == per[(CUT, 0)][0] + b_cut, aborted  # shard 0's calls were the ones lost
        assert aborted.get("interrupted", 0) >= b_cut and set(aborted) <= {"ok", "interrupted"}, aborted
        hang["after"] = None  # the server is well again: resumed, the run ends as if never stopped
        a1, b1 = srv_a.n_requests, srv_b.n_requests
        Simulation(config_from_dict(_stop_cfg(urls, executor=executor)), out, resume=True).run()
        asked = (srv_a.n_requests - a1, srv_b.n_requests - b1)
    assert _without_aborted_calls(out) == _without_aborted_calls(ref)
    # resumed, each shard's server was asked only what the stopped step had no answer for (issue 36 leftover:
    # before, every call again): shard 0's answered calls came from the trace, inside its actor
    kept = aborted.get("ok", 0)
    from_cut = [sum(n for (step, shard), (n, _f) in per.items() if shard == sh and step >= CUT) for sh in (0, 1)]
    assert kept > 0 and asked == (from_cut[0] - kept, from_cut[1]), (asked, from_cut, kept)
    done = "metadata->>'aborted_step' IS NULL"
    replayed = _q(out, f"SELECT request_id FROM llm_calls WHERE outcome = 'ok' AND attempts = 0 AND {done}")
    got = dict(_q(out, f"SELECT request_id, attempts FROM llm_calls WHERE {done}"))
    assert len(replayed) == kept and got == {
        rid: 0 if (rid,) in replayed else n for rid, n in _q(ref, "SELECT request_id, attempts FROM llm_calls")
    }
    assert _q(out, "SELECT sum(attempts) FROM llm_calls")[0][0] == received + sum(asked)
