"""`dump --format dump-log`: the text of Kafka's `kafka-dump-log.sh`, line for line, from dump entries.

Existing grep/awk scripts written against kafka-dump-log keep working. This is
a renderer of the entries `toolkit.dump` already yields (no second walk). The
text differs between Kafka versions, so it emulates one (`Emulation`: 3.9, 4.0
or 4.4); tests/brokers/test_dump_log_differential.py holds every rule here to
that version's own DumpLogSegments, line for line:

- every file: `Dumping <path>`; a `.log`: `Log starting offset: <base offset
  in its name>`; a KRaft `.checkpoint`: `Snapshot end offset: N, epoch: E`
  (`KRaft bootstrap snapshot` for `bootstrap.checkpoint`).
- a v2 batch (`printBatchLevel`): `baseOffset: .. lastOffset: .. count: ..
  baseSequence: .. lastSequence: .. producerId: .. producerEpoch: ..
  partitionLeaderEpoch: .. isTransactional: .. isControl: .. deleteHorizonMs:
  OptionalLong.empty|OptionalLong[n]` then ` position: P <TimestampType>:
  <maxTimestamp> size: .. magic: .. compresscodec: <none|gzip|snappy|lz4|zstd>
  crc: <unsigned> isvalid: <true|false>`; a v0/v1 message set starts with
  `offset: <lastOffset>` instead of the v2 fields, the rest is the same.
- each record with --deep (`dumpLog`): `| offset: O <TimestampType>: T
  keySize: K valueSize: V`; v2 adds ` sequence: S headerKeys: [a,b]`; v0/v1
  add ` isValid: <bool> crc: <n>` (each inner message's own CRC; 3.9 and 4.0
  end it with a stray `}`); a commit/abort marker adds ` endTxnMarker: COMMIT
  coordinatorEpoch: E`, a KRaft snapshot/voters record `<Name> <JSON>`, a
  LeaderChange `LeaderChange: <JSON>` (4.4; 3.9 and 4.0 print `controlType:
  LEADER_CHANGE(2)`); with --print-data a non-control record adds ` key: ..`
  (absent for a null key) and ` payload: ..` (absent for a null value), the
  bytes as Java's `new String(bytes, UTF_8)` makes them: what is not UTF-8
  becomes U+FFFD, control characters are written as they are (replog's own
  `table` format keeps its terminal-safe `<hex:...>`). The decoders print
  Kafka's JSON (`{"type":"2","data":..}`, `{"version":"3","data":..}`, metadata
  records as `{"type":"FEATURE_LEVEL_RECORD","version":0,"data":..}`), a
  deleted value as `<DELETE>`; 3.9 and 4.0 print transaction-log records as
  `transaction_metadata::transactionalId=..` and `producerId:..,state=..`;
  `__share_group_state` values (4.0, 4.4 only) are read with the emulated
  release's schemas, 4.0 labelling the value `{"type":"0",..}`;
  `__remote_log_metadata` values print as the Java metadata object's
  `toString()` (`, txnIdxEmpty=..` from 4.0 on).
  --skip-record-metadata leaves only `| key: ..` and ` payload: ..`.
- `.index`: `offset: O position: P`; `.timeindex`: `timestamp: T offset: O`;
  `.txnindex`: `version: .. producerId: .. firstOffset: .. lastOffset: ..
  lastStableOffset: ..`; producer `.snapshot`: `dumpProducerIdSnapshot`'s
  line (`currentTxnFirstOffset: OptionalLong[..]`, the batch fields only for a
  producer with a last offset); a passed --index-sanity-check: `<path> passed
  sanity check.`

What replog knows beyond kafka-dump-log (findings: `<severity>: <CODE>
position: P offset: O <message>`) goes to `notes` (stderr), never into the
emulated text, as does the "Non-consecutive offsets" report of a deep dump
(bounded: see `Gaps`).
"""
from __future__ import annotations

import codecs
import json
import re
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from replog.formats.kafka import control, names
from replog.toolkit.decoders import is_undecodable
from replog.toolkit.documents import JsonObject
from replog.toolkit.dump_entries import Entry

if TYPE_CHECKING:
    from replog.toolkit.dump_blocks import FormattedRun

Notes = Callable[[str], None]
_CONTROL_IDS = {name: type_id for type_id, name in control.CONTROL_TYPE_NAMES.items()}
# KRaft control records kafka-dump-log prints as `<Name> <JSON>` (its *JsonConverter.write): field order as the schema
_KRAFT_JSON = {"SNAPSHOT_HEADER": "SnapshotHeader", "SNAPSHOT_FOOTER": "SnapshotFooter",
               "KRAFT_VERSION": "KRaftVersion", "KRAFT_VOTERS": "KRaftVoters"}


