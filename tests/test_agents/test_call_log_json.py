"""The call log's ``prompt`` column, written by orjson, is byte for byte what ``json`` wrote before."""

from __future__ import annotations

import json

import pytest

from socium.agents.call_log import PROMPT_MAX_CHARS, RenderedRequest, prompt_json
from socium.llm.types import ChatMessage, LLMRequest
from socium.platform.text import clean_text


def _json_way(messages: list[ChatMessage]) -> str:
    """The column as it was written before (``RenderedRequest`` until the third round of issue 41)."""
    return json.dumps(
        [{"role": m.role, "content": clean_text(m.content, PROMPT_MAX_CHARS).text} for m in messages],
        ensure_ascii=False,
    )


def _msgs(*texts: str) -> list[ChatMessage]:
    roles = ("system", "user", "assistant")
    return [ChatMessage(role=roles[i % 3], content=t) for i, t in enumerate(texts)]  # type: ignore[arg-type]


def test_every_code_point_is_written_as_json_writes_it() -> None:
    # surrogates included: a lone one is replaced by clean_text on both ways
    for start in range(0, 0x110000, 0x4000):
        text = "".join(chr(c) for c in range(start, min(start + 0x4000, 0x110000)))
        msgs = _msgs(text, 'quote " backslash \\ tab \t nl \n', text[::-1])
        assert prompt_json(msgs) == _json_way(msgs), hex(start)


@pytest.mark.parametrize(
    "texts",
    [
        (),
        ("",),
        ("plain system prompt", "## You\nbio: likes cycling\n<<<1 u7 @user1: a post>>>"),
        ("NUL \x00 inside", "\x00"),
        ("lone \ud800 surrogate", "\udfff at the start", "pair \U0001f600 ok"),
        ("control \x01\x1f\x7f DEL and \u2028 line separators \u2029",),
        ("x" * (PROMPT_MAX_CHARS + 5), "é" * (PROMPT_MAX_CHARS + 1)),
        ("x" * (PROMPT_MAX_CHARS - 1) + "\x00\x00",),
    ],
)
def test_hostile_prompts(texts: tuple[str, ...]) -> None:
    msgs = _msgs(*texts)
    got = prompt_json(msgs)
    assert got == _json_way(msgs)
    got.encode("utf-8")  # valid UTF-8, as DuckDB needs


def test_rendered_request_uses_it() -> None:
    msgs = _msgs("sys", "user \x00 \ud800 text")
    req = LLMRequest(request_id="r", messages=msgs, seed=1, metadata={"step": 1})
    assert RenderedRequest(req).prompt_json == _json_way(msgs)
