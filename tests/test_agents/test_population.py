"""Population sources: synthetic generator, OASIS Twitter CSVs, OASIS Reddit persona JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DATA as DATA
from socium.agents.profiles import HOURS
from socium.agents.sources import (
    DEFAULT_ACTIVITY,
    DEFAULT_INTERESTS,
    load_oasis_csv,
    load_reddit_json,
    synthetic_population,
)
from socium.errors import ConfigError, InputFileError

OASIS = DATA / "oasis-reference"
TOPIC_CSV = OASIS / "twitter_dataset" / "anonymous_topic_200_1h" / "False_Business_0.csv"
POLAR_CSV = OASIS / "twitter_dataset" / "group_polarization" / "197_baoshou.csv"
REDDIT_JSON = OASIS / "reddit" / "user_data_36.json"

HEADER = "user_id,name,username,following_agentid_list,previous_tweets,user_char,description"


def needs(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"reference data not present: {path}")


# --- synthetic --------------------------------------------------------------------------------


def test_synthetic_same_seed_same_population() -> None:
    a = synthetic_population(500, 7, stance="bimodal")
    b = synthetic_population(500, 7, stance="bimodal")
    assert a.bios == b.bios and a.interests == b.interests
    np.testing.assert_array_equal(a.activity, b.activity)
    np.testing.assert_array_equal(a.stance, b.stance)


def test_synthetic_different_seed_differs() -> None:
    a = synthetic_population(500, 7, stance="uniform")
    b = synthetic_population(500, 8, stance="uniform")
    assert a.interests != b.interests
    assert not np.array_equal(a.activity, b.activity)
    assert not np.array_equal(a.stance, b.stance)


def test_synthetic_activity_shape_range_and_mean() -> None:
    pop = synthetic_population(20_000, 1, mean_activity=0.1)
    assert pop.activity.shape == (20_000, HOURS) and pop.activity.dtype == np.float32
    assert pop.activity.min() >= 0.0 and pop.activity.max() <= 1.0
    assert abs(float(pop.activity.mean()) - 0.1) < 0.005
    hourly = pop.activity.mean(axis=0)
    assert hourly[20] > 3 * hourly[3]  # evening busier than the small hours
    per_agent = pop.activity.mean(axis=1)
    assert per_agent.std() > 0.02  # agents differ: the lognormal factor is applied
    high = synthetic_population(5_000, 1, mean_activity=0.9)
    assert high.activity.max() == 1.0  # clipped, not above
    assert 0.6 < float(high.activity.mean()) <= 0.9


def test_synthetic_uniform_activity() -> None:
    pop = synthetic_population(100, 3, activity="uniform", mean_activity=0.25)
    np.testing.assert_allclose(pop.activity, 0.25)


def test_synthetic_interests_and_profiles() -> None:
    pop = synthetic_population(3_000, 2)
    sizes = {len(i) for i in pop.interests}
    assert sizes == {1, 2, 3}
    for topics, bio in zip(pop.interests, pop.bios):
        assert len(set(topics)) == len(topics)
        assert set(topics) <= set(DEFAULT_INTERESTS)
        assert all(t in bio for t in topics)
    assert len(set(pop.usernames)) == len(pop)
    assert np.isnan(pop.stance).all()  # stance="none"
    prof = pop.profile(42)
    assert prof.username == "user42" and prof.id == 42 and len(prof.activity) == HOURS


def test_synthetic_custom_pool_and_small_pools() -> None:
    pop = synthetic_population(200, 4, interests_pool=["a", "b"])
    assert all(1 <= len(t) <= 2 and len(set(t)) == len(t) for t in pop.interests)
    one = synthetic_population(10, 4, interests_pool=["only"])
    assert all(t == ["only"] for t in one.interests)
    assert len(synthetic_population(0, 4)) == 0


def test_synthetic_stance_kinds() -> None:
    uni = synthetic_population(5_000, 5, stance="uniform").stance
    assert uni.min() >= -1 and uni.max() <= 1 and abs(float(uni.mean())) < 0.05
    bi = synthetic_population(5_000, 5, stance="bimodal").stance
    assert np.mean(np.abs(bi) < 0.2) < 0.05  # few moderates
    assert 0.4 < np.mean(bi > 0) < 0.6


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"stance": "trimodal"}, "stance"),
        ({"activity": "bursty"}, "activity"),
        ({"mean_activity": 1.5}, "mean_activity"),
        ({"interests_pool": []}, "interests_pool"),
    ],
)
def test_synthetic_bad_options(kwargs: dict, word: str) -> None:
    with pytest.raises(ConfigError, match=word):
        synthetic_population(10, 0, **kwargs)


# --- OASIS CSV --------------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "users.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_oasis_csv_topic_file() -> None:
    needs(TOPIC_CSV)
    pop, following = load_oasis_csv(TOPIC_CSV)
    assert len(pop) == 111 and len(following) == 111
    assert sum(map(len, following)) == 85  # the README's follow-edge count
    assert pop.extra is not None and pop.extra[0]["user_id"] == 38210037
    assert pop.bios[0].startswith("Lecturer in Healthcare Marketing")
    assert following[1] == [32]
    np.testing.assert_allclose(pop.activity, DEFAULT_ACTIVITY)  # no activity column in this file


def test_oasis_csv_polarization_file() -> None:
    needs(POLAR_CSV)
    pop, following = load_oasis_csv(POLAR_CSV)
    assert len(pop) == 196
    assert sum(map(len, following)) == 1279
    assert sum(u in f for u, f in enumerate(following)) == 10  # self-follows kept as written
    assert pop.usernames[0] == "AskDotCom"
    assert "risk-taker" in pop.extra[0]["user_char"]  # persona prompt kept apart from the bio
    assert "risk-taker" not in pop.bios[0]
    assert isinstance(pop.extra[1]["previous_tweets"], list) and pop.extra[1]["previous_tweets"]
    np.testing.assert_allclose(pop.activity, 1.0)  # counts of 100 on OASIS's 0-100 scale


def test_oasis_csv_activity_normalisation(tmp_path: Path) -> None:
    probs = [0.5] * 24
    counts = [50] * 23 + [100]
    big = [10] * 23 + [400]
    rows = [f'{i},u{i},u{i},[],[],c,d,"{v}"' for i, v in enumerate((probs, counts, big))]
    p = write(tmp_path, HEADER + ",activity_level_frequency\n" + "\n".join(rows) + "\n")
    pop, _ = load_oasis_csv(p)
    np.testing.assert_allclose(pop.activity[0], 0.5)
    np.testing.assert_allclose(pop.activity[1], [0.5] * 23 + [1.0])
    np.testing.assert_allclose(pop.activity[2], [0.025] * 23 + [1.0])


def test_oasis_csv_missing_column(tmp_path: Path) -> None:
    p = write(tmp_path, "user_id,name,username,previous_tweets,user_char,description\n1,a,a,[],x,y\n")
    with pytest.raises(InputFileError) as err:
        load_oasis_csv(p)
    assert err.value.line == 1
    assert "missing column 'following_agentid_list'" in str(err.value)
    assert "users.csv:1" in str(err.value)


def test_oasis_csv_malformed_following(tmp_path: Path) -> None:
    p = write(tmp_path, HEADER + '\n1,a,a,[],[],x,y\n2,b,b,"[0, oops]",[],x,y\n')
    with pytest.raises(InputFileError) as err:
        load_oasis_csv(p)
    assert err.value.line == 3
    assert "following_agentid_list" in str(err.value)


def test_oasis_csv_literal_eval_not_eval(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    p = write(tmp_path, HEADER + f"\n1,a,a,\"__import__('pathlib').Path('{marker}').touch()\",[],x,y\n")
    with pytest.raises(InputFileError):
        load_oasis_csv(p)
    assert not marker.exists()


def test_oasis_csv_out_of_range_follow_and_line_after_multiline_field(tmp_path: Path) -> None:
    text = HEADER + '\n1,a,a,[1],[],"two\nline persona",y\n2,b,b,[5],[],x,y\n'
    p = write(tmp_path, text)
    with pytest.raises(InputFileError) as err:
        load_oasis_csv(p)
    assert err.value.line == 4  # the record starts on physical line 4
    assert "out of range" in str(err.value) and "5" in str(err.value)


def test_oasis_csv_bad_activity_and_missing_file(tmp_path: Path) -> None:
    p = write(tmp_path, HEADER + ',activity_level_frequency\n1,a,a,[],[],x,y,"[1, 2]"\n')
    with pytest.raises(InputFileError, match="activity_level_frequency"):
        load_oasis_csv(p)
    with pytest.raises(InputFileError, match="nope.csv"):
        load_oasis_csv(tmp_path / "nope.csv")


# --- Reddit JSON ------------------------------------------------------------------------------


def test_reddit_json_real_file() -> None:
    needs(REDDIT_JSON)
    pop = load_reddit_json(REDDIT_JSON)
    assert len(pop) == 36
    prof = pop.profile(0)
    assert prof.name == "James Miller" and prof.username == "millerhospitality"
    assert prof.interests == ["Economics", "Business"]
    assert prof.extra["mbti"] == "ESTJ" and prof.extra["age"] == 40 and "persona" in prof.extra
    np.testing.assert_allclose(pop.activity, DEFAULT_ACTIVITY)


def test_reddit_json_malformed(tmp_path: Path) -> None:
    p = write(tmp_path, '[\n  {"realname": "a",\n   "username": }\n]\n', "u.json")
    with pytest.raises(InputFileError) as err:
        load_reddit_json(p)
    assert err.value.line == 3 and "u.json:3" in str(err.value)


def test_reddit_json_missing_field(tmp_path: Path) -> None:
    ok = {"realname": "A", "username": "a", "bio": "b", "persona": "p"}
    bad = {"realname": "B", "username": "b", "persona": "p"}
    p = write(tmp_path, json.dumps([ok, bad]), "u.json")
    with pytest.raises(InputFileError) as err:
        load_reddit_json(p)
    assert "record 1" in str(err.value) and "'bio'" in str(err.value)
