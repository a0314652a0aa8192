"""The loopback side of the `socium data fetch` tests: a server that serves the research data in the upstream
URL layout (``SOCIUM_DATA_MIRROR``), rules that make it misbehave (corrupt, cut, stall, trickle, redirect,
an HTML page, an endless body), and a proxy sink that every test's non-loopback traffic goes to instead of
the network (``HTTP(S)_PROXY``), recording what reached it.

Where the research data is not on this machine (a contributor's clone), a small fixture in the same
layout stands in for it, with a registry whose hashes are the fixture's, so nothing is skipped.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import socketserver
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import SHARED_DATA
from socium.data import registry
from socium.data.registry import DataSet, RemoteFile, github_raw

NAMES = ["twitter15", "oasis", "sotopia", "snap"]
REAL = (SHARED_DATA / "twitter15" / "twitter15_trees.tar.gz").is_file() and (SHARED_DATA / "sotopia").is_dir()
CED_TAR = SHARED_DATA / "ced" / "ced_before_2013-07.tar.gz"


# ---- what the server serves ---------------------------------------------------------------------
def _fixture_source(root: Path) -> None:
    """A small stand-in for the research data, in the same folder layout (used only without the real data); the
    OASIS topic list and the SOTOPIA files are tens of KB, as the tests that cut, stall or trickle a body
    half-way need a body with a middle."""
    tree = "['ROOT', 'ROOT', '0.0']->['1', '100', '0.0']\n['1', '100', '0.0']->['2', '100', '1.5']\n"
    members = {"twitter15/label.txt": b"true:100\nfalse:200\n", "twitter15/tree/100.txt": tree.encode()}
    members["twitter15/tree/200.txt"] = tree.replace("100", "200").encode()
    (root / "twitter15").mkdir(parents=True)
    with tarfile.open(root / "twitter15" / "twitter15_trees.tar.gz", "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    header = "label,id,source,num_users,source_tweet,topic_name\n"
    texts = {
        "twitter_dataset/all_topics.csv": header
        + "".join(f"True,{100 + i},twitter15,2,a post,True_Business_{i}\n" for i in range(2000)),
        "twitter_dataset/anonymous_topic_200_1h/False_Business_0.csv": ",user_id,name\n0,1,user_0\n",
        "twitter_dataset/group_polarization/197_baoshou.csv": "user_id\n1\n",
        "twitter_dataset/group_polarization/197_progressive.csv": "user_id\n2\n",
        "reddit/counterfactual_36.json": "[]\n",
        "reddit/user_data_36.json": "[]\n",
        "LICENSE.oasis-apache-2.0.txt": "Apache License 2.0\n",
    }
    for rel, text in texts.items():
        (root / "oasis-reference" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "oasis-reference" / rel).write_text(text, encoding="utf-8")
    (root / "sotopia").mkdir()
    for f in registry.datasets()["sotopia"].files:
        (root / f.dest).write_text("".join(f'{{"x": {i}}}\n' for i in range(5000)), encoding="utf-8")
    (root / "snap-ego-facebook").mkdir()
    (root / "snap-ego-facebook" / "facebook_combined.txt.gz").write_bytes(gzip.compress(b"0 1\n1 2\n", mtime=0))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _members(tar: Path) -> dict[str, bytes]:
    with tarfile.open(tar, "r:gz") as tf:
        return {m.name: tf.extractfile(m).read() for m in tf if m.isfile()}  # type: ignore[union-attr]


def _registry_for(source: Path) -> dict[str, DataSet]:
    """The real registry, or (fixture) the same data sets with the fixture's files and hashes."""
    reg = registry.datasets()
    if REAL:
        return reg
    out = dict(reg)
    tw = reg["twitter15"]
    out["twitter15"] = replace(
        tw,
        files=tuple(
            RemoteFile(
                f"twitter15/.download/{n}",
                github_raw(registry.TWITTER15_REPO, registry.TWITTER15_COMMIT, n),
                _sha(b),
                len(b),
            )
            for n, b in _members(source / "twitter15" / "twitter15_trees.tar.gz").items()
        ),
    )
    for name in ("oasis", "sotopia"):
        files = tuple(
            replace(f, sha256=_sha((source / f.dest).read_bytes()), size=(source / f.dest).stat().st_size)
            for f in reg[name].files
        )
        out[name] = replace(reg[name], files=files)
    snap = reg["snap"].files[0]
    content = gzip.decompress((source / snap.dest).read_bytes())
    out["snap"] = replace(reg["snap"], files=(replace(snap, content_sha256=_sha(content)),))
    return out


