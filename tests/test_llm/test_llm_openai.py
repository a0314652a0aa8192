"""OpenAIBackend driven end to end over real HTTP against the loopback FakeOpenAIServer."""

from __future__ import annotations

import asyncio
import json
import pickle
import time

import pytest

from socium.errors import ConfigError
from socium.llm.base import generate_sync
from socium.llm.fake_server import FakeOpenAIServer, FakeReply
from socium.llm.openai_compat import OpenAIBackend, parse_retry_after, response_format_for
from socium.llm.types import LLMRequest, user_request
from socium.llm.wrappers import RetryingBackend

SCHEMA = {
    "type": "object",
    "properties": {"action": {"type": "string", "enum": ["post", "like"]}, "text": {"type": "string"}},
    "required": ["action", "text"],
}
SECRET = "sk-test-SECRET-do-not-leak-1234567890"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SOCIUM_TEST_KEY", SECRET)
    return "SOCIUM_TEST_KEY"


def _req(i: int, **kw: object) -> LLMRequest:
    return user_request(f"r{i}", f"hello number {i} from agent", json_schema=SCHEMA, **kw)  # type: ignore[arg-type]


def test_end_to_end_text_tokens_and_vllm_format(secret_env: str) -> None:
    def responder(body: dict) -> str:
        return json.dumps({"action": "post", "text": body["messages"][-1]["content"]})

    with FakeOpenAIServer(responder) as srv:
        be = OpenAIBackend(srv.base_url, "m1", api_key_env=secret_env, server_kind="vllm", timeout_s=10)
        results = generate_sync(be, [_req(i, seed=7, max_tokens=33, temperature=0.2) for i in range(5)])
        be.close()
    assert [r.request_id for r in results] == [f"r{i}" for i in range(5)]
    for i, r in enumerate(results):
        assert r.ok, r.error
        assert json.loads(r.text) == {"action": "post", "text": f"hello number {i} from agent"}
        assert r.prompt_tokens == 5  # whitespace words of the prompt, as the fake counts them
        assert r.completion_tokens == len(r.text.split())
        assert r.finish_reason == "stop"
        assert r.latency_s > 0
    body = srv.requests[0]
    assert body["model"] == "m1"
    assert body["max_tokens"] == 33 and body["seed"] == 7 and body["temperature"] == 0.2
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "action", "schema": SCHEMA}}
    # the key is sent to the server, and only there
    assert srv.headers[0].get("authorization") == f"Bearer {SECRET}"


