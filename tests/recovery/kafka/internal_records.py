"""Internal-topic records and producer batches written without replog's encoders.

`__consumer_offsets` and `__transaction_state` keys and values are packed with `struct` from the
group and transaction coordinators' schemas (OffsetCommitKey v1, OffsetCommitValue v1/v3,
TransactionLogKey v0, TransactionLogValue v0); `read_offset_commit` undoes the same layouts, so a
test can hold them against the real `__consumer_offsets` files. Batches come from kafka-python's
builder; a transaction marker is its batch with the control bit set and the CRC-32C recomputed, as a
leader writes it. A partition dir is one segment plus its leader-epoch checkpoint, in the broker's
text format.
"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest
from crc32c import crc32c

TS = 1_700_000_000_000
COMMIT, ABORT = 1, 0


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """OffsetCommitKey at version 1 (what brokers write)."""
    return struct.pack(">h", 1) + _string(group) + _string(topic) + struct.pack(">i", partition)


def offset_commit_value(offset: int, timestamp: int, leader_epoch: int = -1, metadata: str = "",
                        version: int = 3, expire: int = -1) -> bytes:
    """OffsetCommitValue v3 (offset, leader epoch, metadata, commit time) or v1 (with an expire time)."""
    if version == 1:
        return struct.pack(">hq", 1, offset) + _string(metadata) + struct.pack(">qq", timestamp, expire)
    return struct.pack(">hqi", 3, offset, leader_epoch) + _string(metadata) + struct.pack(">q", timestamp)


def _read_string(buf: bytes, at: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", buf, at)
    return buf[at + 2:at + 2 + n].decode(), at + 2 + n


def read_offset_commit(key: bytes, value: bytes | None) -> tuple[tuple[str, str, int], dict | None] | None:
    """(group, topic, partition) and the value's fields of an offset commit record (None: another type)."""
    (kv,) = struct.unpack_from(">h", key)
    if kv not in (0, 1):
        return None
    group, at = _read_string(key, 2)
    topic, at = _read_string(key, at)
    (partition,) = struct.unpack_from(">i", key, at)
    if value is None:
        return (group, topic, partition), None
    (vv,) = struct.unpack_from(">h", value)
    (offset,) = struct.unpack_from(">q", value, 2)
    at = 10
    epoch = -1
    if vv >= 3:
        (epoch,) = struct.unpack_from(">i", value, at)
        at += 4
    metadata, at = _read_string(value, at)
    (ts,) = struct.unpack_from(">q", value, at)
    out = {"version": vv, "offset": offset, "leader_epoch": epoch, "metadata": metadata, "timestamp": ts}
    if vv == 1:
        (out["expire"],) = struct.unpack_from(">q", value, at + 8)
    return (group, topic, partition), out


STATES = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4, "CompleteAbort": 5}


def txn_key(transactional_id: str) -> bytes:
    return struct.pack(">h", 0) + _string(transactional_id)


def txn_value(producer_id: int, state: str, partitions: dict[str, list[int]], updated: int, epoch: int = 0,
              timeout_ms: int = 60_000) -> bytes:
    """TransactionLogValue v0."""
    body = struct.pack(">hqhib", 0, producer_id, epoch, timeout_ms, STATES[state])
    body += struct.pack(">i", len(partitions))
    for topic, ids in partitions.items():
        body += _string(topic) + struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", i) for i in ids)
    return body + struct.pack(">qq", updated, updated - 1000)


def batch(base: int, records: list[tuple[bytes | None, bytes | None]] | int, *, epoch: int = 0, pid: int = -1,
          producer_epoch: int = -1, seq: int = -1, transactional: bool = False, ts: int | None = None) -> bytes:
    """A v2 batch by kafka-python: `records` as (key, value) pairs, or a count of small records."""
    default = pytest.importorskip("kafka.record.default_records")
    if isinstance(records, int):
        records = [(b"k%d" % (base + i), b"v%d" % (base + i)) for i in range(records)]
    start = TS + base if ts is None else ts
    builder = default.DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                                producer_id=pid, producer_epoch=producer_epoch, base_sequence=seq,
                                                batch_size=1 << 20)
    for i, (k, v) in enumerate(records):
        builder.append(i, timestamp=start + i, key=k, value=v, headers=[])
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base)
    struct.pack_into(">i", raw, 12, epoch)
    return bytes(raw)


def marker(offset: int, pid: int, kind: int = COMMIT, *, epoch: int = 0, producer_epoch: int = 0,
           ts: int | None = None) -> bytes:
    """An end-transaction marker batch: kafka-python's batch with the control bit (0x20) and a new CRC."""
    raw = bytearray(batch(offset, [(struct.pack(">hh", 0, kind), struct.pack(">hi", 0, 3))], epoch=epoch, pid=pid,
                          producer_epoch=producer_epoch, transactional=True, ts=ts))
    raw[22] |= 0x20
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def partition_dir(log_dir: Path, name: str, batches: list[bytes], epochs: list[tuple[int, int]]) -> Path:
    """`log_dir/name` with one segment and its leader-epoch-checkpoint."""
    pdir = log_dir / name
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"".join(batches))
    (pdir / "leader-epoch-checkpoint").write_text(f"0\n{len(epochs)}\n" + "".join(f"{e} {o}\n" for e, o in epochs))
    return pdir


def high_watermarks(log_dir: Path, hws: dict[str, int]) -> None:
    """The log dir's replication-offset-checkpoint: "topic partition hw" lines for `{"topic-N": hw}`."""
    lines = [f"{name.rsplit('-', 1)[0]} {name.rsplit('-', 1)[1]} {hw}\n" for name, hw in hws.items()]
    (log_dir / "replication-offset-checkpoint").write_text(f"0\n{len(lines)}\n" + "".join(lines))
