"""`recover_store`: what the broker's start-up recovery (abnormal after a crash, normal after a clean stop) keeps,
written to a new store dir.

The commit log is copied byte-for-byte up to the recovered end (docs/reference/rocketmq.md
§7.3-§7.4; the dirty tail and later files are not copied, the rest of the last
file is zeros), then consume queues and index files are rebuilt from the
messages as dispatch would build them (§7.5), the checkpoint is written to
match, config files are copied, the timer files carried through (`timers.carry_timer_files`), and the result is
checked with `diagnose_store`.
`write_store` is shared with HA repair: it lays out any list of byte pieces.
"""
from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replog.formats.fileio import atomic_file, atomic_write, mapped, read_small
from replog.formats.findings import Finding, Severity
from replog.formats.rocketmq.checkpoint import Checkpoint, write_checkpoint
from replog.formats.rocketmq.consumequeue import DEFAULT_FILE_SIZE as CQ_DEFAULT_FILE_SIZE
from replog.formats.rocketmq.consumequeue import write_queue
from replog.formats.rocketmq.epoch_file import EpochEntry, write_epoch_file
from replog.formats.rocketmq.index_file import ENTRY_SIZE, HEADER_SIZE, SLOT_SIZE, IndexWriter
from replog.formats.rocketmq.offset_names import file_name
from replog.recovery.outputs import claimed_output, mark_complete
from replog.recovery.rocketmq.batch_queues import batch_file_size, batch_topics, write_batch_queues
from replog.recovery.rocketmq.lmq import LMQ_QUEUE_ID, is_lmq
from replog.recovery.rocketmq.queue_recovery import Queue, recover_queues
from replog.recovery.rocketmq.recovery_rule import rule_for
from replog.recovery.rocketmq.rocksdb_repair import CQ_MODE, write_rocksdb_parts
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel, load_store
from replog.recovery.rocketmq.timers import carry_timer_files

_CHUNK = 8 << 20


@dataclass(frozen=True, slots=True)
class Piece:
    """`length` bytes of `source` from `position`, to land at commitlog offset `offset`."""

    source: str
    position: int
    length: int
    offset: int


def prefix_pieces(model: StoreModel, end: int) -> list[Piece]:
    """The model's own bytes below commitlog offset `end`."""
    out = []
    for start, path in model.files:
        if start >= end:
            break
        length = min(model.file_size, end - start, path.stat().st_size)
        if length > 0:
            out.append(Piece(str(path), 0, length, start))
    return out


def write_commitlog(directory: Path, pieces: Iterable[Piece], file_size: int, file_starts: Iterable[int]) -> list[Path]:
    """Full-size segment files at `file_starts`, filled from `pieces` (zeros elsewhere).

    Streams through read-only maps (1 GiB segments never sit in memory); each file
    goes to a unique temporary name, is fsynced and renamed (`atomic_file`), removed on failure.
    """
    directory.mkdir(parents=True, exist_ok=True)
    by_file: dict[int, list[Piece]] = {s: [] for s in file_starts}
    for p in pieces:
        start = p.offset - p.offset % file_size
        if p.offset + p.length > start + file_size:
            raise ValueError(f"piece at {p.offset} crosses the segment boundary at {start + file_size}")
        by_file.setdefault(start, []).append(p)
    written = []
    for start in sorted(by_file):
        target = directory / file_name(start)
        with atomic_file(target) as out:
            for p in by_file[start]:
                out.seek(p.offset - start)
                with mapped(p.source) as buf:
                    for i in range(p.position, p.position + p.length, _CHUNK):
                        out.write(buf[i:min(i + _CHUNK, p.position + p.length)])
            out.truncate(file_size)
        written.append(target)
    return written


def index_geometry(model: StoreModel) -> tuple[int, int] | None:
    """(hash slots, entry capacity) of the input's index files, or None if it has none usable."""
    from replog.recovery.rocketmq.doctor import fallback_slots, infer_hash_slot_num
    for p in model.layout.index_files:
        with mapped(p) as buf:
            slots = infer_hash_slot_num(buf) or fallback_slots(len(buf))
            if slots is not None:
                return slots, (len(buf) - HEADER_SIZE - slots * SLOT_SIZE) // ENTRY_SIZE
    return None


def cq_file_size(model: StoreModel) -> int:
    sizes = [q.file_size for q in model.queues.values() if q.file_size > 0 and q.file_size % 20 == 0]
    return max(set(sizes), key=sizes.count) if sizes else CQ_DEFAULT_FILE_SIZE


