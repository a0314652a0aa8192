"""`socium data fetch` through the real code (pooch, requests, sha256, packing) against a loopback HTTP
server that serves the research data in the upstream URL layout (``SOCIUM_DATA_MIRROR``).

Where the research data is not on this machine (a contributor's clone), a small fixture in the same
layout stands in for it, with a registry whose hashes are the fixture's, so nothing is skipped.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from conftest import SHARED_DATA
from socium.cli.main import app
from socium.data import registry
from socium.data.datadir import data_dir, require
from socium.data.fetch import DataFetchError, fetch, sha256_of
from socium.data.registry import DataSet, RemoteFile, github_raw
from socium.errors import InputFileError

NAMES = ["twitter15", "oasis", "sotopia", "snap"]
REAL = (SHARED_DATA / "twitter15" / "twitter15_trees.tar.gz").is_file() and (SHARED_DATA / "sotopia").is_dir()


# ---- what the server serves ---------------------------------------------------------------------
def _fixture_source(root: Path) -> None:
    """A tiny stand-in for the research data, in the same folder layout (used only without the real data)."""
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
        "twitter_dataset/all_topics.csv": header + "True,100,twitter15,2,a post,True_Business_0\n",
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
        (root / f.dest).write_text('{"x": 1}\n', encoding="utf-8")
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
                f"twitter15/.download/{n}", github_raw(registry.TWITTER15_REPO, registry.TWITTER15_COMMIT, n), _sha(b)
            )
            for n, b in _members(source / "twitter15" / "twitter15_trees.tar.gz").items()
        ),
    )
    for name in ("oasis", "sotopia"):
        files = tuple(replace(f, sha256=_sha((source / f.dest).read_bytes())) for f in reg[name].files)
        out[name] = replace(reg[name], files=files)
    snap = reg["snap"].files[0]
    content = gzip.decompress((source / snap.dest).read_bytes())
    out["snap"] = replace(reg["snap"], files=(replace(snap, content_sha256=_sha(content)),))
    return out


def _source_bytes(source: Path, ds: DataSet, f: RemoteFile, tar_members: dict[str, bytes]) -> bytes:
    if ds.pack_root and f.dest.startswith(ds.pack_root + "/"):
        return tar_members[f.dest.removeprefix(ds.pack_root + "/")]
    return (source / f.dest).read_bytes()


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the mirror folder; ``overrides`` (URL path -> bytes, "drop" or "stall") lets a test corrupt a
    file, cut the connection half-way, or stop sending half-way until ``release`` is set."""

    overrides: dict[str, bytes | str] = {}
    release = threading.Event()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass

    def do_GET(self) -> None:
        rule = self.overrides.get(self.path)
        if rule is None:
            return super().do_GET()
        body = rule if isinstance(rule, bytes) else b"x" * 20000
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if rule in ("drop", "stall"):  # half the promised body, then the connection goes away (or hangs)
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            if rule == "stall":
                self.release.wait(30)
            self.close_connection = True
            return None
        self.wfile.write(body)
        return None


@pytest.fixture(scope="module")
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

    def handler(*args: object, **kw: object) -> _Handler:
        return _Handler(*args, directory=str(mirror), **kw)  # type: ignore[arg-type]

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
    _Handler.overrides = {}
    yield source, reg, tmp_path / "data"
    _Handler.overrides = {}


def _url_path(f: RemoteFile) -> str:
    u = urlsplit(f.url)
    return f"/{u.netloc}{u.path}"


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.name.startswith(("tmp", ".part-")))


# ---- tests --------------------------------------------------------------------------------------
def test_fetched_files_are_the_upstream_bytes_and_the_experiments_read_them(mirror) -> None:
    from socium.experiments.propagation.realcascades import load_labels, load_twitter15, oasis_cascade_ids

    source, reg, root = mirror
    reports = fetch(NAMES, root, say=lambda s: None, show_progress=False)
    assert [r.name for r in reports] == NAMES and all(not r.errors for r in reports)
    assert sum(r.downloaded for r in reports) == sum(len(reg[n].files) for n in NAMES)
    # Twitter15: every upstream file, packed in the tarball the experiment reads, byte for byte and in order
    want, got = _members(source / "twitter15" / "twitter15_trees.tar.gz"), _members(root / reg["twitter15"].pack)
    assert list(got) == list(want) and got == want
    assert not (root / "twitter15" / ".download").exists()  # the loose files are gone once packed
    for name in ("oasis", "sotopia", "snap"):
        for f in reg[name].files:
            assert (root / f.dest).read_bytes() == (source / f.dest).read_bytes(), f.dest
    assert _leftovers(root) == []
    # the experiments' readers find the fetched folder through the resolver
    assert data_dir() == root
    ids = oasis_cascade_ids()
    assert ids and ids == oasis_cascade_ids(source / "oasis-reference" / "twitter_dataset" / "all_topics.csv")
    trees = load_twitter15(ids=ids[:3])
    ref = load_twitter15(source / "twitter15" / "twitter15_trees.tar.gz", ids=ids[:3])
    assert {k: len(t.nodes) for k, t in trees.items()} == {k: len(t.nodes) for k, t in ref.items()}
    assert load_labels() == load_labels(source / "twitter15" / "twitter15_trees.tar.gz")
    # a second fetch downloads nothing: everything is there and verified (the SNAP gzip against its sidecar)
    again = fetch(NAMES, root, say=lambda s: None, show_progress=False)
    assert sum(r.downloaded for r in again) == 0
    snap = root / reg["snap"].files[0].dest
    assert (snap.parent / (snap.name + ".sha256")).read_text().strip() == sha256_of(snap)


