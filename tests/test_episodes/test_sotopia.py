"""SOTOPIA profile loading, round-tripping and visibility rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SHARED_DATA
from socium.episodes.sotopia import (
    CharacterProfile,
    EnvAgentCombo,
    EnvironmentProfile,
    RelationshipProfile,
    RelationshipType,
    SotopiaData,
    load_jsonl,
    private_view,
    public_view,
    render_for,
)
from socium.errors import InputFileError, SociumError

DATA = SHARED_DATA / "sotopia"
needs_data = pytest.mark.skipif(not (DATA / "agent_profiles.jsonl").exists(), reason="SOTOPIA data not available")

FILES = {
    "agent_profiles.jsonl": CharacterProfile,
    "environment_profiles.jsonl": EnvironmentProfile,
    "relationship_profiles.jsonl": RelationshipProfile,
    "env_agent_combo_storages.jsonl": EnvAgentCombo,
}


@needs_data
def test_real_files_load_with_published_counts() -> None:
    data = SotopiaData.load(DATA)
    assert len(data.environments) == 90
    assert len(data.characters) == 40
    assert len(data.relationships) == 120
    assert len(data.combos) == 450
    assert len(data.hard_env_ids) == 14
    assert all(len(c.agent_ids) == 2 for c in data.combos)
    assert {e.relationship for e in data.environments.values()} <= set(RelationshipType)


@needs_data
@pytest.mark.parametrize("name", sorted(FILES))
def test_real_records_round_trip_exactly(name: str) -> None:
    model = FILES[name]
    lines = [ln for ln in (DATA / name).read_text(encoding="utf-8").splitlines() if ln.strip()]
    for line in lines:
        original = json.loads(line)
        record = model.model_validate(original).to_record()
        assert record == original
        assert model.model_validate(json.loads(json.dumps(record))).to_record() == original


@needs_data
def test_relationship_codes_are_typed() -> None:
    env = next(iter(SotopiaData.load(DATA).environments.values()))
    assert isinstance(env.relationship, RelationshipType)
    assert env.to_record()["relationship"] == str(int(env.relationship))


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "sotopia"
    folder.mkdir(parents=True)
    for name in FILES:  # copy bytes, not the read-only mode bits of the shared data
        (folder / name).write_bytes((DATA / name).read_bytes())
    return folder


def _replace_line(path: Path, lineno: int, text: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[lineno - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@needs_data
def test_bad_json_line_names_file_and_line(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    path = folder / "environment_profiles.jsonl"
    _replace_line(path, 7, '{"env_id": "x", "scenario": ')
    with pytest.raises(InputFileError) as err:
        SotopiaData.load(folder)
    assert err.value.line == 7
    assert "environment_profiles.jsonl:7" in str(err.value)
    assert isinstance(err.value, SociumError)


@needs_data
def test_invalid_record_names_file_line_and_field(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    path = folder / "relationship_profiles.jsonl"
    record = json.loads(path.read_text(encoding="utf-8").splitlines()[2])
    record["relationship"] = "9"
    _replace_line(path, 3, json.dumps(record))
    with pytest.raises(InputFileError) as err:
        SotopiaData.load(folder)
    assert err.value.line == 3 and "relationship" in err.value.reason


@needs_data
def test_dangling_reference_and_duplicate_are_errors(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    path = folder / "env_agent_combo_storages.jsonl"
    record = json.loads(path.read_text(encoding="utf-8").splitlines()[4])
    record["env_id"] = "NOPE"
    _replace_line(path, 5, json.dumps(record))
    with pytest.raises(InputFileError, match="unknown env_id") as err:
        SotopiaData.load(folder)
    assert err.value.line == 5

    folder2 = _copy(tmp_path / "b")
    chars = folder2 / "agent_profiles.jsonl"
    first = chars.read_text(encoding="utf-8").splitlines()[0]
    _replace_line(chars, 2, first)
    with pytest.raises(InputFileError, match="duplicate agent_id") as err2:
        SotopiaData.load(folder2)
    assert err2.value.line == 2


def test_missing_file_and_non_object_line(tmp_path: Path) -> None:
    with pytest.raises(InputFileError) as err:
        load_jsonl(tmp_path / "absent.jsonl", CharacterProfile)
    assert err.value.line is None
    path = tmp_path / "x.jsonl"
    path.write_text('{"agent_id": "a", "first_name": "A"}\n\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(InputFileError) as err2:
        load_jsonl(path, CharacterProfile)
    assert err2.value.line == 3


def test_unknown_keys_are_kept() -> None:
    record = {"agent_id": "a1", "first_name": "Ann", "age": 30, "model_id": "m", "favourite_colour": "green"}
    assert CharacterProfile.model_validate(record).to_record() == record
    assert CharacterProfile.model_validate({"pk": "a1", "first_name": "Ann"}).pk == "a1"


@pytest.mark.parametrize("value,expected", [("3", 3), (3, 3), ("friend", 3), ("family_member", 5), (0, 0)])
def test_relationship_accepts_code_and_name(value: object, expected: int) -> None:
    env = EnvironmentProfile(env_id="e", scenario="s", agent_goals=["g0", "g1"], relationship=value)
    assert env.relationship == expected


@pytest.mark.parametrize("value", ["6", -1, "enemy", True])
def test_relationship_rejects_others(value: object) -> None:
    with pytest.raises(ValueError):
        EnvironmentProfile(env_id="e", scenario="s", agent_goals=["g0", "g1"], relationship=value)


MARKED = (
    "Start. <p viewer='agent_0'>ZERO</p> <p viewer=\"agent_1\">ONE</p> "
    "<p viewer='environment'>ENV</p> (<extra_info>Extra: X<strategy_hint>HINT</strategy_hint></extra_info>)"
)


def test_render_for_keeps_only_the_viewers_text() -> None:
    a0 = render_for(MARKED, "agent_0")
    assert "ZERO" in a0 and "ONE" not in a0 and "ENV" not in a0
    assert "Extra: X" in a0 and "HINT" in a0 and "<" not in a0
    a1 = render_for(MARKED, "agent_1")
    assert "ONE" in a1 and "ZERO" not in a1 and "ENV" not in a1
    omni = render_for(MARKED, "omniscient")
    assert "ZERO" in omni and "ONE" in omni and "ENV" not in omni
    env = render_for(MARKED, "environment")
    assert all(s in env for s in ("ZERO", "ONE", "ENV", "HINT"))


def test_render_for_environment_text_only_when_flagged() -> None:
    for viewer in ("agent_0", "agent_1", "omniscient"):
        assert "ENV" in render_for(MARKED, viewer, include_environment=True)  # type: ignore[arg-type]
        assert "ENV" not in render_for(MARKED, viewer)  # type: ignore[arg-type]


def test_render_for_edge_cases() -> None:
    assert render_for("a < b and c > d", "agent_0") == "a < b and c > d"
    assert render_for("<root viewer='agent_1'>hidden</root> shown", "agent_0") == "shown"
    assert render_for("x <p viewer='agent_1'>never closed", "agent_0") == "x"
    assert render_for("keep </p> this", "agent_0") == "keep  this"
    assert "HINT" not in render_for(MARKED, "agent_0", hide_tags={"strategy_hint"})


@needs_data
def test_real_mutual_friend_answer_is_environment_only() -> None:
    data = SotopiaData.load(DATA)
    marked = [e for e in data.environments.values() if "viewer" in e.scenario]
    assert len(marked) == 10
    for e in marked:
        answer = e.scenario.split(">", 1)[1].split("<", 1)[0]
        assert answer not in render_for(e.scenario, "agent_0")
        assert answer in render_for(e.scenario, "environment")


def _char() -> CharacterProfile:
    return CharacterProfile(
        agent_id="c",
        first_name="Ada",
        last_name="Lane",
        age=40,
        occupation="Pilot",
        gender="Woman",
        gender_pronoun="She/her",
        public_info="PUBLICINFO",
        personality_and_values="PERSONALITY",
        secret="SECRETX",
        big_five="B5",
    )


def test_public_view_follows_sotopia_get_bio() -> None:
    c = _char()
    assert public_view(c, RelationshipType.STRANGER) == ""
    assert public_view(c, RelationshipType.KNOW_BY_NAME) == "Ada Lane"
    acq = public_view(c, RelationshipType.ACQUAINTANCE)
    assert "PUBLICINFO" in acq and "40-year-old female pilot" in acq and "PERSONALITY" not in acq
    for level in (3, 4, 5):
        assert "PERSONALITY" in public_view(c, level)
    assert all("SECRETX" not in public_view(c, level) for level in range(6))


def test_private_view_includes_secret() -> None:
    c = _char()
    assert "SECRETX" in private_view(c) and "PERSONALITY" in private_view(c)
    assert "B5" not in private_view(c) and "B5" in private_view(c, detailed=True)
