"""Config section of where policies run (in-process or Ray actors); left out of the config hash."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from socium.config.base import _Cfg


class ExecutorConfig(_Cfg):
    kind: Literal["inprocess", "ray"] = Field("inprocess", description="Where policies run.")
    address: str | None = Field(None, description="Ray cluster address; null starts Ray locally.")
    actors: int = Field(2, ge=1, description="Ray actors holding agent shards.")
    concurrency_per_actor: int = Field(16, ge=1, description="LLM calls in flight per actor.")
    step_chunk: int = Field(
        1024,
        ge=0,
        description="LLM agents observed and decided together within a step (0: the whole step at once). "
        "Bounds the memory a step holds in flight (observations, prompts, answers) by the chunk instead of by the "
        "active agents; decisions are still applied after the last chunk, so the trace is the same for any value. "
        "Raised to twice what can be in flight (llm.max_concurrency in-process, actors x concurrency_per_actor "
        "with Ray).",
    )
    num_gpus: float = Field(0.0, ge=0, description="GPUs per actor (for in-process vLLM engines).")
    cpus_per_actor: float | None = Field(
        None,
        ge=0,
        description="Ray CPUs each actor reserves; null: min(1, cluster CPUs / actors) so any actor count fits.",
    )
    placement: Literal["spread", "pack"] = Field(
        "spread", description="Ray actor placement: 'spread' over nodes (SPREAD strategy) or 'pack' (Ray's default)."
    )
    resources: dict[str, float] = Field(
        default_factory=dict,
        description="Custom Ray resources each actor requires, e.g. {vllm_node: 1} to pin actors to GPU nodes.",
    )
    base_urls: list[str] = Field(
        default_factory=list,
        description="OpenAI-compatible servers shared out among actors (actor i gets every actors-th URL, or URL i "
        "mod n).",
    )
    max_actor_restarts: int = Field(
        3,
        ge=0,
        description="Times one shard's actor may be re-created within a step after it dies before the run fails.",
    )
    ray_init: dict[str, Any] = Field(
        default_factory=dict, description="Extra ray.init keyword arguments (e.g. object_store_memory, runtime_env)."
    )

    @field_validator("ray_init")
    @classmethod
    def _known_ray_init_keys(cls, v: dict[str, Any]) -> dict[str, Any]:
        """Why here: a misspelt ray.init argument would otherwise fail only when Ray starts, after the
        run directory exists (or never, with the in-process executor)."""
        if not v:
            return v
        import inspect

        import ray  # only when ray_init is set: importing Ray costs about a second

        params = inspect.signature(ray.init).parameters
        allowed = sorted(n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_KEYWORD)
        bad = sorted(k for k in v if k not in allowed and not k.startswith("_"))
        if bad:
            raise ValueError(f"unknown ray.init argument(s) {', '.join(bad)}; allowed: {', '.join(allowed)}")
        return v
