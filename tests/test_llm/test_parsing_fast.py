"""``parse_json_lenient``'s orjson fast path reads every answer as the json-only path did."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from socium.llm import parsing
from socium.llm.parsing import parse_json_lenient


def _json_only(text: str) -> Any:
    """The function as it was: the fast path switched off."""
    saved = parsing._strict_object
    parsing._strict_object = lambda _text: None  # type: ignore[assignment]
    try:
        return _outcome(text)
    finally:
        parsing._strict_object = saved


def _outcome(text: str) -> Any:
    try:
        value = parse_json_lenient(text)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)
    return "ok", repr(value), json.dumps(value)  # repr tells 1 from 1.0 and keeps key order


TRICKY = [
    '{"type": "like_post", "post_id": 3}',
    '  {"type":"follow","user_id":7}\n',
    '{"a": 1, "a": 2, "b": {"a": 3, "a": [4]}}',  # duplicate keys: the last value, the first position
    '{"big": 123456789012345678901234567890}',  # past 64 bits: json keeps the int
    '{"big": -9223372036854775809, "u64": 18446744073709551615, "i64": 9223372036854775807}',
    '{"n": 1E400, "m": -1e400}',
    '{"n": NaN, "i": Infinity}',
    '{"s": "raw\tcontrol\ncharacters"}',
    '{"s": "\\ud800 lone surrogate escape"}',
    '{"s": "\\ud83d\\ude00 pair", "e": "\\u00e9 \\" \\\\ \\/"}',
    '{"f": [0.1, 1.0, -0.0, 1e-400, 5e-324, 1.7976931348623157e308, 2.5e-5, 123.456e7]}',
    '{"x": 1} trailing prose',
    'prose first {"x": 1}',
    '{"x": {"y": 1}',
    "[1, 2, 3]",
    '"just a string"',
    "{}",
    '```json\n{"x": 1}\n```',
    '{"content": "contains ``` fences"}',
    '{"deep": ' + "[" * 2000 + "]" * 2000 + "}",
    "{" * 3,
    '{"t": true, "f": false, "n": null}',
    '{"ünï": "cødé ✓ 😀"}',
    "\ufeff{}",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_answers(text: str) -> None:
    assert _outcome(text) == _json_only(text)


def test_the_fast_path_is_taken_for_plain_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing.json, "loads", None)  # json would fail: only orjson may have read these
    assert parse_json_lenient('{"type": "like_post", "post_id": 3}') == {"type": "like_post", "post_id": 3}
    assert parse_json_lenient(' {"a": [1.5, null, "x"]}\n') == {"a": [1.5, None, "x"]}


def test_fuzzed_answers() -> None:
    rng = random.Random(41)
    atoms = ['"a"', '"b"', "1", "-2", "0.5", "1e5", "null", "true", "12345678901234567890", '"\\n"', '"\t"',
             "NaN", '"\\ud800"', '"é"', "[]", "{}", "[1, 2]"]  # fmt: skip
    seps = [",", ":", " ", "{", "}", "[", "]", '"']
    for _ in range(3000):
        if rng.random() < 0.5:  # well formed
            items = [f'"k{rng.randrange(4)}": {rng.choice(atoms)}' for _ in range(rng.randrange(5))]
            text = "{" + ", ".join(items) + "}"
        else:  # anything
            text = "".join(rng.choice(atoms + seps) for _ in range(rng.randrange(1, 12)))
        assert _outcome(text) == _json_only(text), text
