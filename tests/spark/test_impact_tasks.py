"""The fleet's impact rows, without Spark: one task per divergent set, the row `read_impact` gives."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from replog.recovery.kafka.impact import read_impact
from replog.recovery.kafka.replay import replay_paths
from replog.spark import schemas
from replog.spark.impact_tasks import impact_row, impact_tasks
from tests.recovery.kafka.test_impact import build_impact_fleet


def _tables(root: Path) -> tuple[pa.Table, pa.Table]:
    parts = [{"cluster": c, "log_dir": str(root / b), "topic": "t", "partition": 0, "path": str(root / b / "t-0"),
              "state": "live"} for c in ("A", "B") for b in ("L", "O")]
    parts.append({"cluster": "A", "log_dir": str(root / "L"), "topic": "t", "partition": 1,
                  "path": str(root / "L" / "t-1"), "state": "live"})
    reps = [{"cluster": "A", "topic": "t", "partition": 0, "replicas": ["L", "O"],
             "log_dirs": [str(root / "L"), str(root / "O")], "first_divergent_offset": 53},
            {"cluster": "A", "topic": "t", "partition": 1, "replicas": ["L", "X"],
             "log_dirs": [str(root / "L"), str(root / "X")], "first_divergent_offset": None}]
    return pa.Table.from_pylist(reps), pa.Table.from_pylist(parts)


def test_one_row_per_divergent_set_computed_by_read_impact(tmp_path: Path) -> None:
    root = build_impact_fleet(tmp_path)
    reps, parts = _tables(root)
    tasks = impact_tasks(reps, parts, {"A": [str(root / "coordinator")], "B": ["elsewhere"]})
    assert [(t["cluster"], t["topic"], t["partition"], [b for b, _ in t["replicas"]]) for t in tasks] \
        == [("A", "t", 0, ["L", "O"])]
    assert tasks[0]["offsets"] == [str(root / "coordinator")]   # its own cluster's log dirs only
    row = impact_row(tasks[0])
    pa.Table.from_pylist([row], schema=schemas.IMPACT)   # the row fits the table
    direct = read_impact(replay_paths([f"L={root / 'L' / 't-0'}", f"O={root / 'O' / 't-0'}"]),
                         [root / "coordinator"])
    columns = {k: v for k, v in direct.summary.items() if k in schemas.IMPACT.names}   # the table's counts
    assert {k: row[k] for k in columns} == columns, "the row's counts are read_impact's"
    assert row["leader"] == "L", "the leader is replay's"
    assert row["error"] is None, "the set was replayed"
    assert {g["group"] for g in row["affected_groups"]} == {"lost", "detect", "reset", "unknown-epoch"}
    assert sorted(h["producer_id"] for h in row["hanging"]) == [200, 202]
    remote = impact_row({**tasks[0], "remote": ["O"]})
    assert remote["error"] and remote["groups"] == 0


def test_one_broker_holding_two_replicas_names_them_by_log_dir(tmp_path: Path) -> None:
    parts = pa.Table.from_pylist([{"cluster": "A", "log_dir": d, "topic": "t", "partition": 0, "path": f"{d}/t-0",
                                   "state": "live"} for d in ("/a", "/b")])
    reps = pa.Table.from_pylist([{"cluster": "A", "topic": "t", "partition": 0, "replicas": ["1", "1"],
                                  "log_dirs": ["/a", "/b"], "first_divergent_offset": 0}])
    [task] = impact_tasks(reps, parts, {}, remote_log_dirs=["/b"])
    assert task["replicas"] == [["1:/a", "/a/t-0"], ["1:/b", "/b/t-0"]] and task["remote"] == ["1:/b"]
