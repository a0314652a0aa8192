"""Issue 36 item 3 (and 12, 15): socium never writes through a link it did not make.

``ln -s ../other RUN/report; socium report RUN`` overwrote the files in ``../other``; ``query --out``
naming a hard link to a trace truncated the trace; a file planted as a symlink in a report folder had its
target overwritten. Files are now written beside the name and renamed over it (only the name is replaced),
and a ``report`` folder that is a link is refused by name.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app
from socium.errors import RunDirError

runner = CliRunner()
BASE = {
    "name": "links",
    "seed": 1,
    "steps": 2,
    "population": {"n_agents": 20, "mean_activity": 0.5},
    "graph": {"kind": "barabasi_albert", "params": {"m": 2}},
    "policy": {"kind": "random", "p_post": 0.3, "p_like": 0.3, "p_repost": 0.2},
    "seed_posts": [{"author": 0, "content": "seed post"}],
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("links")
    cfg = tmp / "c.yaml"
    cfg.write_text(yaml.safe_dump(BASE))
    out = tmp / "run"
    r = runner.invoke(app, ["run", str(cfg), "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    return out


def _one_error(args: list[str], expect: str) -> str:
    r = runner.invoke(app, args)
    errors = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 2 and len(errors) == 1 and expect in r.output, (r.exit_code, r.output, r.exception)
    assert "Traceback" not in r.output
    return errors[0]


@pytest.mark.parametrize("command", ["report", "validate"])
def test_a_report_symlink_is_refused_and_its_target_untouched(tmp_path, run_dir, command) -> None:
    other = tmp_path / "other"
    other.mkdir()
    victim = {n: f"the user's {n}\n" for n in ("index.html", "series.json", "stylized_facts.json")}
    for name, text in victim.items():
        (other / name).write_text(text)
    link = run_dir / "report"
    link.symlink_to(other, target_is_directory=True)
    try:
        _one_error([command, str(run_dir)], "report: is a symbolic link")
        assert {p.name: p.read_text() for p in other.iterdir()} == victim
    finally:
        link.unlink()


def test_a_file_planted_as_a_link_in_the_report_folder_is_replaced_not_written_through(tmp_path, run_dir) -> None:
    report = run_dir / "report"
    report.mkdir(exist_ok=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    hard = tmp_path / "hard.txt"
    hard.write_text("keep me too")
    (report / "index.html").unlink(missing_ok=True)
    (report / "index.html").symlink_to(victim)
    (report / "series.json").unlink(missing_ok=True)
    os.link(hard, report / "series.json")
    r = runner.invoke(app, ["report", str(run_dir)])
    assert r.exit_code == 0, r.output
    assert victim.read_text() == "keep me" and hard.read_text() == "keep me too"
    assert not (report / "index.html").is_symlink() and "<html" in (report / "index.html").read_text().lower()
    assert os.stat(report / "series.json").st_nlink == 1


def test_query_out_through_a_hard_link_to_the_trace_keeps_the_trace(tmp_path, run_dir) -> None:
    db = run_dir / "trace.duckdb"
    before = db.read_bytes()
    alias = tmp_path / "out.csv"
    os.link(db, alias)
    try:
        r = runner.invoke(app, ["query", str(run_dir), "SELECT step FROM steps ORDER BY step", "--out", str(alias)])
        assert r.exit_code == 0, r.output
        assert db.read_bytes() == before  # the trace is whole (it was truncated to the CSV)
        assert alias.read_text().splitlines()[0] == "step"
        con = duckdb.connect(str(db), read_only=True)
        assert con.execute("SELECT count(*) FROM steps").fetchone()[0] == 3
        con.close()
    finally:
        alias.unlink(missing_ok=True)


def test_query_csv_escapes_control_and_bidi_characters(tmp_path, run_dir) -> None:
    """Agent text is hostile: a raw ESC moved the cursor, U+202E reversed what a cell seemed to say."""
    sql = "SELECT 'a' || chr(27) || '[2J' || chr(8238) || 'b' || chr(13) AS t, 'x' || chr(10) || 'y' AS nl"
    r = runner.invoke(app, ["query", str(run_dir), sql, "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\u202e" not in r.output and "\r" not in r.output
    rows = list(csv.reader(io.StringIO(r.output)))
    assert rows[1] == ["a\\x1b[2J\\u202eb\\r", "x\ny"]  # newline kept (quoted), the rest visible and inert
    out = tmp_path / "q.csv"
    r = runner.invoke(app, ["query", str(run_dir), sql, "--out", str(out), "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert "\x1b" not in out.read_text() and "\u202e" not in out.read_text()


def test_replace_file_and_own_folder_unit(tmp_path) -> None:
    from socium.trace.safe_write import own_folder, replace_file

    target = tmp_path / "t.txt"
    target.write_text("original")
    link = tmp_path / "l.txt"
    link.symlink_to(target)
    replace_file(link, "new")
    assert target.read_text() == "original" and not link.is_symlink() and link.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.txt", "t.txt"]  # no temp file left
    folder_link = tmp_path / "f"
    folder_link.symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(RunDirError, match="symbolic link"):
        own_folder(folder_link)
    assert own_folder(folder_link, named=True) == folder_link  # a folder the user named may be their link
    with pytest.raises(RunDirError, match="is a file"):
        own_folder(target)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_report_on_a_read_only_folder_is_one_error_line(tmp_path, run_dir) -> None:
    import shutil

    ro = tmp_path / "ro"
    shutil.copytree(run_dir, ro, ignore=shutil.ignore_patterns("report", ".socium.lock"))
    ro.chmod(0o555)
    try:
        _one_error(["report", str(ro)], "cannot create the folder")
    finally:
        ro.chmod(0o755)


def test_report_on_a_read_only_folder_is_one_error_line_as_root_too(tmp_path, run_dir, monkeypatch) -> None:
    """The same as the test above, where the tests run as root (which writes anywhere): mkdir's EROFS."""
    import errno
    import shutil

    ro = tmp_path / "ro"
    shutil.copytree(run_dir, ro, ignore=shutil.ignore_patterns("report", ".socium.lock"))
    real_mkdir = Path.mkdir

    def mkdir(self: Path, *a: object, **k: object) -> None:
        if self.name == "report":
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        real_mkdir(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", mkdir)
    line = _one_error(["report", str(ro)], "cannot create the folder: Read-only file system")
    assert str(ro / "report") in line