@dataclass(frozen=True)
class Emulation:
    """What differs in kafka-dump-log's text between the Kafka versions replog emulates (each measured against
    that version's own tool by tests/brokers/test_dump_log_differential.py)."""

    version: str
    scala: bool  # 3.9, 4.0: the Scala tool (stray `}` on v0/v1 records, old transaction-log text, snapshot spaces,
    #              --skip-record-metadata's ` payload:` without `|` where a record has no key)
    leader_change_json: bool  # 4.4 prints a LeaderChange record's JSON; 3.9 and 4.0 its `controlType: NAME(id)`
    offset_commit_v0_value_v0_only: bool  # 4.4 reads a type-0 offset commit key's value at version 0 only
    share_state: str | None  # whose `__share_group_state` value schemas; None: no --share-group-state-decoder
    txn_idx_empty: bool  # 4.x's remote segment metadata text ends with `, txnIdxEmpty=..` (KIP-405's TxnIndexEmpty)
    record_class: str  # the record interface a null value's NullPointerException names (4.4 moved it to `internal`)
    metadata_ids: int = 29  # the highest metadata record id its MetadataRecordType knows (3.9: 27, 4.0: 28)
    # record types whose highest version it reads is below replog's (4.4's): RegisterBrokerRecord v4 and
    # BrokerRegistrationChangeRecord v3 came with 4.4 (`cordonedLogDirs`)
    metadata_versions: tuple[tuple[int, int], ...] = ()

    def metadata_highest(self, api_key: int) -> int | None:
        """The highest version of a record type the emulated tool reads; None: as replog's own schema."""
        return dict(self.metadata_versions).get(api_key)


EMULATED = {
    "3.9": Emulation("3.9", scala=True, leader_change_json=False, offset_commit_v0_value_v0_only=False,
                     share_state=None, txn_idx_empty=False,
                     record_class="org.apache.kafka.common.record.Record", metadata_ids=27,
                     metadata_versions=((0, 3), (17, 2))),
    "4.0": Emulation("4.0", scala=True, leader_change_json=False, offset_commit_v0_value_v0_only=False,
                     share_state="4.0", txn_idx_empty=True,
                     record_class="org.apache.kafka.common.record.Record", metadata_ids=28,
                     metadata_versions=((0, 3), (17, 2))),
    "4.4": Emulation("4.4", scala=False, leader_change_json=True, offset_commit_v0_value_v0_only=True,
                     share_state="4.4", txn_idx_empty=True,
                     record_class="org.apache.kafka.common.record.internal.Record"),
}
NEWEST = "4.4"


def emulation(version: str) -> Emulation:
    """The emulation of a Kafka version given as `X.Y` or `X.Y.Z`; ValueError for a version not emulated."""
    found = EMULATED.get(".".join(version.split(".")[:2]))
    if found is None:
        raise ValueError(f"--kafka-version {version}: replog emulates the kafka-dump-log of {', '.join(EMULATED)}")
    return found


@dataclass(frozen=True)
class Style:
    """How records print: the options that shape kafka-dump-log's record lines, and the version emulated."""

    print_data: bool = False
    skip_record_metadata: bool = False
    decoder: str | None = None  # "offsets", "txn", "metadata", "share" or "remote": the internal-topic decoder used
    emulated: Emulation = EMULATED[NEWEST]
    whole_files: bool = True  # no --max-bytes (nor replog's offset range): a log's trailing bytes are reported


def _java(v: Any) -> str:
    """A value as Java's string concatenation prints it (booleans lowercase)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _json(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _header(e: Entry) -> Iterator[str]:
    yield f"Dumping {e['path']}"
    name = Path(e["path"]).name
    if name.endswith(".log"):
        seg = names.parse_segment_file_name(name)
        if seg is not None:
            yield f"Log starting offset: {seg.base_offset}"
    elif name == "bootstrap.checkpoint":  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
        yield "KRaft bootstrap snapshot"
    elif name.endswith(".checkpoint") and e.get("file_kind") == "kafka-kraft-snapshot":
        offset, _, epoch = name.removesuffix(".checkpoint").partition("-")
        if offset.isdigit() and epoch.isdigit():
            yield f"Snapshot end offset: {int(offset)}, epoch: {int(epoch)}"


def batch_line(e: Entry) -> str:
    """`printBatchLevel` of one batch entry."""
    if e["magic"] >= 2:
        horizon = e.get("delete_horizon_ms")
        head = (f"baseOffset: {e['base_offset']} lastOffset: {e['last_offset']} count: {e['count']} "
                f"baseSequence: {e['base_sequence']} lastSequence: {e['last_sequence']} "
                f"producerId: {e['producer_id']} producerEpoch: {e['producer_epoch']} "
                f"partitionLeaderEpoch: {e['partition_leader_epoch']} "
                f"isTransactional: {_java(e['is_transactional'])} isControl: {_java(e['is_control'])} "
                f"deleteHorizonMs: {_optional_long(horizon)}")
    else:
        head = f"offset: {e['last_offset']}"
    return (f"{head} position: {e['position']} {e['timestamp_type']}: {e['max_timestamp']} size: {e['size']} "
            f"magic: {e['magic']} compresscodec: {e['codec']} crc: {e['crc']} isvalid: {_java(e['crc_valid'])}")


def _optional_long(v: int | None) -> str:
    """Java's `OptionalLong.toString()`."""
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


