"""Issue 31, the traceback list: each of these was a traceback (exit 1) and is one ``error:`` line.

Nothing is written where the input can be checked first (the run folder does not appear); a disk that
fills mid-run keeps the committed steps and says how to go on, and DuckDB's aborted commit is no longer
hidden behind a second exception from the rollback.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app

runner = CliRunner()
BASE = {
    "name": "err",
    "seed": 1,
    "steps": 3,
    "population": {"n_agents": 30, "mean_activity": 0.5},
    "graph": {"kind": "barabasi_albert", "params": {"m": 3}},
    "policy": {"kind": "random", "p_post": 0.3, "p_like": 0.3, "p_repost": 0.2},
    "seed_posts": [{"author": 0, "content": "seed post"}],
}


def _cfg(tmp_path: Path, **over: object) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**BASE, **over}))
    return path


def _one_error(args: list[str], expect: str, folder: Path | None = None) -> str:
    """Run the CLI: exit 2, exactly one ``error:`` line containing ``expect``, no traceback; ``folder`` not made."""
    r = runner.invoke(app, args)
    errors = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 2 and len(errors) == 1 and expect in r.output, (r.exit_code, r.output, r.exception)
    assert "Traceback" not in r.output
    if folder is not None:
        assert not folder.exists(), sorted(p.name for p in folder.iterdir())
    return errors[0]


@pytest.mark.parametrize(
    ("sets", "expect"),
    [
        (["graph.params.m=abc"], "graph.params.m: barabasi_albert needs an integer"),
        (["start_datetime=9999-12-31T20:00:00", "steps=5"], "is past the year 9999"),
        (["step_minutes=1e15"], "simulated minutes, more than"),
        (["step_minutes=1e300"], "simulated minutes, more than"),
        (["start_datetime=2024-01-01T08:00:00", "time_magnification=1e12"], "simulated minutes, more than"),
        (["name=\udcff\udcfe"], "--set name=\\xff\\xfe: not UTF-8 text (byte 0xff"),
    ],
)
def test_bad_overrides_are_one_error_line_before_anything_is_written(tmp_path, sets, expect) -> None:
    """Dates and ``step_minutes`` used to overflow only when the run reached them, after the run folder
    and step 0 were written; ``m=abc`` failed in the memory estimate; non-UTF-8 argv bytes in YAML's reader."""
    out = tmp_path / "run"
    args = ["run", str(_cfg(tmp_path)), "--out", str(out), "--quiet"]
    for s in sets:
        args += ["--set", s]
    _one_error(args, expect, out)


def test_non_utf8_out_is_one_error_line(tmp_path) -> None:
    out = tmp_path / "run\udcff"  # how Python hands over argv bytes that are not UTF-8
    _one_error(["run", str(_cfg(tmp_path)), "--out", str(out), "--quiet"], "the path is not UTF-8 text (byte 0xff")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def _oasis(tmp_path: Path, user_id: str) -> Path:
    path = tmp_path / "users.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["user_id", "name", "username", "description", "user_char", "following_agentid_list", "previous_tweets"]
        )
        for i in range(5):
            w.writerow(
                [user_id if i == 2 else str(i), f"n{i}", f"u{i}", "bio", "char", "[1]" if i == 0 else "[]", "[]"]
            )
    return path


