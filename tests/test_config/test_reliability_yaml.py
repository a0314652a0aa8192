"""Issue 31, item 9: duplicate YAML keys are an error naming both lines (1969b96 kept the last
of two ``policy:`` blocks without a word)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from socium.cli.main import app
from socium.config.loading import load_config, parse_yaml
from socium.errors import ConfigError

TWO_POLICIES = """name: dup
steps: 1
population: {n_agents: 20}
policy:
  kind: random
seed_posts: [{author: 0, content: hi}]
policy:
  kind: independent_cascade
"""


def test_duplicate_top_level_key_names_both_lines(tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(TWO_POLICIES)
    with pytest.raises(ConfigError, match=r"c\.yaml:7: .*duplicate key 'policy' at lines 4 and 7"):
        load_config(cfg)
    r = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "run"), "--quiet"])
    assert r.exit_code == 2 and "duplicate key 'policy'" in r.output, r.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "text, key",
    [
        ("a:\n  x: 1\n  y: 2\n  x: 3\n", "x"),
        ("a: {x: 1, x: 2}\n", "x"),
        ("l:\n  - {k: 1, k: 2}\n", "k"),
        ("1: a\n1: b\n", "1"),
    ],
)
def test_duplicates_anywhere_are_refused(text, key) -> None:
    with pytest.raises(
        ConfigError, match=f"duplicate key {key!r}|duplicate key {int(key) if key.isdigit() else key!r}"
    ):
        parse_yaml(text, "c.yaml")


def test_merge_keys_may_be_overridden() -> None:
    got = parse_yaml("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n", "c.yaml")
    assert got == {"base": {"x": 1, "y": 2}, "other": {"x": 1, "y": 3}}
