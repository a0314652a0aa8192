"""Observations sent to Ray actors keep the platform's marks, so an agent decided on an actor is offered
exactly the ids it would be offered in process (the schema narrows them by these marks)."""

from socium.agents.answer_validation import state_aware_ids
from socium.core.contracts import FeedItem, Observation
from socium.simulator.ray_wire import pack_observations, unpack_observations


def _item(pid: int, author: int) -> FeedItem:
    return FeedItem(pid, author, "original", "t", pid, 0, 0, 0, 0, "follow", 0)


def test_marks_survive_the_wire_and_narrow_the_same_ids():
    o = Observation(3, 1, 0.0, 9, [_item(0, 1), _item(1, 2)])
    o.marks = {"liked": {0}, "following": {2}}
    bare = Observation(4, 1, 0.0, 9, [_item(0, 1)])  # a rule-based agent's view carries none
    back, back_bare = unpack_observations(pack_observations([o, bare]))
    assert back.marks == o.marks and back_bare.marks == {}
    offered = ["like_post", "unlike_post", "follow", "unfollow"]
    assert state_aware_ids(back, offered) == state_aware_ids(o, offered)
    assert state_aware_ids(back, offered) == {"like_post": [1], "unlike_post": [0], "follow": [1], "unfollow": [2]}
