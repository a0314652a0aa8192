"""Issue 11.7: each bad input gives one ``error:`` line naming the key or file, exit 2, nothing written.

And a corrupt trace given to ``card``, ``report``, ``query`` or ``run --resume`` is a clear error.
"""

import gzip
import os
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app

runner = CliRunner()
BASE = {"name": "bad", "steps": 2, "population": {"n_agents": 30}}
BOMB = (
    "\n".join(
        ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    )
    + "\n"
)


def _yaml(data: dict) -> str:
    return yaml.safe_dump({**BASE, **data})


def _corrupt_gzip(tmp: Path) -> str:
    p = tmp / "edges.txt.gz"
    good = gzip.compress(b"0 1\n1 2\n" * 200)
    p.write_bytes(good[:20] + b"\x00garbage" * 20 + good[-8:])
    return str(p)


def _not_a_trace(tmp: Path) -> str:
    d = tmp / "notrace"
    d.mkdir()
    (d / "trace.duckdb").write_bytes(b"this is not a database" * 100)
    return str(d)


# (case id, config text (may use {tmp}), extra CLI args, what the error line must name)
CASES = [
    ("alias-bomb", lambda t: BOMB + _yaml({}), [], "YAML expands to"),
    ("recursive-alias", lambda t: "name: &n [1, *n]\n", [], "recursive YAML alias"),
    ("not-utf8", lambda t: "name: caf\xe9\n".encode("latin-1"), [], "not UTF-8"),
    ("date-for-int", lambda t: _yaml({}) + "seed: 2024-01-01\n", [], "seed: '2024-01-01'"),
    ("seed-over-64-bits", lambda t: _yaml({"seed": 2**70}), [], "seed:"),
    ("non-finite-float", lambda t: _yaml({}) + "step_minutes: .inf\n", [], "step_minutes: inf is not a finite number"),
    ("nan-in-params", lambda t: _yaml({}) + "recsys: {params: {x: .nan}}\n", [], "recsys.params.x"),
    (
        "lone-surrogate",
        lambda t: (
            yaml.safe_dump({k: v for k, v in BASE.items() if k != "population"})
            + 'population: {n_agents: 30, goals: ["\\ud800"]}\n'
        ),
        [],
        "population.goals[0]",
    ),
    ("too-many-agents", lambda t: _yaml({"population": {"n_agents": 10**13}}), [], "population.n_agents"),
    (
        "device-as-population",
        lambda t: _yaml({"population": {"source": "oasis_csv", "path": "/dev/zero"}}),
        [],
        "/dev/zero: is not a regular file",
    ),
    (
        "dir-as-population",
        lambda t: _yaml({"population": {"source": "reddit_json", "path": str(t)}}),
        [],
        "is a directory",
    ),
    ("device-as-graph", lambda t: _yaml({"graph": {"kind": "edgelist", "path": "/dev/urandom"}}), [], "graph.path"),
    ("corrupt-gzip", lambda t: _yaml({"graph": {"kind": "edgelist", "path": _corrupt_gzip(t)}}), [], "edges.txt.gz"),
    ("out-is-a-file", lambda t: _yaml({}), ["--out", "{tmp}/afile"], "is not a directory"),
    ("bad-ray-init", lambda t: _yaml({"executor": {"ray_init": {"num_cpu": 2}}}), [], "executor.ray_init: unknown"),
    ("replay-not-a-trace", lambda t: _yaml({"llm_agents": {"replay_from": str(t)}}), [], "llm_agents.replay_from"),
    ("replay-corrupt", lambda t: _yaml({"llm_agents": {"replay_from": _not_a_trace(t)}}), [], "not a readable"),
]


