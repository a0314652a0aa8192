"""`socium data fetch ced` (issue 38.1): the registry pinned to the commit and every file's sha256 of CED's
manifest, fetched from a loopback server of ``../shared/data/ced``. That folder holds only the cascades
posted before 2013-07-01 (the later ones are held back for evaluation), so the server serves those and
nothing else: the fetch must say which files it could not get, keep what verified, and not pack a partial
data set as if it were whole."""

from __future__ import annotations

import csv
import hashlib
import re
import time
from dataclasses import replace
from urllib.parse import urlsplit

import pytest
from fetch_server import CED_TAR, Handler, _members, ced_members, leftovers, mirror, no_network, served, sink
from typer.testing import CliRunner

from conftest import SHARED_DATA, needs_data
from socium.cli.main import app
from socium.data import registry
from socium.data.datadir import describe

__all__ = ["mirror", "no_network", "served", "sink"]  # fixtures, imported for pytest

pytestmark = needs_data("ced/ced_before_2013-07.tar.gz")


def _path(f: registry.RemoteFile) -> str:
    u = urlsplit(f.url)
    return f"/{u.netloc}{u.path}"


def _upstream(f: registry.RemoteFile) -> str:
    return f.dest.removeprefix("ced/.download/")


def _cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, ["data", *args], env={"COLUMNS": "400"})
    return r.exit_code, r.output


def test_the_registry_is_the_manifest_at_the_readme_commit() -> None:
    readme = (SHARED_DATA / "ced" / "README.md").read_text(encoding="utf-8")
    assert re.search(r"commit \| `([0-9a-f]{40})`", readme).group(1) == registry.CED_COMMIT  # type: ignore[union-attr]
    ds = registry.datasets()["ced"]
    with (SHARED_DATA / "ced" / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        rows = [(r["path"], int(r["size"]), r["sha256"]) for r in csv.DictReader(fh, delimiter="\t")]
    assert len(ds.files) == len(rows) == 6775 and ds.size == 184_902_371
    assert [(_upstream(f), f.size, f.sha256) for f in ds.files] == rows
    assert all(
        f.url.startswith(f"https://raw.githubusercontent.com/thunlp/Chinese_Rumor_Dataset/{registry.CED_COMMIT}/")
        for f in ds.files
    )
    assert ds.licence.startswith("none stated; research use; cite Song et al.")
    # the shared copy is those upstream bytes: every member has the registry's sha256
    want = {_upstream(f): f.sha256 for f in ds.files}
    with __import__("tarfile").open(CED_TAR, "r:gz") as tf:
        n = 0
        for m in tf:
            if m.isfile():
                assert hashlib.sha256(tf.extractfile(m).read()).hexdigest() == want[m.name], m.name  # type: ignore[union-attr]
                n += 1
    assert n == 5461


def _subset(n_served: int, n_held: int) -> tuple[registry.DataSet, dict[str, bytes]]:
    """CED with ``n_served`` files the loopback serves (from the shared tarball) and ``n_held`` it does not."""
    ds = registry.datasets()["ced"]
    with __import__("tarfile").open(CED_TAR, "r:gz") as tf:
        shared = {m.name for m in tf if m.isfile()}
    served = [f for f in ds.files if _upstream(f) in shared][:n_served]
    held = [f for f in ds.files if _upstream(f) not in shared][:n_held]
    body = ced_members({_upstream(f) for f in served})
    return replace(ds, files=tuple(served + held)), {_path(f): body[_upstream(f)] for f in served}


def test_fetch_ced_prints_the_terms_says_what_was_not_served_then_packs_what_is(mirror, monkeypatch) -> None:
    _, reg, root = mirror
    part, extra = _subset(40, 3)
    Handler.extra = extra
    monkeypatch.setattr(registry, "datasets", lambda: {**reg, "ced": part})
    code, out = _cli("fetch", "ced")
    for words in (
        "licence:  none stated; research use; cite Song et al.",
        "cite:     Song, Tu, Yang, Liu & Sun, CED: Credible Early Detection of Social Media Rumors",
        f"version:  commit {registry.CED_COMMIT}",
        "source:   https://github.com/thunlp/Chinese_Rumor_Dataset",
        "40 downloaded",
        "not packed into ced/ced.tar.gz",
    ):
        assert words in out, (words, out)
    err = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(err) == 1 and "Traceback" not in out
    assert "ced: 3 of 43 file(s) failed: 3 file(s) not found upstream, e.g. http://127.0.0.1:" in err[0]
    assert "not found (HTTP 404)" in err[0] and "/CED_Dataset/" in err[0]
    assert sum(p.is_file() for p in (root / "ced" / ".download").rglob("*")) == 40  # verified, kept to resume
    assert not (root / "ced" / "ced.tar.gz").exists()
    assert {e.relpath: e.found for e in describe()[2]}["ced/ced.tar.gz"] is False
    # only what the server has: packed, with the upstream paths and bytes of the shared copy
    served_only = replace(part, files=part.files[:40])
    monkeypatch.setattr(registry, "datasets", lambda: {**reg, "ced": served_only})
    Handler.hits.clear()
    code, out = _cli("fetch", "ced")
    assert code == 0, out
    assert "0 downloaded, 40 already there and verified" in out and Handler.hits == []
    got = _members(root / "ced" / "ced.tar.gz")
    assert got == ced_members(set(got)) and len(got) == 40
    assert list(got) == [_upstream(f) for f in served_only.files]  # registry order
    assert not (root / "ced" / ".download").exists() and leftovers(root) == []
    assert {e.relpath: e.found for e in describe()[2]}["ced/ced.tar.gz"] is True
    code, out = _cli("fetch", "ced")
    assert code == 0 and "40 already there and verified" in out


@pytest.mark.slow
def test_fetch_ced_whole_registry_from_the_shared_folder(mirror) -> None:
    """All 6,775 registered files against a server of the shared folder: the 5,461 there verify, the 1,314
    held back are reported as not served, in one line."""
    _, _, root = mirror
    ds = registry.datasets()["ced"]
    body = ced_members()
    Handler.extra = {_path(f): body[_upstream(f)] for f in ds.files if _upstream(f) in body}
    t0 = time.monotonic()
    code, out = _cli("fetch", "ced")
    took = time.monotonic() - t0
    err = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(err) == 1
    assert "ced: 1,314 of 6,775 file(s) failed: 1,314 file(s) not found upstream" in err[0]
    assert "5,461 downloaded" in out
    print(f"fetched 5,461 CED files ({sum(map(len, body.values())) / 1e6:.0f} MB) over loopback in {took:.1f} s")
