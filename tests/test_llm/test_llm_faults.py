"""A faulty OpenAI-compatible server never kills or silently ruins a call (issue 11, point 4).

Every fault kind of ``socium.testing.fault_server`` is served over real HTTP; each must end as a
typed, retryable failed call, and behind the retry wrapper as an answer once the server behaves.
"""

from __future__ import annotations

import time

import pytest

from socium.llm.base import generate_sync
from socium.llm.openai_compat import BadResponse, OpenAIBackend, parse_completion
from socium.llm.types import user_request
from socium.llm.wrappers import RetryingBackend
from socium.testing.fault_server import FAULT_KINDS, FaultyOpenAIServer

HANG_S = 60.0
"""How long a hanging fault holds its connection (the server wakes it when it stops)."""

# fault kind -> (error kind the client must report, words its message must contain)
EXPECTED = {
    "truncated": ("bad_response", "truncated"),
    "non_json": ("bad_response", "not json"),
    "bad_usage": ("bad_response", "usage.prompt_tokens"),
    "null_content": ("bad_response", "content is null"),
    "no_message": ("bad_response", "message is missing"),
    "close": ("connection", "closed the connection"),
    "rate_limit": ("rate_limit", "http 429"),
    "server_error": ("server", "http 503"),
    "hang": ("timeout", "timeout"),
}


@pytest.mark.parametrize("fault", sorted(EXPECTED))
def test_each_fault_kind_is_a_typed_retryable_failure(fault: str) -> None:
    # Only the hang needs the deadline to fire, so only it gets a short one: a 0.6 s deadline on every
    # fault made a slow answer on a loaded machine a "timeout" instead of the fault it was.
    with FaultyOpenAIServer({fault: 1.0}, hang_s=HANG_S) as srv:
        be = OpenAIBackend(srv.base_url, "m", timeout_s=0.6 if fault == "hang" else 10.0)
        t0 = time.perf_counter()
        results = generate_sync(be, [user_request(f"r{i}", f"prompt {i}") for i in range(3)])
        elapsed = time.perf_counter() - t0
        be.close()
    kind, words = EXPECTED[fault]
    assert srv.injected[fault] == 3
    for r in results:
        assert not r.ok and r.error_kind == kind and r.retryable, (fault, r)
        assert words in (r.error or "").lower(), (fault, r.error)
        assert r.text == "" and r.prompt_tokens == 0 and r.completion_tokens == 0
    if fault == "rate_limit":
        assert results[0].retry_after_s == 86400.0
    # the hang holds each connection for HANG_S: returning in well under that is the deadline's doing (the
    # bound is loose on purpose; a loaded machine stretches the 0.6 s, it cannot stretch it to 60 s)
    assert elapsed < HANG_S / 2, f"{fault}: a total deadline must bound every attempt ({elapsed:.1f}s)"


def test_slow_answers_within_the_deadline_are_fine() -> None:
    with FaultyOpenAIServer({"slow": 1.0}, slow_s=0.2) as srv:
        (res,) = generate_sync(OpenAIBackend(srv.base_url, "m", timeout_s=5), [user_request("a", "hi")])
    assert res.ok and res.latency_s >= 0.2 and srv.injected["slow"] == 1


def test_every_fault_mixed_behind_retries_every_request_gets_its_answer() -> None:
    rates = {k: 0.06 for k in FAULT_KINDS if k != "slow"} | {"slow": 0.04}  # 58% of attempts broken
    n = 120
    with FaultyOpenAIServer(rates, seed=7, slow_s=0.05, hang_s=5.0) as srv:
        be = RetryingBackend(
            OpenAIBackend(srv.base_url, "m", timeout_s=2.0),
            max_attempts=12,
            base_delay_s=0.001,
            max_delay_s=0.01,
            seed=0,
        )
        t0 = time.perf_counter()
        results = generate_sync(be, [user_request(f"r{i}", f"prompt {i}") for i in range(n)])
        elapsed = time.perf_counter() - t0
    assert [r.request_id for r in results] == [f"r{i}" for i in range(n)]
    assert all(r.ok and r.text == "This is a fake completion." for r in results), [r.error for r in results if not r.ok]
    injected = sum(srv.injected.values())
    assert set(srv.injected) == set(FAULT_KINDS)  # every kind was served at least once
    # every fault the server served cost one more attempt (a slow answer none, unless the loaded machine
    # made it miss the deadline: then it was retried too), and the client sent no attempt it did not count.
    # Not "==": at load 23 an attempt whose deadline passed before the starved server thread read it was
    # counted by the client and never received (392 attempts, 386 received)
    assert sum(r.attempts for r in results) >= len(srv.requests) >= n + injected - srv.injected["slow"]
    # Retry-After: 86400 was capped at max_delay_s: the whole batch took minutes at most, not a day (seconds
    # on a quiet machine; the bound is loose so that a loaded one passes too)
    assert elapsed < 120


def test_parse_completion_names_what_is_wrong() -> None:
    ok = {
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    assert parse_completion(ok) == ("hi", 3, 1, "stop")
    assert parse_completion({"choices": [{"message": {"content": "x"}}]}) == ("x", 0, 0, None)  # usage omitted
    bad = [
        ([], "not an object"),
        ({"choices": []}, "no choices"),
        ({"choices": [None]}, "choices[0]"),
        ({"choices": [{"message": None}]}, "message is missing"),
        ({"choices": [{"message": {"content": 5}}]}, "content is int"),
        ({**ok, "usage": {"prompt_tokens": -1}}, "prompt_tokens"),
        ({**ok, "usage": {"prompt_tokens": 1, "completion_tokens": 2.5}}, "completion_tokens"),
        ({**ok, "usage": {"prompt_tokens": True}}, "prompt_tokens"),
        ({**ok, "usage": "lots"}, "usage is a str"),
    ]
    for body, words in bad:
        with pytest.raises(BadResponse, match=words.replace("[", r"\[").replace("]", r"\]")):
            parse_completion(body)


def test_connection_refused_names_the_cause() -> None:
    with FaultyOpenAIServer() as srv:
        url = srv.base_url
    (res,) = generate_sync(OpenAIBackend(url, "m", timeout_s=2), [user_request("x", "hi")])
    assert res.error_kind == "connection" and "connection refused" in (res.error or "")


def test_fault_rates_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        FaultyOpenAIServer({"gremlins": 0.1})
    with pytest.raises(ValueError, match="sum to at most 1"):
        FaultyOpenAIServer({"truncated": 0.7, "close": 0.7})


def test_standalone_server_keeps_no_request_bodies() -> None:
    """``python -m socium.testing.fault_server`` runs for a whole benchmark: it counts requests but
    keeps none of their bodies, so its heap (and its collector's work) does not grow with them."""
    from socium.testing.fault_server import server_from_args

    srv = server_from_args(["--port", "0", "--fault", "slow=0.5"])
    with srv:
        be = OpenAIBackend(srv.base_url, "m", timeout_s=5)
        results = generate_sync(be, [user_request(f"r{i}", f"prompt {i}") for i in range(4)])
        be.close()
    assert all(r.ok for r in results)
    assert srv.n_requests == 4 and srv.requests == [] and srv.headers == []
    assert srv.faults == {"slow": 0.5}