@pytest.mark.parametrize("case,make,extra,expect", CASES, ids=[c[0] for c in CASES])
def test_bad_input_one_error_line_nothing_written(tmp_path, case, make, extra, expect):
    data = make(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    (tmp_path / "afile").write_text("a file, not a directory")
    before = sorted(p.name for p in tmp_path.iterdir())
    out = tmp_path / "run"
    args = [a.replace("{tmp}", str(tmp_path)) for a in extra] or ["--out", str(out)]
    r = runner.invoke(app, ["run", str(cfg), *args, "--quiet"])
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    errors = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and expect in r.output, r.output
    assert "Traceback" not in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    assert (tmp_path / "afile").read_text() == "a file, not a directory"


def _finished_run(tmp_path) -> Path:
    cfg = tmp_path / "ok.yaml"
    cfg.write_text(_yaml({"seed_posts": [{"author": 0, "content": "hi"}]}))
    out = tmp_path / "good"
    assert runner.invoke(app, ["run", str(cfg), "--out", str(out), "--quiet"]).exit_code == 0
    return out


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty-db"])
def test_corrupt_trace_is_a_clear_error_everywhere(tmp_path, damage):
    out = _finished_run(tmp_path)
    db = out / "trace.duckdb"
    if damage == "garbage":
        db.write_bytes(os.urandom(1 << 16))
    elif damage == "truncated":
        db.write_bytes(db.read_bytes()[: 3 * 4096 + 100])
    else:
        import duckdb

        db.unlink()
        duckdb.connect(str(db)).close()  # a valid DuckDB file with no socium tables
    resume_with_config = ["run", str(tmp_path / "ok.yaml"), "--resume", "--out", str(out), "--quiet"]
    for args in (
        ["card", str(out)],
        ["report", str(out)],
        ["query", str(out), "SELECT count(*) FROM posts"],
        ["run", "--resume", "--out", str(out), "--quiet"],
        resume_with_config,
    ):
        r = runner.invoke(app, args)
        if damage == "empty-db" and args is resume_with_config:  # no committed set-up: the run starts (11.2)
            assert r.exit_code == 0 and "starts from step 0" in r.output, r.output
            continue
        assert r.exit_code == 2, (args, r.exit_code, r.output, r.exception)
        assert re.search(r"^error: .*(trace|set-up|resume|query failed)", r.output, re.M), (args, r.output)
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exception)


def _tree_file(path: Path, extra: str = "") -> Path:
    """A small Ma et al. tree; ``extra`` is inserted as its fourth line."""
    lines = ["['ROOT', 'ROOT', '0.0']->['a', '1', '0.0']"]
    lines += [f"['a', '1', '0.0']->['u{i}', '1', '{1.5 * i:.1f}']" for i in range(1, 8)]
    lines += [f"['u1', '1', '1.5']->['v{i}', '1', '{3.0 + i:.1f}']" for i in range(1, 5)]
    if extra:
        lines.insert(3, extra)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_fit_on_one_tree_file_is_not_a_traceback(tmp_path):
    """One tree makes the source's fan-out constant: the mixture fit's linear solve was singular."""
    out = tmp_path / "t.json"
    tree = str(_tree_file(tmp_path / "7.txt"))
    r = runner.invoke(app, ["fit", "propagation", "--train", tree, "--out", str(out), "--bootstrap", "0"])
    assert r.exit_code == 0, (r.output, r.exception)
    assert out.is_file()


@pytest.mark.parametrize("line", ["this is a broken line", "['a', '1', '0.0']->['z', '1', 'soon']"])
def test_broken_line_in_own_tree_file_names_file_and_line(tmp_path, line):
    """The user's own tree files (fit --train, a propagation spec's tree_files) were parsed leniently:
    a broken line vanished without a word and the fit or experiment ran on what was left."""
    trees = tmp_path / "trees"
    trees.mkdir()
    _tree_file(trees / "7.txt")
    bad = _tree_file(trees / "8.txt", line)
    r = runner.invoke(app, ["fit", "propagation", "--train", str(trees), "--out", str(tmp_path / "t.json")])
    assert r.exit_code == 2 and "8.txt:4: " in r.output and "Traceback" not in r.output, r.output
    assert not (tmp_path / "t.json").exists()
    spec = tmp_path / "p.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "experiment": "propagation",
                "tree_files": [str(bad)],
                "max_users": 4,
                "minutes": 10,
                "base": {"step_minutes": 5},
            }
        )
    )
    r = runner.invoke(app, ["experiment", "propagation", str(spec), "--out", str(tmp_path / "e"), "--quiet"])
    assert r.exit_code == 2 and f"{bad}:4: " in r.output, r.output
    assert not (tmp_path / "e").exists()


def test_moved_experiment_folder_names_the_key_that_differs(tmp_path):
    """Rerunning an experiment into a copied folder refused with a bare 'different config': the key
    (here the population file's path, which moved with the folder) is now named."""
    import shutil

    spec = tmp_path / "p.yaml"
    tree = _tree_file(tmp_path / "7.txt")
    spec.write_text(
        yaml.safe_dump(
            {"experiment": "propagation", "tree_files": [str(tree)], "max_users": 4, "minutes": 10}
            | {"base": {"step_minutes": 5}, "source_texts": {"7": "hello"}}
        )
    )
    args = ["experiment", "propagation", str(spec), "--quiet", "--no-report", "--out"]
    assert runner.invoke(app, [*args, str(tmp_path / "a")]).exit_code == 0
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    r = runner.invoke(app, [*args, str(tmp_path / "b")])
    assert r.exit_code == 2 and "population.path:" in r.output and "--force" in r.output, r.output


