"""The Simulation Card names what was really called, flags smoke runs, and says only what applies."""

import json

import duckdb
from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.reporting.card import simulation_card
from socium.simulator.simulation import Simulation

runner = CliRunner()
LLM = {"policy": {"kind": "llm"}, "population": {"n_agents": 20, "mean_activity": 0.5}}


def test_llm_card_names_models_called_and_flags_smoke_run(tmp_path):
    Simulation(small_config(steps=2, llm={"backend": "random", "model": "tiny-x"}, **LLM), tmp_path / "r").run()
    card = simulation_card(tmp_path / "r")
    assert card["smoke_run"].startswith("SMOKE RUN: llm.backend 'random'")
    assert list(card)[0] == "smoke_run"  # first thing a reader sees
    assert card["llm"]["backend"] == "random" and set(card["llm"]["models_called"]) == {"tiny-x"}
    assert card["llm"]["models_called"]["tiny-x"] == card["llm_usage"]["calls"] > 0
    assert "server_kind" not in card["llm"] and "servers" not in card["llm"]  # no server behind 'random'
    assert card["perspective"] == "local" and "feed of" in card["who_saw_what"]["own"]
    r = runner.invoke(app, ["card", str(tmp_path / "r")], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "SMOKE RUN" in r.output.splitlines()[0] and "[bold red]" not in r.output


def test_replay_card_names_the_recorded_model(tmp_path):
    Simulation(small_config(steps=2, llm={"backend": "random", "model": "rec-model"}, **LLM), tmp_path / "a").run()
    cfg = small_config(steps=2, llm={"backend": "replay"}, llm_agents={"replay_from": str(tmp_path / "a")}, **LLM)
    assert cfg.llm.model is None  # replay needs no llm.model: it reads the recorded one from the trace
    Simulation(cfg, tmp_path / "b").run()
    card = simulation_card(tmp_path / "b")
    assert "smoke_run" not in card and card["llm"]["backend"] == "replay"
    # a replay calls no model; the card names the run it answered from and that run's model
    assert card["llm"]["models_called"] == "none (no calls recorded)" and card["llm_usage"]["calls"] == 0
    assert card["llm"]["replayed_from"] == str(tmp_path / "a") and card["llm"]["replayed_model"] == "rec-model"
    sql = "SELECT step, agent_id, type, args FROM actions ORDER BY step, seq"
    got = [duckdb.connect(str(tmp_path / r / "trace.duckdb"), read_only=True).execute(sql).fetchall() for r in "ab"]
    assert got[0] and got[0] == got[1]  # the recorded answers, replayed


def test_http_card_shows_server_without_credentials(tmp_path):
    from socium.reporting.card import _backend_section

    sec = _backend_section(
        {
            "backend": "openai",
            "base_urls": ["http://user:secret@gpu-1:8000/v1"],
            "server_kind": "vllm",
            "api_key_env": "MY_KEY",
        },
        {"Qwen/Qwen3-8B": 12},
    )
    assert sec["servers"] == ["http://gpu-1:8000/v1"] and sec["server_kind"] == "vllm"
    assert "secret" not in json.dumps(sec) and "MY_KEY" not in json.dumps(sec)
    assert sec["models_called"] == {"Qwen/Qwen3-8B": 12}
    fake = _backend_section({"backend": "fake", "server_kind": "vllm", "base_urls": []}, {"fake-model": 3})
    assert "server_kind" not in fake and "fake" in fake["servers"]  # the fake is no vLLM server


def test_rule_based_card_has_no_perspective_or_llm(tmp_path):
    Simulation(small_config(steps=2), tmp_path / "r").run()
    card = simulation_card(tmp_path / "r")
    for key in ("perspective", "who_saw_what", "llm", "smoke_run", "llm_usage"):
        assert key not in card, key
    assert card["policy"] == "random" and card["socium_version"]


def test_card_names_input_files_with_digests(tmp_path):
    import hashlib

    from socium.experiments.propagation.spec import PropagationSpec
    from socium.experiments.propagation.study import run_propagation

    tree = tmp_path / "7.txt"
    tree.write_text("['ROOT', 'ROOT', '0.0']->['1', '7', '0.0']\n['1', '7', '0.0']->['2', '7', '1.0']\n")
    spec = PropagationSpec(
        tree_files=[str(tree)],
        minutes=10,
        activation=1.0,
        topics_csv=str(tmp_path / "none.csv"),
        base={"seed": 1, "step_minutes": 5, "llm": {"backend": "random"}},
        run_null=False,
    )
    run_propagation(spec, tmp_path / "exp")
    card = simulation_card(tmp_path / "exp" / "runs" / "7" / "model")
    pop = tmp_path / "exp" / "inputs" / "7.csv"
    entry = card["input_digests"]["population.path"]
    assert entry["path"] == str(pop.resolve()) and entry["sha256"] == hashlib.sha256(pop.read_bytes()).hexdigest()[:16]
    Simulation(small_config(steps=1), tmp_path / "synthetic").run()
    assert simulation_card(tmp_path / "synthetic")["input_digests"] == "none (no input files)"


def test_card_says_how_each_in_process_engine_ran_threads_as_chosen(tmp_path):
    """The embedded backend picks its threads from the machine's load when it starts, so the config
    cannot say what ran: each engine's description goes into ``llm_engines`` in the step it first
    served, a resumed session adds its own, the card lists each set-up once, and none of it changes
    the trace's digest (runs on different machines stay comparable)."""
    from socium.agents.llm_policy import LLMPolicy
    from socium.llm.model_free import ScriptedBackend
    from socium.llm.wrappers import CachingBackend
    from socium.trace.store import trace_digest

    class Engine(ScriptedBackend):
        def __init__(self, threads):
            super().__init__(lambda req: '{"type": "do_nothing"}')
            self.threads = threads

        def describe(self):
            return {"engine": "xllamacpp test", "model_file": "m.gguf", "n_threads": self.threads, "n_parallel": 2,
                    "n_ctx_per_slot": 512, "license": "in model_provenance"}  # fmt: skip

    c = small_config(steps=3, llm={"backend": "embedded"}, **LLM)

    def policy(threads):
        return LLMPolicy(c, backend_factory=lambda cache: CachingBackend(Engine(threads), cache))

    Simulation(c, tmp_path / "a", policy=policy(3)).run(steps=2)
    Simulation(c, tmp_path / "a", policy=policy(1), resume=True).run()  # the resumed session: 1 thread
    Simulation(c, tmp_path / "b", policy=policy(2)).run()
    engine = {"llm": "default", "engine": "xllamacpp test", "model_file": "m.gguf", "n_parallel": 2}
    engine["n_ctx_per_slot"] = 512
    card = simulation_card(tmp_path / "a")
    assert card["llm"]["engines"] == [
        {**engine, "n_threads": 3, "from_step": 0},
        {**engine, "n_threads": 1, "from_step": 2},
    ]
    assert simulation_card(tmp_path / "b")["llm"]["engines"] == [{**engine, "n_threads": 2, "from_step": 0}]
    assert trace_digest(tmp_path / "a" / "trace.duckdb") == trace_digest(tmp_path / "b" / "trace.duckdb")
    Simulation(small_config(steps=1, llm={"backend": "random"}, **LLM), tmp_path / "rnd").run()
    assert "engines" not in simulation_card(tmp_path / "rnd")["llm"]  # no in-process engine, no claim


def test_engine_rows_from_ray_actors_reach_the_driver_and_nothing_else_is_taken():
    """A Ray actor's policy starts its own engine: its drained ``llm_engines`` rows are handed to the
    driver's policy (``absorb_rows``) and written with the step; rows of any other table are refused
    rather than written twice or lost."""
    import pyarrow as pa
    import pytest

    from socium.agents.llm_policy import LLMPolicy
    from socium.errors import TraceError

    pol = LLMPolicy(small_config(steps=1, llm={"backend": "random"}, **LLM))
    assert pol.drain_rows() == {}
    pol.absorb_rows({"llm_engines": pa.table({"step": [0], "llm": ["default"], "engine": ['{"n_threads": 1}']})})
    pol.absorb_rows({"llm_engines": {"step": [0], "llm": ["default"], "engine": ['{"n_threads": 2}']}})
    assert pol.drain_rows() == {
        "llm_engines": {"step": [0, 0], "llm": ["default"] * 2, "engine": ['{"n_threads": 1}', '{"n_threads": 2}']}
    }
    assert pol.drain_rows() == {}
    with pytest.raises(TraceError, match="agent_clusters"):
        pol.absorb_rows({"agent_clusters": {"agent_id": [0]}})
