"""The files replog's `dump --format dump-log` is compared on with the real kafka-dump-log, and the options each
file is dumped with.

Generated files (replog's writers, written into a temp folder laid out as partition folders) cover every magic
(0, 1, 2), every codec, headers, null keys and values, bytes that are not UTF-8, transactions and their markers,
LogAppendTime, a delete horizon, a torn tail, a compacted log, a batch whose CRC does not match, offset and time
indexes (with the zero tail of a preallocated index and an entry the log contradicts), producer snapshots,
transaction indexes, `__consumer_offsets`, `__transaction_state`, `__share_group_state` (in 4.0's and 4.4's value
layouts, packed by `share_state_records`) and `__remote_log_metadata` records (packed by
`remote_log_metadata_records`), a KRaft metadata log and a KRaft
snapshot (header, KRaftVersion, voters, records, footer), and files kafka-dump-log ignores (a `.log.deleted`,
`leader-epoch-checkpoint`, `partition.metadata`). Real broker files from `/work/shared/realdata` are copied in beside
them when that folder is present (never into the repository), and so are the files of the lab's own real corpus
(`lab_corpus`: every codec in magic 1 and 2, idempotent and transactional producers, a cleaned compacted topic, a
metadata log with real elections), written by real clusters into the cache on first use.
"""
from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, codecs, control, legacy, offset_index, time_index, txn_index
from replog.formats.kafka.checkpoint import EpochEntry
from replog.formats.kafka.internal import consumer_offsets, metadata, transaction_state
from replog.formats.kafka.partition_metadata import PartitionMetadata, build_partition_metadata
from replog.formats.kafka.producer_snapshot import ProducerSnapshotEntry, build_producer_snapshot
from tests.brokers import lab_corpus
from tests.brokers import remote_log_metadata_records as rlmm
from tests.brokers import share_state_records as share
from tests.brokers.jars import VERSIONS, tools_problem
from tests.realdata import REALDATA

TS = 1_700_000_000_000
TOPIC_ID = "q1ReQqTpRxWGx3_gK4yH2A"
DIR_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
SEGMENT = "00000000000000000000"
# Real broker files dumped too (paths under REALDATA); each set's own folder layout is kept.
REAL_FILES = (
    "niloufar-ldi-kraft/__cluster_metadata-0/00000000000000000000.log",
    "niloufar-ldi-kraft/__consumer_offsets-6/00000000000000000000.log",
    "niloufar-ldi-kraft/__consumer_offsets-6/00000000000000000000.index",
    "niloufar-ldi-kraft/__consumer_offsets-6/00000000000000000000.timeindex",
    "niloufar-ldi-kraft/__consumer_offsets-6/00000000000000000013.snapshot",
    "niloufar-ldi-kraft/TestTopicPatient-0/00000000000000000000.log",
    "niloufar-ldi-kraft/bootstrap.checkpoint",
    "jeongrae-kraft/c441d190/__cluster_metadata-0/00000000000000000000.log",
    "jeongrae-kraft/c441d190/bootstrap.checkpoint",
    "sagarrao-3broker/c030fc1ce/kafka-logs-1/my_topic-1/00000000000000000000.log",
    "sagarrao-3broker/c030fc1ce/kafka-logs-1/my_topic-1/00000000000000000000.index",
    "sagarrao-3broker/c030fc1ce/kafka-logs-1/my_topic-1/00000000000000000000.timeindex",
    "sagarrao-3broker/c030fc1ce/kafka-logs-1/__consumer_offsets-43/00000000000000000000.log",
    "sagarrao-3broker/c030fc1ce/kafka-logs-1/my_other_topic-1/00000000000000000000.index",  # 0 bytes
    "sagarrao-3broker/c030fc1ce/kafka-logs-1/my_other_topic-1/00000000000000000000.timeindex",
    "niloufar-ldi-kraft/__consumer_offsets-6/leader-epoch-checkpoint",
    "niloufar-ldi-kraft/__consumer_offsets-6/partition.metadata",
    "donaldy-kafka271-zk/myTopic-0/00000000000000000038.snapshot",
    "donaldy-kafka271-zk/__consumer_offsets-17/00000000000000000000.log",
    "kaipasubhash-zk/__consumer_offsets-26/00000000000000000000.log",
    "bheem-zk/cities-0/00000000000000000000.log",
    "iechenyb-zk/test-0921-0/00000000000000000000.log",
)


