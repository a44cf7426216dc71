"""The contenders: one function per (task, implementation), each over the same bytes.

Each returns the number of records (walk: batches' record counts) it saw, so
the runner can check that every contender did the whole input.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from crc32c import crc32c

Runner = Callable[[bytes, str], int]


def replog_walk(buf: bytes, path: str) -> int:
    from replog.formats.kafka.fastwalk import fast_batch_columns
    table, _valid, _findings = fast_batch_columns(buf, path, 0)
    return int(table.column("count").to_numpy().sum())


def replog_reference_walk(buf: bytes, path: str) -> int:
    from replog.formats.kafka.segment import SegmentWalk
    return sum(info.count for info in SegmentWalk(buf, path, 0).batches())


def replog_decode(buf: bytes, path: str) -> int:
    from replog.formats.kafka.fastrecords import record_columns
    from replog.formats.kafka.fastwalk import fast_batch_columns
    table, _valid, _findings = fast_batch_columns(buf, path, 0)
    records, _ = record_columns(buf, path, table)
    return records.num_rows


def _checked_batches(records: Any) -> Iterator[Any]:
    """A peer's `MemoryRecords` batch by batch, each CRC-checked as its consumer path does."""
    while records.has_next():
        b = records.next_batch()
        if not b.validate_crc():
            raise ValueError("crc")
        yield b


def _walk(memory_records: type) -> Runner:
    """What a peer's `MemoryRecords` consumer path does per batch, minus the records."""
    def walk(buf: bytes, path: str) -> int:
        n = 0
        for b in _checked_batches(memory_records(buf)):
            _ = (b.base_offset, b.next_offset, b.crc, b.attributes, b.first_timestamp, b.max_timestamp,
                 b.producer_id, b.producer_epoch, b.base_sequence)  # read every field, as a consumer does
            n += b.next_offset - b.base_offset
        return n
    return walk


def _decode(memory_records: type) -> Runner:
    """Every record's offset, timestamp, key, value and headers, through a peer's reader."""
    def decode(buf: bytes, path: str) -> int:
        n = 0
        for b in _checked_batches(memory_records(buf)):
            for r in b:
                _ = (r.offset, r.timestamp, r.key, r.value, r.headers)
                n += 1
        return n
    return decode


def aiokafka_walk(buf: bytes, path: str) -> int:
    from aiokafka.record.memory_records import MemoryRecords
    return _walk(MemoryRecords)(buf, path)


def aiokafka_decode(buf: bytes, path: str) -> int:
    from aiokafka.record.memory_records import MemoryRecords
    return _decode(MemoryRecords)(buf, path)


def kafka_python_walk(buf: bytes, path: str) -> int:
    from kafka.record.memory_records import MemoryRecords
    return _walk(MemoryRecords)(buf, path)


def kafka_python_decode(buf: bytes, path: str) -> int:
    from kafka.record.memory_records import MemoryRecords
    return _decode(MemoryRecords)(buf, path)


def ceiling(buf: bytes, path: str) -> int:
    """CRC-32C over the whole buffer: no walk can beat it."""
    crc32c(buf)
    return -1


TASKS: dict[str, dict[str, Runner]] = {
    "walk": {"replog": replog_walk, "replog-reference": replog_reference_walk, "aiokafka": aiokafka_walk,
             "kafka-python": kafka_python_walk, "ceiling-crc32c": ceiling},
    "decode": {"replog": replog_decode, "aiokafka": aiokafka_decode, "kafka-python": kafka_python_decode},
}
PEERS = ("aiokafka", "kafka-python", "ceiling-crc32c")
