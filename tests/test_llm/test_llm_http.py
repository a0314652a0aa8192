"""The OpenAI-compatible backend's HTTP path (aiohttp) against servers that answer byte for byte.

The fake OpenAI server covers the usual answers and the fault kinds (tests/test_llm/test_llm_faults.py);
these cases need control over the exact bytes (chunked bodies, answers split across packets,
interim 100 answers, read-to-close bodies, keep-alive reuse, answers that are not HTTP) or over the
environment a cluster user sets: proxies, ``NO_PROXY``, ``SSL_CERT_FILE``, custom headers.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import subprocess
from pathlib import Path
from typing import Any

import pytest

from socium.errors import ConfigError
from socium.llm.base import generate_sync
from socium.llm.fake_server import FakeOpenAIServer
from socium.llm.openai_compat import OpenAIBackend
from socium.llm.types import LLMResult, user_request

Script = list[list[bytes]]  # per connection: the chunks to send after each request arrives

BODY = json.dumps(
    {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 2}}
).encode()
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)


@pytest.fixture(autouse=True)
def _no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests set the proxy variables they need; a proxy on the test machine must not interfere."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


SILENCE_S = 10.0
"""How long a scripted ``<silence>`` lasts (a test's deadline is far shorter)."""


async def _serve(script: Script, seen: list[bytes], tls: ssl.SSLContext | None = None) -> tuple[asyncio.Server, int]:
    conns = iter(script)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answers = next(conns)
        for chunk in answers:
            if chunk == b"<close>":
                break
            if chunk == b"<silence>":
                await asyncio.sleep(SILENCE_S)
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

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    return server, server.sockets[0].getsockname()[1]


def _post(
    script: Script, n: int = 1, timeout: float = 5.0, tls: ssl.SSLContext | None = None, **kw: Any
) -> tuple[list[LLMResult], list[bytes]]:
    """Send ``n`` requests one after another through one backend; its results and the requests seen."""
    seen: list[bytes] = []

    async def go() -> list[LLMResult]:
        server, port = await _serve(script, seen, tls)
        scheme = "https" if tls else "http"
        be = OpenAIBackend(f"{scheme}://127.0.0.1:{port}/v1", "m", timeout_s=timeout, **kw)
        out: list[LLMResult] = []
        for i in range(n):
            out += await be.generate([user_request(f"r{i}", f"hello {i}")])
        be.close()
        server.close()
        return out

    return asyncio.run(go()), seen


def test_keep_alive_reuses_one_connection_and_sends_key_and_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOCIUM_TEST_KEY", "sk-abc")
    out, seen = _post([[b"<read>", OK, b"<read>", OK, b"<read>", OK]], n=3, api_key_env="SOCIUM_TEST_KEY",
                      headers={"X-Tenant": "lab-7"})  # fmt: skip
    assert [r.text for r in out] == ["hi"] * 3 and out[0].prompt_tokens == 2
    assert len(seen) == 3  # three requests over the single scripted connection
    head, body = seen[0].split(b"\r\n\r\n", 1)
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    lines = {ln.split(b":", 1)[0].lower(): ln.split(b":", 1)[1].strip() for ln in head.split(b"\r\n")[1:]}
    assert lines[b"authorization"] == b"Bearer sk-abc" and lines[b"x-tenant"] == b"lab-7"
    assert lines[b"content-type"] == b"application/json"
    assert json.loads(body)["messages"][0]["content"] == "hello 0"


def test_split_head_chunked_body_and_interim_answer() -> None:
    half = len(BODY) // 2
    chunked = [
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Enc",
        b"oding: chunked\r\n\r\n%x\r\n%s" % (half, BODY[:half]),
        b"\r\n%x;ext=1\r\n%s\r\n0\r\n" % (len(BODY) - half, BODY[half:]),
        b"\r\n",
    ]
    out, _ = _post([[b"<read>", *chunked]])
    assert out[0].ok and out[0].text == "hi", out[0].error


def test_body_to_close_and_connection_close_are_not_reused() -> None:
    to_close = b"HTTP/1.1 200 OK\r\n\r\n" + BODY
    closes = b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    out, seen = _post([[b"<read>", to_close], [b"<read>", closes], [b"<read>", OK]], n=3)
    assert out[0].text == "hi" and out[1].error_kind == "server" and out[2].text == "hi"
    assert len(seen) == 3  # each on its own connection: the script serves one request per connection


@pytest.mark.parametrize(
    ("answer", "kinds", "words"),
    [
        ([b"<close>"], {"connection"}, "without answering"),
        ([b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"half":'], {"bad_response"}, "truncated"),
        ([b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{"a"'], {"bad_response"}, "truncated"),
        # a head cut off is a connection lost before any answer could be read
        ([b"HTTP/1.1 200 OK\r\nContent-Le"], {"connection", "bad_response"}, "127.0.0.1"),
        ([b"SSH-2.0-OpenSSH_9.6\r\n\r\n"], {"bad_response"}, "unusable response"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n"], {"bad_response"}, "unusable response"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n<html>hi"], {"bad_response"}, "not json"),
    ],
)
def test_broken_answers_are_typed_retryable_failures(answer: list[bytes], kinds: set[str], words: str) -> None:
    out, _ = _post([[b"<read>", *answer]])
    r = out[0]
    assert not r.ok and r.error_kind in kinds and r.retryable and words in (r.error or "").lower(), r


def test_deadline_covers_a_silent_server() -> None:
    out, _ = _post([[b"<read>", b"HTTP/1.1 200 OK\r\nContent-Length: 90\r\n\r\n{", b"<silence>"]], timeout=0.3)
    # after the silence the server closes (a truncation, not a timeout), so "timeout" is the 0.3 s deadline's
    # doing; the upper bound is loose so a loaded machine passes, and still far below the silence
    assert out[0].error_kind == "timeout" and 0.3 <= out[0].latency_s < SILENCE_S / 2, out[0]


def test_proxy_from_the_environment_and_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """``HTTP_PROXY`` routes calls through the proxy (here the fake server, which answers a request
    in the proxy's absolute form); ``NO_PROXY`` exempts a host, as the openai SDK does."""
    with FakeOpenAIServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        be = OpenAIBackend("http://llm.example.invalid:8000/v1", "m", timeout_s=5)
        (res,) = generate_sync(be, [user_request("a", "hi")])
        be.close()
        assert res.ok, res.error  # the name does not resolve: only the proxy can have answered
        assert proxy.headers[0]["host"] == "llm.example.invalid:8000"
        with FakeOpenAIServer() as direct:
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            be = OpenAIBackend(direct.base_url, "m", timeout_s=5)
            (res,) = generate_sync(be, [user_request("b", "hi")])
            be.close()
        assert res.ok and direct.n_requests == 1 and proxy.n_requests == 1


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)  # fmt: skip
    return cert, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_ssl_cert_file_names_the_trusted_ca(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = _self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    (untrusted,), _ = _post([[b"<read>", OK]], tls=tls)  # the system's store does not know this CA
    assert untrusted.error_kind == "connection" and "certificate" in (untrusted.error or "").lower(), untrusted
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    (trusted,), _ = _post([[b"<read>", OK]], tls=tls)
    assert trusted.ok and trusted.text == "hi", trusted.error
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(ConfigError, match="SSL_CERT_FILE"):
        OpenAIBackend("https://127.0.0.1:1/v1", "m")


def test_netrc_naming_the_server_does_not_break_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``~/.netrc`` entry for the server's host (common on clusters) must not replace or clash
    with the API key: aiohttp's ``trust_env`` would fail every call then."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password hunter2\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("SOCIUM_TEST_KEY", "sk-xyz")
    with FakeOpenAIServer() as srv:
        be = OpenAIBackend(srv.base_url, "m", api_key_env="SOCIUM_TEST_KEY", timeout_s=5)
        (res,) = generate_sync(be, [user_request("a", "hi")])
        be.close()
    assert res.ok, res.error
    assert srv.headers[0]["authorization"] == "Bearer sk-xyz"


def test_proxy_credentials_and_headers_stay_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://user:pw-SECRET-9@127.0.0.1:3128")
    be = OpenAIBackend("http://127.0.0.1:9/v1", "m", headers={"X-Api-Token": "tok-SECRET-123"})
    assert "SECRET" not in repr(be) and "SECRET" not in str(vars(be))
    proxy, auth = be._proxy.reveal()
    assert str(proxy) == "http://127.0.0.1:3128" and auth is not None and auth.password == "pw-SECRET-9"


def test_request_body_is_json_even_with_lone_surrogates() -> None:
    be = OpenAIBackend("http://127.0.0.1:9/v1", "m")
    ok = user_request("a", "héllo \u2028 ok", json_schema={"type": "object"}, seed=3)
    assert json.loads(be.encode_request(ok)) == be.request_body(ok)
    bad = user_request("b", "broken \ud800 text")
    body = be.encode_request(bad)  # strict UTF-8 cannot carry it: \u escapes instead
    assert body.isascii() and json.loads(body)["messages"][0]["content"] == "broken \ud800 text"
