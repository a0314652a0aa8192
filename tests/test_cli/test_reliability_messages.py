"""Issue 31, traceback list: a corrupt trace is not called "in use" (1969b96 matched "lock" inside
"block"), and ``query --format csv/json`` shows escape sequences from trace data inert on a terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from conftest import small_config
from socium.errors import TraceError
from socium.simulator.simulation import Simulation
from socium.trace import store

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ("IO Error: Failed to read block 12 of file: checksum mismatch", "not a readable socium trace"),
        ('IO Error: Could not set lock on file "t.duckdb": Conflicting lock is held', "in use by another process"),
        # issue 36 item 15: a read error said "is the disk full" on resume
        ('IO Error: Could not read from file "t.duckdb": Input/output error', "cannot be read"),
        ('IO Error: Cannot open file "t.duckdb": No space left on device', r"cannot be written \(is the disk full\?\)"),
        ('IO Error: Cannot open file "t.duckdb": Permission denied', r"\(the folder or the file is read-only\)"),
    ],
)
def test_busy_and_corrupt_traces_are_told_apart(monkeypatch, tmp_path, message, said) -> None:
    def fail(*_a, **_k):
        raise duckdb.IOException(message)

    monkeypatch.setattr(store.duckdb, "connect", fail)
    with pytest.raises(TraceError, match=said) as info:
        store.open_trace(tmp_path / "t.duckdb", read_only=False)
    assert ("disk full" in str(info.value)) == ("No space" in message)


def test_a_read_error_while_writing_is_not_called_a_full_disk(tmp_path) -> None:
    exc = duckdb.IOException('IO Error: Could not read from file "t.duckdb": Input/output error')
    said = str(store.write_error(tmp_path / "t.duckdb", "step 3", exc))
    assert "disk full" not in said and "a read error" in said
    full = str(
        store.write_error(tmp_path / "t.duckdb", "step 3", duckdb.IOException("Could not write: File too large"))
    )
    assert "is the disk full" in full


def _on_a_terminal(args: list[str]) -> bytes:
    main, sub = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    p = subprocess.Popen([sys.executable, "-m", "socium.cli", *args], stdout=sub, stderr=sub, env=env)
    os.close(sub)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=120)
    os.close(main)
    return out


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_query_shows_escape_sequences_inert_on_a_terminal(tmp_path, fmt) -> None:
    run = tmp_path / "r"
    Simulation(
        small_config(steps=1, seed_posts=[{"author": 0, "content": "evil \x1b]0;pwned\x07 \x1b[2J end"}]), run
    ).run()
    sql = "SELECT content FROM posts WHERE content LIKE 'evil%'"
    out = _on_a_terminal(["query", str(run), sql, "--format", fmt])
    assert b"\x1b" not in out and b"\x07" not in out, out
    assert b"evil" in out and (b"\\x1b" in out or b"\\u001b" in out)  # shown, as a visible escape
    piped = subprocess.run(
        [sys.executable, "-m", "socium.cli", "query", str(run), sql, "--format", fmt],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert piped.returncode == 0
    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    stored = con.execute(sql).fetchone()[0]
    con.close()
    assert "\x1b" in stored and b"\x1b" not in piped.stdout and b"\x07" not in piped.stdout
    if fmt == "json":  # a program's format: JSON's own escapes, the stored value exactly once decoded
        assert json.loads(piped.stdout)[0]["content"] == stored
    else:  # CSV is read by people too (issue 36): escaped in a pipe and a file as on a terminal
        assert b"evil \\x1b]0;pwned\\x07 \\x1b[2J end" in piped.stdout


@pytest.mark.parametrize("args", ["{not json", "[1, 2]", '{"content": 7, "extra": "x"}'])
def test_a_damaged_action_row_is_one_error_line_on_resume(tmp_path, args) -> None:
    import yaml

    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": "d",
                "steps": 4,
                "population": {"n_agents": 40, "mean_activity": 0.5},
                "policy": {"kind": "random", "p_post": 0.5},
                "seed_posts": [{"author": 0, "content": "x"}],
            }
        )
    )
    run = tmp_path / "r"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    base = [sys.executable, "-m", "socium.cli", "run", str(cfg), "--out", str(run), "--quiet"]
    subprocess.run([*base, "--steps", "2"], check=True, capture_output=True, env=env)
    con = duckdb.connect(str(run / "trace.duckdb"))
    con.execute("UPDATE actions SET args = ? WHERE type = 'create_post' AND origin != 'seed'", [args])
    con.close()
    r = subprocess.run([*base, "--resume"], capture_output=True, text=True, env=env)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("error:") == 1, r.stderr
    assert "trace damaged" in r.stderr and "create_post" in r.stderr
