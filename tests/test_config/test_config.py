import pytest

from socium.config.loading import config_from_dict, load_config
from socium.errors import ConfigError


def test_unknown_preset_names_key_value_and_allowed():
    with pytest.raises(ConfigError) as ei:
        config_from_dict({"platform": {"preset": "tiktok"}})
    assert "platform.preset: 'tiktok' is not one of 'x', 'reddit'" in str(ei.value)


def test_unknown_key_forbidden_with_path():
    with pytest.raises(ConfigError, match=r"graph\.colour: unknown key"):
        config_from_dict({"graph": {"colour": "red"}})


def test_range_error_names_key_and_value():
    with pytest.raises(ConfigError, match=r"steps: -3 is invalid"):
        config_from_dict({"steps": -3})


def test_path_required_for_file_sources():
    with pytest.raises(ConfigError, match="population.path is required"):
        config_from_dict({"population": {"source": "oasis_csv"}})


def test_set_overrides_are_validated_like_the_file():
    cfg = config_from_dict({}, ["recsys.k=7", "platform.preset=reddit"])
    assert cfg.recsys.k == 7 and cfg.platform.preset == "reddit"
    with pytest.raises(ConfigError, match="recsys.k"):
        config_from_dict({}, ["recsys.k=0"])
    with pytest.raises(ConfigError, match="expected key.path=value"):
        config_from_dict({}, ["recsys.k"])


def test_yaml_error_reports_file_and_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\nsteps: [1,\n  2\nseed: 3\n")
    with pytest.raises(ConfigError) as ei:
        load_config(p)
    assert str(p) in str(ei.value) and ":" in str(ei.value)


def test_yaml_is_loaded_safely(tmp_path):
    p = tmp_path / "evil.yaml"
    p.write_text("name: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)


def test_hash_is_canonical():
    a = config_from_dict({"seed": 3, "recsys": {"k": 5}})
    b = config_from_dict({"recsys": {"k": 5}, "seed": 3})
    c = config_from_dict({"seed": 4})
    assert a.config_hash() == b.config_hash() != c.config_hash()


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_examples_validate():
    from pathlib import Path

    checked = 0
    for p in sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml")):
        import yaml

        keys = set(yaml.safe_load(p.read_text()) or {})
        if keys & {"base", "experiment", "grid", "modes", "tasks"}:  # sweep/episodes/experiment specs: own loaders
            continue
        if p.stem in ("propagation", "herding", "polarisation"):  # experiment specs: their own loader
            from socium.experiments.phenomena import load_experiment

            load_experiment(p)
            continue
        load_config(p)
        checked += 1
    assert checked >= 2
