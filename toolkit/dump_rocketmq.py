"""`dump` entries for RocketMQ store files: commitlog messages, consume queue units, index files."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

from replog.formats.errors import FormatError
from replog.formats.fileio import file_size, mapped, read_small
from replog.formats.findings import Finding, from_error
from replog.formats.rocketmq import (
    batch_consumequeue,
    checkpoint,
    commitlog,
    commitlog_walk,
    config_json,
    consumequeue,
    dledger,
    epoch_file,
    index_file,
)
from replog.toolkit.decoders import render_bytes
from replog.toolkit.dump_entries import Entry, finding_entry


def commitlog_entries(path: Path, value_decoder: str, with_body: bool) -> Iterator[Entry]:
    """The contract's `message` entries for one commitlog file, with findings in file order."""
    for item in commitlog_walk.walk_commitlog([path], file_size=file_size(path)):
        if isinstance(item, Finding):
            yield finding_entry(item)
        elif item.kind == "blank":
            yield {"kind": "blank", "path": str(path), "position": item.position, "size": item.size,
                   "physical_offset": item.commitlog_offset}
        else:
            yield message_entry(str(path), item, value_decoder, with_body)


def message_entry(path: str, m: commitlog.Message, value_decoder: str, with_body: bool) -> Entry:
    return {
        "kind": "message", "path": path, "physical_offset": m.commitlog_offset, "position": m.position,
        "size": m.size, "queue_id": m.queue_id, "queue_offset": m.queue_offset, "topic": m.topic,
        "body_crc": m.body_crc, "crc_valid": m.crc_valid, "born_timestamp": m.born_timestamp,
        "store_timestamp": m.store_timestamp, "born_host": m.born_host, "store_host": m.store_host,
        "sys_flag": m.sys_flag, "flag": m.flag, "reconsume_times": m.reconsume_times,
        "prepared_transaction_offset": m.prepared_transaction_offset, "msg_id": m.msg_id,
        "properties": dict(m.properties), "body_size": len(m.body),
        "body": render_bytes(m.body, value_decoder) if with_body else None,
    }


def consumequeue_entries(path: Path) -> Iterator[Entry]:
    size = file_size(path)
    for item in consumequeue.walk_consumequeue([path], file_size=size or None):
        if isinstance(item, Finding):
            yield finding_entry(item)
        else:
            yield {"kind": "cq_entry", "path": str(path), "position": item.position,
                   "queue_offset": item.queue_offset, "physical_offset": item.commitlog_offset,
                   "size": item.size, "tags_code": item.tags_code}


def batch_consumequeue_entries(path: Path) -> Iterator[Entry]:
    """`batch_cq_entry` per 46-byte unit (`batch_consumequeue`), findings where the file is malformed."""
    for item in batch_consumequeue.walk_batch_queue([path]):
        if isinstance(item, Finding):
            yield finding_entry(item)
        else:
            yield {"kind": "batch_cq_entry", "path": str(path), "position": item.position,
                   "physical_offset": item.commitlog_offset, "size": item.size, "tags_code": item.tags_code,
                   "store_timestamp": item.store_time, "base_offset": item.msg_base_offset,
                   "batch_size": item.batch_size, "compacted_offset": item.compacted_offset}


def index_file_entries(path: Path) -> Iterator[Entry]:
    with mapped(path) as buf:
        idx = index_file.IndexFile(buf)
        yield {"kind": "index_header", "path": str(path), **dataclasses.asdict(idx.header),
               "hash_slot_num": idx.hash_slot_num, "index_num": idx.index_num}
        for e in idx.entries():
            yield {"kind": "index_file_entry", "path": str(path), **dataclasses.asdict(e)}
        yield from map(finding_entry, idx.check(str(path)))


def store_file_entry(path: Path) -> Iterator[Entry]:
    """checkpoint, epochFileCheckpoint and config/*.json: one entry each."""
    data = read_small(path)
    if path.name == "checkpoint":
        cp = checkpoint.parse_checkpoint(data)
        yield {"kind": "rocketmq_checkpoint", "path": str(path), **dataclasses.asdict(cp)}
    elif path.name.startswith("epochFileCheckpoint"):
        for e in epoch_file.parse_epoch_file(data.decode("utf-8", "replace")):
            yield {"kind": "epoch_entry", "path": str(path), "epoch": e.epoch, "start_offset": e.start_offset}
    else:
        yield {"kind": "config", "path": str(path), "content": config_json.loads(data)}


def dledger_entries(path: Path, value_decoder: str, with_body: bool) -> Iterator[Entry]:
    """One DLedger data file: each entry's header (`dledger_entry`) then the commit-log message in its body
    (`message`, at its physical offset pos + 48), findings where they are; a BLANK or zeros end the file."""
    start = int(path.name)
    with mapped(path) as buf:
        position = 0
        while True:
            try:
                entry = dledger.read_header(buf, position, file_start=start)
            except FormatError as err:
                yield finding_entry(from_error(err, str(path)))
                return
            if entry is None:
                return
            yield {"kind": "dledger_entry", "path": str(path), "position": position,
                   **{k: v for k, v in dataclasses.asdict(entry).items() if k not in ("file_start", "position")}}
            try:
                msg = commitlog.read_message(buf[:position + entry.size], position + dledger.BODY_OFFSET,
                                             file_start=start)
                yield message_entry(str(path), msg, value_decoder, with_body)
            except FormatError as err:
                yield finding_entry(from_error(err, str(path), index=entry.index))
            position += entry.size


def dledger_index_entries(path: Path) -> Iterator[Entry]:
    """One DLedger index file: its 32-byte records up to the first unwritten (zero) one."""
    base = int(path.name)
    with mapped(path) as buf:
        for position in range(0, len(buf) - dledger.INDEX_UNIT_SIZE + 1, dledger.INDEX_UNIT_SIZE):
            rec = dledger.IndexRecord(*dledger.INDEX_STRUCT.unpack_from(buf, position))
            if rec.magic == 0 and rec.size == 0:
                return
            yield {"kind": "dledger_index", "path": str(path), "position": position,
                   "slot": (base + position) // dledger.INDEX_UNIT_SIZE, **dataclasses.asdict(rec)}


def dledger_properties_entry(path: Path) -> Iterator[Entry]:
    """`checkpoint` (endIndex, committedIndex) or `currterm` (currTerm, voteLeader) of a DLedger peer."""
    yield {"kind": "dledger_properties", "path": str(path), "properties": dledger.read_properties(path)}