@pytest.mark.parametrize("user_id", ["²", "9" * 5000, "-12"])
def test_odd_user_ids_are_labels_not_a_traceback(tmp_path, user_id) -> None:
    """``'²'.isdigit()`` is True but ``int('²')`` fails; 5,000 digits pass Python's int-string limit."""
    pop = _oasis(tmp_path, user_id)
    cfg = _cfg(tmp_path, population={"source": "oasis_csv", "path": str(pop)}, graph={"kind": "profiles"})
    r = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "run"), "--quiet"])
    assert r.exit_code == 0, (r.output, r.exception)
    con = duckdb.connect(str(tmp_path / "run" / "trace.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT count(*) FROM agents").fetchone()[0]
    finally:
        con.close()
    assert rows == 5


def test_a_50000_deep_persona_is_one_error_line(tmp_path) -> None:
    recs = [{"realname": f"r{i}", "username": f"u{i}", "bio": "b", "persona": "p"} for i in range(4)]
    text = json.dumps(recs).replace('"persona": "p"}', '"persona": ' + "[" * 50_000 + "]" * 50_000 + "}", 1)
    pop = tmp_path / "personas.json"
    pop.write_text(text)
    cfg = _cfg(tmp_path, population={"source": "reddit_json", "path": str(pop)}, graph={"kind": "random_out"})
    out = tmp_path / "run"
    _one_error(["run", str(cfg), "--out", str(out), "--quiet"], "personas.json: JSON nested too deeply", out)


@pytest.mark.parametrize(("config", "found"), [("[1, 2]", "an array"), ("null", "null"), ('"x"', "a string")])
@pytest.mark.parametrize("command", ["card", "report"])
def test_runs_config_that_is_not_a_mapping_is_one_error_line(tmp_path, config, found, command) -> None:
    run = tmp_path / "run"
    r = runner.invoke(app, ["run", str(_cfg(tmp_path)), "--out", str(run), "--quiet"])
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(run / "trace.duckdb"))
    con.execute("UPDATE runs SET config = ?", [config])
    con.close()
    line = _one_error([command, str(run)], f"runs.config is {found}, not a config mapping")
    assert "trace.duckdb" in line


def _limit_file_size(size: int):
    def limit() -> None:  # in the child: writes past `size` fail with EFBIG, as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


@pytest.mark.parametrize(("size", "what"), [(3_000_000, "could not write step"), (20_000, "the run's set-up")])
def test_a_full_disk_is_one_error_line_and_the_run_resumes(tmp_path, size, what) -> None:
    """The commit fails (DuckDB ends the transaction); the rollback no longer raises a second error over it."""
    cfg = _cfg(tmp_path, steps=8, population={"n_agents": 3000, "mean_activity": 0.5})
    out = tmp_path / "run"
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    cmd = [sys.executable, "-m", "socium.cli", "run", str(cfg), "--out", str(out), "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, preexec_fn=_limit_file_size(size))
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.returncode == 2 and len(errors) == 1, r.stderr
    assert "Traceback" not in r.stderr and "no transaction is active" not in r.stderr
    said = " ".join(r.stderr.split())  # the one message, however the console wrapped it
    again = f"socium run CONFIG --resume --out {out}" if "set-up" in what else f"socium run --resume --out {out}"
    assert what in said and "is the disk full" in said and again in said
    # space again: the run continues from what was committed (the error's own advice)
    go_on = subprocess.run(
        [
            sys.executable,
            "-m",
            "socium.cli",
            "run",
            *([str(cfg)] if "set-up" in what else []),
            "--resume",
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert go_on.returncode == 0, go_on.stderr
    con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT max(step) FROM steps").fetchone()[0] == 7
    finally:
        con.close()


@pytest.mark.parametrize(
    ("share", "said", "unsaid"), [((4, None), "4 calls", "tokens"), ((None, 300), "300 tokens", "calls of")]
)
def test_a_ray_shards_refusal_names_its_share_not_a_run_budget_and_no_none(share, said, unsaid) -> None:
    """The Ray budget stop said "call budget spent: 12 of 16 calls used (...: 4 calls, None tokens)": the
    actor's own ledger limits read as the run's budget, and the unset budget as "None"."""
    from socium.llm.budget_shares import apply_allowance
    from socium.llm.wrappers import BudgetLedger

    ledger = BudgetLedger(None if share[1] is None else 10**6, None if share[0] is None else 100, spent_calls=12)
    apply_allowance(ledger, share, "Ray shard 1 of 2")
    ledger.spent_calls += share[0] or 0
    ledger.spent_tokens += share[1] or 0
    why = ledger.refusal(50)
    assert why is not None and "Ray shard 1 of 2 spent its share of the run's budget" in why and said in why
    assert "None" not in why and unsaid not in why and " of 16 " not in why and "12" not in why
