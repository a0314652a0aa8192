"""What narrators, mindreaders and group agents read (issue 10 items 1, 5, 6), checked in the prompt text.

Found by reading real prompts: the omniscient narrator's trending list showed reposts as empty
``(repost)`` items, never saw its characters' groups (and was never offered group actions or the
state-aware ids a lone agent gets), and was addressed as each character ("You are @user6"); a
mindreader read the same author's private side once per appearance and never that of commenters
or group-message authors; a shared link did not say it was itself a quote.
"""

import json
import re

from conftest import post_block, small_config
from socium.agents.llm_policy import LLMPolicy
from socium.config.loading import config_from_dict
from socium.llm.model_free import ScriptedBackend
from socium.llm.wrappers import CachingBackend
from socium.simulator.simulation import Simulation

N = 8
ACTIONS = ["like_post", "repost", "follow", "join_group", "send_to_group", "do_nothing"]
# 0 original; 1 repost of 0 by 1; 2 quote of 0 by 2; 3 quote of 2 by 3; 4 repost of 3 by 4;
# 5 comment on 0 by 6; group 0 made by 7 (zzgroup), joined by 5, with a message by 7
WORLD = [
    {"agent": 1, "action": {"type": "repost", "post_id": 0}},
    {"agent": 2, "action": {"type": "quote_post", "post_id": 0, "content": "zzquote1"}},
    {"agent": 3, "action": {"type": "quote_post", "post_id": 2, "content": "zzquote2"}},
    {"agent": 4, "action": {"type": "repost", "post_id": 3}},
    {"agent": 6, "action": {"type": "create_comment", "post_id": 0, "content": "zzcomment"}},
    {"agent": 7, "action": {"type": "create_group", "name": "zzgroup"}},
    {"agent": 5, "action": {"type": "join_group", "group_id": 0}},
    {"agent": 7, "action": {"type": "send_to_group", "group_id": 0, "content": "zzgroupmsg"}},
]


def cfg(perspective: str, **over):
    return small_config(
        name="views",
        steps=1,
        perspective=perspective,
        population={
            "n_agents": N,
            "activity": "uniform",
            "mean_activity": 1.0,
            "goals": [f"zzgoal{i}" for i in range(N)],
        },
        graph={"kind": "random_out", "params": {"out_degree": N - 1}},  # everyone follows everyone
        recsys={"kind": "chronological", "k": 10},
        policy={"kind": "llm"},
        llm={"backend": "random"},
        llm_agents={"actions": ACTIONS, "comments_per_post": 1, "quote_depth": 3, "group_size": 8},
        seed_posts=[{"author": 0, "content": "zzorig bike lanes"}],
        seed_actions=WORLD,
        **over,
    )


def run(c, tmp_path, answer='{"type": "do_nothing"}'):
    backend = ScriptedBackend(lambda req: answer)
    pol = LLMPolicy(c, backend_factory=lambda cache: CachingBackend(backend, cache))
    Simulation(c, tmp_path / "r", policy=pol).run()
    return backend.calls


def section(text: str, title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"no section {title!r}"
    return m.group(1)


def test_narrator_sees_trending_reposts_whole_and_each_characters_groups_in_the_third_person(tmp_path):
    calls = run(cfg("omniscient"), tmp_path)
    req = next(r for r in calls if "group" in r.metadata)
    text = req.messages[1].content
    trending = section(text, "Most engaging recent posts (everyone's view)")
    repost = post_block(trending, 1)
    assert re.search(r"^<<<shared 0 u0 .*@user0: zzorig bike lanes>>>$", repost, re.M)  # not an empty "(repost)"
    assert "zzquote2" in post_block(trending, 4) and "<<<shared 2 u2 " in post_block(trending, 4)
    member = section(text, "Character agent_5")
    assert member.startswith("@user5 (") and "Private goal: zzgoal5" in member
    assert "You are @user" not in text and "Your private goal" not in text
    assert "post to those they are in" in req.messages[0].content and " you " not in req.messages[0].content
    assert "Their groups:" in member and "zzgroup" in member and "zzgroupmsg" in member
    outsider = section(text, "Character agent_0")
    assert "Groups they could join:" in outsider and "group_id=0" in outsider
    # each character is offered what it would be offered alone: its groups, no follow of a followee
    props = req.json_schema["properties"]

    def offered(agent: int) -> dict:
        return {v["properties"]["type"]["const"]: v["properties"] for v in props[f"agent_{agent}"]["anyOf"]}

    assert offered(5)["send_to_group"]["group_id"]["enum"] == [0] and "join_group" not in offered(5)
    assert offered(0)["join_group"]["group_id"]["enum"] == [0] and "send_to_group" not in offered(0)
    assert all("follow" not in offered(a) for a in range(N) if f"agent_{a}" in props)  # everyone follows everyone


def test_mindreader_reads_each_authors_private_side_once_commenters_and_group_authors_included(tmp_path):
    calls = run(cfg("mindreader"), tmp_path)
    text = next(r.messages[1].content for r in calls if r.metadata["agent_id"] == 5)
    told = re.findall(r"What you know privately about @user(\d+):", text)
    assert len(told) == len(set(told)), told  # once per author, however often they appear
    assert {"0", "1", "2", "3", "4", "6", "7"} <= set(told) and "5" not in told  # never one's own
    assert "zzgoal6" in text  # the commenter under post 0
    group = section(text, "Your groups")
    assert "zzgroupmsg" in group and "What you know privately about @user7" in group and "zzgoal7" in group
    local = next(r.messages[1].content for r in run(cfg("local"), tmp_path / "l") if r.metadata["agent_id"] == 5)
    assert "What you know privately" not in local and "zzgoal7" not in local


def test_a_shared_link_says_when_it_is_itself_a_quote(tmp_path):
    calls = run(cfg("local"), tmp_path)
    block = post_block(next(r.messages[1].content for r in calls if r.metadata["agent_id"] == 5), 4)
    assert block.startswith("<<<4 u4 reposted @user4>>>\n")  # who shared it, no text of its own
    assert re.search(r"^<<<shared 3 u3 quote[ >].*@user3: ", block, re.M)  # the repost shares a quote ...
    assert re.search(r"^<<<shared 2 u2 quote[ >].*@user2: ", block, re.M)  # ... of a quote ...
    assert re.search(r"^<<<shared 0 u0[ >].*@user0: zzorig", block, re.M)  # ... of the original


def test_group_agents_see_their_members_groups(tmp_path):
    seen = []

    def respond(req):
        seen.append(req)
        return "{}"

    group = {"kind": "group_llm", "group_cluster_size": N, "group_max_members": N, "group_embedder": "hashing"}
    sim = Simulation(config_from_dict({**json.loads(cfg("local").canonical_json()), "policy": group}), tmp_path / "g")
    sim.policy.backend_factory = lambda cache: CachingBackend(ScriptedBackend(respond), cache)
    sim.run()
    text = next(r.messages[1].content for r in seen if 5 in r.metadata["group"])
    member = section(text, "User agent_5")
    assert member.startswith("@user5 (") and "Their groups:" in member and "zzgroupmsg" in member
    assert "You are @user" not in text
