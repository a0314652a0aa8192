"""Tree parsing, each defect repair, and the real Twitter15/OASIS data (skipped when absent)."""

from __future__ import annotations

import csv
import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DATA as DATA
from socium.errors import InputFileError
from socium.experiments.propagation.data.realcascades import (
    CascadeTree,
    DefectReport,
    defect_summary,
    load_labels,
    load_twitter15,
    oasis_cascade_ids,
    parse_tree,
    real_curves,
)

TAR = DATA / "twitter15" / "twitter15_trees.tar.gz"
STATS = DATA / "twitter15" / "cascade_stats.csv"
OASIS = DATA / "oasis-reference" / "twitter_dataset"
needs_data = pytest.mark.skipif(not TAR.exists(), reason="shared Twitter15 data not present")


def edge(p: tuple[str, float], c: tuple[str, float]) -> str:
    """A tree line; tweet ids are 't' + uid so they are easy to check."""
    pu = ["ROOT", "ROOT", "0.0"] if p[0] == "ROOT" else [p[0], "t" + p[0], str(p[1])]
    return f"{pu!r}->{[c[0], 't' + c[0], str(c[1])]!r}"


R = ("ROOT", 0.0)
N1, N2, N3, N4, N5, N6 = ("1", 0.0), ("2", 1.0), ("3", 2.5), ("4", 3.0), ("5", 4.0), ("6", 6.0)
# 1 -> {2, 3}; 2 -> {4, 5}; 4 -> 6.  Depths 0,1,1,2,2,3; breadth 2 (levels 1 and 2).
BASE = [edge(R, N1), edge(N1, N2), edge(N1, N3), edge(N2, N4), edge(N2, N5), edge(N4, N6)]


def write(tmp_path: Path, lines: list[str], name: str = "tree.txt") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def structure(tree: CascadeTree) -> dict[str, tuple[str | None, float, int]]:
    return {u: (n.parent, n.delay, n.depth) for u, n in tree.nodes.items()}


BASE_STRUCTURE = {
    "1": (None, 0.0, 0),
    "2": ("1", 1.0, 1),
    "3": ("1", 2.5, 1),
    "4": ("2", 3.0, 2),
    "5": ("2", 4.0, 2),
    "6": ("4", 6.0, 3),
}


def test_tiny_tree_depth_breadth_scale_and_curves(tmp_path: Path) -> None:
    tree = parse_tree(write(tmp_path, BASE))
    assert (tree.root_user, tree.root_tweet_id) == ("1", "t1")
    assert structure(tree) == BASE_STRUCTURE
    assert (len(tree.nodes), tree.max_depth, tree.max_breadth) == (6, 3, 2)
    assert tree.defects == DefectReport(lines=6, nodes_kept=6)
    c = real_curves(tree, minutes=7)
    assert c["scale"].tolist() == [1, 2, 2, 4, 5, 5, 6]
    assert c["depth"].tolist() == [0, 1, 1, 2, 2, 2, 3]
    assert c["max_breadth"].tolist() == [0, 1, 1, 2, 2, 2, 2]


def test_root_line_need_not_come_first() -> None:
    tree = parse_tree(BASE[3:] + BASE[:3])
    assert structure(tree) == BASE_STRUCTURE


def test_self_loops_and_duplicates_are_dropped() -> None:
    tree = parse_tree([*BASE, edge(N2, N2), edge(N1, N1), BASE[3], BASE[3]])
    assert structure(tree) == BASE_STRUCTURE
    assert (tree.defects.self_loops, tree.defects.duplicate_edges) == (2, 2)
    assert tree.defects.balanced()


@pytest.mark.parametrize("late_first", [True, False])
def test_several_parents_keep_the_earliest(late_first: bool) -> None:
    extra = [edge(N3, N5), edge(N6, N5)]  # 5 already has parent 2 (delay 1.0); 3 and 6 are later
    tree = parse_tree(extra + BASE if late_first else BASE + extra)
    assert structure(tree) == BASE_STRUCTURE
    d = tree.defects
    assert (d.multi_parent_nodes, d.extra_parent_edges) == (1, 2)
    assert d.balanced()


def test_cycles_cannot_survive() -> None:
    # 2 -> 1 would make the source a child of its own descendant; 4 -> 2 closes a loop.
    tree = parse_tree([*BASE, edge(N2, N1), edge(N4, N2)])
    assert structure(tree) == BASE_STRUCTURE
    assert tree.defects.multi_parent_nodes == 2


def test_child_before_parent_is_clamped_down_the_chain() -> None:
    # 7 claims 1.0 under 3 (2.5); its child 8 claims 1.5, later than 7 but earlier than 7's fix.
    tree = parse_tree([*BASE, edge(N3, ("7", 1.0)), edge(("7", 1.0), ("8", 1.5))])
    n7, n8 = tree.nodes["7"], tree.nodes["8"]
    assert (n7.parent, n7.delay, n7.raw_delay, n7.depth) == ("3", 2.5, 1.0, 2)
    assert (n8.parent, n8.delay, n8.raw_delay, n8.depth) == ("7", 2.5, 1.5, 3)
    assert tree.defects.child_before_parent == 2  # nodes repaired
    assert tree.defects.lines_child_before_parent == 1  # lines as written
    assert real_curves(tree, minutes=4)["scale"].tolist() == [1, 2, 2, 6]


