"""The columnar segment dump gives the batch-by-batch reference's entries, in its order, streamed."""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.kafka import batch as v2
from replog.formats.kafka import fastwalk
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.segment import SegmentWalk, batch_records
from replog.samples.kafka_fleet import generate_kafka_fleet
from replog.toolkit import dump_segment
from replog.toolkit.dump_entries import DumpOptions, batch_entry, batch_row_entry, record_entry
from tests.formats.kafka.segments import TS, data_batch, marker, segment
from tests.formats.kafka.test_fastwalk import segments
from tests.realdata import real_files

SEG = "00000000000000000000.log"
OPTIONS = [
    DumpOptions(),
    DumpOptions(deep=True),
    DumpOptions(print_data=True, key_decoder="hex", value_decoder="base64"),
    DumpOptions(deep=True, from_offset=1005, to_offset=1012),
    DumpOptions(deep=True, max_bytes=300),
    DumpOptions(print_data=True, value_decoder="json", txn_decoder=True),
]


@pytest.fixture(params=["compiled", "reference-walk"])
def walk_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Small groups, so group and conversion boundaries fall inside small segments; the compiled
    walk for every file size, or the reference walk's blocks."""
    if request.param == "compiled" and not fastwalk.HAVE_NUMBA:
        pytest.skip("numba not installed")
    monkeypatch.setattr(dump_segment, "FAST_WALK_BYTES", 0 if request.param == "compiled" else 1 << 62)
    monkeypatch.setattr(dump_segment, "BLOCK_ROWS", 5)
    monkeypatch.setattr(dump_segment, "GROUP_ROWS", 3)
    monkeypatch.setattr(dump_segment, "GROUP_BYTES", 200)
    monkeypatch.setattr(dump_segment, "PY_ROWS", 2)
    yield request.param


def assert_same_dump(path: Path, opts: DumpOptions) -> None:
    assert list(dump_segment.segment_entries(path, opts)) == list(dump_segment.reference_segment_entries(path, opts))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(segments(), st.sampled_from(OPTIONS), st.sampled_from([SEG, "00000000000000000500.log", "x.checkpoint"]))
def test_damaged_segments_dump_as_the_reference(walk_kind: str, buf: bytes, opts: DumpOptions, name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(buf)
        assert_same_dump(path, opts)


def test_control_batches_and_transactions(walk_kind: str, tmp_path: Path) -> None:
    path = tmp_path / SEG
    path.write_bytes(segment(data_batch(0, pid=7), marker(3, commit=True, pid=7), data_batch(4, 5, codec=1),
                             marker(9, commit=False, pid=8)))
    for opts in OPTIONS:
        assert_same_dump(path, opts)


def test_to_offset_ends_a_batch_at_its_first_record_past_it(walk_kind: str, tmp_path: Path) -> None:
    """Record offsets that go back inside a batch: `--to-offset` stops at the first one past it, as
    kafka-dump-log's reference loop does, and the next batch starts with its own records."""
    jumbled = v2.build_batch([v2.Record(o, TS, b"k", b"v") for o in (1000, 1010, 1001)], base_offset=1000)
    path = tmp_path / SEG
    path.write_bytes(segment(jumbled, data_batch(1011, 2)))
    opts = DumpOptions(deep=True, to_offset=1005)
    records = [e["offset"] for e in dump_segment.segment_entries(path, opts) if e["kind"] == "record"]
    assert records == [1000]
    assert_same_dump(path, opts)


@pytest.fixture(scope="module")
def fleet_logs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("fleet")
    generate_kafka_fleet(root)
    logs = sorted(root.rglob("*.log"))
    assert logs
    return logs


def test_sample_fleet_dumps_as_the_reference(walk_kind: str, fleet_logs: list[Path]) -> None:
    for path in fleet_logs:
        for opts in (DumpOptions(print_data=True), DumpOptions(offsets_decoder=True), DumpOptions(from_offset=30)):
            assert_same_dump(path, opts)


def test_real_segments_dump_as_the_reference(walk_kind: str) -> None:
    logs = real_files("**/*.log") + real_files("**/*.checkpoint", required=False)
    for path in logs:
        for opts in (DumpOptions(print_data=True), DumpOptions(metadata_decoder=True)):
            assert_same_dump(path, opts)


def test_entries_are_produced_as_they_are_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The first entries come before the rest of the segment's records are decoded: nothing is collected."""
    if not fastwalk.HAVE_NUMBA:
        pytest.skip("numba not installed")
    from replog.formats.kafka import fastrecords
    decoded: list[int] = []
    real = fastrecords.record_columns

    def counting(buf: bytes, path: str, block: BatchBlock):  # type: ignore[no-untyped-def]
        decoded.append(len(block))
        return real(buf, path, block)

    monkeypatch.setattr(fastrecords, "record_columns", counting)
    monkeypatch.setattr(dump_segment, "FAST_WALK_BYTES", 0)
    path = tmp_path / SEG
    path.write_bytes(segment(*(data_batch(i, 1) for i in range(5000))))
    first = list(islice(dump_segment.segment_entries(path, DumpOptions(deep=True)), 3))
    assert [e["kind"] for e in first] == ["batch", "record", "batch"]
    assert sum(decoded) <= dump_segment.GROUP_ROWS
    assert sum(1 for _ in dump_segment.segment_entries(path, DumpOptions(deep=True))) == 10000


def test_findings_are_dropped_once_written(walk_kind: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every batch damaged: the walk's finding list holds about a block's findings, not the log's."""
    damaged = bytearray(segment(*(data_batch(i, 1) for i in range(300))))
    walks: list[SegmentWalk] = []
    real = dump_segment._walk

    def keep(*args: Any) -> Any:
        walk, blocks = real(*args)
        walks.append(walk)
        return walk, blocks

    monkeypatch.setattr(dump_segment, "_walk", keep)
    size = len(data_batch(0, 1))
    for k in range(300):
        damaged[k * size + size - 1] ^= 1  # the last byte is under the CRC
    path = tmp_path / SEG
    path.write_bytes(bytes(damaged))
    most = 0
    for entry in dump_segment.segment_entries(path, DumpOptions()):
        most = max(most, len(walks[0].findings))
        assert entry["kind"] in ("batch", "finding")
    assert most <= 2 * dump_segment.BLOCK_ROWS
    assert_same_dump(path, DumpOptions())


def test_a_block_row_gives_the_batch_entry_of_its_batch_info() -> None:
    buf = segment(data_batch(0, pid=7), marker(3, commit=True, pid=7), data_batch(4, 5, codec=1))
    infos = list(SegmentWalk(buf, "p").batches())
    block = BatchBlock.from_infos(infos)
    assert [batch_row_entry("p", row) for row in block.cols.T.tolist()] == [batch_entry("p", i) for i in infos]
    control = infos[1]
    rec = batch_records(buf, control)[0]
    entry = record_entry("p", control, rec.offset, rec.timestamp, rec.sequence, rec.key, rec.value,
                         rec.headers, DumpOptions())
    assert entry["control_type"] == "COMMIT" and entry["coordinator_epoch"] == 1 and entry["is_control"] is True
