"""vLLM in-process engine: only on a GPU machine with vLLM installed (``-m slow``)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from socium.llm.base import generate_sync
from socium.llm.parsing import parse_json_lenient
from socium.llm.types import user_request

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None, reason="vllm not installed: pip install 'socium[vllm]'"
    ),
]

SCHEMA = {
    "type": "object",
    "properties": {"action": {"type": "string", "enum": ["post", "like", "skip"]}, "text": {"type": "string"}},
    "required": ["action", "text"],
}


def test_vllm_batch_follows_schema() -> None:
    from socium.llm.vllm_engine import VLLMBackend

    model = os.environ.get("SOCIUM_VLLM_MODEL", "HuggingFaceTB/SmolLM2-135M-Instruct")
    be = VLLMBackend(model, gpu_memory_utilization=0.3, max_model_len=1024, enforce_eager=True)
    try:
        reqs = [
            user_request(
                f"v{i}",
                f"You are agent {i}. Choose an action as JSON.",
                json_schema=SCHEMA,
                max_tokens=64,
                temperature=0.7,
                seed=i,
            )
            for i in range(16)
        ]
        res = generate_sync(be, reqs)
    finally:
        be.close()
    assert [r.request_id for r in res] == [r.request_id for r in reqs]
    for r in res:
        assert r.ok, r.error
        assert parse_json_lenient(r.text)["action"] in ("post", "like", "skip")
        assert r.prompt_tokens > 0 and r.completion_tokens > 0