def java_string(v: Any) -> str:
    """Bytes as `new String(bytes, UTF_8)` makes them (kafka-dump-log's StringDecoder): text as it is, bytes that
    are not UTF-8 each maximal bad sequence replaced by U+FFFD (`_java_replace`)."""
    if isinstance(v, str):
        return v
    if is_undecodable(v):
        return bytes.fromhex(v["hex"]).decode("utf-8", "java-replace")
    return _json(v)


def _java_replace(err: UnicodeError) -> tuple[str, int]:
    """The "replace" error handler as Java's UTF-8 decoder replaces: where Python (Unicode's maximal subparts)
    writes one U+FFFD per byte of a UTF-8-encoded surrogate (ED A0..BF 80..BF), Java writes one for all three."""
    assert isinstance(err, UnicodeDecodeError)
    data, at = err.object, err.start
    if data[at] == 0xED and len(data) > at + 2 and 0xA0 <= data[at + 1] <= 0xBF and 0x80 <= data[at + 2] <= 0xBF:
        return "\ufffd", at + 3
    return "\ufffd", err.end


codecs.register_error("java-replace", _java_replace)


# --- internal-topic decoders ---------------------------------------------------------------


def metadata_type_name(name: str) -> str:
    """`FeatureLevelRecord` as Kafka's MetadataRecordType enum names it: `FEATURE_LEVEL_RECORD`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _metadata_json(v: Any) -> str:
    """A metadata record as `MetadataJsonConverters` write it: enum type name, tagged defaults left out."""
    from replog.formats.kafka.internal.metadata import json_data
    if isinstance(v, dict) and "data" in v and isinstance(v.get("type"), str):
        return _json({"type": metadata_type_name(v["type"]), "version": v["version"], "data": json_data(v)})
    return java_string(v)


def _metadata_refusal(e: Entry, v: Any, emulated: Emulation) -> str | None:
    """Why an older tool cannot read a newer broker's metadata record, in its words. An id its
    `MetadataRecordType.fromId` lacks: `Unknown metadata id N`. A version above the highest its generated classes
    read: the record class reads on, but a nested struct's own `read` refuses the version (`Can't read version ..`),
    which `AbstractApiMessageSerde.read` reports as `Failed to deserialize record with type N` (seen with 3.9.1's
    and 4.0.2's tools on a 4.4.0 controller's RegisterBrokerRecord v4, tests/brokers/test_dump_log_differential.py)."""
    from replog.formats.kafka.internal.metadata import METADATA_RECORDS, RECORD_TYPES
    if not isinstance(v, dict) or not isinstance(v.get("type"), str) or "data" not in v:
        return None
    api_key = RECORD_TYPES[v["type"]]
    if api_key > emulated.metadata_ids:
        return f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}"
    highest = emulated.metadata_highest(api_key)
    if highest is not None and v["version"] > highest and _reads_structs(METADATA_RECORDS[api_key].fields, v["data"]):
        return f"Failed to deserialize record with type {api_key}"
    return None


def _reads_structs(fields: tuple[Any, ...], data: JsonObject) -> bool:
    """Whether reading `data` reads a nested struct: a struct field, or an array of structs holding one."""
    from replog.formats.kafka.internal.protocol import Array, Struct
    for f in fields:
        value = data.get(f.name)
        if isinstance(f.type, Struct) and value is not None:
            return True
        if isinstance(f.type, Array) and isinstance(f.type.item, Struct) and value:
            return True
    return False


def _as_read_by(v: Any, emulated: Emulation) -> Any:
    """A record of a version above what the emulated tool reads, as its older class holds it: the fields its own
    highest version has (a newer tagged field is an unknown tag to it, left out of its JSON)."""
    from replog.formats.kafka.internal.metadata import METADATA_RECORDS, RECORD_TYPES
    if not isinstance(v, dict) or not isinstance(v.get("type"), str) or "data" not in v:
        return v
    api_key = RECORD_TYPES[v["type"]]
    highest = emulated.metadata_highest(api_key)
    if highest is None or v["version"] <= highest:
        return v
    known = {f.name for f in METADATA_RECORDS[api_key].fields if f.present(highest)}
    return {**v, "data": {k: x for k, x in v["data"].items() if k in known}}


def _coordinator_key(v: Any) -> str:
    """A `__consumer_offsets`/`__transaction_state` key: `{"type":"<key version>","data":{..}}`."""
    if isinstance(v, dict) and "data" in v:
        return _json({"type": str(v["version"]), "data": v["data"]})
    return java_string(v)


def _without_versions(data: Any) -> Any:
    """A group's members as Kafka prints them: the decoded subscription and assignment JSON without their own
    `version` (Kafka writes the protocol message's fields only)."""
    if not isinstance(data, dict) or not isinstance(data.get("members"), list):
        return data
    return {**data, "members": [_member_without_versions(m) for m in data["members"]]}


def _member_without_versions(member: JsonObject) -> JsonObject:
    out = dict(member)
    for name in ("subscription", "assignment"):
        if isinstance(out.get(name), dict):
            out[name] = {k: v for k, v in out[name].items() if k != "version"}
    return out


def _coordinator_value(v: Any, key: Any, decoder: str | None) -> str:
    """A coordinator record value: `{"version":"<v>","data":{..}}` (a transaction state by its name, tagged fields
    at their default left out); a deleted one `<DELETE>`."""
    if v is None:
        return "<DELETE>"
    if not (isinstance(v, dict) and "data" in v):
        return java_string(v)
    return _json({"version": str(v["version"]), "data": _coordinator_data(v["data"], key, decoder)})


def _coordinator_data(data: JsonObject, key: Any, decoder: str | None) -> JsonObject:
    from replog.formats.kafka.internal import consumer_offsets, transaction_state
    if decoder == "txn":
        return {k: _txn_state(x) if k == "transactionStatus" else x
                for k, x in transaction_state.json_data(data).items()}
    if isinstance(key, dict) and isinstance(key.get("version"), int):
        data = consumer_offsets.json_value_data(key["version"], data)
    return _without_versions(data)


def _txn_state(status: int) -> str:
    from replog.formats.kafka.internal.transaction_state import state_name
    return state_name(status)


def _scala_txn_key(v: Any) -> str:
    """3.9/4.0's transaction-log key text."""
    if isinstance(v, dict) and "data" in v:
        return f"transaction_metadata::transactionalId={v['data']['transactionalId']}"
    return java_string(v)


def _scala_txn_value(v: Any) -> str:
    """3.9/4.0's transaction-log value text (`TransactionLog.formatRecordKeyAndValue`)."""
    if v is None:
        return "<DELETE>"
    if not (isinstance(v, dict) and "data" in v):
        return java_string(v)
    d = v["data"]
    partitions = ",".join(f"{p['topic']}-{i}" for p in d["transactionPartitions"] or [] for i in p["partitionIds"])
    return (f"producerId:{d['producerId']},producerEpoch:{d['producerEpoch']},"
            f"state={_txn_state(d['transactionStatus'])},partitions=[{partitions}],"
            f"txnLastUpdateTimestamp={d['transactionLastUpdateTimestampMs']},"
            f"txnTimeoutMs={d['transactionTimeoutMs']}")


def _share_parts(e: Entry, style: Style) -> list[tuple[str, str]]:
    """A `__share_group_state` record as `ShareGroupStateMessageParser` prints it: the key as the coordinator
    JSON, the value as `{"version":"0","data":..}` (4.4, tools/src/main/java/org/apache/kafka/tools/
    DumpLogSegments.java, CoordinatorRecordMessageParser) or `{"type":"0","data":..}` (the Scala tool's
    `jsonString` labels key and value alike: core/src/main/scala/kafka/tools/DumpLogSegments.scala at 4.0). An
    unknown record type or value version: the errors of `CoordinatorRecordSerde.deserialize`
    (coordinator-common/src/main/java/org/apache/kafka/coordinator/common/runtime/CoordinatorRecordSerde.java) in
    the key's place; a value its schemas cannot read: `Error at offset O, skipping. ..` (replog's reason)."""
    from replog.formats.kafka.internal.share_group_state import json_data
    key, value = e.get("key"), e.get("value")
    if isinstance(value, dict) and "error" in value:
        return [("key", f"Error at offset {e['offset']}, skipping. {value['error']}")]
    if isinstance(key, dict) and key.get("type") == "unknown":
        return [("key", f"Unknown record type {key['version']} at offset {e['offset']}, skipping.")]
    if isinstance(key, dict) and isinstance(value, dict) and "raw" in value:
        unknown = f"Found an unknown record version {value['version']} for {key['version']} type"
        return [("key", f"Error at offset {e['offset']}, skipping. {unknown}")]
    if value is None:
        return [("key", _coordinator_key(key)), ("payload", "<DELETE>")]
    if not (isinstance(key, dict) and isinstance(value, dict) and "data" in value):
        return [("key", _coordinator_key(key)), ("payload", java_string(value))]
    release = style.emulated.share_state or NEWEST
    label = "type" if style.emulated.scala else "version"
    data = json_data(key["version"], value["data"], release)
    return [("key", _coordinator_key(key)), ("payload", _json({label: str(value["version"]), "data": data}))]


def _remote_parts(e: Entry, style: Style) -> list[tuple[str, str]]:
    """A `__remote_log_metadata` record as `RemoteMetadataLogMessageParser` prints it: no key, the payload the
    `toString()` of the metadata object `RemoteLogMetadataSerde.deserialize` makes (`remote_log_metadata_text`),
    or `Error at offset O, skipping. <why>` where Kafka refuses the value (`remote_refusal`; replog's reason where
    it cannot say Kafka's)."""
    value = e.get("value")
    refused = remote_refusal(value, style.emulated)
    if refused is not None:
        return [("payload", f"Error at offset {e['offset']}, skipping. {refused}")]
    assert isinstance(value, dict)  # what remote_refusal lets through: a decoded message
    return [("payload", remote_log_metadata_text(value, style.emulated))]


def remote_refusal(v: Any, emulated: Emulation) -> str | None:
    """Why Kafka's deserializer or the metadata object's constructor refuses a value, in its words: a null value
    (the parser's NullPointerException), the frame and garbage checks of server-common's
    `AbstractApiMessageSerde.read`, an unknown api key (storage's generated `MetadataRecordType.fromId`), and
    `_object_refusal`. A body replog cannot read: replog's reason."""
    if v is None:
        return (f'Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
                f'"{emulated.record_class}.value()" is null')
    if not isinstance(v, dict) or "frameVersion" not in v:
        return str(v["error"]) if isinstance(v, dict) and "error" in v else java_string(v)
    if v["frameVersion"] == 0:
        return ("Could not deserialize metadata record with frame version 0. Note that upgrades from the preview "
                "release of KRaft in 2.8 to newer versions are not supported.")
    if v["frameVersion"] != 1:
        return (f"Could not deserialize metadata record due to unknown frame version {v['frameVersion']}"
                "(only frame version 1 is supported)")
    if "data" not in v:
        if v["apiKey"] not in (0, 1, 2, 3):
            return f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {v['apiKey']}"
        return f"replog: no schema for version {v['version']} of api key {v['apiKey']}"
    if v.get("trailingBytes"):
        return f"Found {len(v['trailingBytes']) // 2} byte(s) of garbage after {v['apiKey']}"
    return _object_refusal(v)


def _object_refusal(v: Entry) -> str | None:
    """The metadata object's own checks: an unknown state id (the enum lookup's null: a segment's constructor
    says `state can not be null`, a partition deletion's NullPointerException has no message), a negative start
    offset (storage-api's `RemoteLogSegmentMetadata` constructor), no leader epochs (that
    constructor and storage's `RemoteLogSegmentMetadataSnapshot`'s). Checked in that order; where a value fails
    more than one, Kafka's order is not measured."""
    from replog.formats.kafka.internal.remote_log_metadata import PARTITION_DELETE_STATES, SEGMENT_STATES
    d = v["data"]
    state = d.get("remotePartitionDeleteState", d.get("remoteLogSegmentState"))
    names = PARTITION_DELETE_STATES if v["apiKey"] == 2 else SEGMENT_STATES
    if not 0 <= state < len(names):
        return "null" if v["apiKey"] == 2 else "state can not be null"
    if v["apiKey"] == 0 and d["startOffset"] < 0:
        return (f"Unexpected start offset = {d['startOffset']}. StartOffset for a remote segment cannot be "
                "negative")
    if v["apiKey"] in (0, 3) and not d["segmentLeaderEpochs"]:
        return "segmentLeaderEpochs can not be null or empty"
    return None


def remote_log_metadata_text(v: Entry, emulated: Emulation) -> str:
    """The `toString()` of storage-api's RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate,
    RemotePartitionDeleteMetadata or storage's RemoteLogSegmentMetadataSnapshot
    (storage/api/src/main/java/org/apache/kafka/server/log/remote/storage/*.java), fields in their order."""
    from replog.formats.kafka.internal.remote_log_metadata import PARTITION_DELETE_STATES
    d = v["data"]
    if v["apiKey"] == 1:
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}, "
                f"customMetadata={_custom(d)}, state={_segment_state(d)}, "
                f"eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}")
    if v["apiKey"] == 2:
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_topic_id_partition(d['topicIdPartition'])}, "
                f"state={_enum(PARTITION_DELETE_STATES, d['remotePartitionDeleteState'])}, "
                f"eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}")
    txn = f", txnIdxEmpty={_java(d['txnIndexEmpty'])}" if emulated.txn_idx_empty else ""
    tail = (f"segmentLeaderEpochs={_epochs(d)}, segmentSizeInBytes={d['segmentSizeInBytes']}, "
            f"customMetadata={_custom(d)}, state={_segment_state(d)}{txn}}}")
    if v["apiKey"] == 3:
        return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={d['segmentId']}, startOffset={d['startOffset']}, "
                f"endOffset={d['endOffset']}, maxTimestampMs={d['maxTimestampMs']}, {tail}")
    return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}, "
            f"startOffset={d['startOffset']}, endOffset={d['endOffset']}, brokerId={d['brokerId']}, "
            f"maxTimestampMs={d['maxTimestampMs']}, eventTimestampMs={d['eventTimestampMs']}, {tail}")


def _topic_id_partition(t: Entry) -> str:
    """clients' `TopicIdPartition.toString()`: `<topic id>:<name>-<partition>`."""
    return f"{t['id']}:{t['name']}-{t['partition']}"


def _segment_id(s: Entry) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_topic_id_partition(s['topicIdPartition'])}, id={s['id']}}}"


def _custom(d: Entry) -> str:
    """`Optional<CustomMetadata>` as Java prints it (CustomMetadata shows its size only)."""
    raw = d.get("customMetadata")
    return "Optional.empty" if raw is None else f"Optional[CustomMetadata{{{len(raw) // 2} bytes}}]"


def _epochs(d: Entry) -> str:
    """The leader epochs as the `TreeMap` RemoteLogSegmentMetadata keeps them: by epoch, the last entry of an
    epoch winning."""
    by_epoch = {e["leaderEpoch"]: e["offset"] for e in d["segmentLeaderEpochs"]}
    return "{" + ", ".join(f"{k}={by_epoch[k]}" for k in sorted(by_epoch)) + "}"


def _segment_state(d: Entry) -> str:
    from replog.formats.kafka.internal.remote_log_metadata import SEGMENT_STATES
    return _enum(SEGMENT_STATES, d["remoteLogSegmentState"])


def _enum(names: tuple[str, ...], i: int) -> str:
    return names[i] if 0 <= i < len(names) else f"UNKNOWN({i})"


def _decoded_data(e: Entry, style: Style) -> list[tuple[str, str]]:
    """The ` key: ..`/` payload: ..` parts of a record an internal-topic decoder read."""
    key, value = e.get("key"), e.get("value")
    if style.decoder == "share":
        return _share_parts(e, style)
    if style.decoder == "remote":
        return _remote_parts(e, style)
    if style.decoder == "metadata":
        refused = _metadata_refusal(e, value, style.emulated)
        if refused is not None:
            return [("payload", f"Error at {e['offset']}, skipping. {refused}")]
        value = _as_read_by(value, style.emulated)
        return [(n, _metadata_json(x)) for n, x in (("key", key), ("payload", value)) if x is not None]
    if style.decoder == "txn" and style.emulated.scala:
        return [("key", _scala_txn_key(key)), ("payload", _scala_txn_value(value))]
    if (style.decoder == "offsets" and style.emulated.offset_commit_v0_value_v0_only and isinstance(key, dict)
            and key.get("version") == 0 and isinstance(value, dict) and value.get("version", 0) != 0):
        error = (f"Error at offset {e['offset']}, skipping. Found an unknown record version {value['version']} "
                 "for 0 type")
        return [("key", error)]
    return [("key", _coordinator_key(key)), ("payload", _coordinator_value(value, key, style.decoder))]


def _plain_data(e: Entry) -> list[tuple[str, str]]:
    return [(n, java_string(e[k])) for n, k in (("key", "key"), ("payload", "value")) if e.get(k) is not None]


# --- records --------------------------------------------------------------------------------


def _control_text(e: Entry, style: Style) -> str:
    kind = e.get("control_type", "INVALID")
    value = e.get("control_value")
    if kind in ("COMMIT", "ABORT") and "coordinator_epoch" in e:
        return f" endTxnMarker: {kind} coordinatorEpoch: {e['coordinator_epoch']}"
    if kind in _KRAFT_JSON and value is not None:
        return f" {_KRAFT_JSON[kind]} {_json(value)}"
    if kind == "LEADER_CHANGE" and value is not None and style.emulated.leader_change_json:
        return f" LeaderChange: {_json(value)}"
    return f" controlType: {kind}({_CONTROL_IDS.get(kind, -1)})"


def _record_metadata(e: Entry, batch: Entry, style: Style) -> str:
    line = (f"offset: {e['offset']} {e['timestamp_type']}: {e['timestamp']} "
            f"keySize: {e['key_size']} valueSize: {e['value_size']}")
    if batch["magic"] >= 2:
        line += f" sequence: {e['sequence']} headerKeys: [{','.join(h['key'] for h in e['headers'])}]"
    elif "crc" in e:  # each v0/v1 message's own CRC, an inner message's too
        line += f" isValid: {_java(e['crc_valid'])} crc: {e['crc']}" + ("}" if style.emulated.scala else "")
    if e["is_control"]:
        line += _control_text(e, style)
    return line


def record_line(e: Entry, batch: Entry, style: Style) -> str:
    """One record of `dumpLog`'s deep iteration, with Kafka's prefixes and spacing."""
    prefix, line = "| ", ""
    if not style.skip_record_metadata:
        line, prefix = prefix + _record_metadata(e, batch, style), " "
    if style.print_data and not e["is_control"]:
        parts = _decoded_data(e, style) if style.decoder else _plain_data(e)
        for i, (name, text) in enumerate(parts):
            first = i == 0 and (name == "key" or not style.emulated.scala)
            line += f"{prefix if first else ' '}{name}: {text}"
    return line


def _finding(e: Entry) -> str:
    where = "".join(f" {k}: {e[k]}" for k in ("position", "offset") if e.get(k) is not None)
    return f"{e['severity']}: {e['code']}{where} {e['message']}"


def _generic(e: Entry) -> str:
    return " ".join([e["kind"], *(f"{k}: {java_string(v)}" for k, v in e.items() if k not in ("kind", "path"))])


def _snapshot_line(e: Entry, style: Style) -> str:
    """`dumpProducerIdSnapshot`: the batch fields only when the producer has a last offset; the Scala tool
    leaves a space after `lastTimestamp: T` where they are absent."""
    head = (f"producerId: {e['producer_id']} producerEpoch: {e['producer_epoch']} "
            f"coordinatorEpoch: {e['coordinator_epoch']} currentTxnFirstOffset: "
            f"{_optional_long(None if e['current_txn_first_offset'] < 0 else e['current_txn_first_offset'])} "
            f"lastTimestamp: {e['timestamp']}")
    if e["last_offset"] < 0:
        return head + (" " if style.emulated.scala else "")
    return (f"{head} firstSequence: {e['first_sequence']} lastSequence: {e['last_sequence']} "
            f"lastOffset: {e['last_offset']} offsetDelta: {e['offset_delta']} timestamp: {e['timestamp']}")


_SIMPLE: dict[str, Callable[[Entry], str]] = {
    "index_entry": lambda e: f"offset: {e['offset']} position: {e['position']}",
    "time_index_entry": lambda e: f"timestamp: {e['timestamp']} offset: {e['offset']}",
    "txn_entry": lambda e: (f"version: {e['version']} producerId: {e['producer_id']} firstOffset: "
                            f"{e['first_offset']} lastOffset: {e['last_offset']} "
                            f"lastStableOffset: {e['last_stable_offset']}"),
}


class Gaps:
    """kafka-dump-log's "Non-consecutive offsets in <file>" report of a deep dump (printed on stderr at the end).

    Kafka compares every record's offset with the one before it in the same
    file (control records included) and lists each pair that is not +1, newest
    first (`DumpLogSegments.dumpLog` prepends to a list; `main` prints it). A
    compacted log can have a gap per batch, so only the newest `KEEP` pairs of
    a file are kept and a count of the rest is printed on a line of replog's
    own: memory stays bounded by the number of files named.
    """

    KEEP = 10_000

    def __init__(self) -> None:
        self.pairs: dict[str, deque[tuple[int, int]]] = {}
        self.dropped: dict[str, int] = {}
        self._path = ""
        self._last = -1

    def start(self, path: str) -> None:
        self._path, self._last = str(Path(path).absolute()), -1

    def see(self, offset: int) -> None:
        if self._last != -1 and offset != self._last + 1:
            seen = self.pairs.setdefault(self._path, deque(maxlen=self.KEEP))
            if len(seen) == self.KEEP:
                self.dropped[self._path] = self.dropped.get(self._path, 0) + 1
            seen.append((self._last, offset))
        self._last = offset

    def see_all(self, offsets: np.ndarray) -> None:
        """`see` of every offset of an int64 array, in order."""
        if not len(offsets):
            return
        before = np.empty_like(offsets)
        before[0], before[1:] = self._last, offsets[:-1]
        follows = (before != np.iinfo(np.int64).max) & (offsets == before + 1)
        for k in np.flatnonzero(~follows & (before != -1)).tolist():
            self._last = int(before[k])
            self.see(int(offsets[k]))
        self._last = int(offsets[-1])

    def lines(self) -> Iterator[str]:
        for path, pairs in self.pairs.items():
            yield f"Non-consecutive offsets in {path}"
            for first, second in reversed(pairs):
                yield f"  {first} is followed by {second}"
            if self.dropped.get(path):
                yield f"  ... {self.dropped[path]} earlier pairs not shown"


class _Tail:
    """`Found N invalid bytes at the end of <name>`: the bytes of a log after the last batch its walk could frame
    (a torn append), as `dumpLog` prints them at the end of the file when no --max-bytes is given."""

    def __init__(self) -> None:
        self.name, self.size, self.end = "", 0, 0

    def start(self, e: Entry) -> None:
        is_log = e.get("file_kind") in ("kafka-segment", "kafka-kraft-snapshot") and e.get("size") is not None
        self.name, self.size, self.end = Path(e["path"]).name, int(e["size"]) if is_log else 0, 0

    def batch(self, e: Entry) -> None:
        self.end = max(self.end, e["position"] + e["size"])

    def lines(self) -> Iterator[str]:
        if self.end < self.size:
            yield f"Found {self.size - self.end} invalid bytes at the end of {self.name}"
        self.size = 0


# What kafka-dump-log dumps, by the text after the last `.` of a file's name; it ignores anything else (a
# `.log.deleted`, `leader-epoch-checkpoint`, `partition.metadata`), saying so on stderr.
KAFKA_SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".txnindex", ".checkpoint")


def ignored_by_kafka(path: str) -> bool:
    name = Path(path).name
    return "." not in name or name[name.rindex("."):] not in KAFKA_SUFFIXES


def _empty_index(e: Entry) -> bool:
    """An offset index with no whole entry: `dumpIndex` prints `<file> is empty.` and nothing else for it."""
    return e.get("file_kind") == "kafka-offset-index" and int(e.get("size") or 0) < 8


def dump_log_lines(entries: Iterable[Entry | FormattedRun], style: Style, gaps: Gaps | None = None,
                   notes: Notes | None = None) -> Iterator[str | tuple[memoryview, ...]]:
    """kafka-dump-log's lines for a stream of dump entries, as they come; `gaps` collects the stderr report,
    `notes` gets the findings and what kafka-dump-log says on stderr (it has no words for findings, so they stay
    out of its text). A run of entries already written (`dump_blocks.FormattedRun`) comes as its bytes."""
    batch: Entry = {"magic": 2, "codec": "none", "crc": 0, "crc_valid": True}
    gaps = gaps if gaps is not None else Gaps()
    tail = _Tail()
    note = notes or (lambda line: None)
    silent = False  # the rest of an empty index's entries, or of a file kafka-dump-log ignores
    for e in entries:
        if not isinstance(e, dict):
            if not silent:
                yield _run_text(e, gaps, tail)
            continue
        kind = e["kind"]
        if kind == "file":
            if style.whole_files:
                yield from tail.lines()
            silent = yield from _file_lines(e, style, gaps, tail, note)
        elif kind == "finding":
            note(_finding(e))
        elif silent:
            continue
        elif kind == "record":
            gaps.see(e["offset"])
            yield record_line(e, batch, style)
        elif kind == "batch":
            batch = e
            tail.batch(e)
            yield batch_line(e)
        else:
            yield from _other_lines(e, style)
    if style.whole_files:
        yield from tail.lines()


def _run_text(formatted: FormattedRun, gaps: Gaps, tail: _Tail) -> tuple[memoryview, ...]:
    """A written run's text, its records' offsets seen by `gaps` and its end by `tail`."""
    run = formatted.run
    if run.records is not None:
        gaps.see_all(run.records.offset)
    if len(run.batches):
        tail.end = max(tail.end, int((run.batches.position + run.batches.size).max()))
    return formatted.text


def _file_lines(e: Entry, style: Style, gaps: Gaps, tail: _Tail, note: Notes) -> Generator[str, None, bool]:
    """A file's header lines; returns whether the file's entries print nothing more (an empty offset index, or a
    file kafka-dump-log ignores: the header, then `Ignoring unknown file` on stderr)."""
    gaps.start(e["path"])
    ignored = ignored_by_kafka(e["path"])
    if style.whole_files and not ignored:
        tail.start(e)
    yield from _header(e)
    if ignored:
        note(f"Ignoring unknown file {e['path']}")
        return True
    if _empty_index(e):
        yield f"{e['path']} is empty."
        return True
    return False


def _other_lines(e: Entry, style: Style) -> Iterator[str]:
    """Entries of indexes, snapshots and a sanity check."""
    kind = e["kind"]
    if kind == "sanity_check":
        if e["passed"]:
            yield f"{e['path']} passed sanity check."
    elif kind == "snapshot_entry":
        yield _snapshot_line(e, style)
    else:
        yield _SIMPLE.get(kind, _generic)(e)