def test_cli_prints_the_terms_first_and_socium_data_then_finds_it(mirror) -> None:
    _, _, root = mirror
    r = CliRunner().invoke(app, ["data", "fetch", "sotopia"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    for word in ("source:", "version:", "licence:", "cite:", "sotopia-lab/sotopia-space", "4 downloaded"):
        assert word in r.output
    r = CliRunner().invoke(app, ["data"], env={"COLUMNS": "200"})
    line = next(ln for ln in r.output.splitlines() if ln.strip("│ ").startswith("sotopia "))
    assert "yes" in line
    line = next(ln for ln in r.output.splitlines() if "twitter15" in ln)
    assert "socium data fetch twitter15" in line and line.rstrip(" │").endswith("no")
    r = CliRunner().invoke(app, ["data", "fetch", "nosuch"], env={"COLUMNS": "200"})
    assert r.exit_code == 2 and "unknown data set" in r.output and "twitter15" in r.output


def test_a_wrong_checksum_is_refused_and_nothing_is_kept(mirror) -> None:
    _, reg, root = mirror
    bad = reg["sotopia"].files[1]
    _Handler.overrides[_url_path(bad)] = b'{"tampered": true}\n'
    with pytest.raises(DataFetchError, match="sha256 does not match"):
        fetch(["sotopia"], root, say=lambda s: None, show_progress=False)
    assert not (root / bad.dest).exists() and _leftovers(root) == []
    assert all((root / f.dest).is_file() for f in reg["sotopia"].files if f != bad)  # the others were fine
    # a copy damaged on disk is replaced by the verified upstream file
    _Handler.overrides = {}
    good = reg["sotopia"].files[0]
    (root / good.dest).write_bytes(b"damaged")
    fetch(["sotopia"], root, say=lambda s: None, show_progress=False)
    assert sha256_of(root / good.dest) == good.sha256 and sha256_of(root / bad.dest) == bad.sha256


def test_a_dropped_connection_leaves_nothing(mirror) -> None:
    _, reg, root = mirror
    cut = reg["oasis"].files[0]
    _Handler.overrides[_url_path(cut)] = "drop"
    with pytest.raises(DataFetchError, match="download failed"):
        fetch(["oasis"], root, say=lambda s: None, show_progress=False)
    assert not (root / cut.dest).exists() and _leftovers(root) == []


def test_a_hash_recorded_at_first_fetch_is_checked_afterwards(mirror) -> None:
    source, reg, root = mirror
    f = reg["snap"].files[0]
    assert f.sha256 is None  # SNAP's own gzip is not pinned; its content is
    fetch(["snap"], root, say=lambda s: None, show_progress=False)
    (root / f.dest).unlink()
    content = gzip.decompress((source / f.dest).read_bytes())
    _Handler.overrides[_url_path(f)] = gzip.compress(content, mtime=12345)  # same content, other bytes
    with pytest.raises(DataFetchError, match="sha256 does not match"):
        fetch(["snap"], root, say=lambda s: None, show_progress=False)
    assert not (root / f.dest).exists()
    # a file whose content is wrong is refused even on the first fetch (no sidecar yet)
    (root / (f.dest + ".sha256")).unlink()
    _Handler.overrides[_url_path(f)] = gzip.compress(b"0 1\n")
    with pytest.raises(DataFetchError, match="decompressed content"):
        fetch(["snap"], root, say=lambda s: None, show_progress=False)
    assert not (root / f.dest).exists() and not (root / (f.dest + ".sha256")).exists()


def test_a_killed_download_leaves_no_file_under_its_name_and_is_cleaned_up(mirror) -> None:
    _, reg, root = mirror
    f = reg["sotopia"].files[0]
    _Handler.overrides[_url_path(f)] = "stall"
    _Handler.release.clear()
    code = "import sys; from pathlib import Path; from socium.data.fetch import fetch; "
    code += "fetch(['sotopia'], Path(sys.argv[1]), show_progress=False)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    folder = (root / f.dest).parent
    try:
        deadline = time.monotonic() + 60
        while not any(p.stat().st_size for p in folder.glob("tmp*")) and time.monotonic() < deadline:
            time.sleep(0.05)  # until half of the file has arrived in pooch's temporary file
        partial = [p.name for p in folder.glob("tmp*") if p.stat().st_size]
        proc.kill()  # SIGKILL: no cleanup runs in the fetching process
        proc.wait(30)
    finally:
        _Handler.release.set()
    assert partial and not (root / f.dest).exists()  # the half file never had the real name
    _Handler.overrides = {}
    fetch(["sotopia"], root, say=lambda s: None, show_progress=False)
    assert sha256_of(root / f.dest) == f.sha256 and _leftovers(root) == []


def test_missing_data_is_one_line_naming_the_fetch_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from socium.experiments.propagation.realcascades import load_twitter15

    monkeypatch.setenv("SOCIUM_DATA_DIR", str(tmp_path))
    with pytest.raises(InputFileError, match="socium data fetch sotopia"):
        require(tmp_path / "sotopia")
    with pytest.raises(InputFileError) as exc:
        load_twitter15()
    assert "socium data fetch twitter15" in str(exc.value) and "\n" not in str(exc.value)
