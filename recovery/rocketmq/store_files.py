"""The store files no message check reads: batch consume queues, CQ extension units, the lock, `.bak` configs,
`brokerIdentity`, and the directories of features replog names but does not check (`store.FEATURES`).

Every file returned here is hashed for the evidence manifest as read, so `doctor` reports a file as UNKNOWN_FILE only
when nothing here knows it; a feature's files are reported once, by one finding on its path.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import is_regular, mapped, read_small
from replog.formats.findings import Finding, Severity, finding, from_unreadable
from replog.formats.rocketmq.batch_consumequeue import BatchCQEntry, walk_batch_queue
from replog.formats.rocketmq.broker_identity import parse_broker_identity
from replog.formats.rocketmq.consumequeue import read_ext_units
from replog.formats.rocketmq.store import FEATURES
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel


def other_store_files(model: StoreModel) -> tuple[list[Finding], list[Path]]:
    """Findings about, and every file of, the parts of a store the message checks do not read."""
    out: list[Finding] = []
    read: list[Path] = []
    for files in model.layout.batch_consume_queues.values():
        read += files
    out += batch_queue_findings(model)
    for files in model.layout.consume_queue_ext.values():
        for p in files:
            read.append(p)
            out += ext_findings(p)
    layout = model.layout
    for single in (layout.lock, layout.broker_identity, layout.root / "brokerIdentity-temp"):
        if single is not None and is_regular(single):
            read.append(single)
            if single.name.startswith("brokerIdentity"):
                out += identity_findings(single)
    checked = set(layout.config_dbs.values())   # RocksDB config stores replog reads (rocksdb_store)
    for rel, what in FEATURES.items():
        path = layout.root / rel
        if path in checked:
            continue
        files = list(_regular_files(path)) + list(_regular_files(path.with_name(path.name + ".bak")))
        if files:
            read += files
            out.append(finding("ROCKETMQ_FEATURE_NOT_CHECKED", str(path),
                               message=f"{what}: {len(files)} files hashed for the manifest, not checked",
                               files=len(files)))
    return out, read


def _regular_files(path: Path) -> Iterator[Path]:
    if is_regular(path):
        yield path
        return
    if not path.is_dir():
        return
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            p = Path(folder) / name
            if is_regular(p):
                yield p


def ext_findings(path: Path) -> list[Finding]:
    """A ConsumeQueueExt file's units must each be whole (`consumequeue.read_ext_units`)."""
    try:
        with mapped(path) as buf:
            for _ in read_ext_units(buf, file_start=int(path.name) if path.name.isdigit() else 0):
                pass
    except FormatError as e:
        return [finding("ROCKETMQ_CQ_INVALID", str(path), position=e.position, message=e.message)]
    except UnreadableInput as e:
        return [from_unreadable(e, str(path))]
    return []


def identity_findings(path: Path) -> list[Finding]:
    try:
        ok = parse_broker_identity(read_small(path, limit=1 << 16)) is not None
    except UnreadableInput as e:
        return [from_unreadable(e, str(path))]
    return [] if ok else [finding("ROCKETMQ_CONFIG_INVALID", str(path),
                                  message="not a broker identity (cluster#broker#id[#checkcode])")]


def _batch_problem(e: BatchCQEntry, m: MessageRef | None, topic: str, qid: int) -> str | None:
    """A unit must name a message of its queue with the message's size, base offset, batch size and tag code
    (`BatchConsumeQueue#putBatchMessagePositionInfo`, `CommitLog#setBatchSizeIfNeeded`)."""
    if m is None:
        return f"no message starts at commitlog offset {e.commitlog_offset}"
    if m.size != e.size:
        return f"size {e.size} but the message at {e.commitlog_offset} is {m.size} bytes"
    if (m.topic, m.queue_id) != (topic, qid):
        return f"points at a message of {m.topic}/{m.queue_id}"
    if m.queue_offset != e.msg_base_offset:
        return f"base offset {e.msg_base_offset} but the message's queue offset is {m.queue_offset}"
    if m.batch_size != e.batch_size:
        return f"batch size {e.batch_size} but the message holds {m.batch_size} (INNER_NUM)"
    if e.tags_code != m.cq_tags_code:
        return f"tag code {e.tags_code} but the message's tag code is {m.cq_tags_code}"
    return None


def batch_queue_findings(model: StoreModel) -> Iterator[Finding]:
    """Walk every batch consume queue; each unit must point at a matching message inside the recovered log."""
    by_off = model.by_offset()
    for (topic, qid), files in model.layout.batch_consume_queues.items():
        for item in walk_batch_queue(files):
            if isinstance(item, Finding):
                yield item
                continue
            if item.commitlog_offset < model.min_offset:
                continue
            path = str(files[0].parent / f"{item.index * 46 - item.position:020d}")
            if item.commitlog_offset >= model.max_offset:
                yield finding("ROCKETMQ_CQ_ENTRY_MISMATCH", path, position=item.position, offset=item.msg_base_offset,
                              severity=Severity.WARNING,
                              message=f"{topic}/{qid}: batch unit points at {item.commitlog_offset}, at or past the "
                                      f"recovered log end {model.max_offset}; the broker drops it")
                continue
            problem = _batch_problem(item, by_off.get(item.commitlog_offset), topic, qid)
            if problem:
                yield finding("ROCKETMQ_CQ_ENTRY_MISMATCH", path, position=item.position, offset=item.msg_base_offset,
                              message=f"{topic}/{qid}: {problem}", commitlog_offset=item.commitlog_offset)
