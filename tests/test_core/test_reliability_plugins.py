"""Issue 31, build 2: nothing read from a trace imports code.

On 1969b96 ``socium run --resume --out RUN`` (no config) imported the module named by the trace's
``recsys.kind`` -- its top-level code ran -- before the class check refused it: a planted ``this:X``
printed the Zen of Python. A resumed run's plugin now comes only from the user's own config.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import yaml

from socium.config.loading import config_from_dict
from socium.core.plugins import recorded_plugins

SRC = Path(__file__).resolve().parents[2] / "src"
BASE = {"name": "p", "steps": 2, "population": {"n_agents": 30}, "seed_posts": [{"author": 0, "content": "x"}]}

# Runs the CLI in a fresh interpreter and reports whether the planted module was imported.
PROBE = textwrap.dedent(
    """
    import sys
    from typer.testing import CliRunner
    from socium.cli.main import app
    r = CliRunner().invoke(app, sys.argv[2:])
    print("EXIT", r.exit_code)
    print("OUTPUT", r.output.replace("\\n", " "))
    print("IMPORTED", sys.argv[1] in sys.modules)
    """
)


def _probe(module: str, args: list[str], cwd: Path, extra_path: str = "") -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(SRC), extra_path) if p)}
    r = subprocess.run(
        [sys.executable, "-c", PROBE, module, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )
    got = dict(
        line.split(" ", 1) for line in r.stdout.splitlines() if line.split(" ", 1)[0] in ("EXIT", "OUTPUT", "IMPORTED")
    )
    assert "IMPORTED" in got, r.stdout + r.stderr
    return got


def _run_cli(args: list[str], cwd: Path, extra_path: str = "") -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(SRC), extra_path) if p)}
    subprocess.run(
        [sys.executable, "-m", "socium.cli", "run", *args, "--quiet"], cwd=cwd, check=True, env=env, capture_output=True
    )


def _plant(db: Path, kind: str) -> None:
    con = duckdb.connect(str(db))
    planted = json.loads(con.execute("SELECT config FROM runs").fetchone()[0])
    planted["recsys"] = {**planted["recsys"], "kind": kind}
    forged = config_from_dict(planted)  # validating a config imports nothing
    con.execute("UPDATE runs SET config = ?, config_hash = ?", [forged.canonical_json(), forged.config_hash()])
    con.close()


def test_planted_module_path_in_a_trace_is_never_imported(tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**BASE, "steps": 3}))
    out = tmp_path / "run"
    _run_cli([str(cfg), "--out", str(out), "--steps", "1"], tmp_path)
    _plant(out / "trace.duckdb", "this:X")
    got = _probe("this", ["run", "--resume", "--out", str(out), "--quiet"], tmp_path)
    assert got["IMPORTED"] == "False"  # `import this` prints the Zen of Python: its top-level code never ran
    assert got["EXIT"] != "0" and "recsys.kind 'this:X'" in got["OUTPUT"] and "CONFIG --resume" in got["OUTPUT"]
    assert "Zen of Python" not in got["OUTPUT"]


def test_a_users_plugin_resumes_when_the_user_gives_the_config_again(tmp_path) -> None:
    (tmp_path / "myrecs31.py").write_text(
        "from socium.recsys.chronological import ChronologicalRecommender\n\n"
        "class Mine(ChronologicalRecommender):\n    pass\n"
    )
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**BASE, "steps": 3, "recsys": {"kind": "myrecs31:Mine"}}))
    out = tmp_path / "run"
    _run_cli([str(cfg), "--out", str(out), "--steps", "1"], tmp_path, str(tmp_path))
    refused = _probe("myrecs31", ["run", "--resume", "--out", str(out), "--quiet"], tmp_path, str(tmp_path))
    assert refused["IMPORTED"] == "False" and refused["EXIT"] != "0", refused
    again = _probe("myrecs31", ["run", str(cfg), "--resume", "--out", str(out), "--quiet"], tmp_path, str(tmp_path))
    assert again["EXIT"] == "0" and again["IMPORTED"] == "True", again
    con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
    assert con.execute("SELECT max(step) FROM steps").fetchone()[0] == 2
    con.close()


def test_recorded_plugins_names_only_dotted_paths() -> None:
    assert recorded_plugins({"recsys": {"kind": "x"}, "moderation": {"kind": "fact_check"}}) == []
    assert recorded_plugins({"recsys": {"kind": "a.b:C"}, "moderation": {"kind": "m.Strategy"}}) == [
        "recsys.kind 'a.b:C'",
        "moderation.kind 'm.Strategy'",
    ]
    assert recorded_plugins({"recsys": ["not", "a", "mapping"]}) == []
