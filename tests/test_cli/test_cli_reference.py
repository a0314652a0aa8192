"""The command line a researcher types every day: version, flags, choices, query output, config reference, data."""

import csv
import io
import json
import re

import duckdb
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app

runner = CliRunner()
CFG = {
    "name": "cli",
    "steps": 3,
    "population": {"n_agents": 60, "mean_activity": 0.3},
    "seed_posts": [{"author": 0, "content": 'hi, "there"'}],
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("q")
    (d / "c.yaml").write_text(yaml.safe_dump(CFG))
    r = runner.invoke(app, ["run", str(d / "c.yaml"), "--out", str(d / "run"), "--quiet"])
    assert r.exit_code == 0, r.output
    return d / "run"


def test_version():
    import socium

    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"socium {socium.__version__}"


def test_boolean_options_are_shown_as_flags():
    cmds = (["run", "--help"], ["experiment", "--help"], ["card", "--help"], ["--help"], ["population", "--help"])
    for cmd in (*cmds, ["population", "generate", "--help"], ["sweep", "--help"], ["episodes", "--help"]):
        r = runner.invoke(app, cmd, env={"COLUMNS": "160"})
        assert r.exit_code == 0
        assert "<bool>" not in r.output and "list[str]" not in r.output, cmd  # no Python types as metavars
    r = runner.invoke(app, ["experiment", "--help"], env={"COLUMNS": "160"})
    assert "--set" in r.output and "<key.path=value>" in r.output
    r = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "160"})
    assert re.search(r"--resume\s+Continue", r.output)


def test_help_lists_commands_in_the_order_main_imports_them():
    """socium.cli.main imports the command modules unsorted (isort off): a sorted import block would reorder this."""
    r = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    listed = re.findall(r"^│ ([a-z][a-z-]*) ", r.output, re.M)
    assert listed == [
        *("run", "query", "card", "interview", "config-schema", "data", "sweep", "report", "experiment", "seeds"),
        *("fit", "validate", "sensitivity", "episodes", "export-sft", "group-episodes", "explore", "forecast"),
        "population",
    ]


def test_choices_are_listed_and_validated(tmp_path):
    from socium.experiments.studies import EXPERIMENT_KINDS as KINDS

    r = runner.invoke(app, ["experiment", "--help"], env={"COLUMNS": "200"})
    listed = re.search(r"<([a-z|]+)>", r.output.split("kind", 1)[1]).group(1).split("|")
    assert set(listed) == set(KINDS) and "compare" in listed  # the CLI's choices are the library's kinds
    r = runner.invoke(app, ["experiment", "bogus", str(tmp_path / "x.yaml")])
    assert r.exit_code == 2 and "'bogus' is not one of" in r.output
    r = runner.invoke(app, ["export-sft", "--help"], env={"COLUMNS": "160"})
    assert "agents|mindreaders|script|all" in r.output and "turns|script" in r.output
    out = tmp_path / "x.jsonl"
    r = runner.invoke(app, ["export-sft", str(tmp_path), "--mode", "bogus", "--out", str(out)])
    assert r.exit_code == 2 and "'bogus' is not one of" in r.output and not out.exists()
    r = runner.invoke(app, ["export-sft", str(tmp_path), "--format", "chat", "--out", str(out)])
    assert r.exit_code == 2 and not out.exists()


def test_export_sft_library_rejects_unknown_mode_before_writing(tmp_path):
    from socium.episodes.export import export_sft
    from socium.errors import ConfigError

    with pytest.raises(ConfigError, match="'bogus' is not one of agents, mindreaders, script"):
        export_sft(tmp_path, tmp_path / "x.jsonl", mode="bogus")
    assert not (tmp_path / "x.jsonl").exists()


