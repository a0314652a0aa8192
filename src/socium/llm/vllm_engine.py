"""vLLM's in-process engine: the fastest path on a GPU machine, with no HTTP in between.

A whole simulator step goes to ``LLM.chat`` as one batch so vLLM's continuous batching sees every
request at once. Structured output uses ``StructuredOutputsParams`` (vLLM >= 0.12; the old
``guided_json`` argument no longer exists).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

from socium.errors import LLMError
from socium.llm.types import LLMRequest, LLMResult

_INSTALL_HINT = "pip install 'socium[vllm]' (needs a CUDA GPU)"


def _import_vllm() -> tuple[Any, Any, Any]:
    try:
        from vllm import LLM, SamplingParams
        from vllm.sampling_params import StructuredOutputsParams
    except ImportError as exc:
        raise LLMError(f"the vllm backend needs vLLM >= 0.12: {_INSTALL_HINT}") from exc
    return LLM, SamplingParams, StructuredOutputsParams


class VLLMBackend:
    """One ``vllm.LLM`` engine in this process; ``engine_kwargs`` go to its constructor
    (e.g. ``gpu_memory_utilization``, ``max_model_len``, ``tensor_parallel_size``)."""

    def __init__(self, model: str, **engine_kwargs: Any) -> None:
        LLM, self._SamplingParams, self._StructuredOutputsParams = _import_vllm()
        self.model_name = model
        self._lock = threading.Lock()
        t0 = time.perf_counter()
        self._llm: Any = LLM(model=model, **engine_kwargs)
        self.load_s = time.perf_counter() - t0

    def sampling_params(self, req: LLMRequest) -> Any:
        kwargs: dict[str, Any] = {"temperature": req.temperature, "max_tokens": req.max_tokens}
        if req.seed is not None:
            kwargs["seed"] = req.seed
        if req.json_schema is not None:
            kwargs["structured_outputs"] = self._StructuredOutputsParams(json=req.json_schema)
        return self._SamplingParams(**kwargs)

    def _run(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        t0 = time.perf_counter()
        convs = [[{"role": m.role, "content": m.content} for m in r.messages] for r in requests]
        params = [self.sampling_params(r) for r in requests]
        with self._lock:
            if self._llm is None:
                raise LLMError("VLLMBackend is closed")
            try:
                outputs = self._llm.chat(convs, sampling_params=params, use_tqdm=False)
            except Exception as exc:  # one bad request fails the engine call; report per request
                return [
                    LLMResult.failure(r.request_id, f"vllm: {exc}", "other", latency_s=time.perf_counter() - t0)
                    for r in requests
                ]
        latency = time.perf_counter() - t0  # the batch's wall time: what each request waited
        results = []
        for req, out in zip(requests, outputs):
            comp = out.outputs[0]
            results.append(
                LLMResult(
                    request_id=req.request_id,
                    text=comp.text,
                    prompt_tokens=len(out.prompt_token_ids or []),
                    completion_tokens=len(comp.token_ids or []),
                    latency_s=latency,
                    finish_reason=comp.finish_reason,
                )
            )
        return results

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        if not requests:
            return []
        return await asyncio.to_thread(self._run, list(requests))

    def close(self) -> None:
        with self._lock:
            self._llm = None

    def __repr__(self) -> str:
        return f"VLLMBackend(model={self.model_name!r})"