def _source_bytes(source: Path, ds: DataSet, f: RemoteFile, tar_members: dict[str, bytes]) -> bytes:
    if ds.pack_root and f.dest.startswith(ds.pack_root + "/"):
        return tar_members[f.dest.removeprefix(ds.pack_root + "/")]
    return (source / f.dest).read_bytes()


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the mirror folder, and ``extra`` (URL path -> bytes: the CED members, read from the shared
    tarball) beside it. ``overrides`` (URL path -> bytes, a rule name, or a callable taking the handler)
    lets a test corrupt a file or make the server misbehave: "drop" cuts the connection half-way, "stall"
    stops sending half-way until ``release`` is set, "trickle" sends a byte every 0.1 s, "endless" sends
    for ever without a length, "html" answers 200 with an HTML error page, "reset" closes the connection
    without answering."""

    overrides: dict[str, bytes | str | Callable[[Handler], None]] = {}
    extra: dict[str, bytes] = {}
    release = threading.Event()
    hits: list[str] = []

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass

    def _send(self, body: bytes, ctype: str = "application/octet-stream", length: bool = True) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()

    def do_GET(self) -> None:
        self.hits.append(self.path)
        rule = self.overrides.get(self.path)
        if rule is None:
            body = self.extra.get(self.path)
            if body is None:
                return super().do_GET()
            self._send(body)
            self.wfile.write(body)
            return None
        if callable(rule):
            return rule(self)
        if rule == "reset":  # the connection closes before any response
            self.close_connection = True
            return None
        if rule == "html":
            page = b"<!DOCTYPE html><html><body>Service temporarily unavailable</body></html>"
            self._send(page, "text/html; charset=utf-8")
            self.wfile.write(page)
            return None
        if rule == "endless":
            self._send(b"", length=False)
            try:
                while True:
                    self.wfile.write(b"\x1f\x8b" + b"x" * 65534)
            except OSError:
                return None
        if rule == "trickle":
            self._send(b"x" * 1000)
            try:
                for _ in range(1000):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
            return None
        body = rule if isinstance(rule, bytes) else b"x" * 20000
        self._send(body)
        if rule in ("drop", "stall"):  # half the promised body, then the connection goes away (or hangs)
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            if rule == "stall":
                self.release.wait(30)
            self.close_connection = True
            return None
        self.wfile.write(body)
        return None


def ced_members(names: set[str] | None = None) -> dict[str, bytes]:
    """Members of the shared CED tarball (those named, or all), by upstream path."""
    out: dict[str, bytes] = {}
    with tarfile.open(CED_TAR, "r:gz") as tf:
        for m in tf:
            if m.isfile() and (names is None or m.name in names):
                out[m.name] = tf.extractfile(m).read()  # type: ignore[union-attr]
    return out


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, dict[str, DataSet]]]:
    """(mirror base URL, source data folder, registry) with the server running for the module."""
    if REAL:
        source = SHARED_DATA
    else:
        source = tmp_path_factory.mktemp("fixture-data")
        _fixture_source(source)
    reg = _registry_for(source)
    mirror = tmp_path_factory.mktemp("mirror")
    tar_members = _members(source / "twitter15" / "twitter15_trees.tar.gz")
    for name in NAMES:
        for f in reg[name].files:
            u = urlsplit(f.url)
            out = mirror / u.netloc / u.path.lstrip("/")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(_source_bytes(source, reg[name], f, tar_members))

    def handler(*args: object, **kw: object) -> Handler:
        return Handler(*args, directory=str(mirror), **kw)  # type: ignore[arg-type]

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", source, reg
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def mirror(served, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    base, source, reg = served
    monkeypatch.setenv("SOCIUM_DATA_MIRROR", base)
    monkeypatch.setenv("SOCIUM_DATA_DIR", str(tmp_path / "data"))
    if not REAL:
        monkeypatch.setattr(registry, "datasets", lambda: reg)
    Handler.overrides, Handler.extra = {}, {}
    yield source, reg, tmp_path / "data"
    Handler.overrides, Handler.extra = {}, {}


def url_path(f: RemoteFile) -> str:
    u = urlsplit(f.url)
    return f"/{u.netloc}{u.path}"


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.name.startswith(("tmp", ".part-")))


class _Sink(socketserver.StreamRequestHandler):
    """A proxy that forwards nothing: it records each request line (``CONNECT host:443``, ``GET http://...``)
    and answers 403."""

    def handle(self) -> None:
        line = self.rfile.readline(8192).decode("latin-1").strip()
        self.server.seen.append(line)  # type: ignore[attr-defined]
        while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
            pass
        self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@pytest.fixture(scope="session")
def sink() -> Iterator[socketserver.ThreadingTCPServer]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Sink)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def no_network(sink: socketserver.ThreadingTCPServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every fetch test's traffic beyond the loopback goes to the sink (``HTTP(S)_PROXY``; the loopback mirror
    is exempt through ``NO_PROXY``), and a test fails if anything reached the sink it did not expect: the
    test gets the list of what reached it and must empty it."""
    url = f"http://127.0.0.1:{sink.server_address[1]}"
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(var, url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    seen: list[str] = sink.seen  # type: ignore[attr-defined]
    seen.clear()
    yield seen
    assert seen == [], f"requests left for beyond the loopback (caught by the proxy sink): {seen}"