def test_query_says_when_truncated(run_dir):
    r = runner.invoke(app, ["query", str(run_dir), "SELECT * FROM steps ORDER BY step", "--limit", "2"])
    assert r.exit_code == 0 and "truncated to the first 2 rows" in r.output
    r = runner.invoke(app, ["query", str(run_dir), "SELECT * FROM steps ORDER BY step", "--limit", "4"])
    assert r.exit_code == 0 and "truncated" not in r.output  # exactly 4 rows (steps -1..2)


@pytest.mark.parametrize("width", [60, 100, 160])
def test_query_table_fits_the_terminal_and_says_when_it_cut(run_dir, width):
    sql = "SELECT * FROM posts ORDER BY post_id LIMIT 2"
    r = runner.invoke(app, ["query", str(run_dir), sql], env={"COLUMNS": str(width)})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert max(len(x) for x in lines) <= width  # never cropped at the terminal's edge
    box = [x for x in lines if x.startswith(("┏", "┃", "┡", "│", "└"))]
    assert box and all(x.endswith(("┓", "┃", "┩", "│", "┘")) for x in box)
    assert "parent_…" not in r.output and "truncat…" not in r.output  # names fold, never cut
    if width >= 160:  # wide enough: every name on one line, every value whole, no note
        for name in ("post_id", "parent_id", "truncated", "sanitized"):
            assert name in box[1], name
        assert "…" not in r.output and "cut to" not in r.output
    else:  # too narrow for every value: a cut is marked, and the note says how to get it whole
        assert "--format csv prints every value whole" in " ".join(r.output.split())


def test_result_tables_never_split_a_number(monkeypatch):
    from rich.console import Console

    import socium.cli.app as M  # where _result_table reads the console

    cells = [["LLM (random, smoke)", "0.667", "[0.280, 0.803]"], ["IC null", "0.541", "[0.000, 1.266]"]]
    for width, whole in ((120, True), (24, False)):
        con = Console(width=width, record=True, file=io.StringIO())
        monkeypatch.setattr(M, "console", con)
        con.print(M._result_table(["source", "P(next +)", "95% CI"], cells, "t", wider="see the HTML"))
        text = con.export_text()
        if whole:  # every number on one line, as the HTML table prints it
            assert all(v in text for v in ("0.667", "[0.280, 0.803]", "[0.000, 1.266]")) and "cut to" not in text
        else:  # a number that does not fit ends in '…' (never '0.66' over '7'), and the caption says so
            assert "see the HTML" in " ".join(text.split())
            assert not any(ln.rstrip(" │").endswith(("0.66", "0.54")) for ln in text.splitlines())


def test_query_writes_csv_json_parquet(run_dir, tmp_path):
    sql = "SELECT post_id, content, step FROM posts ORDER BY post_id"
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    want = con.execute(sql).fetchall()
    con.close()
    assert len(want) > 3
    for fmt in ("csv", "json", "parquet"):
        out = tmp_path / f"q.{fmt}"
        r = runner.invoke(app, ["query", str(run_dir), sql, "--format", fmt, "--out", str(out), "--limit", "1"])
        assert r.exit_code == 0, r.output
        assert f"wrote {len(want)} rows" in r.output  # --out writes every row, not --limit
        if fmt == "csv":
            with out.open(newline="", encoding="utf-8") as fh:
                rows = list(csv.reader(fh))
            assert rows[0] == ["post_id", "content", "step"]
            got = [(int(a), b, int(c)) for a, b, c in rows[1:]]
        elif fmt == "json":
            got = [(d["post_id"], d["content"], d["step"]) for d in json.loads(out.read_text())]
        else:
            got = [tuple(r.values()) for r in pq.read_table(out).to_pylist()]
        assert got == want, fmt
    r = runner.invoke(app, ["query", str(run_dir), sql, "--format", "json", "--limit", "2"])
    assert r.exit_code == 0
    printed = json.loads(r.stdout)
    assert [d["post_id"] for d in printed] == [w[0] for w in want[:2]]
    r = runner.invoke(app, ["query", str(run_dir), sql, "--format", "parquet"])
    assert r.exit_code == 2 and "--out" in r.output
    r = runner.invoke(app, ["query", str(run_dir), sql, "--format", "xml"])
    assert r.exit_code == 2