@dataclass(frozen=True)
class OptionSet:
    """kafka-dump-log options, which of the corpus's files they are given with, and the Kafka versions whose
    tool they are compared on."""

    name: str
    options: tuple[str, ...]
    applies: Callable[[str], bool]
    versions: tuple[str, ...] = VERSIONS


def _segment(name: str) -> bool:
    return name.endswith((".log", ".checkpoint")) and not name.endswith("leader-epoch-checkpoint")


def _index(name: str) -> bool:
    return name.endswith((".index", ".timeindex"))


def _in_topic(*topics: str) -> Callable[[str], bool]:
    return lambda name: _segment(name) and any(f"/{t}-" in f"/{name}" for t in topics)


def _in_partition(folder: str) -> Callable[[str], bool]:
    return lambda name: _segment(name) and f"/{folder}/" in f"/{name}"


def _metadata(name: str) -> bool:
    return _in_topic("__cluster_metadata")(name) or name.endswith(".checkpoint")


OPTION_SETS = (
    OptionSet("plain", (), lambda name: True),
    OptionSet("deep", ("--deep-iteration",), lambda name: True),
    OptionSet("data", ("--print-data-log",), _segment),
    OptionSet("skip-metadata", ("--print-data-log", "--skip-record-metadata"), _segment),
    OptionSet("max-bytes", ("--max-bytes", "700", "--deep-iteration"), lambda name: name.endswith(".log")),
    OptionSet("metadata", ("--cluster-metadata-decoder",), _metadata),
    OptionSet("offsets", ("--offsets-decoder",), _in_topic("__consumer_offsets")),
    OptionSet("txn", ("--transaction-log-decoder",), _in_topic("__transaction_state")),
    # --share-group-state-decoder came with 4.0 (3.9.1's joptsimple rejects it before dumping anything: replog
    # rejects it too, tests/toolkit/test_dump_log.py). The value layout changed between 4.0 and 4.4 (KIP-932 was
    # in preview), so each tool is compared on the partition its own broker would have written; on the other
    # layout both print a deserializer error whose text is Java's, not emulated.
    OptionSet("remote", ("--remote-log-metadata-decoder",), _in_topic("__remote_log_metadata")),
    OptionSet("share", ("--share-group-state-decoder",), _in_partition("__share_group_state-0"), ("4.4.0",)),
    OptionSet("share-4.0", ("--share-group-state-decoder",), _in_partition("__share_group_state-1"), ("4.0.2",)),
    OptionSet("sanity", ("--index-sanity-check",), _index),
    OptionSet("verify", ("--verify-index-only",), _index),
)


# --- generated files -------------------------------------------------------------


def _records(base: int, n: int, *, headers: bool = True) -> list[v2.Record]:
    out = []
    for i in range(n):
        hdrs: tuple[tuple[str, bytes | None], ...] = (("trace", b"t1"), ("src", None)) if headers and i % 2 else ()
        key = None if i == 2 else f"key-{base + i}".encode()
        value = None if i == 3 else f"value-{base + i}".encode() * (1 + i)
        out.append(v2.Record(base + i, TS + base + i, key, value, hdrs))
    return out


def _orders_batches() -> list[bytes]:
    """Every codec, a transaction committed and one aborted, odd bytes, LogAppendTime, a delete horizon."""
    odd = [v2.Record(26, TS + 26, b"\xff\xfe\x00bin\xed\xa0\x80\xc0\xaf",
                     b"caf\xc3\xa9 \xe2\x82 tab\tcr\rend\xf4\x90\x80\x80 \xf0\x9f\x98 esc\x1b[0m"),
           v2.Record(27, TS + 27, "ключ".encode(), "\U0001f600 emoji".encode())]
    return [
        v2.build_batch(_records(0, 4), base_offset=0, partition_leader_epoch=0),
        *(v2.build_batch(_records(4 * i, 4), base_offset=4 * i, partition_leader_epoch=1, codec=codec)
          for i, codec in enumerate((codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD), start=1)),
        v2.build_batch(_records(20, 2), base_offset=20, partition_leader_epoch=2, producer_id=7, producer_epoch=0,
                       base_sequence=0, transactional=True),
        control.build_marker_batch(offset=22, commit=True, producer_id=7, producer_epoch=0, coordinator_epoch=3,
                                   timestamp=TS + 22, partition_leader_epoch=2),
        v2.build_batch(_records(23, 2), base_offset=23, partition_leader_epoch=2, producer_id=8, producer_epoch=1,
                       base_sequence=5, transactional=True, codec=codecs.GZIP),
        control.build_marker_batch(offset=25, commit=False, producer_id=8, producer_epoch=1, coordinator_epoch=3,
                                   timestamp=TS + 25, partition_leader_epoch=2),
        v2.build_batch(odd, base_offset=26, partition_leader_epoch=2),
        v2.build_batch(_records(28, 2), base_offset=28, partition_leader_epoch=2, timestamp_type=v2.LOG_APPEND_TIME,
                       max_timestamp=TS + 99),
        v2.build_batch(_records(30, 2, headers=False), base_offset=30, partition_leader_epoch=2,
                       delete_horizon=TS + 500),
    ]


