"""Small seed inputs for every fuzz target, built with replog's own writers.

`hand_built()` is deterministic: `make_corpus.py` writes it to
`tests/fuzz/corpus/<target>/`. `from_fleet(root)` cuts seeds out of a
generated sample fleet (real-looking segments, indexes and checkpoints).
"""
from __future__ import annotations

import struct
from pathlib import Path

from crc32c import crc32c

from replog.formats.discovery import FileKind, classify_file
from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, codecs, control, legacy, offset_index, time_index, txn_index
from replog.formats.kafka.checkpoint import EpochEntry
from replog.formats.kafka.clean_shutdown import CleanShutdown, build_clean_shutdown
from replog.formats.kafka.internal import consumer_offsets, metadata, transaction_state
from replog.formats.kafka.meta_properties import MetaProperties, build_meta_properties
from replog.formats.kafka.partition_metadata import PartitionMetadata, build_partition_metadata
from replog.formats.kafka.producer_snapshot import ProducerSnapshotEntry, build_producer_snapshot
from replog.formats.kafka.quorum_state import QuorumState, build_quorum_state
from replog.formats.kafka.segment import SegmentWalk
from replog.formats.rocketmq import checkpoint as rmq_checkpoint
from replog.formats.rocketmq import commitlog, config_json, consumequeue, epoch_file, index_file

INDEX_SLOTS = 16       # small RocketMQ index files: 40 + 16*4 + 8*20 bytes
INDEX_ENTRIES = 8
TOPIC_ID = "q1ReQqTpRxWGx3_gK4yH2A"


def _records(base: int, n: int, ts: int = 1_700_000_000_000) -> list[v2.Record]:
    return [v2.Record(base + i, ts + i, f"k{i}".encode(), f"value-{i}".encode(), (("h", b"v"),) if i % 2 else ())
            for i in range(n)]


def segments() -> dict[str, bytes]:
    plain = v2.build_batch(_records(0, 3), base_offset=0, partition_leader_epoch=1)
    gz = v2.build_batch(_records(3, 4), base_offset=3, partition_leader_epoch=1, codec=codecs.GZIP)
    zs = v2.build_batch(_records(7, 4), base_offset=7, partition_leader_epoch=2, codec=codecs.ZSTD)
    sn = v2.build_batch(_records(11, 2), base_offset=11, partition_leader_epoch=2, codec=codecs.SNAPPY)
    lz = v2.build_batch(_records(13, 2), base_offset=13, partition_leader_epoch=2, codec=codecs.LZ4)
    txn = v2.build_batch(_records(15, 2), base_offset=15, producer_id=7, producer_epoch=0, base_sequence=0,
                         transactional=True, partition_leader_epoch=2)
    marker = control.build_marker_batch(offset=17, commit=False, producer_id=7, producer_epoch=0,
                                        coordinator_epoch=3, timestamp=1_700_000_000_100, partition_leader_epoch=2)
    empty = v2.build_batch([], base_offset=18)
    v0 = legacy.build_message(0, b"k", b"v0", magic=0)
    v1 = legacy.build_message(1, None, b"v1", magic=1, timestamp=1_700_000_000_000)
    v1z = legacy.build_compressed([(2, 1, b"a", b"x"), (3, 2, b"b", b"y")], magic=1, codec=codecs.GZIP)
    offsets = v2.build_batch([v2.Record(0, 1, consumer_offsets.encode_offset_commit_key("g", "t", 0),
                                        consumer_offsets.encode_offset_commit_value(42, "m", 1))], base_offset=0)
    return {"v2_mixed": plain + gz + zs + sn + lz + txn + marker, "v2_empty": plain + empty,
            "legacy": v0 + v1 + v1z, "offsets_topic": offsets, "torn": (plain + gz)[:-7],
            "zero_tail": plain + bytes(200)}


def legacy_entries() -> dict[str, bytes]:
    return {"v0": legacy.build_message(5, b"key", b"value", magic=0),
            "v1": legacy.build_message(5, None, b"value", magic=1, timestamp=99),
            "v1_snappy": legacy.build_compressed([(0, 1, b"a", b"1"), (1, 2, None, b"2")], magic=1,
                                                 codec=codecs.SNAPPY),
            "v0_gzip": legacy.build_compressed([(10, 0, b"a", b"1"), (11, 0, b"b", b"2")], magic=0,
                                               codec=codecs.GZIP),
            "v1_lz4": legacy.build_compressed([(0, 5, b"k", b"v" * 50)], magic=1, codec=codecs.LZ4)}


