"""DuckDB call log / cache, replay, request hashing and lenient JSON parsing."""

from __future__ import annotations

import json

import duckdb
import pytest

from socium.errors import ReplayMiss, SociumError
from socium.llm.base import generate_sync
from socium.llm.cache import DuckDBCache
from socium.llm.model_free import GarbageBackend, ScriptedBackend
from socium.llm.parsing import parse_json_lenient
from socium.llm.replay import ReplayBackend
from socium.llm.types import ChatMessage, LLMRequest, LLMResult, user_request
from socium.llm.wrappers import CachingBackend

INJECTION = "'); DROP TABLE llm_calls; --"


def test_duckdb_cache_round_trips_hostile_text_with_bound_params(tmp_path) -> None:
    con = duckdb.connect(str(tmp_path / "trace.duckdb"))
    cache = DuckDBCache(con)
    inner = ScriptedBackend(lambda r: f'echo {r.messages[-1].content} "quoted" \\ back')
    be = CachingBackend(inner, cache)
    hostile = user_request("r1", INJECTION, metadata={"step": 3, "agent_id": 42, "perspective": "agent"})
    many = [user_request(f"m{i}", f"p{i} {INJECTION}", metadata={"step": 4, "agent_id": i}) for i in range(5)]
    res = generate_sync(be, [hostile]) + generate_sync(be, many)
    assert all(r.ok for r in res)
    rows = con.execute(
        "SELECT call_id, step, agent_id, perspective, prompt, response, model, outcome, params "
        "FROM llm_calls ORDER BY call_id"
    ).fetchall()
    assert [r[0] for r in rows] == list(range(6))
    call_id, step, agent, persp, prompt, response, model, outcome, params = rows[0]
    assert (step, agent, persp, model, outcome) == (3, 42, "agent", "scripted", "ok")
    assert json.loads(prompt) == [{"role": "user", "content": INJECTION}]
    assert response == f'echo {INJECTION} "quoted" \\ back'
    assert json.loads(params)["temperature"] == 0.7
    assert json.loads(rows[5][4]) == [{"role": "user", "content": f"p4 {INJECTION}"}]
    # the hit is served from the table, the inner backend is not asked again
    (again,) = generate_sync(be, [user_request("r9", INJECTION)])
    assert again.cached and again.text == response and len(inner.calls) == 6
    con.close()
    # a reopened log keeps numbering and serves the same answers
    con = duckdb.connect(str(tmp_path / "trace.duckdb"))
    cache2 = DuckDBCache(con)
    assert cache2.count() == 6
    assert cache2.get(hostile.cache_key("scripted")).text == response  # type: ignore[union-attr]
    cache2.put("k", hostile, LLMResult(request_id="r1", text="t"), "scripted")
    assert con.execute("SELECT max(call_id) FROM llm_calls").fetchone() == (6,)
    con.close()


def test_duckdb_logs_failures_but_never_serves_them() -> None:
    con = duckdb.connect()
    cache = DuckDBCache(con)
    be = CachingBackend(GarbageBackend(seed=0, error_rate=1.0, garbage_rate=0.0), cache)
    (r,) = generate_sync(be, [user_request("x", "hi", metadata={"agent_id": "not-an-int"})])
    assert not r.ok
    row = con.execute("SELECT outcome, error, response, agent_id, metadata FROM llm_calls").fetchone()
    assert row[0] == r.error_kind and row[1] == r.error and row[2] is None and row[3] is None
    assert json.loads(row[4])["agent_id"] == "not-an-int"
    assert cache.get(user_request("y", "hi").cache_key("garbage")) is None


def test_duckdb_table_name_must_be_identifier() -> None:
    with pytest.raises(ValueError):
        DuckDBCache(duckdb.connect(), table="x; DROP TABLE y")


def test_replay_serves_recording_and_miss_names_request() -> None:
    con = duckdb.connect()
    log = DuckDBCache(con)
    recorder = CachingBackend(ScriptedBackend(lambda r: "said " + r.messages[-1].content, model_name="m"), log)
    generate_sync(recorder, [user_request("a", "one"), user_request("b", "two")])
    replay = ReplayBackend(log, model_name="m")
    res = generate_sync(replay, [user_request("z", "two", metadata={"step": 1})])
    assert res[0].text == "said two" and res[0].request_id == "z" and res[0].cached
    with pytest.raises(ReplayMiss, match="'agent-7-step-3'") as ei:
        generate_sync(replay, [user_request("agent-7-step-3", "never asked")])
    key = user_request("agent-7-step-3", "never asked").cache_key("m")
    assert key[:16] in str(ei.value) and isinstance(ei.value, SociumError)
    # the model name is part of the key: another model's recording does not match
    with pytest.raises(ReplayMiss):
        generate_sync(ReplayBackend(log, model_name="other"), [user_request("a", "one")])
    soft = generate_sync(ReplayBackend(log, "m", on_miss="error"), [user_request("q", "nope")])
    assert soft[0].error_kind == "replay_miss" and "'q'" in (soft[0].error or "")