def _positions(batches: list[bytes]) -> list[int]:
    out, at = [], 0
    for b in batches:
        out.append(at)
        at += len(b)
    return out


def _orders(part: Path) -> None:
    """A topic partition: segment, indexes with a preallocated tail and one wrong entry, snapshot, txnindex."""
    batches = _orders_batches()
    (part / f"{SEGMENT}.log").write_bytes(b"".join(batches))
    at = _positions(batches)
    index = [(3, at[0]), (11, at[2]), (19, at[4]), (25, at[8]), (27, at[9])]  # 25 is a marker's offset: fine
    index[3] = (24, at[8])  # contradicts the log: the batch at that position ends at 25
    (part / f"{SEGMENT}.index").write_bytes(offset_index.write_offset_index(index, 0) + bytes(24))
    times = [(TS + 3, 3), (TS + 19, 19), (TS + 27, 27), (TS + 99, 29)]
    (part / f"{SEGMENT}.timeindex").write_bytes(time_index.write_time_index(times, 0) + bytes(36))
    (part / f"{SEGMENT}.txnindex").write_bytes(txn_index.write_txn_index([
        txn_index.AbortedTxn(8, 23, 25, 20), txn_index.AbortedTxn(9, 40, 41, 40)]))
    (part / "00000000000000000032.snapshot").write_bytes(build_producer_snapshot([
        ProducerSnapshotEntry(7, 0, 1, 21, 1, TS + 21, 3, -1),
        ProducerSnapshotEntry(8, 1, 6, 24, 1, TS + 24, 3, 23),
        ProducerSnapshotEntry(11, 2, -1, -1, 0, -1, -1, -1),
    ]))


def _legacy(part: Path) -> None:
    """Magic 0 and 1 messages, plain and in compressed wrappers of every legacy codec."""
    entries = [
        legacy.build_message(0, b"k0", b"v0", magic=0),
        legacy.build_message(1, None, b"v1-null-key", magic=0),
        legacy.build_compressed([(2, 0, b"a", b"x"), (3, 0, None, b"y")], magic=0, codec=codecs.GZIP),
        legacy.build_compressed([(4, 0, b"s", b"snappy0")], magic=0, codec=codecs.SNAPPY),
        legacy.build_message(5, b"k5", b"v5", magic=1, timestamp=TS + 5),
        legacy.build_message(6, b"k6", None, magic=1, timestamp=TS + 6, timestamp_type=1),
        legacy.build_compressed([(7, TS + 7, b"b", b"\xffraw"), (8, TS + 8, b"c", b"z")], magic=1,
                                codec=codecs.SNAPPY),
        legacy.build_compressed([(9, TS + 9, b"d", b"lz4" * 20)], magic=1, codec=codecs.LZ4),
        legacy.build_compressed([(10, TS + 10, b"e", b"gz"), (11, TS + 11, None, None)], magic=1,
                                codec=codecs.GZIP, timestamp_type=1, log_append_time=TS + 50),
    ]
    (part / f"{SEGMENT}.log").write_bytes(b"".join(entries))