def test_corrupt_episodes_db_and_bad_export_path_are_one_error_line(tmp_path):
    """episodes, group-episodes and export-sft opened their DuckDB files bare (duckdb's IOException
    as a traceback), and export-sft --out DIR died on IsADirectoryError; the corrupt file is kept."""
    cfg = tmp_path / "e.yaml"
    cfg.write_text(
        yaml.safe_dump({"name": "e", "llm": {"backend": "random"}, "modes": ["script"], "tasks": {"mutual_friend": 1}})
    )
    good = tmp_path / "good"
    assert runner.invoke(app, ["episodes", str(cfg), "--out", str(good), "--quiet"]).exit_code == 0
    r = runner.invoke(app, ["export-sft", str(good), "--out", str(good)])
    assert r.exit_code == 2 and "is a directory" in r.output, r.output
    garbage = b"not a database" * 300
    for db, args in (
        ("episodes.duckdb", ["episodes", str(cfg), "--quiet"]),
        ("episodes.duckdb", ["export-sft"]),
        ("group_episodes.duckdb", ["group-episodes", str(tmp_path / "empty.yaml")]),
    ):
        (tmp_path / "empty.yaml").write_text("{}\n")
        bad = tmp_path / f"bad-{args[0]}"
        bad.mkdir()
        (bad / db).write_bytes(garbage)
        full = [*args, str(bad)] if args == ["export-sft"] else [*args, "--out", str(bad)]
        r = runner.invoke(app, full)
        assert r.exit_code == 2, (full, r.output, r.exception)
        assert re.search(rf"^error: .*{db}: not a readable", r.output, re.M), r.output
        assert (bad / db).read_bytes() == garbage  # nothing already there is lost


@pytest.mark.parametrize("text", ['{"experiment": "propaga', "[1, 2]\n", "{}\n"])
def test_damaged_results_json_is_one_error_line(tmp_path, text):
    """report and seeds read results.json bare: JSONDecodeError / AttributeError / KeyError tracebacks;
    report read sensitivity.json the same way."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "sensitivity.json").write_text(text)
    r = runner.invoke(app, ["report", str(tmp_path / "s")])
    assert r.exit_code == 2 and re.search(r"^error: .*sensitivity\.json", r.output, re.M), (r.output, r.exception)
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "results.json").write_text(text)
    for args in (["report", str(tmp_path / "a")], ["seeds", str(tmp_path / "a"), str(tmp_path / "b")]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (args, r.output, r.exception)
        assert re.search(r"^error: .*results\.json", r.output, re.M), r.output


def test_interview_backend_typo_and_validate_out_file(tmp_path):
    """interview --backend banana was pydantic's ValidationError traceback; validate --out FILE was
    FileExistsError. Both are one error line now, and the file given as --out is untouched."""
    out = _finished_run(tmp_path)
    r = runner.invoke(app, ["interview", str(out), "hi", "--agent", "0", "--backend", "banana"])
    assert r.exit_code == 2 and "llm.backend" in r.output and "banana" in r.output, (r.output, r.exception)
    before = (out / "config.json").read_bytes()
    r = runner.invoke(app, ["validate", str(out), "--out", str(out / "config.json")])
    assert r.exit_code == 2 and "is a file" in r.output, (r.output, r.exception)
    assert (out / "config.json").read_bytes() == before
    (out / "report").write_text("mine")  # report's folder name taken by a file: refused, file kept
    for args in (["report", str(out)], ["validate", str(out)]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2 and "report: is a file" in r.output, (args, r.output, r.exception)
    assert (out / "report").read_text() == "mine"


@pytest.mark.parametrize("where", ["file", "flag"])
@pytest.mark.parametrize("value", ["abc", "0"])
def test_sweep_parallel_must_be_a_positive_integer(tmp_path, where, value):
    """'parallel: abc' was int()'s ValueError traceback; --parallel 0 silently became 2."""
    (tmp_path / "r.yaml").write_text(_yaml({}))
    body = {"base": "r.yaml", "grid": {"steps": [1]}, "seeds": [1]}
    if where == "file":
        body["parallel"] = value
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(body).replace("'0'", "0"))
    flag = ["--parallel", value] if where == "flag" else []
    r = runner.invoke(app, ["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"), "--quiet", *flag])
    assert r.exit_code == 2, (r.output, r.exception)
    assert "parallel" in r.output and "Traceback" not in r.output, r.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", ["../../escape", "a/b", "", "nul\x00byte"])