def test_source_with_nonzero_delay_is_rebased() -> None:
    lines = [edge(R, ("1", -10.0)), edge(("1", -10.0), ("2", -9.0)), edge(("2", -9.0), ("3", 5.0))]
    tree = parse_tree(lines)
    assert [n.delay for n in tree.nodes.values()] == [0.0, 1.0, 15.0]
    assert tree.defects.source_rebased == 1


def test_delays_beyond_horizon_drop_their_subtree() -> None:
    far, under = ("9", 2_000_000.0), ("10", 3.0)  # 10 is timed early but hangs under 9
    lines = [*BASE, edge(N3, far), edge(far, under)]
    tree = parse_tree(lines)
    assert structure(tree) == BASE_STRUCTURE
    d = tree.defects
    assert (d.beyond_horizon, d.under_beyond_horizon, d.nodes_kept) == (1, 1, 6)
    assert d.balanced()
    unlimited = parse_tree(lines, horizon_min=None)
    assert len(unlimited.nodes) == 8 and unlimited.nodes["10"].delay == 2_000_000.0
    short = parse_tree(lines, horizon_min=3.5)  # 5 (4.0), 6 (6.0) and 9 are later; 10 hangs on 9
    assert set(short.nodes) == {"1", "2", "3", "4"}
    assert (short.defects.beyond_horizon, short.defects.under_beyond_horizon) == (3, 1)


def test_orphan_parents_leave_children_unreachable_not_attached_to_root() -> None:
    ghost = ("99", 5.0)
    lines = [*BASE, edge(ghost, ("11", 6.0)), edge(ghost, N6), edge(("11", 6.0), ("12", 7.0))]
    tree = parse_tree(lines)
    assert structure(tree) == BASE_STRUCTURE  # 6 keeps its real parent; 11 and 12 are dropped
    d = tree.defects
    assert (d.orphan_edges, d.unreachable_nodes, d.extra_parent_edges) == (2, 2, 1)
    assert d.balanced()


def test_conflicting_records_keep_the_earliest_child_delay() -> None:
    tree = parse_tree([*BASE, edge(N3, ("5", 3.5))])  # 5 appears again with delay 3.5, not 4.0
    assert tree.defects.conflicting_node_records == 1
    assert (tree.nodes["5"].parent, tree.nodes["5"].delay) == ("2", 3.5)


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    lines = [*BASE[:2], "['2', 't2', '1.0'] -> garbage", *BASE[2:]]
    path = write(tmp_path, lines, "bad_tree.txt")
    with pytest.raises(InputFileError) as info:
        parse_tree(path)
    assert (info.value.path, info.value.line) == (str(path), 3)
    assert "bad_tree.txt:3:" in str(info.value)
    tree = parse_tree(path, strict=False)
    assert tree.defects.malformed_lines == 1
    assert structure(tree) == BASE_STRUCTURE
    with pytest.raises(InputFileError, match=r"x\.txt:7: .*not a number"):
        parse_tree([*BASE, "['1', 't1', '0.0']->['7', 't7', 'soon']"], source="x.txt")


@pytest.mark.parametrize("strict", [True, False])
def test_missing_root_raises_even_when_lenient(strict: bool) -> None:
    with pytest.raises(InputFileError, match="ROOT"):
        parse_tree(BASE[1:], source="noroot.txt", strict=strict)


def test_second_root_is_malformed() -> None:
    lines = [*BASE, edge(R, ("77", 0.0))]
    with pytest.raises(InputFileError, match=":7: second ROOT"):
        parse_tree(lines)
    assert parse_tree(lines, strict=False).defects.malformed_lines == 1


def test_unreadable_path_raises_input_file_error(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="missing.txt"):
        parse_tree(tmp_path / "missing.txt")


def make_tar(tmp_path: Path, trees: dict[str, list[str]], labels: list[str]) -> Path:
    path = tmp_path / "mini.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        files = {f"twitter15/tree/{k}.txt": v for k, v in trees.items()}
        files["twitter15/label.txt"] = labels
        for name, lines in files.items():
            blob = ("\n".join(lines) + "\n").encode()
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tf.addfile(info, io.BytesIO(blob))
    return path


