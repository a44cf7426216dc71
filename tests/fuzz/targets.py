"""Fuzz targets: one per parser family, each calling the parser on arbitrary bytes.

A target returns normally or raises `FormatError`; anything else escaping is
a crash. Most targets call the parser directly (fast) and then the same
bytes through `toolkit.dump.dump_file` under the file's canonical name (the
CLI's path: nothing at all may escape it). `Scratch` holds the files.
"""
from __future__ import annotations

import hashlib
import shutil
import struct
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from replog.formats.errors import FormatError
from replog.formats.kafka import (
    checkpoint,
    clean_shutdown,
    codecs,
    control,
    legacy,
    meta_properties,
    offset_index,
    partition_metadata,
    producer_snapshot,
    quorum_state,
    time_index,
    txn_index,
)
from replog.formats.kafka.internal import decode_consumer_offsets, decode_metadata_entry, decode_transaction_state
from replog.formats.kafka.segment import SegmentWalk, batch_records
from replog.formats.rocketmq import (
    batch_consumequeue,
    commitlog,
    config_json,
    consumequeue,
    dledger,
    epoch_file,
    index_file,
    timer_check,
    timer_log,
    timer_wheel,
)
from replog.formats.rocketmq import checkpoint as rmq_checkpoint
from replog.toolkit.dump import DumpOptions, dump_file

SEG = "00000000000000000000"
_OPTIONS = (DumpOptions(deep=True, print_data=True, key_decoder="hex"),
            DumpOptions(offsets_decoder=True), DumpOptions(txn_decoder=True),
            DumpOptions(metadata_decoder=True, value_decoder="json"),
            DumpOptions(verify_index_only=True), DumpOptions(index_sanity_check=True),
            DumpOptions(max_bytes=100, from_offset=2, to_offset=5))