def _group_value() -> dict:
    subscription = {"version": 1, "topics": ["orders"], "userData": None, "ownedPartitions": []}
    assignment = {"version": 1, "assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}], "userData": None}
    member = {"memberId": "consumer-1-abc", "groupInstanceId": None, "clientId": "consumer-1",
              "clientHost": "/127.0.0.1", "rebalanceTimeout": 300000, "sessionTimeout": 45000,
              "subscription": subscription, "assignment": assignment}
    return {"protocolType": "consumer", "generation": 3, "protocol": "range", "leader": "consumer-1-abc",
            "currentStateTimestamp": TS, "members": [member]}


def _value_versions() -> list[tuple[bytes, bytes]]:
    """Offset commits of both key types with every value version, group metadata of every value version."""
    co = consumer_offsets
    commits = [(co.encode_offset_commit_key("g3", "orders", version % 2, version=key),
                co.encode_offset_commit_value(100 + version, "m", TS, version=version, leader_epoch=1,
                                              expire_timestamp=TS + 9))
               for key in (0, 1) for version in range(5)]
    group = {**_group_value(), "members": [{**_group_value()["members"][0], "groupInstanceId": "static-1"}]}
    groups = [(co.encode_group_metadata_key(f"g-v{version}"), co.encode_group_metadata_value(group, version))
              for version in range(5)]
    return commits + groups


def _consumer_offsets(part: Path) -> None:
    co = consumer_offsets
    records = [
        (co.encode_offset_commit_key("g1", "orders", 0), co.encode_offset_commit_value(42, "meta", TS, version=3,
                                                                                        leader_epoch=2)),
        (co.encode_offset_commit_key("g1", "orders", 1, version=0),
         co.encode_offset_commit_value(7, "", TS, version=1, expire_timestamp=TS + 1000)),
        (co.encode_group_metadata_key("g1"), co.encode_group_metadata_value(_group_value())),
        (co.encode_group_metadata_key("g2"), co.encode_group_metadata_value(
            {"protocolType": "consumer", "generation": 0, "protocol": None, "leader": None,
             "currentStateTimestamp": TS, "members": []})),
        (co.encode_offset_commit_key("g1", "orders", 0), None),
        (co.encode_group_metadata_key("g2"), None),
        *_value_versions(),
    ]
    batch = v2.build_batch([v2.Record(i, TS + i, k, v) for i, (k, v) in enumerate(records)], base_offset=0,
                           partition_leader_epoch=0)
    (part / f"{SEGMENT}.log").write_bytes(batch)


def _txn_value(status: int, partitions: list[dict] | None, version: int = 0, **tagged: int) -> bytes:
    return transaction_state.encode_transaction_log_value({
        "producerId": 7, "producerEpoch": 1, "transactionTimeoutMs": 60000, "transactionStatus": status,
        "transactionPartitions": partitions, "transactionLastUpdateTimestampMs": TS + status,
        "transactionStartTimestampMs": TS if status else -1, **tagged}, version)


def _transaction_state(part: Path) -> None:
    key = transaction_state.encode_transaction_log_key("tx-1")
    tp = [{"topic": "orders", "partitionIds": [0, 2]}]
    records = [(key, _txn_value(0, [])), (key, _txn_value(1, tp)), (key, _txn_value(2, tp)),
               (key, _txn_value(4, [])), (transaction_state.encode_transaction_log_key("tx-2"), None),
               (key, _txn_value(3, tp, 1)),  # flexible, tagged fields at their defaults
               (key, _txn_value(5, [], 1, previousProducerId=6, nextProducerId=8, clientTransactionVersion=2))]
    batch = v2.build_batch([v2.Record(i, TS + i, k, v) for i, (k, v) in enumerate(records)], base_offset=0,
                           partition_leader_epoch=0)
    (part / f"{SEGMENT}.log").write_bytes(batch)


_SHARE_BATCHES = [(10, 19, 0, 1), (20, 20, 2, 3), (21, 30, 4, 5)]


def _share_records(release: str) -> list[tuple[bytes, bytes | None]]:
    """Snapshots and updates of two share partitions (a non-ASCII group, the zero topic id), a tagged field
    set and at its default, no batches, a tombstone, an unknown record type and value version; values in
    `release`'s layout (`share_state_records`)."""
    snap, upd = (share.snapshot_value_44, share.update_value_44) if release == "4.4" else (
        share.snapshot_value_40, share.update_value_40)
    times = (TS, TS + 1) if release == "4.4" else ()
    tagged = {"delivery_complete_count": 7} if release == "4.4" else {}
    zero = "AAAAAAAAAAAAAAAAAAAAAA"
    return [
        (share.key(share.SNAPSHOT, "sg1", TOPIC_ID, 0), snap(1, 2, 3, 10, *times, _SHARE_BATCHES)),
        (share.key(share.UPDATE, "sg1", TOPIC_ID, 0), upd(1, 3, -1, _SHARE_BATCHES[:1], **tagged)),
        (share.key(share.UPDATE, "sg1", TOPIC_ID, 0), upd(1, 3, 31, [])),
        (share.key(share.SNAPSHOT, "группа-é", zero, 7), snap(65535, 0, -1, 0, *times, [])),
        (share.key(share.UPDATE, "группа-é", zero, 7), None),
        (share.key(5, "sg1", TOPIC_ID, 0), b"\x00\x00"),  # a record type neither release knows
        (share.key(share.SNAPSHOT, "sg1", TOPIC_ID, 0), b"\x00\x07abc"),  # a value version neither knows
    ]


def _share_group_state(release: str) -> Callable[[Path], None]:
    """A `__share_group_state` segment: a plain batch and a compressed one."""
    def write(part: Path) -> None:
        records = [v2.Record(i, TS + i, k, v) for i, (k, v) in enumerate(_share_records(release))]
        batches = (v2.build_batch(records[:3], base_offset=0, partition_leader_epoch=0)
                   + v2.build_batch(records[3:], base_offset=3, partition_leader_epoch=0, codec=codecs.ZSTD))
        (part / f"{SEGMENT}.log").write_bytes(batches)
    return write


def _remote_log_metadata_values() -> list[bytes]:
    """A segment's life (copy started/finished with custom metadata, delete started/finished), leader epochs out
    of order, TxnIndexEmpty set and absent, a partition's deletion in every state, snapshots (one without leader
    epochs, which Kafka's RemoteLogSegmentMetadataSnapshot refuses)."""
    tp = rlmm.TopicIdPartition("orders", TOPIC_ID, 3)
    seg_id = "Bd2Kr7cXSQWvCm8eWJ7K3A"
    started = rlmm.Segment(0, 99, 1, TS + 5, TS + 6, {2: 50, 0: 0}, 4096, None, 0)
    finished = rlmm.Segment(100, 199, 2, TS + 7, TS + 8, {3: 100, 1: 120}, 8192, b"\x01\x02meta", 1, True)
    return [
        rlmm.segment_metadata(tp, seg_id, started),
        rlmm.segment_metadata(tp, seg_id, finished),
        rlmm.segment_update(tp, seg_id, 1, TS + 9, b"cm", 1),
        rlmm.segment_update(tp, seg_id, 1, TS + 10, None, 2),
        rlmm.segment_update(tp, seg_id, 1, TS + 11, None, 3),
        *(rlmm.partition_delete(tp, 1, TS + 12 + state, state) for state in range(3)),
        rlmm.segment_snapshot(seg_id, finished),
        rlmm.segment_snapshot(seg_id, rlmm.Segment(0, 0, 0, -1, TS, {}, 0, b"", 2, False)),
        *_refused_remote_log_metadata(tp, seg_id),
    ]


def _refused_remote_log_metadata(tp: rlmm.TopicIdPartition, seg_id: str) -> list[bytes]:
    """Values Kafka's serde or metadata objects refuse: frame versions 0 and 2, an unknown api key, bytes after
    the message, an unknown state, a negative start offset."""
    update = rlmm.segment_update(tp, seg_id, 1, TS, None, 1)
    return [b"\x00" + update[1:], b"\x02" + update[1:], rlmm.framed(9, b"\x00"), update + b"xy",
            rlmm.partition_delete(tp, 1, TS, 7), rlmm.segment_update(tp, seg_id, 1, TS, None, 4),
            rlmm.segment_metadata(tp, seg_id, rlmm.Segment(-5, 3, 1, TS, TS, {0: 0}, 1, None, 0)),
            rlmm.segment_metadata(tp, seg_id, rlmm.Segment(0, 3, 1, TS, TS, {0: 0}, 1, None, 9)),
            rlmm.segment_snapshot(seg_id, rlmm.Segment(0, 3, 1, TS, TS, {0: 0}, 1, None, 9))]


def _remote_log_metadata(part: Path) -> None:
    """A `__remote_log_metadata` segment: values without a key (as the manager's producer writes them), one with
    a key (the decoder ignores keys), a null value, a compressed batch."""
    values = _remote_log_metadata_values()
    records = [v2.Record(i, TS + i, b"k" if i == 2 else None, v) for i, v in enumerate([*values, None])]
    (part / f"{SEGMENT}.log").write_bytes(
        v2.build_batch(records[:5], base_offset=0, partition_leader_epoch=0)
        + v2.build_batch(records[5:], base_offset=5, partition_leader_epoch=0, codec=codecs.GZIP))


def _metadata_records() -> list[bytes]:
    m = metadata
    broker = {"brokerId": 1, "isMigratingZkBroker": False, "incarnationId": DIR_ID, "brokerEpoch": 5,
              "endPoints": [{"name": "PLAINTEXT", "host": "localhost", "port": 9092, "securityProtocol": 0}],
              "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 20}],
              "rack": None, "fenced": True, "inControlledShutdown": False, "logDirs": [DIR_ID]}
    partition = {"partitionId": 0, "topicId": TOPIC_ID, "replicas": [1], "isr": [1], "removingReplicas": [],
                 "addingReplicas": [], "leader": 1, "leaderRecoveryState": 0, "leaderEpoch": 0, "partitionEpoch": 0,
                 "directories": [DIR_ID]}
    return [
        m.encode_feature_level_record("metadata.version", 20),
        m.encode_register_broker_record(broker, version=3),
        m.encode_topic_record("orders", TOPIC_ID),
        m.encode_partition_record(partition, version=1),
        m.encode_config_record(2, "orders", "retention.ms", "1000"),
        m.encode_partition_change_record({"partitionId": 0, "topicId": TOPIC_ID, "isr": [1], "leader": 1}),
        m.encode_metadata_record("ProducerIdsRecord", {"brokerId": 1, "brokerEpoch": 5, "nextProducerId": 1000}),
        m.encode_metadata_record("NoOpRecord", {}),
    ]


def _more_metadata_records() -> list[bytes]:
    """One record of each remaining metadata type (bytes, floats, nullable and tagged fields among them)."""
    m = metadata
    acl_id = "Bd2Kr7cXSQWvCm8eWJ7K3A"
    records: list[tuple[str, dict, int]] = [
        ("UnregisterBrokerRecord", {"brokerId": 2, "brokerEpoch": 9}, 0),
        ("FenceBrokerRecord", {"id": 1, "epoch": 5}, 0),
        ("UnfenceBrokerRecord", {"id": 1, "epoch": 5}, 0),
        ("RemoveTopicRecord", {"topicId": TOPIC_ID}, 0),
        ("DelegationTokenRecord", {"owner": "User:alice", "requester": "User:alice", "renewers": ["User:bob"],
                                   "issueTimestamp": TS, "maxTimestamp": TS + 10, "expirationTimestamp": TS + 5,
                                   "tokenId": "tok-1"}, 0),
        ("UserScramCredentialRecord", {"name": "alice", "mechanism": 1, "salt": "0102ff", "storedKey": "aa",
                                       "serverKey": "", "iterations": 4096}, 0),
        ("ClientQuotaRecord", {"entity": [{"entityType": "user", "entityName": "alice"},
                                          {"entityType": "client-id", "entityName": None}],
                               "key": "producer_byte_rate", "value": 1024.5, "remove": False}, 0),
        ("BrokerRegistrationChangeRecord", {"brokerId": 1, "brokerEpoch": 5, "fenced": -1,
                                            "inControlledShutdown": 1, "logDirs": [DIR_ID]}, 2),
        ("AccessControlEntryRecord", {"id": acl_id, "resourceType": 2, "resourceName": "orders", "patternType": 3,
                                      "principal": "User:alice", "host": "*", "operation": 3,
                                      "permissionType": 3}, 0),
        ("RemoveAccessControlEntryRecord", {"id": acl_id}, 0),
        ("ZkMigrationStateRecord", {"zkMigrationState": 0}, 0),
        ("RemoveUserScramCredentialRecord", {"name": "alice", "mechanism": 1}, 0),
        ("BeginTransactionRecord", {"name": "Bootstrap records"}, 0),
        ("EndTransactionRecord", {}, 0),
        ("AbortTransactionRecord", {"reason": None}, 0),
        ("RemoveDelegationTokenRecord", {"tokenId": "tok-1"}, 0),
        ("RegisterControllerRecord", {"controllerId": 1, "incarnationId": DIR_ID, "zkMigrationReady": False,
                                      "endPoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093,
                                                     "securityProtocol": 0}],
                                      "features": [{"name": "kraft.version", "minSupportedVersion": 0,
                                                    "maxSupportedVersion": 1}]}, 0),
        ("PartitionChangeRecord", {"partitionId": 1, "topicId": TOPIC_ID, "leader": -2, "eligibleLeaderReplicas": [2],
                                   "lastKnownElr": [], "directories": [DIR_ID]}, 2),
    ]
    return [m.encode_metadata_record(name, data, version) for name, data, version in records]