def rebuild_consume_queues(root: Path, messages: list[MessageRef], file_size: int,
                           multi_dispatch: bool = False) -> int:
    """Dispatch every NOT_TYPE/COMMIT message into its queue, like `putMessagePositionInfo`, and with
    `multi_dispatch` into each LMQ queue it names too (`ConsumeQueue#multiDispatchLmqQueue`, `lmq`).

    Entries are appended in log order; one whose queue offset is below the next
    expected is already built and skipped. A queue that starts above 0 gets pre-blank entries.
    """
    queues: dict[tuple[str, int], list[tuple[int, MessageRef]]] = {}
    for m in messages:
        if not m.dispatched:
            continue
        lmq = [((name, LMQ_QUEUE_ID), offset) for name, offset in m.lmq] if multi_dispatch else []
        for key, offset in [((m.topic, m.queue_id), m.queue_offset), *lmq]:
            q = queues.setdefault(key, [])
            if q and offset < q[-1][0] + 1:
                continue
            q.append((offset, m))
    for (topic, qid), units in queues.items():
        write_queue(root, topic, qid, [(m.physical_offset, m.size, m.cq_tags_code) for _, m in units],
                    file_size=file_size, start_queue_offset=units[0][0])
    return len(queues)


def _index_name(ts: int, taken: set[str]) -> str:
    ms = max(ts, 0)
    while True:
        t = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
        name = t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 1000:03d}"
        if name not in taken:
            taken.add(name)
            return name
        ms += 1


def rebuild_index(root: Path, messages: list[MessageRef], slots: int, capacity: int) -> tuple[int, int]:
    """Index files with the broker's `putKey` rules; returns (files, end timestamp of the last)."""
    d = root / "index"
    d.mkdir(parents=True, exist_ok=True)
    writers: list[IndexWriter] = []
    for m in messages:
        if not m.indexed or not m.keys:
            continue
        for key in m.keys:
            if not writers or writers[-1].is_full:
                prev = writers[-1] if writers else None
                writers.append(IndexWriter(hash_slot_num=slots, index_num=capacity,
                                           inherit_end_phy_offset=prev.end_phy_offset if prev else 0,
                                           inherit_end_timestamp=prev.end_timestamp if prev else 0))
            writers[-1].put_key(key, m.physical_offset, m.store_timestamp)
    taken: set[str] = set()
    for w in writers:
        atomic_write(d / _index_name(w.begin_timestamp, taken), w.to_bytes())
    return len(writers), writers[-1].end_timestamp if writers else 0


def copy_metadata(source: StoreModel, root: Path) -> list[str]:
    """config/*.json (and .bak) and brokerIdentity, copied as they are."""
    copied = []
    cfg = source.layout.root / "config"
    if cfg.is_dir():
        (root / "config").mkdir(exist_ok=True)
        for p in sorted(cfg.iterdir()):
            if p.is_file() and (p.suffix == ".json" or p.name.endswith(".json.bak")):
                atomic_write(root / "config" / p.name, read_small(p))
                copied.append(f"config/{p.name}")
    ident = source.layout.broker_identity
    if ident is not None:
        atomic_write(root / ident.name, read_small(ident))
        copied.append(ident.name)
    return copied


def write_queues(root: Path, source: StoreModel, messages: list[MessageRef],
                 queues: dict[tuple[str, int], Queue] | None, like: StoreModel | None) -> dict[str, Any]:
    """The queues `write_store` writes: file consume queues (`queues` as given, else rebuilt from every message),
    but for BatchCQ topics, which get batch consume queues instead (`batch_queues`); for a `storeType=defaultRocksDB`
    store none at all, its config databases and the `abort` marker instead (`rocksdb_repair`)."""
    rocksdb = source.layout.rocksdb or (like is not None and like.layout.rocksdb)
    if rocksdb:
        return {"consume_queues": 0, "batch_consume_queues": 0, "rocksdb": write_rocksdb_parts(source, root)}
    batch = batch_topics(source) | (batch_topics(like) if like is not None else frozenset())
    if queues is None:
        cq_source = source if source.queues or like is None else like
        multi = any(is_lmq(topic) for topic, _ in cq_source.queues)   # the source ran with enableMultiDispatch
        written = rebuild_consume_queues(root, [m for m in messages if m.topic not in batch],
                                         cq_file_size(cq_source), multi)
    else:
        written = sum(1 for (topic, _), q in queues.items() if topic not in batch and q.write(root))
    bcq_source = source if source.layout.batch_consume_queues or like is None else like
    batch_written = write_batch_queues(root, messages, batch, batch_file_size(bcq_source)) if batch else 0
    return {"consume_queues": written, "batch_consume_queues": batch_written, "rocksdb": None}