class Scratch:
    """A private directory for targets that need a file on disk (removed by `close`).

    Every file `put` there is an input: its SHA-256 is kept, and `changed` says which inputs no longer
    hash the same (or are gone) after a run: replog must never modify an input."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="replog-fuzz-"))
        self.inputs: dict[Path, str] = {}

    def put(self, rel: str, data: bytes) -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        self.inputs[p] = hashlib.sha256(data).hexdigest()
        return p

    def changed(self) -> list[str]:
        """The inputs put since the last call that changed or vanished; forgets them all."""
        out = []
        for p, digest in self.inputs.items():
            try:
                now: str | None = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError:
                now = None
            if now != digest:
                out.append(str(p.relative_to(self.root)))
        self.inputs.clear()
        return out

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _dump(scratch: Scratch, rel: str, data: bytes) -> None:
    """Every entry of `dump_file` for these bytes under that name, with an option set picked by the data."""
    path = scratch.put(rel, data)
    for _ in dump_file(path, _OPTIONS[len(data) % len(_OPTIONS)]):
        pass


def _swallow(fn: Callable[[], object]) -> None:
    try:
        fn()
    except FormatError:
        pass


Target = Callable[[bytes, Scratch], None]


def _small_file(name: str, rel: str, parse: Callable[[bytes], object],
                *tolerant: Callable[[bytes], object]) -> Target:
    """The target of a small file read whole: `dump_file` under its canonical name `rel`, the `tolerant`
    parsers (a FormatError of theirs is no verdict), then its own parser."""
    def target(data: bytes, scratch: Scratch) -> None:
        _dump(scratch, rel, data)
        for other in tolerant:
            _swallow(partial(other, data))
        parse(data)
    target.__name__ = target.__qualname__ = name
    return target


# --- Kafka ---------------------------------------------------------------------------------

def kafka_segment(data: bytes, scratch: Scratch) -> None:
    walk = SegmentWalk(data, "<fuzz>", 0)
    for info in walk.batches():
        if info.magic in (0, 1) or (info.magic == 2 and info.size >= 61):
            _swallow(partial(batch_records, data, info))
    _dump(scratch, f"t-0/{SEG}.log", data)


def kafka_legacy(data: bytes, scratch: Scratch) -> None:
    entry = legacy.read_legacy_entry(data, 0)
    legacy.inner_records(entry)


def kafka_codecs(data: bytes, scratch: Scratch) -> None:
    if len(data) < 2:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", "no codec selector")
    codecs.decompress(data[0] % 5, data[2:], magic=data[1] % 3)


def kafka_offset_index(data: bytes, scratch: Scratch) -> None:
    offset_index.read_offset_index(data, 0)
    offset_index.sanity_check(data, 0)
    _dump(scratch, f"t-0/{SEG}.index", data)


def kafka_time_index(data: bytes, scratch: Scratch) -> None:
    time_index.read_time_index(data, 0)
    time_index.sanity_check(data, 0)
    _dump(scratch, f"t-0/{SEG}.timeindex", data)


def kafka_txn_index(data: bytes, scratch: Scratch) -> None:
    txn_index.read_txn_index(data, 0)
    _dump(scratch, f"t-0/{SEG}.txnindex", data)


kafka_producer_snapshot = _small_file("kafka_producer_snapshot", f"t-0/{SEG}.snapshot",
                                      producer_snapshot.parse_producer_snapshot)
kafka_partition_metadata = _small_file("kafka_partition_metadata", "t-0/partition.metadata",
                                       partition_metadata.parse_partition_metadata)
kafka_meta_properties = _small_file("kafka_meta_properties", "meta.properties", meta_properties.parse_meta_properties,
                                    meta_properties.parse_java_properties)
kafka_quorum_state = _small_file("kafka_quorum_state", "quorum-state", quorum_state.parse_quorum_state)
kafka_clean_shutdown = _small_file("kafka_clean_shutdown", ".kafka_cleanshutdown", clean_shutdown.parse_clean_shutdown)


def kafka_checkpoint(data: bytes, scratch: Scratch) -> None:
    _dump(scratch, "replication-offset-checkpoint", data)
    _dump(scratch, "t-0/leader-epoch-checkpoint", data)
    _swallow(lambda: checkpoint.parse_offset_checkpoint(data))
    checkpoint.parse_leader_epoch_checkpoint(data)


def kafka_internal(data: bytes, scratch: Scratch) -> None:
    """Selector byte, u16 key length, key, value (see `seeds.internal_records`)."""
    if len(data) < 3:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", "short frame")
    sel, (klen,) = data[0] % 4, struct.unpack_from(">H", data, 1)
    key, value = data[3:3 + klen], data[3 + klen:]
    key_or_none = None if klen == 0xFFFF else key
    if sel == 0:
        decode_consumer_offsets(key_or_none, value or None)
    elif sel == 1:
        decode_transaction_state(key_or_none, value or None)
    elif sel == 2:
        decode_metadata_entry(None, value, False)
    else:
        _swallow(lambda: control.parse_end_txn_marker(value))
        decode_metadata_entry(key_or_none, value, True)


def kafka_partition(data: bytes, scratch: Scratch) -> None:
    """A partition dir whose only segment is `data`: replica load, ls summary and doctor must cope."""
    from replog.recovery.kafka.logdir import summarize_partition
    from replog.recovery.kafka.replica import load_replica
    pdir = scratch.root / "ld" / "t-0"
    scratch.put(f"ld/t-0/{SEG}.log", data)
    load_replica(pdir)
    summarize_partition(pdir)
    try:
        from replog.recovery.doctor import diagnose
    except ImportError:
        return
    diagnose([pdir])


def kafka_recover(data: bytes, scratch: Scratch) -> None:
    """A partition dir whose only segment is `data`, recovered as the broker would, then with salvage."""
    from replog.recovery.kafka.recover import recover_partition
    pdir = scratch.root / "rc" / "t-0"
    scratch.put(f"rc/t-0/{SEG}.log", data)
    for salvage in (False, True):
        recover_partition(pdir, scratch.root / "rc-out", salvage=salvage, force=True)


# --- RocketMQ --------------------------------------------------------------------------------

def rocketmq_commitlog(data: bytes, scratch: Scratch) -> None:
    pos = 0
    while pos < len(data):
        try:
            msg = commitlog.read_message(data, pos)
        except FormatError:
            break
        if msg.kind == "blank":
            break
        pos += msg.size
    _dump(scratch, f"commitlog/{SEG}", data)


def rocketmq_consumequeue(data: bytes, scratch: Scratch) -> None:
    _swallow(lambda: consumequeue.read_entries(data))
    _dump(scratch, f"consumequeue/T/0/{SEG}", data)
    for _ in consumequeue.read_ext_units(data[1:]):
        pass


def rocketmq_index(data: bytes, scratch: Scratch) -> None:
    from tests.fuzz.seeds import INDEX_SLOTS
    _dump(scratch, "index/20240101000000000", data)
    index_file.parse_header(data)
    idx = index_file.IndexFile(data, hash_slot_num=INDEX_SLOTS)
    for _ in idx.entries():
        pass
    for _ in idx.check("<fuzz>"):
        pass
    idx.lookup("orders#k1")
    idx.slot_table()


def rocketmq_checkpoint(data: bytes, scratch: Scratch) -> None:
    _dump(scratch, "checkpoint", data)
    for _ in rmq_checkpoint.check_checkpoint(data, "<fuzz>"):
        pass
    rmq_checkpoint.parse_checkpoint(data)


def rocketmq_epoch(data: bytes, scratch: Scratch) -> None:
    _dump(scratch, "epochFileCheckpoint", data)
    entries = epoch_file.parse_epoch_file(data.decode("utf-8", "replace"), check_order=False)
    epoch_file.with_end_offsets(entries)
    epoch_file.parse_epoch_file(data.decode("utf-8", "replace"))


rocketmq_config = _small_file("rocketmq_config", "config/topics.json", config_json.loads)


def rocketmq_dledger(data: bytes, scratch: Scratch) -> None:
    """A DLedger peer whose only data file is these bytes (and whose index file is too: both walks at once)."""
    scratch.put(f"dledger-n0/data/{SEG}", data)
    scratch.put(f"dledger-n0/index/{SEG}", data[: len(data) // dledger.INDEX_UNIT_SIZE * dledger.INDEX_UNIT_SIZE])
    peer = dledger.read_peer(scratch.root / "dledger-n0")
    for _ in dledger.walk_peer(peer):
        pass
    _dump(scratch, f"dledger-n0/data/{SEG}", data)


def rocketmq_timer(data: bytes, scratch: Scratch) -> None:
    """The same bytes as a timer log, a timer wheel, a timer checkpoint and timer metrics."""
    path = scratch.put(f"timerlog/{SEG}", data)
    for _ in timer_log.walk_timerlog([(0, path)]):
        pass
    for _ in timer_wheel.written_slots(data[: len(data) // timer_wheel.SLOT_SIZE * timer_wheel.SLOT_SIZE]):
        pass
    for _ in timer_check.check_timer_checkpoint(data, "<fuzz>"):
        pass
    _swallow(lambda: timer_check.parse_timer_checkpoint(data))
    _swallow(lambda: timer_check.parse_timer_metrics(data))


def rocketmq_batch_cq(data: bytes, scratch: Scratch) -> None:
    for _ in batch_consumequeue.read_units(data[: len(data) // batch_consumequeue.UNIT_SIZE
                                                * batch_consumequeue.UNIT_SIZE]):
        pass
    _dump(scratch, f"batchconsumequeue/T/0/{SEG}", data)


TARGETS: dict[str, Target] = {f.__name__: f for f in (
    kafka_segment, kafka_legacy, kafka_codecs, kafka_offset_index, kafka_time_index, kafka_txn_index,
    kafka_producer_snapshot, kafka_checkpoint, kafka_partition_metadata, kafka_meta_properties,
    kafka_quorum_state, kafka_clean_shutdown, kafka_internal, kafka_partition, kafka_recover,
    rocketmq_commitlog, rocketmq_consumequeue, rocketmq_index, rocketmq_checkpoint, rocketmq_epoch,
    rocketmq_config, rocketmq_dledger, rocketmq_timer, rocketmq_batch_cq)}

# How many times one execution costs more than a parser call (a recovery writes and verifies a whole
# partition): a run with an execution budget gives such a target that many times fewer.
COST: dict[str, int] = {"kafka_recover": 10}