def codec_payloads() -> dict[str, bytes]:
    """First byte: codec id; second: magic; then the compressed payload."""
    data = b"".join(v2.encode_record(i, i, b"k", b"value-%d" % i, ()) for i in range(20))
    out = {}
    for codec in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD):
        for magic in (0, 2) if codec != codecs.ZSTD else (2,):
            out[f"{codecs.CODEC_NAMES[codec]}_m{magic}"] = (bytes([codec, magic])
                                                            + codecs.compress(codec, data, magic=magic))
    return out


def offset_indexes() -> dict[str, bytes]:
    entries = [(10, 0), (20, 4096), (35, 8200)]
    return {"entries": offset_index.write_offset_index(entries, 0),
            "prealloc": offset_index.write_offset_index(entries, 0) + bytes(64)}


def time_indexes() -> dict[str, bytes]:
    entries = [(1_700_000_000_000, 10), (1_700_000_000_500, 20)]
    return {"entries": time_index.write_time_index(entries, 0),
            "prealloc": time_index.write_time_index(entries, 0) + bytes(48)}


def txn_indexes() -> dict[str, bytes]:
    return {"two": txn_index.write_txn_index([txn_index.AbortedTxn(7, 10, 20, 5), txn_index.AbortedTxn(8, 30, 31, 30)])}


def snapshots() -> dict[str, bytes]:
    e = [ProducerSnapshotEntry(7, 0, 9, 100, 9, 1_700_000_000_000, -1, -1),
         ProducerSnapshotEntry(8, 1, 4, 120, 4, 1_700_000_000_001, 3, 110)]
    return {"two": build_producer_snapshot(e), "empty": build_producer_snapshot([])}


def checkpoints() -> dict[str, bytes]:
    return {"offsets": checkpoint.build_offset_checkpoint({("orders", 0): 100, ("orders", 1): 7, ("a.b-c", 12): 0}),
            "epochs": checkpoint.build_leader_epoch_checkpoint([EpochEntry(0, 0), EpochEntry(3, 120)]),
            "empty": checkpoint.build_offset_checkpoint({})}


def small_text_files() -> dict[str, dict[str, bytes]]:
    return {
        "kafka_partition_metadata": {"v0": build_partition_metadata(PartitionMetadata(0, TOPIC_ID))},
        "kafka_meta_properties": {
            "v0": build_meta_properties(MetaProperties.of(0, "c1", 1), when="Mon Jan 01 00:00:00 UTC 2024"),
            "v1": build_meta_properties(MetaProperties.of(1, "c1", 2, "AAAAAAAAAAAAAAAAAAAAAQ"),
                                        when="Mon Jan 01 00:00:00 UTC 2024")},
        "kafka_quorum_state": {"v0": build_quorum_state(QuorumState(0, leader_id=1, leader_epoch=4, voted_id=-1,
                                                                    applied_offset=10, current_voters=(1, 2, 3)))},
        "kafka_clean_shutdown": {"json": build_clean_shutdown(CleanShutdown(0, 12)), "empty": b""},
    }


def internal_records() -> dict[str, bytes]:
    """Selector byte (0 offsets, 1 transactions, 2 metadata, 3 control), u16 key length, key, value."""
    def frame(sel: int, key: bytes, value: bytes) -> bytes:
        return bytes([sel]) + struct.pack(">H", len(key)) + key + value
    return {
        "offset_commit": frame(0, consumer_offsets.encode_offset_commit_key("group", "orders", 3),
                               consumer_offsets.encode_offset_commit_value(42, "meta", 1_700_000_000_000)),
        "txn": frame(1, transaction_state.encode_transaction_log_key("tx-1"),
                     transaction_state.encode_transaction_log_value(
                         {"producerId": 7, "producerEpoch": 0, "transactionTimeoutMs": 60000,
                          "transactionStatus": 1, "transactionPartitions": [{"topic": "t", "partitionIds": [0, 1]}],
                          "transactionLastUpdateTimestampMs": 1, "transactionStartTimestampMs": 1})),
        "topic_record": frame(2, b"", metadata.encode_topic_record("orders", TOPIC_ID)),
        "feature": frame(2, b"", metadata.encode_feature_level_record("metadata.version", 20)),
        "config": frame(2, b"", metadata.encode_config_record(2, "orders", "retention.ms", "1000")),
        "abort_marker": frame(3, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 5)),
    }


