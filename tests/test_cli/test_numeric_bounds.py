"""Issue 36 items 10 and 15: numeric keys that grew to out-of-memory, booleans read as 1, a key that did nothing.

``cv.runs: 1e9`` and ``counterfactual.bootstrap: 1e12`` were accepted and ran out of memory after the
experiment folder was written; ``true`` was read as 1 for numeric keys; ``timing.condition_minute`` was
accepted (and hashed) with ``timing.kind: activation``, where it does nothing. Each is now one ``error:``
line naming the key, and nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app

runner = CliRunner()


def _tree_file(path: Path) -> Path:
    lines = ["['ROOT', 'ROOT', '0.0']->['a', '1', '0.0']"]
    lines += [f"['a', '1', '0.0']->['u{i}', '1', '{1.5 * i:.1f}']" for i in range(1, 8)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _refused(args: list[str], key: str, out: Path) -> str:
    r = runner.invoke(app, args)
    errors = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 2 and len(errors) == 1 and key in r.output, (r.exit_code, r.output, r.exception)
    assert "Traceback" not in r.output
    assert not out.exists(), sorted(p.name for p in out.rglob("*"))  # refused before anything is written
    return " ".join(r.output.split())


@pytest.mark.parametrize(
    ("extra", "key", "said"),
    [
        ({"cv": {"runs": 1e9}}, "cv.runs", "less than or equal to 1000"),
        ({"cv": {"runs": True}}, "cv.runs", "is a boolean"),
        ({"cv": {"fit_bootstrap": 10**9}}, "cv.fit_bootstrap", "less than or equal to 10000"),
        ({"observe_minutes": 3, "cv": {}, "counterfactual": {"bootstrap": 1e12}}, "counterfactual.bootstrap", "100000"),
        (
            {"observe_minutes": 3, "cv": {}, "counterfactual": {"bootstrap": True}},
            "counterfactual.bootstrap",
            "boolean",
        ),
        ({"bootstrap": 10**12}, "bootstrap", "less than or equal to 100000"),
        ({"minutes": True}, "minutes", "is a boolean"),
    ],
)
def test_propagation_spec_bounds_and_booleans(tmp_path, extra, key, said) -> None:
    spec = tmp_path / "p.yaml"
    tree = _tree_file(tmp_path / "7.txt")
    body = {"experiment": "propagation", "tree_files": [str(tree)], "max_users": 4, "minutes": 10}
    body |= {"base": {"step_minutes": 5}, "source_texts": {"7": "hello"}} | extra
    spec.write_text(yaml.safe_dump(body))
    out = tmp_path / "e"
    said_all = _refused(["experiment", "propagation", str(spec), "--out", str(out), "--quiet"], key, out)
    assert said in said_all, said_all


@pytest.mark.parametrize(
    ("section", "key", "said"),
    [
        ({"population": {"n_agents": True}}, "population.n_agents", "is a boolean"),
        ({"steps": True}, "steps", "is a boolean"),
        ({"timing": {"condition_minute": 5}}, "timing", "condition_minute applies to timing.kind 'exposure' only"),
    ],
)
def test_run_config_refuses_booleans_and_a_condition_minute_without_exposure(tmp_path, section, key, said) -> None:
    base = {
        "name": "b",
        "seed": 1,
        "steps": 2,
        "population": {"n_agents": 10},
        "policy": {"kind": "random"},
        "seed_posts": [{"author": 0, "content": "x"}],
    }
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**base, **section}))
    out = tmp_path / "run"
    said_all = _refused(["run", str(cfg), "--out", str(out), "--quiet"], key, out)
    assert said in said_all, said_all


def test_episodes_repeats_are_bounded(tmp_path) -> None:
    cfg = tmp_path / "e.yaml"
    body = {"name": "e", "llm": {"backend": "random"}, "modes": ["script"], "tasks": {"mutual_friend": 1}}
    cfg.write_text(yaml.safe_dump(body | {"repeats": 10**9}))
    out = tmp_path / "ep"
    _refused(["episodes", str(cfg), "--out", str(out)], "repeats", out)


def test_numbers_only_sees_through_optional_and_annotated() -> None:
    from typing import Annotated

    from socium.config.base import numbers_only

    assert numbers_only(int) and numbers_only(float | None) and numbers_only(Annotated[int | None, "x"])
    assert not numbers_only(bool) and not numbers_only(int | bool) and not numbers_only(str)
