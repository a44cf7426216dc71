"""`dump --format dump-log`: the text of Kafka's `kafka-dump-log.sh`, line for line, from dump entries.

Existing grep/awk scripts written against kafka-dump-log keep working. This is
a renderer of the entries `formats.dump` already yields (no second walk); the
rules are those of Kafka's `DumpLogSegments` (core/src/main/scala/kafka/tools/
DumpLogSegments.scala, 3.6+):

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
  add ` isValid: <bool> crc: <n>}` (the closing brace is Kafka's own typo,
  kept so scripts match); a commit/abort marker adds ` endTxnMarker: COMMIT
  coordinatorEpoch: E`, another control record ` controlType: NAME(id)`;
  with --print-data a non-control record adds ` key: <key>` (absent for a
  null key) and ` payload: <value>` (absent for a null value).
  --skip-record-metadata leaves only `| key: ..` and ` payload: ..`, with
  Kafka's spacing (a record without a key starts with ` payload:`).
- `.index`: `offset: O position: P`; `.timeindex`: `timestamp: T offset: O`;
  `.txnindex`: `version: .. producerId: .. firstOffset: .. lastOffset: ..
  lastStableOffset: ..`; producer `.snapshot`: `dumpProducerIdSnapshot`'s
  line; a passed --index-sanity-check: `<path> passed sanity check.`

Where replog knows more than kafka-dump-log, it says so on lines of its own
that no kafka-dump-log pattern matches: a finding is `<severity>: <CODE>
position: P offset: O <message>`, other files are `<kind> field: value ...`.
Known differences: `position` is the batch's byte position (Kafka sums the
sizes of the batches before it: the same number on an undamaged log), the
inner messages of a compressed v0/v1 wrapper print no `isValid`/`crc` (replog
does not keep their own CRC), and KRaft snapshot header/footer/voters control
records print as Kafka prints them (`SnapshotHeader {"version":0,...}`, the
JSON of their schema's fields), `LEADER_CHANGE` as `controlType: NAME(id)`. An
offset index with no whole entry prints `<file> is empty.`; a deep dump ends
with kafka-dump-log's stderr report of non-consecutive offsets (bounded: see
`Gaps`). Values a decoder cannot decode print as `<hex:...>`.
"""
from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from replog.formats.kafka import control, names
from replog.formats.render import is_undecodable

Entry = dict[str, Any]
_CONTROL_IDS = {name: type_id for type_id, name in control.CONTROL_TYPE_NAMES.items()}
# KRaft control records kafka-dump-log prints as `<Name> <JSON>` (its *JsonConverter.write): field order as the schema
_KRAFT_JSON = {"SNAPSHOT_HEADER": "SnapshotHeader", "SNAPSHOT_FOOTER": "SnapshotFooter",
               "KRAFT_VERSION": "KRaftVersion", "KRAFT_VOTERS": "KRaftVoters"}


