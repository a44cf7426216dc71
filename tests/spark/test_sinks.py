"""The task's Parquet sink: rows buffered into row groups hold only their own bytes."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from replog.spark.sinks import ParquetSink


def test_a_buffered_slice_does_not_hold_what_it_was_sliced_from(tmp_path: Path) -> None:
    big = pa.record_batch([pa.array(range(1 << 20), pa.int64())], names=["v"])
    sink = ParquetSink(tmp_path / "t.parquet", big.schema)
    for k in range(3):
        sink.write(big.slice(k * 10, 2))
    held = sum(b.get_total_buffer_size() for b in sink.pending)
    assert held < 1 << 10, held                  # not 3 x 8 MiB
    sink.close()
    assert pq.read_table(tmp_path / "t.parquet").column("v").to_pylist() == [0, 1, 10, 11, 20, 21]
