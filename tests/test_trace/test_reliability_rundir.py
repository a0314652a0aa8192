"""Issue 31, build 1: socium never deletes, truncates or overwrites a file it did not create.

Each test fails on 1969b96: --resume deleted a DuckDB file it could not read as a trace, symlinked run
files were followed (the link's target truncated or overwritten), and ``query --out RUN/trace.duckdb``
overwrote the trace it queried.
"""

from __future__ import annotations

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.errors import RunDirError, SociumError
from socium.simulator.simulation import Simulation
from socium.trace.rundir import write_out_file


def _user_db(path):
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE mine AS SELECT 42 AS answer")
    con.close()


def _answer(path) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT answer FROM mine").fetchone()[0]
    finally:
        con.close()


def test_resume_refuses_a_duckdb_file_that_is_not_a_socium_trace(tmp_path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _user_db(run / "trace.duckdb")
    with pytest.raises(SociumError, match="--force") as got:
        Simulation(small_config(steps=2), run, resume=True)
    assert "not a socium trace" in str(got.value)
    assert _answer(run / "trace.duckdb") == 42  # the user's file is untouched


def test_resume_refuses_a_trace_with_a_damaged_steps_table(tmp_path) -> None:
    run = tmp_path / "run"
    Simulation(small_config(steps=2), run).run()
    con = duckdb.connect(str(run / "trace.duckdb"))
    con.execute("DROP TABLE steps")
    n_actions = con.execute("SELECT count(*) FROM actions").fetchone()[0]
    con.close()
    assert n_actions > 0
    with pytest.raises(SociumError, match="--force"):
        Simulation(small_config(steps=2), run, resume=True)
    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM actions").fetchone()[0] == n_actions
    con.close()


def test_unreadable_file_is_refused_on_resume_and_kept(tmp_path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "trace.duckdb").write_bytes(b"my notes, not a database\n" * 100)
    with pytest.raises(SociumError, match="--force"):
        Simulation(small_config(steps=2), run, resume=True)
    assert (run / "trace.duckdb").read_bytes().startswith(b"my notes")


@pytest.mark.parametrize("name", [".socium.lock", "config.json", "trace.duckdb"])
def test_a_symlinked_run_file_is_refused_and_its_target_kept(tmp_path, name) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / name).symlink_to(victim)
    with pytest.raises(RunDirError, match="symbolic link"):
        Simulation(small_config(steps=1), run, force=True)
    assert victim.read_text() == "precious\n"


def test_a_config_json_link_planted_in_a_finished_run_is_not_written_through_on_resume(tmp_path) -> None:
    run = tmp_path / "run"
    Simulation(small_config(steps=1), run).run()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (run / "config.json").unlink()
    (run / "config.json").symlink_to(victim)
    with pytest.raises(RunDirError, match="config.json: is a symbolic link"):
        Simulation(small_config(steps=2), run, resume=True)
    assert victim.read_text() == "precious\n"


def test_a_hard_linked_lock_file_is_refused(tmp_path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / ".socium.lock").hardlink_to(victim)
    with pytest.raises(RunDirError, match="hard links"):
        Simulation(small_config(steps=1), run, force=True)
    assert victim.read_text() == "precious\n"


def test_query_out_refuses_the_runs_own_files(tmp_path) -> None:
    run = tmp_path / "run"
    Simulation(small_config(steps=1), run).run()
    before = (run / "trace.duckdb").read_bytes()
    for name in ("trace.duckdb", "config.json"):
        r = CliRunner().invoke(app, ["query", str(run), "SELECT 1 AS x", "--out", str(run / name)])
        assert r.exit_code != 0, r.output
        assert "never overwrites" in r.output
    assert (run / "trace.duckdb").read_bytes() == before
    with pytest.raises(RunDirError, match="never overwrites"):
        write_out_file(run / "config.json", "{}")
    ok = CliRunner().invoke(app, ["query", str(run), "SELECT 1 AS x", "--out", str(tmp_path / "x.csv")])
    assert ok.exit_code == 0 and (tmp_path / "x.csv").read_text().splitlines() == ["x", "1"]


def test_a_start_killed_mid_schema_is_still_resumed_from_scratch(tmp_path) -> None:
    """Only socium's own tables, all empty (killed while the schema was created): nothing to lose."""
    run = tmp_path / "run"
    run.mkdir()
    con = duckdb.connect(str(run / "trace.duckdb"))
    con.execute("CREATE TABLE runs (run_id VARCHAR)")
    con.execute("CREATE TABLE agents (agent_id BIGINT)")
    con.close()
    sim = Simulation(small_config(steps=2), run, resume=True)
    sim.run()
    assert any("no committed set-up" in n for n in sim.notes)
    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM steps WHERE step >= 0").fetchone()[0] == 2
    con.close()