def test_llamacpp_and_openai_formats(secret_env: str) -> None:
    with FakeOpenAIServer() as srv:
        be = OpenAIBackend(srv.base_url, "m", api_key_env=secret_env, server_kind="llamacpp")
        (res,) = generate_sync(be, [_req(0)])
        assert res.ok
        assert srv.requests[-1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
        # the default responder honours the schema it was sent
        data = json.loads(res.text)
        assert data["action"] in ("post", "like") and isinstance(data["text"], str)

        be2 = OpenAIBackend(srv.base_url, "m", api_key_env=secret_env, server_kind="openai")
        generate_sync(be2, [_req(1, max_tokens=12)])
        sent = srv.requests[-1]
        assert sent["response_format"]["type"] == "json_schema"
        assert sent["max_completion_tokens"] == 12 and "max_tokens" not in sent

        generate_sync(be, [user_request("plain", "no schema")])
        assert "response_format" not in srv.requests[-1]
    assert response_format_for("vllm", None) is None
    with pytest.raises(ConfigError):
        response_format_for("tgi", SCHEMA)


def test_api_key_never_in_results_repr_or_errors(secret_env: str) -> None:
    def responder(body: dict) -> FakeReply:
        # a hostile/buggy server echoing the key into its error text
        return FakeReply(status=500, error_message=f"bad key {SECRET}")

    with FakeOpenAIServer(responder) as srv:
        be = OpenAIBackend(srv.base_url, "m", api_key_env=secret_env)
        (res,) = generate_sync(be, [_req(0)])
    assert not res.ok and res.error_kind == "server"
    assert SECRET not in res.model_dump_json()
    assert SECRET not in repr(be) and SECRET not in str(vars(be))
    assert SECRET not in repr(RetryingBackend(be))
    with pytest.raises(TypeError):
        pickle.dumps(be)


def test_openai_kind_requires_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOCIUM_NO_SUCH_KEY", raising=False)
    with pytest.raises(ConfigError, match="SOCIUM_NO_SUCH_KEY"):
        OpenAIBackend("http://127.0.0.1:1/v1", "m", api_key_env="SOCIUM_NO_SUCH_KEY", server_kind="openai")


def test_http_errors_become_results_with_retry_after() -> None:
    def responder(body: dict) -> FakeReply | str:
        prompt = body["messages"][-1]["content"]
        if "rate" in prompt:
            return FakeReply(status=429, headers={"Retry-After": "3"})
        if "down" in prompt:
            return FakeReply(status=503)
        if "bad" in prompt:
            return FakeReply(status=400, error_message="schema invalid")
        if "slow" in prompt:
            return FakeReply(text="late", delay_s=60.0)  # never inside the deadline (a stop wakes it)
        return "fine"

    prompts = ["rate", "down", "bad", "slow", "ok"]
    with FakeOpenAIServer(responder) as srv:
        # 2 s: the quick answers must not time out on a loaded machine; "slow" must, and does at 2 s
        be = OpenAIBackend(srv.base_url, "m", timeout_s=2.0)
        res = generate_sync(be, [user_request(p, p) for p in prompts])
    by = {r.request_id: r for r in res}
    assert by["rate"].error_kind == "rate_limit" and by["rate"].retry_after_s == 3.0 and by["rate"].retryable
    assert by["down"].error_kind == "server" and by["down"].retryable
    assert by["bad"].error_kind == "client" and not by["bad"].retryable
    assert by["slow"].error_kind == "timeout" and by["slow"].retryable
    assert by["ok"].ok and by["ok"].text == "fine"


def test_connection_refused_is_connection_error() -> None:
    with FakeOpenAIServer() as srv:
        url = srv.base_url
    be = OpenAIBackend(url, "m", timeout_s=2)  # server stopped: nothing listens there now
    (res,) = generate_sync(be, [user_request("x", "hi")])
    assert res.error_kind == "connection" and res.retryable


def test_retry_after_honoured_then_success() -> None:
    calls: list[float] = []

    def responder(body: dict) -> FakeReply | str:
        calls.append(time.monotonic())
        if len(calls) <= 2:
            return FakeReply(status=429, headers={"Retry-After": "0.3"})
        return '{"action": "like", "text": "x"}'

    with FakeOpenAIServer(responder) as srv:
        be = RetryingBackend(OpenAIBackend(srv.base_url, "m"), max_attempts=4, base_delay_s=0.001, seed=1)
        (res,) = generate_sync(be, [_req(0)])
    assert res.ok and res.attempts == 3
    assert len(calls) == 3
    assert calls[1] - calls[0] >= 0.29 and calls[2] - calls[1] >= 0.29


class GatedServer(FakeOpenAIServer):
    """Answers nothing until ``gate`` requests are in the server at once (or ``limit_s`` passed), and
    keeps the most it ever held: overlap counted on the server, not inferred from a wall time (which
    a loaded machine stretches)."""

    def __init__(self, gate: int, limit_s: float = 60.0) -> None:
        super().__init__()
        self.gate, self.limit_s = gate, limit_s
        self.held = self.most_held = 0

    async def _decode(self, delay: float) -> None:  # runs on the server's one loop: no lock needed
        self.held += 1
        self.most_held = max(self.most_held, self.held)
        end = time.monotonic() + self.limit_s
        while self.most_held < self.gate and time.monotonic() < end and not self._stopping:
            await asyncio.sleep(0.005)
        self.held -= 1
        await super()._decode(delay)


def test_concurrent_requests_overlap_on_server() -> None:
    with GatedServer(gate=20) as srv:
        res = generate_sync(OpenAIBackend(srv.base_url, "m"), [user_request(f"c{i}", "hi") for i in range(20)])
    assert all(r.ok for r in res)
    # all 20 were in flight together: one at a time, the first would have waited out the gate alone
    assert srv.most_held == 20, f"requests did not overlap: at most {srv.most_held} in flight"


def test_generate_sync_inside_running_loop() -> None:
    async def main() -> list:
        with FakeOpenAIServer() as srv:
            be = OpenAIBackend(srv.base_url, "m")
            first = await be.generate([user_request("a", "hi")])
            # sync bridge from inside a running loop: runs on a worker thread's own loop
            second = generate_sync(be, [user_request("b", "hi")])
            third = await be.generate([user_request("c", "hi")])
            be.close()
            return first + second + third

    res = asyncio.run(main())
    assert [r.request_id for r in res] == ["a", "b", "c"] and all(r.ok for r in res)


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 100))
    assert 90 < (parse_retry_after(future) or 0) <= 101