def write_store(root: Path, source: StoreModel, pieces: list[Piece], end: int, *,
                epochs: list[EpochEntry] | None, confirm_offset: int, file_size: int | None = None,
                file_starts: Iterable[int] | None = None, like: StoreModel | None = None,
                queues: dict[tuple[str, int], Queue] | None = None,
                timers_from: StoreModel | None = None) -> dict[str, Any]:
    """A complete store under `root`: commitlog from `pieces` up to `end`, then CQs, index, checkpoint.

    `source` supplies the geometry (segment, CQ and index sizes), the metadata
    copied across, and the checkpoint's master flushed offset; `like` (the
    master, for a slave) supplies the geometry `source` does not show. The
    consume queues are `queues` as given (the broker's own, `queue_recovery`),
    else rebuilt from every message (`write_queues`: BatchCQ topics and RocksDB stores apart). The timer
    files are `timers_from`'s (default `source`): a store whose timer files describe the written bytes.
    """
    fs = file_size or source.file_size
    starts = list(file_starts) if file_starts is not None else sorted({p.offset - p.offset % fs for p in pieces})
    if not starts:
        starts = [end - end % fs]
    write_commitlog(root / "commitlog", pieces, fs, starts)
    rebuilt = load_store(root, abnormal=False)
    messages = [m for m in rebuilt.messages if m.end <= end]
    written = write_queues(root, source, messages, queues, like)
    geometry = index_geometry(source) or (index_geometry(like) if like is not None else None)
    index_files, index_end = rebuild_index(root, messages, *geometry) if geometry else (0, 0)
    newest = max((m.store_timestamp for m in messages), default=0)
    newest_cq = max((m.store_timestamp for m in messages if m.dispatched), default=0)
    master_flushed = source.checkpoint.master_flushed_offset if source.checkpoint else 0
    write_checkpoint(root / "checkpoint", Checkpoint(newest, newest_cq, index_end, master_flushed,
                                                     max(0, min(confirm_offset, end))))
    if epochs:
        write_epoch_file(root / "epochFileCheckpoint", epochs)
    copied = copy_metadata(source, root)
    timers = carry_timer_files(timers_from or source, root, end, messages)
    return {"commitlog_files": len(starts), "messages": len(messages), **written,
            "index_files": index_files, "timers": timers,
            "index_note": None if geometry else "the input has no index file to take the broker's geometry from; "
                                                "no index written",
            "copied": copied}


def _summary(findings: list[Finding]) -> dict[str, int]:
    return {s: sum(1 for f in findings if f.severity is sev)
            for s, sev in (("errors", Severity.ERROR), ("warnings", Severity.WARNING), ("infos", Severity.INFO))}


def recover_store(store: str | os.PathLike[str], out: str | os.PathLike[str], *, force: bool = False,
                  broker_version: str | None = None, rebuild_queues: bool = False) -> dict[str, Any]:
    """Run the broker's start-up recovery offline and write the recovered store to `out`.

    The recovery is the one the broker would run: abnormal when `abort` is present, normal when it is not
    (`DefaultMessageStore#load`: `lastExitOK = !isTempFileExist()`, then `recover(lastExitOK)`; tags
    rocketmq-all-4.9.7 and 5.3.3). A broker started on a cleanly stopped store whose consume queues lag does not
    dispatch them again (real 4.9.7 and 5.3.3 brokers, tests/brokers/test_rocketmq_recover.py), so the abnormal
    recovery is not a stand-in for it. The input is only read. The start file follows `broker_version`'s rule; the
    consume queues are the broker's (kept, then dispatched from the start file:
    `queue_recovery`), or with `rebuild_queues` rebuilt from every message.
    Returns the contract's recover shape (offsets are commitlog physical offsets)
    plus what was dropped, rebuilt and verified.
    """
    from replog.recovery.rocketmq.doctor import diagnose_store

    rule = rule_for(broker_version)
    model = load_store(store, rule=rule)
    before, _ = diagnose_store(store)
    end = model.max_offset
    truncated = end < model.walk_end
    epochs = [e for e in model.epochs if not truncated or e.start_offset < end]
    starts = [s for s, _ in model.files if s <= end] or [end - end % model.file_size]
    confirm = model.confirm_offset if model.confirm_offset is not None else 0
    rocksdb = model.layout.rocksdb
    queues = None if rebuild_queues or rocksdb else \
        recover_queues(model, end, cq_file_size(model), rule.reput_from_queues)
    with claimed_output(out, [store], force) as root:
        rebuilt = write_store(root, model, prefix_pieces(model, end), end, epochs=epochs, confirm_offset=confirm,
                              file_starts=starts, queues=queues)
        rebuilt["queues"] = {"mode": CQ_MODE if rocksdb else "rebuilt" if queues is None else "broker",
                             "kept": None if queues is None else sum(q.kept for q in queues.values()),
                             "dispatched": None if queues is None else sum(q.dispatched for q in queues.values())}
        after, _ = diagnose_store(root)
        mark_complete(root, f"replog recover: {store} up to {end}")
    return {
        "output": str(root), "truncated_to": end, "valid_bytes": end - model.min_offset,
        "log_end_offset_before": model.walk_end, "scan_start": model.scan_start, "recovery": model.recovery(),
        "dropped": {"messages": len(model.beyond), "bytes": max(0, model.walk_end - end),
                    "files": [str(p) for s, p in model.files if s > end]},
        "salvaged": [], "findings": [f.to_dict() for f in before], "rebuilt": rebuilt,
        "verification": {"findings": [f.to_dict() for f in after], "summary": _summary(after)},
    }

