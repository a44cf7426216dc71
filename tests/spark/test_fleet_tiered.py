"""The fleet scan's findings table holds the tiered-storage findings `doctor` gives on the same log dir: a
`remote_log_snapshot` defect (the partition unit), a log start below the first local segment and a damaged
cached remote index (the log-dir unit, through `doctor.log_dir_checks`, the one place these checks live)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.remote_log_snapshot import build_remote_log_snapshot
from replog.recovery.doctor import diagnose
from replog.spark.inputs import LogDir
from tests.recovery.kafka.log_dirs import build_log_dir
from tests.recovery.kafka.test_remote_index_cache import cache_file, offset_entries
from tests.spark.taskscan import scan

pytestmark = pytest.mark.spark

TIERED = ("KAFKA_REMOTE_LOG_SNAPSHOT_SEGMENT", "KAFKA_LOG_START_BELOW_LOCAL", "KAFKA_INDEX_NOT_MONOTONIC")


def tiered_log_dir(root: Path) -> Path:
    """`t-0` whose first local segment is gone (its log start checkpointed at 0, below the next segment), a
    `remote_log_snapshot` caching a segment that ends before it starts, and a cached remote offset index that
    goes back at slot 1."""
    pdir, bases = build_log_dir(root)
    for kind in ("log", "index", "timeindex"):
        (pdir / names.segment_file_name(bases[0], kind)).unlink()
    (root / names.LOG_START_OFFSET_CHECKPOINT).write_bytes(checkpoint.build_offset_checkpoint({("t", 0): 0}))
    seg = {"segmentId": b"\x01" * 16, "startOffset": 0, "endOffset": -3, "brokerId": 1, "maxTimestampMs": 1,
           "eventTimestampMs": 1, "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 0}],
           "segmentSizeInBytes": 100, "customMetadata": None, "remoteLogSegmentState": 1}
    (pdir / names.REMOTE_LOG_SNAPSHOT).write_bytes(build_remote_log_snapshot(0, 5, [seg]))
    cache_file(root, "index", offset_entries((4, 0), (2, 4096)))
    return root


def test_fleet_scan_reports_the_tiered_findings_doctor_does(tmp_path: Path) -> None:
    log_dir = tiered_log_dir(tmp_path / "broker-1")
    scan([LogDir("1", str(log_dir))], tmp_path / "out", record=False)
    rows = ds.dataset(str(tmp_path / "out" / "findings"), format="parquet").to_table().to_pylist()
    mine = Counter((r["code"], r["path"], r["position"], r["offset"]) for r in rows if r["code"] in TIERED)
    theirs = Counter((f.code, f.path, f.position, f.offset) for f in diagnose([log_dir]).findings
                     if f.code in TIERED)
    assert {k[0] for k in theirs} == set(TIERED), f"doctor gives each tiered finding: {theirs}"
    assert mine == theirs, "the fleet scan's tiered findings are doctor's"