def test_config_reference_documents_every_key():
    from socium.config.doc import sections, undocumented
    from socium.config.experiment import ExperimentConfig

    assert undocumented(ExperimentConfig) == []
    r = runner.invoke(app, ["config-schema", "--markdown"])
    assert r.exit_code == 0
    text = r.output
    for prefix, model in sections(ExperimentConfig):
        for name in model.model_fields:
            row = next((ln for ln in text.splitlines() if ln.startswith(f"| `{prefix}{name}` |")), None)
            assert row is not None, prefix + name
            assert row.count("|") >= 5 and row.rstrip(" |").split("|")[-1].strip(), prefix + name
    assert "| `llm.backend` |" in text and "| `platform.max_post_chars` | int | `2000` |" in text
    assert "## `llm_agents`" in text


def test_undocumented_finds_a_missing_description():
    from pydantic import BaseModel, Field

    from socium.config.doc import undocumented

    class Inner(BaseModel):
        a: int = Field(1, description="documented")
        b: int = 2

    class Outer(BaseModel):
        inner: Inner = Field(default_factory=Inner)

    assert undocumented(Outer) == ["inner", "inner.b"]


def test_data_command_and_env_var(tmp_path, monkeypatch):
    from socium.data.datadir import data_dir

    (tmp_path / "sotopia").mkdir()
    monkeypatch.setenv("SOCIUM_DATA_DIR", str(tmp_path))
    assert data_dir() == tmp_path

    def sotopia_found() -> bool:
        r = runner.invoke(app, ["data"], env={"COLUMNS": "200", "SOCIUM_DATA_DIR": str(tmp_path)})
        assert r.exit_code == 0 and str(tmp_path) in r.output
        line = next(ln for ln in r.output.splitlines() if ln.strip("│ ").startswith("sotopia "))
        return line.rstrip(" │").endswith("yes")

    assert not sotopia_found()  # an empty folder (a failed fetch's) is not data (issue 36.8)
    for name in ("environment_profiles", "agent_profiles", "relationship_profiles", "env_agent_combo_storages"):
        (tmp_path / "sotopia" / f"{name}.jsonl").write_text("{}\n")
    assert sotopia_found()
    r = runner.invoke(app, ["data"], env={"COLUMNS": "200", "SOCIUM_DATA_DIR": str(tmp_path)})
    line = next(ln for ln in r.output.splitlines() if "twitter15" in ln)
    assert line.rstrip(" │").endswith("no")
    r = runner.invoke(app, ["data"], env={"COLUMNS": "100", "SOCIUM_DATA_DIR": str(tmp_path)})
    assert r.exit_code == 0 and "…" not in r.output  # a narrow terminal folds the paths, never cuts them


def test_no_hard_coded_absolute_data_paths():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    needle = "/".join(("", "work", ""))  # the workspace root this project was written in
    offenders = [
        str(p)
        for sub in ("src", "tests", "examples")
        for p in (root / sub).rglob("*")
        if p.suffix in (".py", ".yaml") and needle in p.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_a_bad_experiment_spec_fails_before_any_progress_display(tmp_path):
    r = runner.invoke(app, ["experiment", "herding", str(tmp_path / "missing.yaml")], env={"COLUMNS": "160"})
    assert r.exit_code == 2 and "config file not found" in r.output
    assert "runs" not in r.output and "0/?" not in r.output  # the error alone, no empty progress line before it
    (tmp_path / "h.yaml").write_text(yaml.safe_dump({"experiment": "herding", "bogus": 1}))
    r = runner.invoke(app, ["experiment", "herding", str(tmp_path / "h.yaml")], env={"COLUMNS": "160"})
    assert r.exit_code == 2 and "bogus" in r.output and "0/?" not in r.output
