"""Table files an executor task writes itself: Parquet and Arrow IPC, atomically, memory bounded.

A fleet scan's tasks write their rows straight into OUT (the driver and the executors share it,
as they must for Spark's own writers): one file per task and table, under a unique temporary name
(`filecopy.OutputFile`: verified, fsynced, renamed into place; removed on failure). A task that
runs again (a lost executor, a speculative copy) writes the same rows under the same name.
Small rows are buffered up to `ROWS` before they become a row group; large blocks go straight
through, so a task holds at most one row group per table.
"""
from __future__ import annotations

import abc
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from replog.formats.filecopy import OutputFile

ROWS = 1 << 16
COMPRESSION = "zstd"   # the tables: written once, read by whoever queries them
FAST = "lz4"           # files the scan itself reads back (its work files, its cache): cheaper to write and read


class _Stream(io.RawIOBase):
    """An `OutputFile` as the binary stream pyarrow writes to."""

    def __init__(self, out: OutputFile) -> None:
        super().__init__()
        self.out = out

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self.out.write(memoryview(data))
        return len(data)


class _Sink(abc.ABC):
    """Rows of one schema into one file; `close` commits it, `discard` drops it."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path, self.schema = path, schema
        self.out = OutputFile(path)
        self.stream = pa.PythonFile(_Stream(self.out), mode="w")
        self.rows = 0

    def close(self) -> None:
        self._finish()
        self.stream.close()
        self.out.commit()

    def discard(self) -> None:
        self.out.discard()

    @abc.abstractmethod
    def _finish(self) -> None:
        """Write what is buffered and the file's footer (each format its own)."""


class ParquetSink(_Sink):
    """Buffered Parquet writer: row groups of up to `ROWS` rows."""

    def __init__(self, path: Path, schema: pa.Schema, compression: str = COMPRESSION) -> None:
        super().__init__(path, schema)
        fast = compression == FAST   # a work file: no statistics, dictionaries only where the schema has them
        self.writer = pq.ParquetWriter(self.stream, schema, compression=compression, write_statistics=not fast,
                                       use_dictionary=[f.name for f in schema if pa.types.is_dictionary(f.type)]
                                       if fast else True)
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        self.rows += batch.num_rows
        if batch.num_rows >= ROWS:
            self._flush()
            self.writer.write_batch(batch)
            return
        if batch.get_total_buffer_size() > 2 * batch.nbytes + (64 << 10):
            batch = batch.take(pa.array(range(batch.num_rows)))   # a slice held would hold all it slices
        self.pending.append(batch)
        self.pending_rows += batch.num_rows
        if self.pending_rows >= ROWS:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_batches(self.pending, self.schema))
            self.pending, self.pending_rows = [], 0

    def _finish(self) -> None:
        self._flush()
        self.writer.close()


class IpcSink(_Sink):
    """Arrow IPC file of record batches read back by index (`batches`: how many so far)."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        super().__init__(path, schema)
        self.writer = pa.ipc.new_file(self.stream, schema, options=pa.ipc.IpcWriteOptions(compression=FAST))
        self.batches = 0

    def write(self, batch: pa.RecordBatch) -> None:
        self.writer.write_batch(batch)
        self.batches += 1
        self.rows += batch.num_rows

    def _finish(self) -> None:
        self.writer.close()
