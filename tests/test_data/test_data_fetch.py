"""`socium data fetch` through the real code (pooch, requests, sha256, packing) against a loopback HTTP
server that serves the research data in the upstream URL layout (``SOCIUM_DATA_MIRROR``; see fetch_server).
"""

from __future__ import annotations

import gzip
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fetch_server import NAMES, Handler, _members, leftovers, mirror, no_network, served, sink, url_path
from typer.testing import CliRunner

from socium.cli.main import app
from socium.data.datadir import data_dir, require
from socium.data.fetch import DataFetchError, fetch
from socium.data.fetch_file import sha256_of
from socium.errors import InputFileError

__all__ = ["mirror", "no_network", "served", "sink"]  # fixtures, imported for pytest


# ---- tests --------------------------------------------------------------------------------------
def test_fetched_files_are_the_upstream_bytes_and_the_experiments_read_them(mirror) -> None:
    from socium.experiments.propagation.data.realcascades import load_labels, load_twitter15, oasis_cascade_ids

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
    assert leftovers(root) == []
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
    source, reg, root = mirror
    bad = reg["sotopia"].files[1]
    genuine = (source / bad.dest).read_bytes()
    Handler.overrides[url_path(bad)] = genuine[:-3] + b"X" + genuine[-2:]  # the right size, one byte changed
    with pytest.raises(DataFetchError, match="sha256 does not match"):
        fetch(["sotopia"], root, say=lambda s: None, show_progress=False)
    assert not (root / bad.dest).exists() and leftovers(root) == []
    assert all((root / f.dest).is_file() for f in reg["sotopia"].files if f != bad)  # the others were fine
    # a copy damaged on disk is replaced by the verified upstream file
    Handler.overrides = {}
    good = reg["sotopia"].files[0]
    (root / good.dest).write_bytes(b"damaged")
    fetch(["sotopia"], root, say=lambda s: None, show_progress=False)
    assert sha256_of(root / good.dest) == good.sha256 and sha256_of(root / bad.dest) == bad.sha256


def test_a_dropped_connection_leaves_nothing(mirror) -> None:
    _, reg, root = mirror
    cut = reg["oasis"].files[0]
    Handler.overrides[url_path(cut)] = "drop"
    with pytest.raises(DataFetchError, match="connection broke mid-download"):
        fetch(["oasis"], root, say=lambda s: None, show_progress=False)
    assert not (root / cut.dest).exists() and leftovers(root) == []


def test_snap_is_held_to_its_pinned_content_and_a_corrupt_download_never_poisons_its_sidecar(mirror) -> None:
    """36.7: the gzip's own bytes are not pinned, its content is. A corrupt body is refused before any hash
    is recorded, so the genuine file is accepted afterwards; a sidecar left by an older socium (or a gzip
    re-compressed upstream, same content) does not refuse the genuine file: the content decides."""
    source, reg, root = mirror
    f = reg["snap"].files[0]
    side = root / (f.dest + ".sha256")
    assert f.sha256 is None and f.content_sha256 is not None
    Handler.overrides[url_path(f)] = b"\x1f\x8b" + b"corrupt" * 100  # gzip magic, then garbage
    with pytest.raises(DataFetchError, match="not a readable gzip file") as exc:
        fetch(["snap"], root, say=lambda s: None, show_progress=False)
    assert str(exc.value).split(": ", 3)[2].startswith(Handler_base(mirror))  # names the mirror that failed
    assert not (root / f.dest).exists() and not side.exists() and leftovers(root) == []
    Handler.overrides = {}
    fetch(["snap"], root, say=lambda s: None, show_progress=False)  # the genuine file: accepted
    assert side.read_text().strip() == sha256_of(root / f.dest)
    # an older socium's poisoned sidecar (the hash of a corrupt body; its file removed)
    (root / f.dest).unlink()
    side.write_text("0" * 64 + "\n")
    fetch(["snap"], root, say=lambda s: None, show_progress=False)
    assert side.read_text().strip() == sha256_of(root / f.dest) != "0" * 64
    # re-compressed upstream (same content, other bytes): accepted, sidecar corrected
    (root / f.dest).unlink()
    content = gzip.decompress((source / f.dest).read_bytes())
    Handler.overrides[url_path(f)] = gzip.compress(content, mtime=12345)
    fetch(["snap"], root, say=lambda s: None, show_progress=False)
    assert side.read_text().strip() == sha256_of(root / f.dest)
    assert gzip.decompress((root / f.dest).read_bytes()) == content
    # wrong content is refused even on the first fetch (no sidecar yet)
    (root / f.dest).unlink()
    side.unlink()
    Handler.overrides[url_path(f)] = gzip.compress(b"0 1\n")
    with pytest.raises(DataFetchError, match="decompressed content"):
        fetch(["snap"], root, say=lambda s: None, show_progress=False)
    assert not (root / f.dest).exists() and not side.exists()


def Handler_base(mirror: tuple[Path, dict, Path]) -> str:  # noqa: N802
    import os

    return os.environ["SOCIUM_DATA_MIRROR"]


def test_a_killed_download_leaves_no_file_under_its_name_and_is_cleaned_up(mirror) -> None:
    _, reg, root = mirror
    f = reg["sotopia"].files[0]
    Handler.overrides[url_path(f)] = "stall"
    Handler.release.clear()
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
        Handler.release.set()
    assert partial and not (root / f.dest).exists()  # the half file never had the real name
    Handler.overrides = {}
    fetch(["sotopia"], root, say=lambda s: None, show_progress=False)
    assert sha256_of(root / f.dest) == f.sha256 and leftovers(root) == []


def test_missing_data_is_one_line_naming_the_fetch_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from socium.experiments.propagation.data.realcascades import load_twitter15

    monkeypatch.setenv("SOCIUM_DATA_DIR", str(tmp_path))
    with pytest.raises(InputFileError, match="socium data fetch sotopia"):
        require(tmp_path / "sotopia")
    with pytest.raises(InputFileError) as exc:
        load_twitter15()
    assert "socium data fetch twitter15" in str(exc.value) and "\n" not in str(exc.value)
