"""One hash rule (issue 35): every config field changes the config hash unless it is marked ``NotHashed``, and
a field marked ``OmitWhenDefault`` is absent from the dumped config while at its default (so adding such a key
changes no existing run's hash or recorded config).

Each leaf field of the whole config tree is toggled in turn (a number nudged, a flag flipped, a text changed,
an empty list or mapping given one element) on a config that validates, and the hash must follow.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from socium.config.base import OmitsDefaults, OmitWhenDefault, _Cfg, not_hashed, omitted_when_default
from socium.config.experiment import HASH_EXCLUDED, ExperimentConfig

#: A config where most sections are in use, so toggling their fields is valid.
BASE: dict[str, Any] = {
    "name": "hash-rule",
    "steps": 3,
    "population": {"n_agents": 20, "stance": "bimodal", "issue": "bike lanes"},
    "policy": {"kind": "llm"},
    "llm": {"backend": "random"},
    "recsys": {"kind": "chronological", "k": 5},
}


def _toggled(value: Any) -> list[Any]:
    """Values that differ from ``value`` and are likely valid for the same field."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1, value * 2, 1]
    if isinstance(value, float):
        return [value * 0.5 if value else 0.5, value + 0.1, value - 0.1, 0.3]
    if isinstance(value, str):
        return [value + "x", "x"]
    if value is None:
        return [1, 0.5, "x", True]
    return []


def _leaves(data: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(data, dict) and data:
        return [leaf for k, v in data.items() for leaf in _leaves(v, (*path, k))]
    return [(path, data)]


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    cur = out
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return out


def _full_dump(cfg: ExperimentConfig) -> dict[str, Any]:
    """The dumped config with every OmitWhenDefault field present (so it can be toggled too)."""
    data = json.loads(cfg.canonical_json())

    def fill(model: BaseModel, d: dict[str, Any]) -> None:
        for name in type(model).model_fields:
            v = getattr(model, name)
            if name not in d:
                d[name] = v
            elif isinstance(v, BaseModel) and isinstance(d[name], dict):
                fill(v, d[name])

    fill(cfg, data)
    return data


def test_toggling_each_hashed_field_changes_the_hash_and_excluded_ones_do_not() -> None:
    base = ExperimentConfig.model_validate(BASE)
    h0 = base.config_hash()
    data = _full_dump(base)
    tried, changed_excluded, unchanged = 0, [], []
    for path, value in _leaves(data):
        for alt in _toggled(value):
            try:
                other = ExperimentConfig.model_validate(_set(data, path, alt))
            except (ValidationError, ValueError):
                continue
            if _walk(other, path) == value:  # coerced back to the same value: not a toggle
                continue
            tried += 1
            same = other.config_hash() == h0
            if path[0] in HASH_EXCLUDED:
                if not same:
                    changed_excluded.append(".".join(path))
            elif same:
                unchanged.append(".".join(path))
            break
    assert changed_excluded == [], f"NotHashed fields changed the hash: {changed_excluded}"
    assert unchanged == [], f"hashed fields that do not change the hash: {unchanged}"
    assert tried >= 85  # the walk really covered the tree (91 leaves toggle validly on this base)
    assert set(HASH_EXCLUDED) == {"steps", "executor"}


def _walk(cfg: Any, path: tuple[str, ...]) -> Any:
    for k in path:
        cfg = cfg[k] if isinstance(cfg, dict) else getattr(cfg, k)
    return cfg


def _models(model: type[BaseModel], seen: set[type] | None = None) -> set[type[BaseModel]]:
    """Every config section class reachable from ``model``'s fields."""
    seen = set() if seen is None else seen
    if model in seen:
        return seen
    seen.add(model)
    for f in model.model_fields.values():
        for t in _args(f.annotation):
            if isinstance(t, type) and issubclass(t, BaseModel):
                _models(t, seen)
    return seen


def _args(t: Any) -> list[Any]:
    out = [t]
    for a in getattr(t, "__args__", ()) or ():
        out += _args(a)
    return out


def test_omit_when_default_fields_are_absent_at_default_and_hashed_when_set() -> None:
    marked = [(m, n) for m in _models(ExperimentConfig) for n in omitted_when_default(m)]
    assert {n for _m, n in marked} >= {"condition_minute", "activity_follower_corr"}
    for model, name in marked:
        # the rule is read by the base's serializer: a marked field on another base would be silently dumped
        assert issubclass(model, OmitsDefaults), f"{model.__name__}.{name}: OmitWhenDefault needs OmitsDefaults"
    base = ExperimentConfig.model_validate({**BASE, "timing": {"kind": "activation"}})
    dumped = json.loads(base.canonical_json())
    assert "activity_follower_corr" not in dumped["population"] and "condition_minute" not in dumped["timing"]
    moved = ExperimentConfig.model_validate(
        {**BASE, "population": {**BASE["population"], "activity_follower_corr": 0.2}}
    )
    assert json.loads(moved.canonical_json())["population"]["activity_follower_corr"] == 0.2
    assert moved.config_hash() != base.config_hash()


def test_marker_on_a_new_field_needs_no_serializer() -> None:
    """What a new key costs: the marker alone keeps every existing config's hash."""
    from typing import Annotated

    from pydantic import Field

    class Section(_Cfg):
        old: int = 1
        new: Annotated[float, OmitWhenDefault()] = Field(0.0)

    assert Section().model_dump() == {"old": 1} and Section(new=0.5).model_dump() == {"old": 1, "new": 0.5}
    assert omitted_when_default(Section) == ("new",) and not_hashed(Section) == ()


@pytest.mark.parametrize("key,value", [("steps", 99), ("executor", {"kind": "inprocess", "step_chunk": 7})])
def test_not_hashed_keys_leave_the_hash_alone(key: str, value: Any) -> None:
    a = ExperimentConfig.model_validate(BASE)
    b = ExperimentConfig.model_validate({**BASE, key: value})
    assert a.canonical_json() != b.canonical_json() and a.config_hash() == b.config_hash()