def test_tarball_loading_labels_and_summary(tmp_path: Path) -> None:
    tar = make_tar(tmp_path, {"1": BASE, "2": [*BASE, edge(N2, N2)]}, ["true:1", "false:2"])
    trees = load_twitter15(tar)
    assert list(trees) == ["1", "2"] and structure(trees["2"]) == BASE_STRUCTURE
    assert list(load_twitter15(tar, ids=["2"])) == ["2"]
    with pytest.raises(InputFileError, match="no tree for ids"):
        load_twitter15(tar, ids=["3"])
    assert load_labels(tar) == {"1": "true", "2": "false"}
    buf = io.StringIO()
    total = defect_summary(tar, file=buf)
    assert (total.lines, total.self_loops, total.nodes_kept) == (13, 1, 12)
    assert "self_loops" in buf.getvalue() and "balanced (lines = dropped + kept): True" in buf.getvalue()
    topics = tmp_path / "all_topics.csv"
    topics.write_text("id,source\n1,twitter15\n9,twitter15\n2,twitter16\n1,twitter15\n")
    assert oasis_cascade_ids(topics, available=["1", "2"]) == ["1"]


def test_bad_label_line_names_line(tmp_path: Path) -> None:
    tar = make_tar(tmp_path, {"1": BASE}, ["true:1", "oops"])
    with pytest.raises(InputFileError, match=r"label\.txt\]:2:"):
        load_labels(tar)


# ---------------------------------------------------------------- real data


def stats_rows() -> dict[str, dict[str, str]]:
    with STATS.open(newline="") as fh:
        return {r["source_tweet_id"]: r for r in csv.DictReader(fh)}


@needs_data
def test_real_trees_match_cascade_stats() -> None:
    rows = stats_rows()
    clean = [
        k
        for k, r in rows.items()
        if r["n_multi_parent"] == r["n_self_loops"] == "0" and r["n_child_earlier_than_parent"] == "0"
    ][:3]
    messy = [k for k, r in rows.items() if int(r["n_self_loops"]) and int(r["n_multi_parent"])][:2]
    ids = [*clean, "520284654755381249", *messy]
    trees = load_twitter15(ids=ids, horizon_min=None)
    for tid in ids:
        r, t = rows[tid], trees[tid]
        d = t.defects
        assert d.lines == int(r["n_edge_lines"])
        assert d.self_loops == int(r["n_self_loops"])
        assert d.lines_child_before_parent == int(r["n_child_earlier_than_parent"])
        assert d.nodes_kept == int(r["n_users"]) and d.balanced()
        assert max(n.raw_delay for n in t.nodes.values()) == pytest.approx(float(r["max_delay_min"]))
        if tid not in messy:  # with one parent per node, tree depth is the BFS depth of the CSV
            assert (t.max_depth, t.max_breadth) == (int(r["max_depth"]), int(r["max_breadth"]))


@needs_data
def test_reproduces_oasis_real_curves_for_false_business_0() -> None:
    ref = json.loads((OASIS / "real_world_prop_data" / "False_Business_0.json").read_text())
    tree = load_twitter15(ids=["520284654755381249"])["520284654755381249"]
    curves = real_curves(tree, minutes=500)
    assert curves["depth"].tolist() == ref["depth"][:500]
    # OASIS counted scale and breadth over the 111 users it could crawl (README of the data).
    with (OASIS / "anonymous_topic_200_1h" / "False_Business_0.csv").open(newline="") as fh:
        crawled = {r["user_id"] for r in csv.DictReader(fh)}
    users, _, delay = tree.events()
    keep = np.array([u in crawled for u in users])
    depth = np.array([tree.nodes[u].depth for u in users])
    scale = [int((delay[keep] <= t).sum()) for t in range(500)]
    breadth = [max([int(((delay <= t) & keep & (depth == k)).sum()) for k in (1, 2)]) for t in range(500)]
    assert scale == ref["scale"][:500]
    assert breadth == ref["max_breadth"][:500]
    assert curves["scale"][499] == 121  # all tree users: the upper bound the README mentions


@needs_data
def test_labels_and_oasis_ids() -> None:
    labels = load_labels()
    assert len(labels) == 1490
    assert sorted(labels.values()).count("non-rumor") == 374
    ids = oasis_cascade_ids()
    folder = {p.stem for p in (DATA / "twitter15" / "oasis198" / "twitter15").glob("*.txt")}
    assert len(ids) == 134 and set(ids) == folder


@needs_data
def test_defect_summary_over_all_twitter15(capsys: pytest.CaptureFixture[str]) -> None:
    total = defect_summary()
    out = capsys.readouterr().out
    assert "defects over 1490 trees" in out and "balanced (lines = dropped + kept): True" in out
    rows = stats_rows().values()

    def col(name: str) -> int:
        return sum(int(r[name]) for r in rows)

    assert total.balanced()
    assert total.lines == col("n_edge_lines")
    assert total.self_loops == col("n_self_loops")
    assert total.lines_child_before_parent == col("n_child_earlier_than_parent")
    dropped = total.unreachable_nodes + total.beyond_horizon + total.under_beyond_horizon
    assert total.nodes_kept + dropped == col("n_users")
    assert total.malformed_lines == 0 and total.beyond_horizon > 0
    assert total.multi_parent_nodes > 0 and total.extra_parent_edges >= total.multi_parent_nodes
