"""The cascade row format: readers, every bad row as one located error, conversion to trees, the registry."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import SHARED_DATA as DATA
from socium.errors import ConfigError, InputFileError
from socium.experiments.propagation.data.cascade_format import (
    SCHEMA,
    cascade_info,
    cascade_table,
    cascade_trees,
    read_csv,
    read_jsonl,
    read_parquet,
    table_from_trees,
    write_parquet,
)
from socium.experiments.propagation.data.cascade_sources import (
    load_cascade_table,
    register_source,
    snowflake_time,
    source_names,
)
from socium.experiments.propagation.data.realcascades import load_twitter15, real_curves

TAR = DATA / "twitter15" / "twitter15_trees.tar.gz"
needs_data = pytest.mark.skipif(not TAR.exists(), reason="shared Twitter15 data not present")

HEADER = "cascade_id,node_id,parent_id,user_id,time_s,label"
GOOD = [
    "c1,n0,,alice,0,true",
    "c1,n1,n0,bob,30,",
    "c1,n2,n1,carol,90,true",
    "c1,n3,n0,bob,120,",  # bob reshares twice: nodes, not users, are unique
    "c2,m0,,dave,0,false",
    "c2,m1,m0,erin,600,false",
]


def write_csv(tmp_path: Path, rows: list[str], header: str = HEADER) -> Path:
    p = tmp_path / "casc.csv"
    p.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return p


def test_csv_reads_into_schema_and_trees(tmp_path: Path) -> None:
    t = read_csv(write_csv(tmp_path, GOOD))
    assert t.schema == SCHEMA
    assert t.num_rows == 6
    info = cascade_info(t)
    assert info["c1"]["label"] == "true" and info["c1"]["n"] == 4  # blank label cells take the cascade's
    assert info["c2"]["source_user"] is None and info["c2"]["posted_at"] is None
    trees = cascade_trees(t)
    assert list(trees) == ["c1", "c2"]
    c1 = trees["c1"]
    assert c1.root_user == "alice" and c1.root_tweet_id == "n0"
    assert {k: n.depth for k, n in c1.nodes.items()} == {"n0": 0, "n1": 1, "n2": 2, "n3": 1}
    assert c1.nodes["n2"].delay == pytest.approx(1.5)  # minutes
    users, parent, delay = c1.events()
    assert users == ["alice", "bob", "carol", "bob"]
    assert parent.tolist() == [-1, 0, 1, 0]
    assert delay.tolist() == pytest.approx([0, 0.5, 1.5, 2.0])
    assert c1.max_breadth == 2 and c1.max_depth == 2


def test_children_timed_with_parent_follow_it(tmp_path: Path) -> None:
    """Ties in time: the parent comes first whatever the row order (the forecast's prefix is a subtree)."""
    t = read_csv(write_csv(tmp_path, ["c,b,a,u2,5,", "c,a,r,u1,5,", "c,r,,u0,0,"]))
    assert list(cascade_trees(t)["c"].nodes) == ["r", "a", "b"]


def test_jsonl_and_parquet_agree_with_csv(tmp_path: Path) -> None:
    t = read_csv(write_csv(tmp_path, GOOD))
    jl = tmp_path / "c.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in t.to_pylist()) + "\n\n", encoding="utf-8")
    assert read_jsonl(jl).equals(t)
    pq_path = write_parquet(t, tmp_path / "c.parquet")
    assert read_parquet(pq_path).equals(t)
    assert load_cascade_table(pq_path, limit=1).num_rows == 4


def test_posted_at_iso_and_unix(tmp_path: Path) -> None:
    rows = ["a,r,,u,0,,2015-03-01T10:00:00Z", "a,x,r,v,1,,", "b,r,,u,0,,1425204000"]
    t = read_csv(write_csv(tmp_path, rows, "cascade_id,node_id,parent_id,user_id,time_s,label,posted_at"))
    info = cascade_info(t)
    assert info["a"]["posted_at"] == info["b"]["posted_at"]
    assert info["a"]["posted_at"].year == 2015


BAD = [
    (["c,r,,u,0", "c,x,r,v,-5"], 3, "time_s", "not a finite time >= 0"),
    (["c,r,,u,0", "c,x,r,v,60", "c,y,x,w,30"], 4, "time_s", "before its parent"),
    (["c,r,,u,0", "c,x,zz,v,60"], 3, "parent_id", "unknown parent 'zz'"),
    (["c,r,,u,0", "c,x,y,v,60", "c,y,x,w,60"], 3, "parent_id", "cycle"),
    (["c,r,,u,0", "c,x,r,v,60", "c,x,r,w,70"], 4, "node_id", "duplicate node 'x'"),
    (["c,r,,u,0", "c,s,,v,10"], 3, "parent_id", "second source"),
    (["c,r,,u,5", "c,x,r,v,60"], 2, "time_s", "not 0"),
    (["c,r,,u,0", "c,x,r,v,soon"], 3, "time_s", "'soon' is not a number"),
    (["c,r,,u,0", "c,x,r,,60"], 3, "user_id", "empty"),
    (["c,r,,u,inf"], 2, "time_s", "not a finite time"),
]


@pytest.mark.parametrize(("rows", "line", "col", "why"), BAD)
def test_bad_row_is_one_located_error(tmp_path: Path, rows: list[str], line: int, col: str, why: str) -> None:
    p = write_csv(tmp_path, rows, "cascade_id,node_id,parent_id,user_id,time_s")
    with pytest.raises(InputFileError) as ei:
        read_csv(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}:{line}: column {col!r}"), msg
    assert why in msg and "\n" not in msg


def test_per_cascade_columns_must_agree(tmp_path: Path) -> None:
    p = write_csv(tmp_path, ["c,r,,u,0,true", "c,x,r,v,1,false"])
    with pytest.raises(InputFileError, match=r"casc.csv:3: column 'label': 'false' differs"):
        read_csv(p)
    p = write_csv(tmp_path, ["c,r,,u,0,someone"], "cascade_id,node_id,parent_id,user_id,time_s,source_user")
    with pytest.raises(InputFileError, match=r":2: column 'source_user': 'someone' is not the source row's"):
        read_csv(p)
    p = write_csv(tmp_path, ["c,r,,u,0,yesterday"], "cascade_id,node_id,parent_id,user_id,time_s,posted_at")
    with pytest.raises(InputFileError, match=r":2: column 'posted_at': posted_at 'yesterday' is neither"):
        read_csv(p)


def test_bad_files_and_columns(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="missing column 'time_s'"):
        read_csv(write_csv(tmp_path, ["c,r,,u"], "cascade_id,node_id,parent_id,user_id"))
    with pytest.raises(InputFileError, match="unknown column 'lable'"):
        read_csv(write_csv(tmp_path, ["c,r,,u,0,x"], "cascade_id,node_id,parent_id,user_id,time_s,lable"))
    with pytest.raises(InputFileError, match=r"casc.csv:2: 4 fields, the header has 5"):
        read_csv(write_csv(tmp_path, ["c,r,,u"], "cascade_id,node_id,parent_id,user_id,time_s"))
    jl = tmp_path / "c.jsonl"
    jl.write_text('{"cascade_id": "c"}\n{oops\n', encoding="utf-8")
    with pytest.raises(InputFileError, match=r"c.jsonl:2: not JSON"):
        read_jsonl(jl)
    jl.write_text(
        '{"cascade_id":"c","node_id":"r","parent_id":null,"user_id":"u","time_s":0}\n\n'
        '{"cascade_id":"c","node_id":"x","parent_id":"r","user_id":"v","time_s":-1}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputFileError, match=r"c.jsonl:3: column 'time_s'"):
        read_jsonl(jl)
    pqp = tmp_path / "bad.parquet"
    pq.write_table(
        pa.table(
            {
                "cascade_id": ["c", "c"],
                "node_id": ["r", "r"],
                "parent_id": [None, "r"],
                "user_id": ["u", "v"],
                "time_s": [0.0, 1.0],
            }
        ),
        pqp,
    )
    with pytest.raises(InputFileError, match=r"bad.parquet: row 2: column 'node_id': duplicate node 'r'"):
        read_parquet(pqp)
    (tmp_path / "x.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputFileError, match="cannot read Parquet"):
        read_parquet(tmp_path / "x.parquet")


def test_folder_refuses_a_cascade_in_two_files(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.csv").write_text("cascade_id,node_id,parent_id,user_id,time_s\nc,r,,u,0\n", encoding="utf-8")
    (d / "b.csv").write_text("cascade_id,node_id,parent_id,user_id,time_s\nc,r,,u,0\n", encoding="utf-8")
    with pytest.raises(InputFileError, match=r"b.csv: cascade 'c' is also in .*a.csv"):
        load_cascade_table(d)
    (d / "b.csv").write_text("cascade_id,node_id,parent_id,user_id,time_s\ne,r,,u,0\n", encoding="utf-8")
    assert load_cascade_table(d).num_rows == 2
    with pytest.raises(ConfigError, match="not a data set .*twitter15.*nor a file or folder"):
        load_cascade_table(tmp_path / "absent")


def test_tree_file_and_registry(tmp_path: Path) -> None:
    tree = tmp_path / "123.txt"
    tree.write_text(
        "['ROOT', 'ROOT', '0.0']->['1', '123', '0.0']\n['1', '123', '0.0']->['2', '9', '2.5']\n", encoding="utf-8"
    )
    t = load_cascade_table(tree)
    assert t.column("cascade_id").to_pylist() == ["123", "123"]
    assert t.column("time_s").to_pylist() == [0.0, 150.0]
    register_source("unit-test-set", lambda limit: t, "two rows")
    assert "unit-test-set" in source_names()
    assert load_cascade_table("unit-test-set").equals(t)
    assert snowflake_time("12") is None
    assert snowflake_time("731166399389962242").year == 2016  # a Twitter15 id


@needs_data
def test_twitter15_rows_rebuild_the_same_curves() -> None:
    t = load_cascade_table("twitter15", limit=5)
    info = cascade_info(t)
    assert len(info) == 5
    assert all(v["label"] in ("non-rumor", "false", "true", "unverified") for v in info.values())
    assert all(v["posted_at"] is not None and 2010 < v["posted_at"].year < 2017 for v in info.values())
    direct = load_twitter15(None, list(info), strict=False)
    for cid, tree in cascade_trees(t).items():
        a, b = real_curves(tree), real_curves(direct[cid])
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    assert table_from_trees(direct).num_rows == t.num_rows


def test_in_memory_columns_name_rows() -> None:
    cols = {"cascade_id": ["c", "c"], "node_id": [1, 2], "parent_id": [None, 1], "user_id": [7, 8], "time_s": [0, 3]}
    t = cascade_table(cols, source="api")
    assert t.column("node_id").to_pylist() == ["1", "2"]  # JSON-style numeric ids become text
    cols["time_s"] = [0, -3]
    with pytest.raises(InputFileError, match=r"^api: row 2: column 'time_s'"):
        cascade_table(cols, source="api")
