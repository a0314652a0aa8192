"""Per-minute curves and NRMSE against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from socium.errors import SociumError
from socium.experiments.propagation.data import curves, realcascades
from socium.experiments.propagation.data.curves import (
    CURVE_NAMES,
    CascadeDataError,
    cascade_curves_from_events,
    mean_nrmse,
    node_depths,
    nrmse,
    nrmse_curves,
)

# Nodes deliberately not in topological order: D, root, C, A, E, B.
#   root(t=0) -> A(0.5) -> C(2) -> D(3.5);  root -> B(2) -> E(10)
_NAMES = ["D", "root", "C", "A", "E", "B"]
_PARENT = [2, -1, 3, 1, 5, 1]
_TIME = [3.5, 0.0, 2.0, 0.5, 10.0, 2.0]


def test_depths_resolve_out_of_order_parents() -> None:
    assert node_depths(_PARENT).tolist() == [3, 0, 2, 1, 2, 1]


def test_synthetic_cascade_curves_match_hand_computation() -> None:
    c = cascade_curves_from_events(_PARENT, _TIME, minutes=5)
    # t=0: root | t=1: +A | t=2: +B,C | t=3: same | t=4: +D ; E (t=10) is outside the window.
    assert c["scale"].tolist() == [1, 2, 4, 4, 5]
    assert c["depth"].tolist() == [0, 1, 2, 2, 3]
    # Level 1 holds A and B from t=2 on; no deeper level ever has two nodes.
    assert c["max_breadth"].tolist() == [0, 1, 2, 2, 2]
    assert set(c) == set(CURVE_NAMES)
    assert all(len(v) == 5 for v in c.values())


def test_long_window_reaches_everyone_and_breadth_counts_deeper_levels() -> None:
    # root -> X(1); X -> Y1, Y2, Y3 at 2, 3, 4: breadth is found at depth 2, not depth 1.
    c = cascade_curves_from_events([-1, 0, 1, 1, 1], [0, 1, 2, 3, 4], minutes=6)
    assert c["scale"].tolist() == [1, 2, 3, 4, 5, 5]
    assert c["depth"].tolist() == [0, 1, 2, 2, 2, 2]
    assert c["max_breadth"].tolist() == [0, 1, 1, 2, 3, 3]


def test_forest_of_seeds_and_empty_input() -> None:
    c = cascade_curves_from_events([-1, -1, 0], [0.0, 1.0, 1.0], minutes=3)
    assert c["scale"].tolist() == [1, 3, 3]
    assert c["max_breadth"].tolist() == [0, 1, 1]
    empty = cascade_curves_from_events([], [], minutes=2)
    assert [empty[k].tolist() for k in CURVE_NAMES] == [[0, 0]] * 3


@pytest.mark.parametrize(
    ("parent", "time", "match"),
    [
        ([-1, 2, 1], [0, 1, 2], "cycle"),
        ([-1, 5], [0, 1], "parent\\[1\\]"),
        ([-1, -2], [0, 1], "parent\\[1\\]"),
        ([-1, 0], [0, float("nan")], "NaN"),
        ([-1, 0], [0.0], "shape"),
    ],
)
def test_bad_event_arrays_raise_socium_error(parent: list[int], time: list[float], match: str) -> None:
    with pytest.raises(CascadeDataError, match=match) as info:
        cascade_curves_from_events(parent, time, minutes=3)
    assert isinstance(info.value, SociumError)


def test_nrmse_identical_is_zero_and_offset_is_known() -> None:
    real = np.array([0, 1, 2, 3, 4])
    assert nrmse(real, real, minutes=5) == 0.0
    # Constant offset 2 -> RMSE 2, real max 4 -> 0.5.
    assert nrmse(real + 2, real, minutes=5) == pytest.approx(0.5)
    # One of 4 minutes off by 3 -> RMSE sqrt(9/4) = 1.5; the max is taken in the window (3) -> 0.5.
    sim = real.copy()
    sim[1] += 3
    assert nrmse(sim, real, minutes=4) == pytest.approx(math.sqrt(9 / 4) / 3)


def test_nrmse_window_and_zero_max_rules() -> None:
    real = np.array([1, 1, 1, 50])
    sim = np.array([1, 1, 1, 0])
    assert nrmse(sim, real, minutes=3) == 0.0  # differences after the window do not count
    zero = np.zeros(4)
    assert nrmse(zero, zero, minutes=4) == 0.0
    assert nrmse(np.array([2, 2, 2, 2]), zero, minutes=4) == pytest.approx(2.0)  # plain RMSE
    with pytest.raises(CascadeDataError, match="at least 5"):
        nrmse(real, real, minutes=5)
    with pytest.raises(CascadeDataError, match="NaN"):
        nrmse(np.array([np.nan, 1.0]), np.array([1.0, 1.0]), minutes=2)


def test_mean_nrmse_averages_each_curve_over_cascades() -> None:
    real = {k: np.array([0.0, 2.0, 4.0]) for k in CURVE_NAMES}
    off1 = {k: v + 1 for k, v in real.items()}  # RMSE 1, max 4 -> 0.25
    off2 = dict(real, scale=real["scale"] + 2)  # scale 0.5, others 0
    assert nrmse_curves(off1, real, minutes=3) == pytest.approx(dict.fromkeys(CURVE_NAMES, 0.25))
    got = mean_nrmse([(off1, real), (off2, real)], minutes=3)
    assert got == pytest.approx({"scale": 0.375, "depth": 0.125, "max_breadth": 0.125})
    with pytest.raises(CascadeDataError, match="at least one"):
        mean_nrmse([], minutes=3)
    with pytest.raises(CascadeDataError, match="lack"):
        mean_nrmse([({"scale": real["scale"]}, real)], minutes=3)


def test_real_curves_use_the_same_code_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = curves.cascade_curves_from_events

    def spy(parent, time_min, minutes=150):  # type: ignore[no-untyped-def]
        calls.append(len(parent))
        return original(parent, time_min, minutes)

    monkeypatch.setattr(realcascades, "cascade_curves_from_events", spy)
    tree = realcascades.parse_tree(
        ["['ROOT', 'ROOT', '0.0']->['a', '1', '0.0']", "['a', '1', '0.0']->['b', '2', '1.0']"]
    )
    out = realcascades.real_curves(tree, minutes=3)
    assert calls == [2]
    assert out["scale"].tolist() == [1, 2, 2]
