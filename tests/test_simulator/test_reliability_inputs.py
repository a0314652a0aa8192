"""Issue 31, build 3: every input file that can change results is digested, by construction.

On 1969b96 ``timing.params_file``, ``llm.model_path`` and ``llm_agents.replay_from`` were not in
``runs.input_digests``: editing the timing file and resuming silently continued in another world.
"""

from __future__ import annotations

import json
import math
import typing

import pytest
from pydantic import BaseModel

from conftest import small_config
from socium.config.base import InputFile
from socium.config.experiment import ExperimentConfig
from socium.errors import RunDirError
from socium.simulator.inputs import input_digests, input_paths
from socium.simulator.simulation import Simulation

PARAMS = {"delay": {"family": "lognormal", "mu": math.log(10.0), "sigma": 0.5}, "user_sigma": 0.3}
PATH_LIKE = ("_path", "_file", "_from", "_dir")


def _timed_config(params_file, steps=6):
    return small_config(
        steps=steps,
        step_minutes=1.0,
        policy={"kind": "independent_cascade", "p_repost": 0.5, "p_post": 0.1},
        timing={"kind": "exposure", "params_file": str(params_file), "background": False},
    )


def test_editing_the_timing_params_file_refuses_the_resume(tmp_path) -> None:
    params = tmp_path / "timing.json"
    params.write_text(json.dumps(PARAMS))
    run = tmp_path / "run"
    Simulation(_timed_config(params), run).run(steps=2)
    params.write_text(json.dumps({**PARAMS, "delay": {**PARAMS["delay"], "mu": math.log(60.0)}}))
    with pytest.raises(RunDirError, match="different world") as got:
        Simulation(_timed_config(params), run, resume=True)
    assert "timing.params_file" in str(got.value) and str(params) in str(got.value)
    params.write_text(json.dumps(PARAMS))  # back as it was: the same world, the resume goes on
    sim = Simulation(_timed_config(params), run, resume=True)
    sim.run()
    assert sim.next_step == 6


def test_model_file_and_replay_source_are_digested(tmp_path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(100))
    src = tmp_path / "src"
    src.mkdir()
    (src / "trace.duckdb").write_bytes(b"x" * 10)
    cfg = small_config(llm={"backend": "random", "model_path": str(model)}, llm_agents={"replay_from": str(src)})
    got = input_digests(cfg)
    assert got["llm.model_path"]["bytes"] == 104
    assert got["llm_agents.replay_from"]["path"] == str(src / "trace.duckdb")
    model.write_bytes(b"GGUF" + bytes(101))
    assert input_digests(cfg)["llm.model_path"]["sha256"] != got["llm.model_path"]["sha256"]


def test_a_file_key_is_digested_only_where_its_section_reads_it(tmp_path) -> None:
    params = tmp_path / "timing.json"
    params.write_text(json.dumps(PARAMS))
    assert "timing.params_file" in input_paths(_timed_config(params))
    inline = small_config(timing={"kind": "exposure", "params": PARAMS, "params_file": str(params)})
    assert "timing.params_file" not in input_paths(inline)  # inline params win: the file is not read


def _fields(model: type[BaseModel], prefix: str = "", seen: frozenset = frozenset()):
    for name, info in model.model_fields.items():
        yield f"{prefix}{name}", name, info
        for arg in typing.get_args(info.annotation) or (info.annotation,):
            for sub in typing.get_args(arg) or (arg,):
                if isinstance(sub, type) and issubclass(sub, BaseModel) and sub not in seen:
                    yield from _fields(sub, f"{prefix}{name}.", seen | {sub})


def test_every_path_like_config_key_is_marked_as_an_input_file() -> None:
    """The by-construction guard: a new ``*_path`` / ``*_file`` / ``*_from`` key without the marker fails here."""
    keys = [(k, info) for k, name, info in _fields(ExperimentConfig) if name == "path" or name.endswith(PATH_LIKE)]
    assert {k for k, _ in keys} >= {"population.path", "graph.path", "llm.model_path", "timing.params_file"}
    unmarked = [k for k, info in keys if not any(isinstance(m, InputFile) for m in info.metadata)]
    assert unmarked == []
