"""A large batch's records decoded a block at a time give the rows of the whole-batch decode, and `dump`
streams them so; a batch the kernels doubt goes to the reference."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.fastrecords import record_columns
from replog.formats.kafka.fastwalk import HAVE_NUMBA
from replog.formats.kafka.record_blocks import batch_record_tables
from replog.formats.kafka.segment import SegmentWalk
from replog.toolkit.dump import DumpOptions, dump_file
from replog.toolkit.dump_segment import reference_segment_entries

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="the record kernels need numba")


def _batch(n: int, codec: int = codecs.ZSTD) -> bytes:
    recs = [v2.Record(100 + i, 1_700_000_000_000 + i, None if i % 7 == 0 else b"k%d" % i, b"v" * (i % 13),
                      (("h", b"x"),) if i % 5 == 0 else ()) for i in range(n)]
    return v2.build_batch(recs, base_offset=100, codec=codec, producer_id=3, producer_epoch=0, base_sequence=5)


@pytest.mark.parametrize("codec", [codecs.NONE, codecs.ZSTD])
def test_blocks_of_records_are_the_whole_batch_decode(codec: int) -> None:
    data = _batch(5000, codec)
    info = next(SegmentWalk(data, "b").batches())
    tables = batch_record_tables(data, info, block=700)
    assert tables is not None
    parts = list(tables)
    assert [t.num_rows for t in parts] == [700] * 7 + [100]
    whole, found = record_columns(data, "b", BatchBlock.from_infos([info]))
    assert not found and pa.concat_tables(parts).equals(whole)


def test_a_doubtful_batch_is_left_to_the_reference() -> None:
    data = bytearray(_batch(50, codecs.NONE))
    data[v2.HEADER_SIZE] ^= 0x02  # the first record's length: the lengths no longer frame the payload
    info = next(SegmentWalk(bytes(data), "b").batches())
    assert batch_record_tables(bytes(data), info, block=16) is None


def test_dump_streams_a_large_batch_and_agrees_with_the_reference(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from replog.formats.kafka import record_blocks
    monkeypatch.setattr(v2, "BLOCK_RECORDS", 300)
    sizes: list[int] = []

    def spy(*args: object) -> object:
        tables = batch_record_tables(*args)  # type: ignore[arg-type]
        return None if tables is None else (sizes.append(t.num_rows) or t for t in tables)
    monkeypatch.setattr(record_blocks, "batch_record_tables", spy)
    path = tmp_path / "00000000000000000100.log"
    path.write_bytes(_batch(2000))
    opts = DumpOptions(deep=True, print_data=True, from_offset=150, to_offset=1900)
    got = [e for e in dump_file(path, opts) if e["kind"] != "file"]
    assert got == list(reference_segment_entries(path, opts))
    assert sum(e["kind"] == "record" for e in got) == 1751
    assert sizes == [300] * 6 + [200]  # decoded a block at a time