def test_name_that_cannot_be_the_default_folder(tmp_path, monkeypatch, name):
    """Without --out a run goes to runs/<name>-seed<seed>: 'name: ../../x' wrote outside runs/, '' made
    'runs/-seed0', a NUL was 'ValueError: embedded null byte'. With --out any label still runs."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({**BASE, "name": name}))
    r = runner.invoke(app, ["run", "c.yaml", "--quiet"])
    assert r.exit_code == 2 and "change name or pass --out" in r.output, (r.output, r.exception)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]
    if "\x00" not in name:
        assert runner.invoke(app, ["run", "c.yaml", "--quiet", "--out", "o"]).exit_code == 0


def test_compare_spec_without_experiment_and_negative_bootstrap(tmp_path):
    """compare on a spec with no 'experiment:' said "experiment: None is not one of ..."; fit
    --bootstrap -5 was taken as 0 without a word."""
    (tmp_path / "s.yaml").write_text("name: c\n")
    r = runner.invoke(app, ["experiment", "compare", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "experiment: missing" in r.output and "None" not in r.output, r.output
    tree = str(_tree_file(tmp_path / "7.txt"))
    fit = ["fit", "propagation", "--train", tree, "--out", str(tmp_path / "t.json")]
    r = runner.invoke(app, [*fit, "--bootstrap", "-5"])
    assert r.exit_code == 2 and "--bootstrap" in r.output, r.output
    assert not (tmp_path / "t.json").exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "text,expect",
    [
        ("[1, 2]\n", "expected {delay"),
        ('{"delay": {"family": "lognormal", "mu": 1, "sigma": 1}, "b_author": "abc"}', "b_author: expected a number"),
        ('{"delay": {"family": "lognormal", "mu": 1, "sigma": 1}, "meta": [1]}', "meta: expected a mapping"),
    ],
)
def test_hand_edited_timing_params_file(tmp_path, text, expect):
    """timing.params_file holding a JSON list was data.get's AttributeError traceback; a string slope
    was float()'s message without the key."""
    (tmp_path / "t.json").write_text(text)
    cfg = _yaml({"timing": {"kind": "exposure", "params_file": str(tmp_path / "t.json")}})
    (tmp_path / "c.yaml").write_text(cfg)
    r = runner.invoke(app, ["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "o"), "--quiet"])
    assert r.exit_code == 2 and "t.json" in r.output and expect in r.output, (r.output, r.exception)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("sql", ["", "   ", "/* only a comment */"])
def test_query_with_no_statement(tmp_path, sql):
    """DuckDB returns no cursor for empty SQL: query died on 'NoneType' has no attribute 'description'."""
    out = _finished_run(tmp_path)
    r = runner.invoke(app, ["query", str(out), sql])
    assert r.exit_code == 2 and "no statement" in r.output, (r.output, r.exception)


def test_query_out_a_directory_or_unwritable(tmp_path):
    """query --out DIR was IsADirectoryError, --out under a missing unmakeable folder an OSError traceback."""
    out = _finished_run(tmp_path)
    for dest in (str(out), "/proc/no/such/q.csv"):
        r = runner.invoke(app, ["query", str(out), "SELECT 1", "--out", dest])
        assert r.exit_code == 2 and f"--out {dest}:" in r.output, (r.output, r.exception)


def test_out_paths_of_the_wrong_kind(tmp_path):
    """fit --out DIR was IsADirectoryError; experiment / sweep --out FILE were NotADirectoryError and
    FileExistsError tracebacks. Each is one error line naming --out, and the file is kept."""
    (tmp_path / "afile").write_text("mine")
    (tmp_path / "adir").mkdir()
    tree = str(_tree_file(tmp_path / "7.txt"))
    (tmp_path / "r.yaml").write_text(_yaml({}))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"base": "r.yaml", "grid": {"steps": [1]}, "seeds": [1]}))
    (tmp_path / "p.yaml").write_text(
        yaml.safe_dump({"experiment": "propagation", "tree_files": [tree], "max_users": 4, "minutes": 10})
    )
    afile, adir = str(tmp_path / "afile"), str(tmp_path / "adir")
    for args, dest in (
        (["fit", "propagation", "--train", tree, "--bootstrap", "0", "--out", adir], adir),
        (["experiment", "propagation", str(tmp_path / "p.yaml"), "--quiet", "--out", afile], afile),
        (["sweep", str(tmp_path / "s.yaml"), "--quiet", "--out", afile], afile),
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 2 and f"--out {dest}:" in r.output, (args, r.output, r.exception)
    assert (tmp_path / "afile").read_text() == "mine" and not any((tmp_path / "adir").iterdir())


@pytest.mark.parametrize(
    "url", ["http://[::1/v1", "http://127.0.0.1:99999/v1", "http://localhost:8000o/v1", "http:///v1"]
)
def test_malformed_server_url(tmp_path, url):
    """A typo in llm.base_urls' port or brackets was urllib's ValueError traceback at the first request."""
    llm = {"backend": "openai", "base_urls": [url], "model": "m", "retries": 0}
    (tmp_path / "c.yaml").write_text(_yaml({"policy": {"kind": "llm"}, "llm": llm}))
    r = runner.invoke(app, ["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "o"), "--quiet"])
    assert r.exit_code == 2 and "llm.base_urls" in r.output and url in r.output, (r.output, r.exception)
    assert not (tmp_path / "o").exists()