def commitlogs() -> dict[str, bytes]:
    w = commitlog.CommitLogWriter(2048, prop_crc=False)
    w.append(topic="orders", body=b"hello", properties={"KEYS": "k1", "TAGS": "a"})
    w.append(topic="orders", body=b"world" * 10, queue_id=1)
    w.append(topic="t" * 130, body=b"v2 topic")
    w.append(topic="orders", body=b"x" * 40, born_host="[::1]:9000")
    w.append(topic="orders", body=b"y" * 900)
    w.append(topic="orders", body=b"z" * 900)   # rolls: BLANK at the end of the first file
    files = w.files()
    crc = commitlog.CommitLogWriter(1024, prop_crc=True)
    crc.append(topic="p", body=b"with crc tail", properties={"KEYS": "a b"})
    return {"file0": bytes(files[0]), "file1": bytes(files[2048]), "prop_crc": bytes(crc.files()[0])}


def consumequeues() -> dict[str, bytes]:
    entries = b"".join(consumequeue.build_entry(i * 100, 100, i) for i in range(10))
    ext = consumequeue.build_ext_unit(5, 1_700_000_000_000, b"\x01\x02")
    return {"entries": entries + bytes(40), "ext_units": b"\xee" + ext * 3}


def index_files() -> dict[str, bytes]:
    triples = [(index_file.build_key("orders", f"k{i}"), 100 * i, 1_700_000_000_000 + i * 1000) for i in range(6)]
    return {"six": index_file.build_index(triples, hash_slot_num=INDEX_SLOTS, index_num=INDEX_ENTRIES)}


def rocketmq_small() -> dict[str, dict[str, bytes]]:
    cp = rmq_checkpoint.build_checkpoint(rmq_checkpoint.Checkpoint(1_700_000_000_000, 1_700_000_000_001,
                                                                   1_700_000_000_002, 4096, 4000))
    epochs = epoch_file.build_epoch_file([epoch_file.EpochEntry(1, 0), epoch_file.EpochEntry(2, 4096)]).encode()
    cfg = config_json.dumps({"topicConfigTable": {"orders": {"topicName": "orders", "readQueueNums": 4, "perm": 6}},
                             "dataVersion": {"counter": 3, "timestamp": 1}, "offsetTable": {"orders@g": {0: 12}}})
    return {"rocketmq_checkpoint": {"v5": cp[:40], "v5_padded": cp[:1024], "v4": cp[:24]},
            "rocketmq_epoch": {"two": epochs},
            "rocketmq_config": {"topics": cfg.encode()}}