def _leader_change(offset: int) -> bytes:
    value = metadata.encode_control_value(control.LEADER_CHANGE, {
        "version": 0, "leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": [{"voterId": 1}]})
    return control.build_control_batch(offset=offset, control_type=control.LEADER_CHANGE, value=value,
                                       timestamp=TS + offset, partition_leader_epoch=1)


def _cluster_metadata(part: Path) -> None:
    """A metadata log (a LeaderChange, then records) and a KRaft snapshot (header, records, footer)."""
    recs = _metadata_records()
    batch = v2.build_batch([v2.Record(1 + i, TS + 1, None, r) for i, r in enumerate(recs)], base_offset=1,
                           partition_leader_epoch=1)
    more = _more_metadata_records()
    batch2 = v2.build_batch([v2.Record(1 + len(recs) + i, TS + 2, None, r) for i, r in enumerate(more)],
                            base_offset=1 + len(recs), partition_leader_epoch=1, codec=codecs.LZ4)
    (part / f"{SEGMENT}.log").write_bytes(_leader_change(0) + batch + batch2)
    header = metadata.encode_control_value(control.SNAPSHOT_HEADER, {"version": 0,
                                                                     "lastContainedLogTimestamp": TS + 1})
    footer = metadata.encode_control_value(control.SNAPSHOT_FOOTER, {"version": 0})
    kraft_version = metadata.encode_control_value(control.KRAFT_VERSION, {"version": 0, "kRaftVersion": 1})
    voters = metadata.encode_control_value(control.KRAFT_VOTERS, {"version": 0, "voters": [{
        "voterId": 1, "voterDirectoryId": DIR_ID, "endpoints": [{"name": "CONTROLLER", "host": "localhost",
                                                                 "port": 9093}],
        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]})
    snap = (control.build_control_batch(offset=0, control_type=control.SNAPSHOT_HEADER, value=header, timestamp=TS)
            + control.build_control_batch(offset=1, control_type=control.KRAFT_VERSION, value=kraft_version,
                                          timestamp=TS)
            + control.build_control_batch(offset=2, control_type=control.KRAFT_VOTERS, value=voters, timestamp=TS)
            + v2.build_batch([v2.Record(3 + i, TS, None, r) for i, r in enumerate(recs[:4])], base_offset=3)
            + control.build_control_batch(offset=7, control_type=control.SNAPSHOT_FOOTER, value=footer, timestamp=TS))
    (part / "00000000000000000009-0000000001.checkpoint").write_bytes(snap)


def _torn(part: Path) -> None:
    """A segment whose last batch was cut short (a crash mid-append), and one of a compacted topic: offsets
    with gaps between batches, a batch that compaction emptied of records."""
    batches = [v2.build_batch(_records(0, 3), base_offset=0, partition_leader_epoch=0),
               v2.build_batch(_records(3, 3), base_offset=3, partition_leader_epoch=0)]
    (part / f"{SEGMENT}.log").write_bytes(batches[0] + batches[1][:-9])
    compacted = [v2.build_batch([v2.Record(1, TS + 1, b"k1", b"v")], base_offset=0, last_offset_delta=2),
                 v2.build_batch([v2.Record(5, TS + 5, b"k5", b"v"), v2.Record(7, TS + 7, b"k7", b"w")],
                                base_offset=4, last_offset_delta=4),
                 v2.build_batch([v2.Record(9, TS + 9, b"k9", None)], base_offset=9, delete_horizon=TS + 100)]
    (part / "00000000000000000100.log").write_bytes(b"".join(compacted))


def _odd_files(part: Path) -> None:
    """A batch whose CRC does not match (a flipped byte in a value), a record with an empty key, value and
    header key, a deleted segment, files that are not kafka-dump-log's (it says it ignores them)."""
    good = v2.build_batch(_records(0, 3), base_offset=0, partition_leader_epoch=0)
    bad = bytearray(v2.build_batch(_records(3, 2), base_offset=3, partition_leader_epoch=0))
    bad[-3] ^= 0x20  # inside the last record's value: the records still read, the CRC no longer matches
    empty = v2.build_batch([v2.Record(5, TS + 5, b"", b"", (("", b""),))], base_offset=5, partition_leader_epoch=0)
    (part / f"{SEGMENT}.log").write_bytes(good + bytes(bad) + empty)
    (part / f"{SEGMENT}.log.deleted").write_bytes(good)
    (part / "leader-epoch-checkpoint").write_bytes(checkpoint.build_leader_epoch_checkpoint([EpochEntry(0, 0)]))
    (part / "partition.metadata").write_bytes(build_partition_metadata(PartitionMetadata(0, TOPIC_ID)))


BULK_BYTES = 3 << 19  # past index_verify.FAST_WALK_BYTES: dumped a block at a time (toolkit/dump_blocks)


def _bulk(part: Path) -> None:
    """A segment large enough for the compiled walk, so replog writes it a run of batches at a time through its
    kernel (every field of a batch and record line: big producer ids, sequences wrapping at INT32_MAX, delete
    horizons, LogAppendTime, codecs, headers, JSON escapes), with a commit marker and a non-ASCII record among the
    runs (each written entry by entry) and a run of 1-record batches."""
    batches, offset, i = [], 0, 0
    while sum(map(len, batches)) < BULK_BYTES:
        n = 1 if i % 7 < 3 else 5
        recs = [v2.Record(offset + k, TS + offset + k, None if k == 2 else b'k"\\%d\t' % (offset + k),
                          b"v\x01" * (k + 1), (("trace", b"t\n"), ("h,2", None)) if k % 2 else ()) for k in range(n)]
        if i == 900:
            recs = [v2.Record(offset, TS + offset, "ключ".encode(), b"caf\xc3\xa9\xff")]
        batches.append(v2.build_batch(
            recs, base_offset=offset, partition_leader_epoch=i % 5, codec=(0, 0, 0, codecs.GZIP, codecs.LZ4)[i % 5],
            producer_id=(-1, 2**62, 7)[i % 3], producer_epoch=i % 3 - 1, base_sequence=(-1, 2**31 - 3, i)[i % 3],
            transactional=i % 11 == 0, timestamp_type=v2.LOG_APPEND_TIME if i % 13 == 0 else v2.CREATE_TIME,
            delete_horizon=TS if i % 17 == 0 else None))
        offset += len(recs) + (3 if i % 29 == 0 else 0)
        if i == 1500:
            batches.append(control.build_marker_batch(offset=offset, commit=True, producer_id=7, producer_epoch=0,
                                                      coordinator_epoch=3, timestamp=TS + offset))
            offset += 1
        i += 1
    (part / f"{SEGMENT}.log").write_bytes(b"".join(batches))


GENERATED = {"odd-0": _odd_files, "bulk-0": _bulk, "torn-0": _torn, "orders-0": _orders, "legacy-0": _legacy,
             "__consumer_offsets-0": _consumer_offsets, "__transaction_state-0": _transaction_state,
             "__cluster_metadata-0": _cluster_metadata, "__share_group_state-0": _share_group_state("4.4"),
             "__share_group_state-1": _share_group_state("4.0"), "__remote_log_metadata-0": _remote_log_metadata}


def build(root: Path, real: bool = True, lab: bool = True) -> list[str]:
    """Write the corpus under `root`; the dumpable files, relative to it, generated ones first, then the real
    broker files of `/work/shared/realdata` and of the lab's own corpus (`lab_corpus`, written by a real cluster
    on first use when Java and Maven are there)."""
    for name, write in GENERATED.items():
        (root / "gen" / name).mkdir(parents=True)
        write(root / "gen" / name)
    files = sorted(p.relative_to(root).as_posix() for p in (root / "gen").rglob("*") if p.is_file())
    if real and REALDATA.is_dir():
        files += _copy_real(root / "real")
    if lab and tools_problem() is None:
        for label in lab_corpus.LABELS:
            files += _copy_lab(lab_corpus.ensure(label), root / "lab" / label, f"lab/{label}")
    return files


LAB_SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".txnindex", ".checkpoint")


def _copy_lab(src: Path, dest: Path, prefix: str) -> list[str]:
    """The dumpable files of every partition of a lab corpus (the metadata log and its snapshots included)."""
    out = []
    for pdir in lab_corpus.partition_dirs(src):
        for f in sorted(pdir.iterdir()):
            if f.is_file() and f.name.endswith(LAB_SUFFIXES) and f.name != "leader-epoch-checkpoint":
                rel = f.relative_to(src)
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest / rel)
                out.append(f"{prefix}/{rel.as_posix()}")
    return out


def _copy_real(dest: Path) -> list[str]:
    """The real files that exist, copied under `dest` (with a real index's `.log` beside it, as Kafka reads)."""
    out = []
    for rel in REAL_FILES:
        src = REALDATA / rel
        if not src.is_file():
            continue
        for p in {src, src.with_suffix(".log")}:
            if p.is_file() and not (dest / p.relative_to(REALDATA)).exists():
                (dest / p.relative_to(REALDATA)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(p, dest / p.relative_to(REALDATA))
        out.append(f"real/{rel}")
    return out