def _java(v: Any) -> str:
    """A value as Java's string concatenation prints it (booleans lowercase)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


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
                f"deleteHorizonMs: {'OptionalLong.empty' if horizon is None else f'OptionalLong[{horizon}]'}")
    else:
        head = f"offset: {e['last_offset']}"
    return (f"{head} position: {e['position']} {e['timestamp_type']}: {e['max_timestamp']} size: {e['size']} "
            f"magic: {e['magic']} compresscodec: {e['codec']} crc: {e['crc']} isvalid: {_java(e['crc_valid'])}")


def _data(v: Any) -> str:
    """A key or payload as printed: text as is, undecodable bytes as `<hex:...>`, decoded records as JSON."""
    if isinstance(v, str):
        return v
    if is_undecodable(v):
        return f"<hex:{v['hex']}>"
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _record_metadata(e: Entry, batch: Entry) -> str:
    line = (f"offset: {e['offset']} {e['timestamp_type']}: {e['timestamp']} "
            f"keySize: {e['key_size']} valueSize: {e['value_size']}")
    if batch["magic"] >= 2:
        line += f" sequence: {e['sequence']} headerKeys: [{','.join(h['key'] for h in e['headers'])}]"
    elif batch["codec"] == "none":  # the message is its own wrapper: its CRC is the batch's
        line += f" isValid: {_java(batch['crc_valid'])} crc: {batch['crc']}}}"
    if e["is_control"]:
        kind = e.get("control_type", "INVALID")
        if kind in ("COMMIT", "ABORT") and "coordinator_epoch" in e:
            line += f" endTxnMarker: {kind} coordinatorEpoch: {e['coordinator_epoch']}"
        elif kind in _KRAFT_JSON and e.get("control_value") is not None:
            line += f" {_KRAFT_JSON[kind]} {json.dumps(e['control_value'], separators=(',', ':'))}"
        else:
            line += f" controlType: {kind}({_CONTROL_IDS.get(kind, -1)})"
    return line


def record_line(e: Entry, batch: Entry, print_data: bool, skip_metadata: bool) -> str:
    """One record of `dumpLog`'s deep iteration, with Kafka's prefixes and spacing."""
    prefix, line = "| ", ""
    if not skip_metadata:
        line, prefix = prefix + _record_metadata(e, batch), " "
    if print_data and not e["is_control"]:
        if e.get("key") is not None:
            line += f"{prefix}key: {_data(e['key'])}"
        if e.get("value") is not None:
            line += f" payload: {_data(e['value'])}"
    return line


def _finding(e: Entry) -> str:
    where = "".join(f" {k}: {e[k]}" for k in ("position", "offset") if e.get(k) is not None)
    return f"{e['severity']}: {e['code']}{where} {e['message']}"


def _generic(e: Entry) -> str:
    return " ".join([e["kind"], *(f"{k}: {_data(v)}" for k, v in e.items() if k not in ("kind", "path"))])


_SIMPLE = {
    "index_entry": lambda e: f"offset: {e['offset']} position: {e['position']}",
    "time_index_entry": lambda e: f"timestamp: {e['timestamp']} offset: {e['offset']}",
    "txn_entry": lambda e: (f"version: {e['version']} producerId: {e['producer_id']} firstOffset: "
                            f"{e['first_offset']} lastOffset: {e['last_offset']} "
                            f"lastStableOffset: {e['last_stable_offset']}"),
    "snapshot_entry": lambda e: (f"producerId: {e['producer_id']} producerEpoch: {e['producer_epoch']} "
                                 f"coordinatorEpoch: {e['coordinator_epoch']} currentTxnFirstOffset: "
                                 f"{e['current_txn_first_offset']} lastTimestamp: {e['timestamp']} "
                                 f"firstSequence: {e['first_sequence']} lastSequence: {e['last_sequence']} "
                                 f"lastOffset: {e['last_offset']} offsetDelta: {e['offset_delta']} "
                                 f"timestamp: {e['timestamp']}"),
    "finding": _finding,
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

    def lines(self) -> Iterator[str]:
        for path, pairs in self.pairs.items():
            yield f"Non-consecutive offsets in {path}"
            for first, second in reversed(pairs):
                yield f"  {first} is followed by {second}"
            if self.dropped.get(path):
                yield f"  ... {self.dropped[path]} earlier pairs not shown"


def _empty_index(e: Entry) -> bool:
    """An offset index with no whole entry: `dumpIndex` prints `<file> is empty.` and nothing else for it."""
    return e.get("file_kind") == "kafka-offset-index" and int(e.get("size") or 0) < 8


def dump_log_lines(entries: Iterable[Entry], print_data: bool, skip_record_metadata: bool,
                   gaps: Gaps | None = None) -> Iterator[str]:
    """kafka-dump-log's lines for a stream of dump entries, as they come; `gaps` collects the stderr report."""
    batch: Entry = {"magic": 2, "codec": "none", "crc": 0, "crc_valid": True}
    gaps = gaps if gaps is not None else Gaps()
    silent = False  # the rest of an empty index's entries
    for e in entries:
        kind = e["kind"]
        if kind == "record":
            gaps.see(e["offset"])
            yield record_line(e, batch, print_data, skip_record_metadata)
        elif kind == "batch":
            batch = e
            yield batch_line(e)
        elif kind == "file":
            gaps.start(e["path"])
            yield from _header(e)
            silent = _empty_index(e)
            if silent:
                yield f"{e['path']} is empty."
        elif silent and kind != "finding":
            continue
        elif kind == "sanity_check":
            if e["passed"]:
                yield f"{e['path']} passed sanity check."
        else:
            yield _SIMPLE.get(kind, _generic)(e)
