"""The lean HTTP/1.1 client (socium.llm.http11) against raw sockets that answer byte for byte.

The fake OpenAI server covers the usual answers and the fault kinds (tests/test_llm_faults.py);
these cases need control over the exact bytes: chunked bodies, answers split across packets,
interim 100 answers, read-to-close bodies, keep-alive reuse and what a server sends after an answer.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from socium.llm import user_request
from socium.llm.http11 import HTTPFailure, Pool
from socium.llm.openai_compat import OpenAIBackend

Script = list[list[bytes]]  # per connection: the chunks to send after each request arrives


async def _serve(script: Script, seen: list[bytes]) -> tuple[asyncio.Server, int]:
    conns = iter(script)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answers = next(conns)
        for chunk in answers:
            if chunk == b"<close>":
                break
            if chunk == b"<silence>":
                await asyncio.sleep(2.0)
                continue
            if chunk == b"<read>":
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                seen.append(head + await reader.readexactly(length))
                continue
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(0.01)  # separate packets: the parser must assemble them
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def _post(script: Script, n: int = 1, timeout: float = 5.0) -> tuple[list[object], list[bytes], int]:
    """Send ``n`` requests one after another through one pool; results (or exceptions), requests seen, connections."""
    seen: list[bytes] = []

    async def go() -> tuple[list[object], int]:
        server, port = await _serve(script, seen)
        pool = Pool(f"http://127.0.0.1:{port}/v1/chat/completions", {"Authorization": "Bearer k"})
        out: list[object] = []
        for i in range(n):
            try:
                out.append(await pool.post(json.dumps({"i": i}).encode(), timeout))
            except (HTTPFailure, asyncio.TimeoutError, OSError) as exc:
                out.append(exc)
        opened = len(pool._open) + 0
        pool.close()
        server.close()
        return out, opened

    out, opened = asyncio.run(go())
    return out, seen, opened


OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok": 1}\r\n'


def test_keep_alive_reuses_one_connection_and_sends_exact_request() -> None:
    out, seen, _ = _post([[b"<read>", OK, b"<read>", OK, b"<read>", OK]], n=3)
    assert [getattr(r, "status", r) for r in out] == [200, 200, 200]
    assert all(r.body == b'{"ok": 1}\r\n' for r in out)  # type: ignore[attr-defined]
    assert len(seen) == 3  # three requests over the single scripted connection
    head, body = seen[0].split(b"\r\n\r\n", 1)
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"Authorization: Bearer k" in head and json.loads(body) == {"i": 0}


def test_split_head_chunked_body_and_interim_answer() -> None:
    chunked = [
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Enc",
        b'oding: chunked\r\nRetry-After: 3\r\n\r\n4\r\n{"a"',
        b"\r\n5;ext=1\r\n: 12}\r\n0\r\n",
        b"\r\n",
    ]
    out, _, _ = _post([[b"<read>", *chunked]])
    r = out[0]
    assert r.status == 200 and r.body == b'{"a": 12}' and r.headers["retry-after"] == "3"  # type: ignore[attr-defined]


def test_body_to_close_and_connection_close_are_not_reused() -> None:
    to_close = b'HTTP/1.1 200 OK\r\n\r\n{"x": 2}'
    closes = b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    out, seen, _ = _post([[b"<read>", to_close], [b"<read>", closes], [b"<read>", OK]], n=3)
    assert out[0].body == b'{"x": 2}' and out[1].status == 503 and out[2].status == 200  # type: ignore[attr-defined]
    assert len(seen) == 3  # each on its own connection


@pytest.mark.parametrize(
    ("answer", "kind", "words"),
    [
        ([b"<close>"], "disconnected", "without answering"),
        ([b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"half":'], "truncated", "of 50 body bytes"),
        ([b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{"a"'], "truncated", "closed"),
        ([b"HTTP/1.1 200 OK\r\nContent-Le"], "truncated", "of the response head"),
        ([b"SSH-2.0-OpenSSH_9.6\r\n\r\n"], "protocol", "not an HTTP/1.x response"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n"], "protocol", "bad Content-Length"),
    ],
)
def test_broken_answers_are_typed(answer: list[bytes], kind: str, words: str) -> None:
    out, _, _ = _post([[b"<read>", *answer]])
    assert isinstance(out[0], HTTPFailure) and out[0].kind == kind and words in str(out[0]), out[0]


def test_deadline_covers_a_silent_server_and_drops_the_connection() -> None:
    out, _, opened = _post([[b"<read>", b"HTTP/1.1 200 OK\r\n", b"<silence>"]], timeout=0.3)
    assert isinstance(out[0], asyncio.TimeoutError) and opened == 0


def test_bytes_after_an_answer_retire_the_connection() -> None:
    out, seen, _ = _post([[b"<read>", OK + b"HTTP/1.1 200 OK\r\n"], [b"<read>", OK]], n=2)
    assert [r.status for r in out] == [200, 200] and len(seen) == 2  # type: ignore[attr-defined]


def test_refused_connection_is_an_os_error() -> None:
    async def go() -> object:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        try:
            return await Pool(f"http://127.0.0.1:{port}/x", {}).post(b"{}", 2.0)
        except OSError as exc:
            return exc

    assert isinstance(asyncio.run(go()), ConnectionRefusedError)


def test_pool_rejects_other_schemes_and_hides_headers() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Pool("ftp://example.org/x", {})
    p = Pool("https://example.org/v1/chat/completions", {"Authorization": "Bearer sk-SECRET"})
    assert "SECRET" not in repr(p) and p.port == 443 and p.tls
    assert b"Host: example.org\r\n" in p._head  # default port left out of Host


def test_request_body_is_json_even_with_lone_surrogates() -> None:
    be = OpenAIBackend("http://127.0.0.1:9/v1", "m")
    ok = user_request("a", "héllo \u2028 ok", json_schema={"type": "object"}, seed=3)
    assert json.loads(be.encode_request(ok)) == be.request_body(ok)
    bad = user_request("b", "broken \ud800 text")
    body = be.encode_request(bad)  # strict UTF-8 cannot carry it: \u escapes instead
    assert body.isascii() and json.loads(body)["messages"][0]["content"] == "broken \ud800 text"
