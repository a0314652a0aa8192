"""LLMConfig validation and the build_backend factory."""

from __future__ import annotations

import json

import duckdb
import pytest

from socium.config.llm import LLMConfig
from socium.errors import BudgetExceeded, ConfigError, ReplayMiss
from socium.llm.base import LLMBackend, generate_sync
from socium.llm.cache import DuckDBCache
from socium.llm.factory import build_backend
from socium.llm.fake_server import FakeOpenAIServer
from socium.llm.types import user_request
from socium.llm.usage import MeteredBackend
from socium.llm.wrappers import (
    CachingBackend,
    CircuitBreaker,
    ConcurrencyLimit,
    RetryingBackend,
    RoundRobinBackend,
    TokenBudget,
    find_wrapper,
)

SCHEMA = {"type": "object", "properties": {"action": {"enum": ["post", "like"]}}, "required": ["action"]}


def test_every_field_documented_and_extra_forbidden() -> None:
    for name, field in LLMConfig.model_fields.items():
        assert field.description, f"LLMConfig.{name} has no description"
    with pytest.raises(ConfigError, match=r"llm\.bogus"):
        LLMConfig.parse({"bogus": 1})
    with pytest.raises(ConfigError, match=r"llm\.backend"):
        LLMConfig.parse({"backend": "gpt5"})
    with pytest.raises(ConfigError, match="base_urls"):
        LLMConfig.parse({"backend": "openai", "model": "m"})
    with pytest.raises(ConfigError, match=r"llm\.max_concurrency"):
        LLMConfig.parse({"max_concurrency": 0})
    assert LLMConfig.parse({"backend": "openai", "model": "m", "base_urls": "http://h/v1"}).base_urls == ["http://h/v1"]


def test_random_backend_stack_and_schema_answers() -> None:
    be = build_backend({"backend": "random", "seed": 3, "token_budget": 10_000})
    assert isinstance(be, LLMBackend) and isinstance(be, MeteredBackend)
    assert find_wrapper(be, RetryingBackend) and find_wrapper(be, CircuitBreaker) and find_wrapper(be, TokenBudget)
    assert find_wrapper(be, ConcurrencyLimit) is None  # no HTTP, nothing to limit
    res = generate_sync(be, [user_request(f"r{i}", "act", json_schema=SCHEMA) for i in range(20)])
    assert all(json.loads(r.text)["action"] in ("post", "like") for r in res)
    again = build_backend({"backend": "random", "seed": 3})
    assert [r.text for r in generate_sync(again, [user_request("r0", "act", json_schema=SCHEMA)])] == [res[0].text]
    assert be.stats.calls == 20  # type: ignore[attr-defined]


def test_fake_backend_over_http_with_cache_and_budget() -> None:
    con = duckdb.connect()
    be = build_backend({"backend": "fake", "call_budget": 3, "retries": 0}, cache=DuckDBCache(con))
    try:
        assert find_wrapper(be, ConcurrencyLimit) and find_wrapper(be, CachingBackend)
        res = generate_sync(be, [user_request(f"f{i}", f"p{i}", json_schema=SCHEMA) for i in range(3)])
        assert all(r.ok for r in res)
        again = generate_sync(be, [user_request("g", "p1", json_schema=SCHEMA)])
        assert again[0].cached  # cache sits outside the budget: hits are free
        with pytest.raises(BudgetExceeded):
            generate_sync(be, [user_request("h", "new", json_schema=SCHEMA)])
        assert con.execute("SELECT count(*) FROM llm_calls").fetchone() == (3,)
    finally:
        be.close()


def test_openai_several_base_urls_round_robin() -> None:
    with FakeOpenAIServer(lambda b: "one") as s1, FakeOpenAIServer(lambda b: "two") as s2:
        be = build_backend({"backend": "openai", "model": "m", "base_urls": [s1.base_url, s2.base_url]})
        assert find_wrapper(be, RoundRobinBackend) is not None
        res = generate_sync(be, [user_request(f"x{i}", "hi") for i in range(6)])
        be.close()
    assert [r.text for r in res] == ["one", "two"] * 3
    assert len(s1.requests) == len(s2.requests) == 3


def test_replay_needs_log_and_model() -> None:
    with pytest.raises(ConfigError, match="replay"):
        build_backend({"backend": "replay", "model": "m"})
    con = duckdb.connect()
    log = DuckDBCache(con)
    rec = build_backend({"backend": "scripted", "scripted_responses": ['{"action": "like"}'], "model": "s"}, cache=log)
    generate_sync(rec, [user_request("a", "q")])
    with pytest.raises(ConfigError, match=r"llm\.model"):
        build_backend({"backend": "replay"}, cache=log)
    rep = build_backend({"backend": "replay", "model": "s"}, cache=log)
    assert generate_sync(rep, [user_request("b", "q")])[0].text == '{"action": "like"}'
    with pytest.raises(ReplayMiss):
        generate_sync(rep, [user_request("c", "other")])


def test_missing_optional_backends_name_the_extra() -> None:
    pytest.importorskip("socium.llm.vllm_engine")
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(Exception, match=r"socium\[vllm\]"):
            build_backend({"backend": "vllm", "model": "x"})
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        with pytest.raises(Exception, match=r"socium\[embedded\]"):
            build_backend({"backend": "embedded"})