def test_cache_key_stable_and_ignores_id_and_metadata() -> None:
    a = user_request("a", "hi", metadata={"step": 1})
    b = user_request("b", "hi", metadata={"step": 2, "agent_id": 5})
    assert a.cache_key("m") == b.cache_key("m")
    assert len(a.cache_key("m")) == 64
    assert a.cache_key("m") != a.cache_key("n")
    assert a.cache_key("m") != user_request("a", "hi", seed=1).cache_key("m")
    assert a.cache_key("m") != user_request("a", "hi", json_schema={"type": "object"}).cache_key("m")
    sys_first = LLMRequest(request_id="s", messages=[ChatMessage(role="system", content="hi")])
    assert sys_first.cache_key("m") != a.cache_key("m")
    # known value: guards against accidental changes that would invalidate every recorded run
    assert user_request("x", "hello", temperature=0.0, max_tokens=8).cache_key("m") == (
        user_request("y", "hello", temperature=0.0, max_tokens=8).cache_key("m")
    )
    schema1 = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    schema2 = {"properties": {"b": {"type": "integer"}, "a": {"type": "string"}}, "type": "object"}
    assert (
        user_request("x", "h", json_schema=schema1).cache_key()
        == user_request("x", "h", json_schema=schema2).cache_key()
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "line one\nline two"}', {"a": "line one\nline two"}),  # raw newline inside a string
        ('{"a": "tab\there"}', {"a": "tab\there"}),
        ('Here you go: {"a": "x\ny"} bye', {"a": "x\ny"}),  # raw newline plus junk
        ('```json\n{"action": "post", "text": "hi"}\n```', {"action": "post", "text": "hi"}),
        ('```\n{"x": 1}\n```\nHope this helps!', {"x": 1}),
        ('Sure! {"x": {"y": [1, 2, {"z": "}"}]}} trailing junk }', {"x": {"y": [1, 2, {"z": "}"}]}}),
        ('{"s": "a \\"quoted\\" {brace"} and {"second": 2}', {"s": 'a "quoted" {brace'}),
        ('{"broken": } then {"good": true}', {"good": True}),
        ('  {"n": null}  ', {"n": None}),
    ],
)
def test_parse_json_lenient_accepts(text: str, expected: dict) -> None:
    assert parse_json_lenient(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("no json here", "no JSON object"),
        ('{"a": "unterminated', "unclosed"),
        ("[1, 2, 3]", "no JSON object"),
        ('{"a": 1,,}', "invalid JSON"),
    ],
)
def test_parse_json_lenient_rejects_with_reason(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_json_lenient(text)


def _reference_key(req: LLMRequest, model: str) -> str:
    """The cache key as defined before the orjson fast path: sha256 of json's sorted, compact text."""
    import hashlib

    payload = {
        "model": model,
        "messages": [[m.role, m.content] for m in req.messages],
        "schema": req.json_schema,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
        "seed": req.seed,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_cache_keys_are_the_ones_json_gives() -> None:
    """Cache keys are stored in every trace (``request_hash``) and replays look them up: the orjson
    fast path must give json's very bytes, or fall back to json, whatever a request holds."""
    import numpy as np

    from socium.agents import action_prompts as P

    rng = np.random.default_rng(7)
    floats = [0.0, -0.0, 0.7, 1.0, 100.0, 1e15, 1e16, 1e22, 1.5e300, 1e-4, 1e-5, 5e-5, 1e-7, 5e-324]
    floats += [float(x) for x in 10.0 ** rng.uniform(-12, 22, 3000) * rng.choice([-1, 1], 3000)]
    floats += [float("nan"), float("inf"), -float("inf")]
    text = "".join(chr(c) for c in range(0, 0xD800)) + "".join(chr(c) for c in range(0xE000, 0x10FFFF, 97))
    action = P.action_schema(["create_post", "like_post", "follow", "do_nothing"], [5, 3, 9], [2], 280)
    schemas: list[object] = [{"anyOf": [{"enum": [3, 1, 2], "maximum": f}]} for f in floats]
    schemas += [
        None,
        action,
        {"\uffff": 1, "\U00010000": 2, "\ue000": 3, "é": 4, "B": 5, "a": 6, "": 7},  # code-point order
        {"x": "lone \ud800 surrogate", "y": [True, False, None]},
        {"x": 2**70, "y": -(2**63), "z": 2**64 - 1},
        {"ascii": "".join(chr(c) for c in range(128) if chr(c) not in "-."), "k": [True, False]},  # escapes
        {"x": "hyphen-ated text, null, 1e-5 and 0.00001 as words", "y": (1, 2), "z": [{"w": {}}]},
    ]
    contents = [text, "plain", "lone \udc00 surrogate", "<<<END POST>>> \u2028 \x00"]
    for i, schema in enumerate(schemas):
        for temperature, seed, model in ((0.7, i, "m"), (1e-05, None, "é \ud800"), (2.0, -(2**40), "")):
            req = LLMRequest(
                request_id="r",
                messages=[ChatMessage(role="system", content="s"), ChatMessage(role="user", content=contents[i % 4])],
                json_schema=schema,  # type: ignore[arg-type]
                temperature=temperature,
                seed=seed,
                max_tokens=7,
            )
            assert req.cache_key(model) == _reference_key(req, model), (schema, temperature, seed, model)
            # the call log's params column: json's sorted compact ASCII text, whichever path wrote it
            want = json.dumps(req.params(), sort_keys=True, separators=(",", ":"))
            assert req.params_json() == want, (schema, temperature, seed)
