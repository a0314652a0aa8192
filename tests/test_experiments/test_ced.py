"""The CED (Weibo) reader: every repair rule on a small synthetic folder, and the real shared folder."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from socium.data.datadir import data_dir
from socium.experiments.propagation.data.cascade_format import cascade_table, cascade_trees
from socium.experiments.propagation.data.ced import (
    CUTOFF,
    load_ced,
    read_ced,
    read_ced_cascades,
    to_tree,
)
from socium.experiments.propagation.spec import PropagationSpec

UTC = timezone.utc
T0 = int(datetime(2012, 9, 11, 3, 34, 22, tzinfo=UTC).timestamp())  # the original's Unix time


def _bj(seconds_after: float) -> str:
    """A Beijing-time date string ``seconds_after`` the original (as CED writes them)."""
    return datetime.fromtimestamp(T0 + seconds_after + 8 * 3600, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _write(root: Path, name: str, original: object, items: object, folder: str = "rumor-repost") -> None:
    base = root / "CED_Dataset"
    (base / "original-microblog").mkdir(parents=True, exist_ok=True)
    (base / folder).mkdir(parents=True, exist_ok=True)
    (base / "original-microblog" / name).write_text(json.dumps(original), encoding="utf-8")
    if items is not None:
        text = items if isinstance(items, str) else json.dumps(items)
        (base / folder / name).write_text(text, encoding="utf-8")


def _item(mid: str, parent: str, date: str, uid: str = "u") -> dict[str, object]:
    return {"mid": mid, "parent": parent, "date": date, "uid": uid, "text": "", "kids": []}


@pytest.fixture()
def ced(tmp_path: Path) -> Path:
    items = [
        _item("a", "", _bj(120), "u1"),  # 2 min after the source (Beijing time taken off)
        _item("b", "a", _bj(300), "u2"),  # repost of a repost
        _item("c", "a", _bj(60), "u3"),  # before its parent a: clamped up to a's time
        _item("a", "", _bj(400), "u9"),  # repeated mid: dropped
        _item("d", "zz", _bj(500), "u4"),  # unknown parent: dropped
        _item("e", "d", _bj(600), "u5"),  # under the dropped d: dropped
        _item("f", "", _bj(-30), "u6"),  # 30 s before the source: clamped to 0
        _item("g", "", _bj(-3600), "u7"),  # an hour before the source: dropped
        _item("h", "", "not a date", "u8"),  # unparseable: dropped
        _item("i", "", "11月05日 10:00", "u1"),  # no year: 2012-11-05 10:00 Beijing
        {"parent": "", "date": _bj(10)},  # no mid: malformed
    ]
    _write(tmp_path, "1_src1_100.json", {"time": T0, "reposts": 42}, items)
    # text source time with zone, posted before the cutoff; a non-rumour
    _write(
        tmp_path,
        "2_src2_200.json",
        {"time": "Sat Jun 29 12:40:09 +0800 2013", "reposts": 3},
        [_item("x", "", "2013-06-29 12:41:09")],
        "non-rumor-repost",
    )
    # text source time on/after the cutoff: held back
    _write(tmp_path, "3_src3_300.json", {"time": "Mon Jul 01 08:00:01 +0800 2013"}, [_item("y", "", _bj(5))])
    _write(tmp_path, "4_src4_400.json", {"time": None}, [_item("z", "", _bj(5))])  # no source time
    _write(tmp_path, "5_src5_500.json", {"time": T0}, None)  # no repost file
    _write(tmp_path, "6_src6_600.json", {"time": T0}, "{not json")  # broken file
    return tmp_path


def test_every_rule_counted_and_rows_timed_from_the_source(ced: Path) -> None:
    cascades, rep = read_ced_cascades(ced)
    assert [c.cascade_id for c in cascades] == ["src1", "src2"]  # posting order
    assert rep.cascades_read == 6 and rep.cascades_kept == 2
    assert (rep.no_repost_file, rep.unreadable_files, rep.source_time_missing) == (1, 1, 1)
    assert (rep.posted_after_cutoff, rep.source_time_text) == (1, 1)
    assert (rep.duplicate_items, rep.unknown_parent, rep.under_dropped) == (1, 1, 1)
    assert (rep.before_source_clamped, rep.before_source_dropped, rep.date_unparseable) == (1, 1, 1)
    assert (rep.malformed_items, rep.date_year_inferred, rep.child_before_parent) == (1, 1, 1)
    assert rep.max_reported_reposts == 42 and rep.balanced()
    first = {n: (p, u, t) for n, p, u, t in cascades[0].nodes}
    assert set(first) == {"src1", "a", "b", "c", "f", "i"}
    assert first["a"] == ("src1", "u1", 120.0)
    assert first["b"] == ("a", "u2", 300.0)
    assert first["c"] == ("a", "u3", 120.0)  # clamped to its parent
    assert first["f"][2] == 0.0
    inferred = datetime(2012, 11, 5, 2, 0, tzinfo=UTC).timestamp() - T0  # 10:00 Beijing = 02:00 UTC
    assert first["i"][2] == inferred
    assert cascades[1].label == "non-rumor" and cascades[1].nodes[1][3] == 60.0  # zone parsed: +1 min


def test_posted_before_none_keeps_the_late_cascade(ced: Path) -> None:
    cascades, rep = read_ced_cascades(ced, posted_before=None)
    assert "src3" in {c.cascade_id for c in cascades} and rep.posted_after_cutoff == 0


def test_rows_pass_the_cascade_format_checks_and_convert_alike(ced: Path) -> None:
    table, _ = read_ced(ced)
    checked = cascade_table(table.to_pydict(), source="ced")  # the format's validation: raises on a bad row
    assert checked.num_rows == table.num_rows == 6 + 2
    via_format = cascade_trees(checked)["src1"]
    mine = to_tree(read_ced_cascades(ced)[0][0], horizon_min=None)
    assert {k: n.delay for k, n in via_format.nodes.items()} == {k: n.delay for k, n in mine.nodes.items()}
    assert {k: n.depth for k, n in via_format.nodes.items()} == {k: n.depth for k, n in mine.nodes.items()}
    assert sorted(mine.events()[0]) == ["100", "u1", "u1", "u2", "u3", "u6"]  # users, not mids (fit's user effects)


def test_horizon_drops_late_nodes_with_their_subtree(ced: Path) -> None:
    trees, info, _ = load_ced(ced, horizon_min=4.0)
    t = trees["src1"]
    assert set(t.nodes) == {"src1", "a", "c", "f"}  # b (5 min) and i (months) beyond 4 minutes
    assert t.defects.beyond_horizon == 2 and t.defects.balanced()
    assert info["src1"]["label"] == "rumor"


def test_asking_for_a_missing_id_raises(ced: Path) -> None:
    from socium.errors import InputFileError

    with pytest.raises(InputFileError, match="src9"):
        read_ced_cascades(ced, ids=["src1", "src9"])


def test_spec_dataset_key_is_omitted_at_its_default() -> None:
    spec = PropagationSpec(name="x")
    assert "dataset" not in spec.model_dump(mode="json") and "min_observed" not in spec.model_dump(mode="json")
    ced_spec = PropagationSpec(name="x", dataset="ced", observe_minutes=60, min_observed=5, cv={"models": []})
    assert ced_spec.model_dump(mode="json")["dataset"] == "ced"
    with pytest.raises(ValueError, match="min_observed"):
        PropagationSpec(name="x", min_observed=5)


REAL = data_dir() / "ced" / "ced_before_2013-07.tar.gz"


@pytest.mark.skipif(not REAL.exists(), reason="CED shared data not present")
def test_real_folder_reads_whole_with_counted_repairs() -> None:
    trees, info, rep = load_ced()
    assert rep.balanced()
    assert rep.cascades_read == 2730  # the folder's cascades
    assert rep.posted_after_cutoff == 9  # text-timed originals posted on/after 2013-07-01: kept out
    assert rep.cascades_kept == len(trees) == 2721
    assert rep.date_year_inferred == 55 and rep.source_time_text == 78
    assert rep.max_reported_reposts < 1000 and rep.max_items < 1000  # the crawl's selection cap
    assert all(datetime.fromisoformat(v["posted_at"]) < CUTOFF for v in info.values())
    # Beijing time taken off: the first reshare comes within minutes in the median cascade, not 8 h later
    firsts = sorted(min(n.delay for k, n in t.nodes.items() if n.parent) for t in trees.values() if len(t.nodes) > 1)
    assert firsts[len(firsts) // 2] < 5.0


def test_chronological_split_orders_ced_cascades_by_their_posting_time() -> None:
    from socium.experiments.propagation.cv.cv import cv_pairs
    from socium.experiments.propagation.spec import CVSpec

    ids = ["c", "a", "b", "d"]  # mids carry no time: the split must take it from posted_at
    posted = {i: datetime(2012, 1, 1 + k, tzinfo=UTC) for k, i in enumerate(["a", "b", "c", "d"])}
    pairs = cv_pairs(ids, CVSpec(folds=2, split="chronological"), posted)
    assert pairs == [(["a", "b"], ["c", "d"])]


def test_min_observed_selects_on_the_observed_hour_only(ced: Path) -> None:
    from socium.experiments.propagation.study import load_ced_trees

    spec = PropagationSpec(
        name="x", dataset="ced", tarball=str(ced), sample=1, observe_minutes=3, min_observed=3, cv={"models": []}
    )
    trees, info = load_ced_trees(spec)
    # src1 has a (2 min), c (2 min), f (0) by minute 3: 3 reshares; src2 has 1 (at 1 min): not eligible
    assert list(trees) == ["src1"] and info["_ced"]["pool"] == 1 and info["src1"]["label"] == "rumor"
