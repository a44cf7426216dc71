"""A fleet scan reads each segment once: doctor's pass, whose blocks also make the `ls` summary and the
batch table. Its findings are doctor's and its summaries `ls`'s, over the compiled walk and the reference."""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from replog.formats.kafka import fastwalk
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.doctor import diagnose
from replog.recovery.kafka import logdir
from replog.recovery.kafka.logdir import summarize_log_dir
from replog.spark.tasks import run_unit
from replog.spark.units import Unit, log_dir_units
from replog.toolkit.views import ls_rows
from tests.recovery.kafka.log_dirs import (
    batches_of,
    build_log_dir,
    data_batch,
    flip,
    marker,
    seg_path,
    txn_batch,
    undecodable_batch,
)
from tests.spark.test_units import same_tables, tables_of

WALKS = ("reference", "compiled")
PLANTED = {"KAFKA_BATCH_CRC_MISMATCH", "KAFKA_TORN_TAIL", "KAFKA_RECORDS_UNDECODABLE"}
SEGMENT_FIELDS = ("path", "base_offset", "size", "batch_count", "first_offset", "valid_bytes", "valid_next_offset",
                  "first_timestamp", "max_timestamp")


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log dir whose partition `t-0` has a flipped CRC, an aborted transaction, a batch whose records do
    not decode and a torn tail, over several segments."""
    root = tmp_path_factory.mktemp("damaged") / "b1"
    extra = [txn_batch(200, 2, pid=7), marker(202, commit=False, pid=7, epoch=3), undecodable_batch(203),
             data_batch(206, 3, epoch=3)]
    pdir, bases = build_log_dir(root, extra=extra)
    second = seg_path(pdir, bases[1])
    flip(second, batches_of(second, bases[1])[1].end - 2)
    last = seg_path(pdir, bases[-1])
    last.write_bytes(last.read_bytes()[:-7])
    return root


@pytest.fixture(params=WALKS)
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every segment through the compiled walk (threshold 0), or through the reference (small segments)."""
    if request.param == "compiled":
        if not fastwalk.HAVE_NUMBA:
            pytest.skip("numba is not installed")
        monkeypatch.setattr(logdir, "FAST_WALK_BYTES", 0)
    return str(request.param)


def _finding_rows(tables: dict[str, pa.Table]) -> Counter[tuple[Any, ...]]:
    return Counter((r["code"], r["severity"], r["path"], r["position"], r["offset"], r["message"])
                   for r in tables["findings"].to_pylist())


@pytest.mark.parametrize("split_bytes", [None, 1])
def test_damaged_partition_findings_equal_doctor(damaged: Path, walk: str, split_bytes: int | None) -> None:
    tables = tables_of(log_dir_units("1", str(damaged), split_bytes))
    theirs = Counter((f.code, f.severity.value, f.path, f.position, f.offset, f.message)
                     for f in diagnose([damaged]).findings)
    assert _finding_rows(tables) == theirs
    assert PLANTED <= {code for code, *_ in theirs}


def test_damaged_partition_summary_equals_ls(damaged: Path, walk: str) -> None:
    tables = tables_of(log_dir_units("1", str(damaged), None))
    ls = summarize_log_dir(damaged)
    [row], [mine] = ls_rows(ls.partitions), tables["partitions"].to_pylist()
    assert {k: mine[k] for k in row if k in mine} == {k: row[k] for k in row if k in mine}
    assert [tuple(r[k] for k in SEGMENT_FIELDS) for r in tables["segments"].to_pylist()] == \
        [tuple(getattr(s, k) for k in SEGMENT_FIELDS) for s in ls.partitions[0].segments]
    assert any(s.valid_bytes < s.size for s in ls.partitions[0].segments)


def test_compiled_and_reference_walks_give_equal_tables(damaged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not fastwalk.HAVE_NUMBA:
        pytest.skip("numba is not installed")
    units = log_dir_units("1", str(damaged), None)
    reference = tables_of(units)
    monkeypatch.setattr(logdir, "FAST_WALK_BYTES", 0)
    compiled = tables_of(units)
    same_tables(reference, compiled)
    kept = Counter(compiled["batches"].column("survives_recovery").to_pylist())
    assert kept[True] > 0 and kept[False] > 0


class _Counts:
    """Per `.log` path: opened (os.open), walked (a `SegmentWalk` made: every walk, compiled or not, has
    one), walked by the compiled kernel (a `FastWalk` made)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened: Counter[str] = Counter()
        self.walked: Counter[str] = Counter()
        self.compiled: Counter[str] = Counter()
        real_open, real_walk, real_fast = os.open, SegmentWalk.__init__, fastwalk.FastWalk.__init__

        def counting_open(path: Any, *a: Any, **k: Any) -> int:
            if str(path).endswith(".log"):
                self.opened[str(path)] += 1
            return real_open(path, *a, **k)

        def counting_walk(walk: SegmentWalk, buf: Any, path: str, *a: Any, **k: Any) -> None:
            self.walked[path] += 1
            real_walk(walk, buf, path, *a, **k)

        def counting_fast(walk: fastwalk.FastWalk, buf: Any, path: str, *a: Any, **k: Any) -> None:
            self.compiled[path] += 1
            real_fast(walk, buf, path, *a, **k)

        monkeypatch.setattr(os, "open", counting_open)
        monkeypatch.setattr(SegmentWalk, "__init__", counting_walk)
        monkeypatch.setattr(fastwalk.FastWalk, "__init__", counting_fast)


def test_each_segment_is_opened_and_walked_once(damaged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not fastwalk.HAVE_NUMBA:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(logdir, "FAST_WALK_BYTES", 0)
    logs = sorted(str(p) for p in (damaged / "t-0").glob("*.log"))
    [unit] = [u for u in log_dir_units("1", str(damaged), None) if u.kind == "partition"]
    counts = _Counts(monkeypatch)
    tables = [table for table, _ in run_unit(Unit.from_dict(unit.to_dict()))]
    assert {"partitions", "segments", "findings", "batches"} <= set(tables)
    assert len(logs) > 2
    assert counts.opened == counts.walked == counts.compiled == Counter(dict.fromkeys(logs, 1))


def test_split_partition_walks_each_segment_once_per_unit(damaged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The light unit's in-order pass (framing, state, indexes) and the segments units' pass (records, batch
    rows) each read a segment once: twice in all, the price of decoding segments in parallel."""
    units = [u for u in log_dir_units("1", str(damaged), 1) if u.kind != "log_dir"]
    logs = sorted(str(p) for p in (damaged / "t-0").glob("*.log"))
    counts = _Counts(monkeypatch)
    by_kind: dict[str, Counter[str]] = {}
    for unit in units:
        before = counts.walked.copy()
        for _ in run_unit(Unit.from_dict(unit.to_dict())):
            pass
        by_kind.setdefault(unit.kind, Counter()).update(counts.walked - before)
    assert by_kind["partition"] == by_kind["segments"] == Counter(dict.fromkeys(logs, 1))
    assert counts.opened == Counter(dict.fromkeys(logs, 2))