def rocketmq_stores_of_today() -> dict[str, dict[str, bytes]]:
    """DLedger data, timer files and batch consume queues, from replog's writers."""
    from replog.formats.rocketmq import batch_consumequeue, dledger, timer_check, timer_log

    w = dledger.DLedgerWriter(1024)
    for i, body in enumerate((b"a", b"b" * 300, b"c" * 500)):
        w.append(commitlog.build_message(topic="orders", body=body, queue_id=i % 2, queue_offset=i // 2),
                 term=1 + i // 2)
    units = [timer_log.build_unit(prev_pos=-1 if i == 0 else (i - 1) * timer_log.UNIT_SIZE,
                                  curr_write_time=1_700_000_000_000, delayed_time=60_000 + i,
                                  offset_py=i * 200, size_py=200) for i in range(4)]
    check = timer_check.build_timer_checkpoint(timer_check.TimerCheckpoint(1_700_000_000_000, 208, 4, 4))
    metrics = b'{"timingCount":{"orders":{"count":3,"timeStamp":1}},"dataVersion":{"counter":1,"timestamp":1}}'
    bcq = batch_consumequeue.build_file([(i * 500, 500, 7, 1_700_000_000_000, i * 4, 4) for i in range(5)],
                                        file_size=batch_consumequeue.UNIT_SIZE * 8)
    return {"rocketmq_dledger": {f"file{start}": bytes(buf) for start, buf in w.data.items()},
            "rocketmq_timer": {"log": b"".join(units), "check": check[:64], "metrics": metrics},
            "rocketmq_batch_cq": {"eight": bcq}}


def hand_built() -> dict[str, dict[str, bytes]]:
    """target name -> {seed name: bytes}."""
    out = {
        "kafka_segment": segments(), "kafka_legacy": legacy_entries(), "kafka_codecs": codec_payloads(),
        "kafka_offset_index": offset_indexes(), "kafka_time_index": time_indexes(),
        "kafka_txn_index": txn_indexes(), "kafka_producer_snapshot": snapshots(),
        "kafka_checkpoint": checkpoints(), "kafka_internal": internal_records(),
        "rocketmq_commitlog": commitlogs(), "rocketmq_consumequeue": consumequeues(),
        "rocketmq_index": index_files(),
    }
    out.update(small_text_files())
    out.update(rocketmq_small())
    out.update(rocketmq_stores_of_today())
    out["kafka_partition"] = {k: v for k, v in segments().items() if k in ("v2_mixed", "legacy")}
    out["kafka_recover"] = recoverable()
    return out


def recoverable() -> dict[str, bytes]:
    """Segments for `recover` and `--salvage`: damage between valid batches, and a valid batch (CRC and
    all) whose last offset delta is 0x7fffffff, beyond what its segment can index."""
    good = [v2.build_batch(_records(i * 3, 3), base_offset=i * 3, partition_leader_epoch=1) for i in range(3)]
    over = bytearray(v2.build_batch(_records(9, 1), base_offset=9, partition_leader_epoch=1))
    struct.pack_into(">i", over, v2.AT["last_offset_delta"], 0x7FFFFFFF)
    struct.pack_into(">I", over, v2.AT["crc"], crc32c(bytes(over[v2.CRC_START:])))
    after = v2.build_batch(_records(12, 2), base_offset=12, partition_leader_epoch=1)
    junk = b"\xff" * 30
    return {"damaged_middle": b"".join(good[:2]) + junk + good[2] + after,
            "offset_overflow": b"".join(good) + junk + bytes(over) + after}


# --- seeds cut from a generated fleet ----------------------------------------------------

_KIND_TARGET = {
    FileKind.KAFKA_SEGMENT: "kafka_segment", FileKind.KAFKA_KRAFT_SNAPSHOT: "kafka_segment",
    FileKind.KAFKA_OFFSET_INDEX: "kafka_offset_index", FileKind.KAFKA_TIME_INDEX: "kafka_time_index",
    FileKind.KAFKA_TXN_INDEX: "kafka_txn_index", FileKind.KAFKA_PRODUCER_SNAPSHOT: "kafka_producer_snapshot",
    FileKind.KAFKA_OFFSET_CHECKPOINT: "kafka_checkpoint", FileKind.KAFKA_EPOCH_CHECKPOINT: "kafka_checkpoint",
    FileKind.KAFKA_PARTITION_METADATA: "kafka_partition_metadata",
    FileKind.KAFKA_META_PROPERTIES: "kafka_meta_properties", FileKind.KAFKA_QUORUM_STATE: "kafka_quorum_state",
    FileKind.KAFKA_CLEAN_SHUTDOWN: "kafka_clean_shutdown",
}
_ENTRY_SIZE = {"kafka_offset_index": 8, "kafka_time_index": 12, "kafka_txn_index": 34}


def _head_batches(data: bytes, budget: int) -> bytes:
    """Whole batches from the start, at most `budget` bytes (at least the first batch if it fits)."""
    end = 0
    for info in SegmentWalk(data, "<seed>").batches():
        if info.end > budget:
            break
        end = info.end
    return data[:end]


def cut_seed(target: str, data: bytes, budget: int) -> bytes | None:
    if target == "kafka_segment":
        return _head_batches(data, budget) or None
    if target in _ENTRY_SIZE:
        size = _ENTRY_SIZE[target]
        return data[:budget - budget % size]
    return data if len(data) <= budget else None


def from_fleet(root: Path, budget: int = 32 << 10, per_target: int = 12) -> dict[str, dict[str, bytes]]:
    """Seeds cut from every file kind of a generated fleet, a few per target, files in name order."""
    out: dict[str, dict[str, bytes]] = {}
    seen_dirs: set[tuple[str, str]] = set()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        target = _KIND_TARGET.get(classify_file(path))
        if target is None or len(out.get(target, {})) >= per_target or (target, path.parent.name) in seen_dirs:
            continue  # one file per kind and partition name: variety before volume
        seen_dirs.add((target, path.parent.name))
        seed = cut_seed(target, path.read_bytes(), budget)
        if seed:
            name = str(path.relative_to(root)).replace("/", "__")
            out.setdefault(target, {})[name] = seed
    return out
