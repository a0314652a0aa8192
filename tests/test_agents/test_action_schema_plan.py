"""The one-action schema reads the action table once per (actions, max_chars) (``_variant_plan``) and shares the
variants of actions that take no id (issue 41: schema building was ~80 us per activation): every schema must
still be the one the table gives, key order included (it is sent, hashed and logged as JSON)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from socium.agents.action_prompts import action_schema
from socium.core import actions as A


def _reference(
    actions: Sequence[str],
    post_ids: Sequence[int],
    user_ids: Sequence[int],
    max_chars: int,
    ids_of_kind: dict[str, Sequence[int]],
    ids_for: dict[str, Sequence[int]],
) -> dict[str, Any]:
    """The schema as built before the plan: each action's fields read from its class, per schema."""
    ids_of = {"post": post_ids, "user": user_ids, **ids_of_kind}
    variants = []
    for a in actions:
        cls = A.BY_TYPE[a]
        props: dict[str, Any] = {"type": {"const": a}}
        if cls.meta.id_field is not None:
            ids = ids_for[a] if a in ids_for else ids_of[cls.meta.target]
            if not ids:
                continue
            props[cls.meta.id_field] = {"enum": sorted(set(ids))}
        if cls.text_field is not None:
            props[cls.text_field] = {"type": "string", "maxLength": max_chars}
        variants.append({"type": "object", "properties": props, "required": list(props), "additionalProperties": False})
    return {"anyOf": variants}


def test_schemas_equal_the_action_tables_for_random_offers() -> None:
    rng = random.Random(41)
    every = list(A.ACTION_TYPES)
    for _ in range(1500):
        acts = rng.sample(every, rng.randint(1, len(every)))

        def ids() -> list[int]:
            return [rng.randrange(40) for _ in range(rng.randint(0, 5))]

        kinds = {"comment": ids(), "member_group": ids(), "joinable_group": ids()}
        ids_for = {a: ids() for a in acts if rng.random() < 0.4}
        posts, users, chars = ids(), ids(), rng.choice([80, 280])
        got = action_schema(
            acts,
            posts,
            users,
            chars,
            join_ids=kinds["joinable_group"],
            member_ids=kinds["member_group"],
            comment_ids=kinds["comment"],
            ids_for=ids_for,
        )
        want = _reference(acts, posts, users, chars, kinds, ids_for)
        assert json.dumps(got) == json.dumps(want), acts


def test_variants_without_ids_are_shared_and_the_rest_are_fresh() -> None:
    acts = ["create_post", "like_post", "do_nothing"]
    a = action_schema(acts, [1, 2], [3], 280)
    b = action_schema(acts, [2], [3], 280)
    assert a["anyOf"][0] is b["anyOf"][0] and a["anyOf"][2] is b["anyOf"][2]  # built once
    assert a["anyOf"][1] is not b["anyOf"][1] and a["anyOf"][1]["properties"]["post_id"] == {"enum": [1, 2]}
    assert action_schema(acts, [1], [3], 100)["anyOf"][0]["properties"]["content"]["maxLength"] == 100
