"""Rule-scored dyadic tasks: generation invariants, seeded determinism and scoring."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from socium.episodes.sotopia import EnvironmentProfile, render_for
from socium.episodes.tasks import (
    BargainingTask,
    TaskOutcomeError,
    make_bargaining,
    make_mutual_friend,
    normalise_name,
    score_bargaining,
    score_mutual_friend,
)
from socium.errors import ConfigError, SociumError


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**32 - 1), n=st.integers(min_value=1, max_value=20)
)  # 20: the most names allow
def test_mutual_friend_shares_exactly_one(seed: int, n: int) -> None:
    task = make_mutual_friend(np.random.default_rng(seed), n_friends=n)
    a, b = task.friends
    assert len(a) == len(b) == n
    common = {f.name for f in a} & {f.name for f in b}
    assert common == {task.shared_name}
    assert next(f for f in a if f.name == task.shared_name) == next(f for f in b if f.name == task.shared_name)
    assert set(task.shared.attributes) == {"school", "major", "company", "hobby"}


def test_mutual_friend_is_seeded() -> None:
    one = make_mutual_friend(np.random.default_rng(42))
    assert one == make_mutual_friend(np.random.default_rng(42))
    assert (
        one.to_environment().to_record() == make_mutual_friend(np.random.default_rng(42)).to_environment().to_record()
    )
    others = {make_mutual_friend(np.random.default_rng(s)).model_dump_json() for s in range(10)}
    assert len(others) == 10


def test_mutual_friend_scoring() -> None:
    task = make_mutual_friend(np.random.default_rng(3))
    name = task.shared_name
    full = score_mutual_friend(task, name, f"  {name.upper()}  ")
    assert full.success and full.goal == (10.0, 10.0)
    half = score_mutual_friend(task, name, None)
    assert not half.success and half.goal == (5.0, 5.0)
    wrong = next(f.name for f in task.friends[0] if f.name != name)
    assert score_mutual_friend(task, wrong, wrong).goal == (0.0, 0.0)
    listing = ", ".join(f.name for f in task.friends[0])
    assert not score_mutual_friend(task, listing, listing).success
    assert normalise_name(" alvin. ") == normalise_name("Alvin") == "alvin"


def test_mutual_friend_environment_hides_answer_from_agents() -> None:
    task = make_mutual_friend(np.random.default_rng(5))
    env = task.to_environment()
    assert isinstance(env, EnvironmentProfile) and int(env.relationship) == 0
    assert EnvironmentProfile.model_validate(env.to_record()) == env
    assert "common friend" not in render_for(env.scenario, "agent_0")
    assert task.shared_name in render_for(env.scenario, "environment")
    only_b = [f.name for f in task.friends[1] if f.name != task.shared_name]
    info0 = task.private_info(0)
    assert task.shared_name in info0 and all(n not in info0.split() for n in only_b)
    assert "<" not in info0


def test_mutual_friend_rejects_bad_config() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError):
        make_mutual_friend(rng, n_friends=0)
    with pytest.raises(ConfigError):
        make_mutual_friend(rng, n_friends=500)
    with pytest.raises(ConfigError):
        make_mutual_friend(rng, attributes=("name", "shoe_size"))
    custom = make_mutual_friend(rng, attributes=("name", "time_preference"))
    assert custom.attributes == ("time_preference",)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_bargaining_targets_conflict(seed: int) -> None:
    task = make_bargaining(np.random.default_rng(seed))
    assert 0 < task.buyer_target < task.seller_target <= task.listing_price


def test_bargaining_is_seeded() -> None:
    assert make_bargaining(np.random.default_rng(9)) == make_bargaining(np.random.default_rng(9))
    assert len({make_bargaining(np.random.default_rng(s)).model_dump_json() for s in range(10)}) > 5


def _task() -> BargainingTask:
    return make_bargaining(np.random.default_rng(1)).model_copy(update={"buyer_target": 100.0, "seller_target": 200.0})


def test_bargaining_scoring() -> None:
    task = _task()
    mid = score_bargaining(task, True, 150.0)
    assert mid.success and mid.within_targets and mid.goal == pytest.approx((5.0, 5.0))
    assert score_bargaining(task, True, 100.0).goal == pytest.approx((10.0, 0.0))
    assert score_bargaining(task, True, 200.0).goal == pytest.approx((0.0, 10.0))
    low = score_bargaining(task, True, 50.0)
    assert low.goal == pytest.approx((10.0, 0.0)) and not low.success and low.within_targets is False
    high = score_bargaining(task, True, 250.0)
    assert high.goal == pytest.approx((0.0, 10.0)) and not high.success
    none = score_bargaining(task, False, None)
    assert none.goal == (0.0, 0.0) and not none.success and none.within_targets is None


@pytest.mark.parametrize("deal,price", [(True, None), (True, float("nan")), (True, -1.0), (False, 120.0)])
def test_bargaining_rejects_contradictory_outcome(deal: bool, price: float | None) -> None:
    with pytest.raises(TaskOutcomeError) as err:
        score_bargaining(_task(), deal, price)
    assert isinstance(err.value, SociumError)


@settings(max_examples=200, deadline=None)
@given(price=st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_bargaining_scores_bounded(price: float) -> None:
    task = _task()
    s = score_bargaining(task, True, price)
    assert all(0.0 <= g <= 10.0 for g in s.goal)
    assert s.success == (task.buyer_target <= price <= task.seller_target)
    if s.success:
        assert sum(s.goal) == pytest.approx(10.0)


def test_bargaining_rejects_overlapping_targets() -> None:
    task = _task()
    with pytest.raises(ValidationError):
        BargainingTask.model_validate({**task.model_dump(), "buyer_target": 300.0})


def test_bargaining_environment_keeps_targets_private() -> None:
    task = make_bargaining(np.random.default_rng(4))
    env = task.to_environment()
    buyer_price, seller_price = f"${task.buyer_target:.2f}", f"${task.seller_target:.2f}"
    assert buyer_price in task.private_info(0) and seller_price not in task.private_info(0)
    assert seller_price in task.private_info(1) and buyer_price not in task.private_info(1)
    assert buyer_price not in env.scenario and seller_price not in env.scenario
    assert f"${task.listing_price:.2f}" in env.scenario
    with pytest.raises(ConfigError):
        make_bargaining(np.random.default_rng(0), items=())
