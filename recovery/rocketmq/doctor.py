"""`diagnose_store`: every defect of a RocketMQ store, located (docs/reference/rocketmq.md §2-§7, §13).

Commitlog findings come from the format walker (CRCs, sizes, magic, physical
offset field, BLANK filler, file names and continuity, dirty tail); this module
adds what needs the whole store: where the broker's recovery would end the log,
queue offsets per queue, consume-queue entries against the messages they point
at, index chains and entries, checkpoint timestamps against the data, the
epoch file, config files and the abort marker. Damage in one file never stops
the others from being checked.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import mapped, read_small
from replog.formats.findings import Finding, Severity, finding, from_unreadable
from replog.formats.rocketmq import config_json
from replog.formats.rocketmq.checkpoint import check_checkpoint
from replog.formats.rocketmq.consumequeue import CQ_STORE_UNIT_SIZE, CQEntry, is_ext_address, walk_consumequeue
from replog.formats.rocketmq.epoch_file import parse_epoch_file, read_epoch_file
from replog.formats.rocketmq.index_file import (
    DEFAULT_HASH_SLOT_NUM,
    ENTRY_SIZE,
    HEADER_SIZE,
    SLOT_SIZE,
    IndexFile,
    index_key_hash,
)
from replog.formats.rocketmq.offset_names import file_name
from replog.formats.rocketmq.rocksdb_store import (
    CONSUMEQUEUE,
    ConsumeQueueDB,
    RocksCQUnit,
    consume_queue_db,
    db_files,
    read_config_db,
)
from replog.recovery.rocketmq.lmq import LMQ_QUEUE_ID, is_lmq
from replog.recovery.rocketmq.offset_reuse import reuse_findings
from replog.recovery.rocketmq.rocksdb_batch import BatchQueue, batch_gap, batch_queue_findings
from replog.recovery.rocketmq.store_files import other_store_files
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel, load_store
from replog.recovery.rocketmq.timers import timer_findings

_SEARCH_LIMIT = 1 << 20   # index files up to this size get their slot count searched for


def diagnose_store(path: str | os.PathLike[str], *, hash_slot_num: int | None = None
                   ) -> tuple[list[Finding], list[Path]]:
    """Findings about the store under `path` and every file read to make them.

    `hash_slot_num` is the broker's `maxHashSlotNum`; None infers it per index
    file. Raises `UnreadableInput` when `path` is not a RocketMQ store.
    """
    model = load_store(path)
    read = list(model.files_read)
    out = list(model.walk_findings)
    out += recovery_findings(model)
    out += queue_offset_findings(model)
    out += reuse_findings(model)
    out += consume_queue_findings(model)
    for p in model.layout.index_files:
        read.append(p)
        out += index_findings(model, p, hash_slot_num)
    out += checkpoint_findings(model)
    out += abort_findings(model)
    epoch_out, epoch_read = epoch_findings(model)
    out += epoch_out
    read += epoch_read
    for p in model.layout.config_files:
        read.append(p)
        out += config_findings(p)
        bak = p.with_name(p.name + ".bak")   # ConfigManager#load falls back to it
        if bak.is_file():
            read.append(bak)
            out += config_findings(bak)
    for d in model.layout.config_dbs.values():
        read += db_files(d)
        out += config_db_findings(d)
    other, other_read = other_store_files(model)
    out += other
    read += other_read
    timer_out, timer_read = timer_findings(model)
    out += timer_out
    read += timer_read
    seen: set[Path] = set()
    files = [p for p in read if not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]
    return out, files


def recovery_findings(model: StoreModel) -> Iterator[Finding]:
    """Where the broker's recovery would end the log, when decodable records lie past it."""
    if model.max_offset >= model.walk_end or not model.files:
        return
    already = {(f.code, f.offset) for f in model.walk_findings}
    valid = [m for m in model.beyond if m.crc_valid]
    where = model.file_at(model.max_offset) or model.files[-1]
    if ("ROCKETMQ_DIRTY_TAIL", model.max_offset) in already and not valid:
        return
    yield finding("ROCKETMQ_DIRTY_TAIL", str(where[1]), position=model.max_offset - where[0],
                  offset=model.max_offset, severity=Severity.ERROR if valid else None,
                  message=f"the broker's recovery ends the log at {model.max_offset}; "
                          f"{len(model.beyond)} decodable messages ({model.walk_end - model.max_offset} bytes) "
                          f"after it are dropped, {len(valid)} of them with a valid CRC",
                  dropped_messages=len(model.beyond), valid_dropped=len(valid))


def queue_offset_findings(model: StoreModel) -> Iterator[Finding]:
    """Queue offsets of each queue (LMQ queues too) must go up by one along the log."""
    queues = {q: [(m.queue_offset, m) for m in msgs] for q, msgs in model.queue_heads().items()}
    queues |= model.lmq_heads()   # LMQ offsets go up by one per message too (`LmqDispatch#updateLmqOffsets`)
    for (topic, qid), units in queues.items():
        for (before, prev), (at, m) in pairwise(units):
            step = prev.batch_size if (topic, qid) == (prev.topic, prev.queue_id) else 1   # INNER_NUM offsets each
            if at != before + step:
                yield finding("ROCKETMQ_QUEUE_OFFSET_GAP", m.file, position=m.position, offset=m.physical_offset,
                              message=f"{topic}/{qid}: queue offset {at} follows {before} (expected {before + step})",
                              topic=topic, queue_id=qid, expected=before + step, actual=at)


def _entry_problem(e: CQEntry, m: MessageRef | None, topic: str, qid: int) -> str | None:
    if m is None:
        return f"no message starts at commitlog offset {e.commitlog_offset}"
    if m.size != e.size:
        return f"size {e.size} but the message at {e.commitlog_offset} is {m.size} bytes"
    if is_lmq(topic):   # a multi-dispatched unit: the message's INNER_MULTI_* properties name it (`lmq`)
        if (topic, e.queue_offset) not in m.lmq or qid != LMQ_QUEUE_ID:
            return (f"points at a message of {m.topic}/{m.queue_id} whose multi-dispatch "
                    f"{[f'{n}@{o}' for n, o in m.lmq] or 'names no LMQ queue'} has no {topic}/{qid}@{e.queue_offset}")
    elif (m.topic, m.queue_id) != (topic, qid):
        return f"points at a message of {m.topic}/{m.queue_id}"
    elif m.queue_offset != e.queue_offset:
        return f"queue offset {e.queue_offset} but the message says {m.queue_offset}"
    if not is_ext_address(e.tags_code) and e.tags_code != m.cq_tags_code:
        return f"tag code {e.tags_code} but the message's tag code is {m.cq_tags_code}"
    return None


def _unit_problem(u: RocksCQUnit, m: MessageRef | None) -> str | None:
    """A RocksDB unit is a file unit plus the message's store time (`RocksDBConsumeQueueTable` value)."""
    problem = _entry_problem(CQEntry(u.queue_offset, u.commitlog_offset, u.size, u.tags_code, 0), m, u.topic,
                             u.queue_id)
    if problem is None and m is not None and m.store_timestamp != u.store_timestamp:
        return f"store time {u.store_timestamp} but the message was stored at {m.store_timestamp}"
    return problem


def _past_end(model: StoreModel, path: str, position: int | None, topic: str, qid: int, queue_offset: int,
              commitlog_offset: int, stale: bool) -> Finding:
    return finding("ROCKETMQ_CQ_ENTRY_MISMATCH", path, position=position, offset=queue_offset,
                   severity=Severity.WARNING,
                   message=f"{topic}/{qid}: entry points at {commitlog_offset}, at or past the recovered log end "
                           f"{model.max_offset}; the broker drops it" + (" (a stale message is still there)"
                                                                         if stale else ""))


def rocksdb_queue_findings(model: StoreModel) -> Iterator[Finding]:
    """A `storeType=defaultRocksDB` store: every unit of `consumequeue/` (the database) against the message it
    names, units of a queue contiguous (`RocksDBConsumeQueueTable#rangeQuery` stops at the first missing key),
    and the offset table's max/min entries against the units (`RocksDBConsumeQueueOffsetTable`)."""
    d = model.layout.root / CONSUMEQUEUE
    yield finding("ROCKETMQ_ROCKSDB_STORE", str(d), message=f"storeType=defaultRocksDB: consume queues in the RocksDB "
                  f"database {d}" + (f", config in {', '.join(sorted(model.layout.config_dbs))} databases"
                                     if model.layout.config_dbs else "") + "; read from a private copy")
    if not d.exists():   # a recover/repair output: the broker rebuilds it from the commit log (rocksdb_repair)
        yield finding("ROCKETMQ_ROCKSDB_STORE", str(d), message="no consume-queue database: the broker builds it "
                      "from the commit log at start (CommitLog#recoverAbnormally dispatches every record)"
                      + ("" if model.abort.present else "; without the abort marker it never dispatches the record "
                                                      "at offset 0 (CommitLog#recoverNormally)"),
                      severity=Severity.INFO if model.abort.present else Severity.WARNING)
        return
    with consume_queue_db(d) as cq:
        yield from _unit_findings(model, d, cq)
        yield from _offset_table_findings(model, d, cq)


def _unit_findings(model: StoreModel, d: Path, cq: ConsumeQueueDB) -> Iterator[Finding]:
    """Each unit against its message; a key gap is an error unless it is the previous unit's batch (a BatchCQ
    topic, `rocksdb_batch`), whose queue then gets one finding saying what the broker serves of it."""
    by_off = model.by_offset()
    stale = {m.physical_offset for m in model.beyond}
    last: dict[tuple[str, int], RocksCQUnit] = {}
    batches: dict[tuple[str, int], BatchQueue] = {}
    for u in cq.units():
        if not isinstance(u, RocksCQUnit):
            yield finding("ROCKETMQ_CQ_INVALID", str(d), message=f"a pair the broker cannot read: {u}")
            continue
        key = (u.topic, u.queue_id)
        prev = last.get(key)
        if prev is not None and u.queue_offset != prev.queue_offset + 1 \
                and not batch_gap(prev, by_off.get(prev.commitlog_offset), u):
            yield finding("ROCKETMQ_CQ_INVALID", str(d), offset=u.queue_offset,
                          message=f"{u.topic}/{u.queue_id}: unit {u.queue_offset} follows {prev.queue_offset}; the "
                                  "broker's range reads stop at the missing key", topic=u.topic, queue_id=u.queue_id)
        last[key] = u
        m = by_off.get(u.commitlog_offset)
        if key not in batches:
            state = model.queues.get(key)
            batches[key] = BatchQueue(*key, state.kv_min_offset if state else None)
        batches[key].add(u.queue_offset, m.batch_size if m else 1)
        if u.commitlog_offset < model.min_offset:
            continue
        if u.commitlog_offset >= model.max_offset:
            yield _past_end(model, str(d), None, u.topic, u.queue_id, u.queue_offset, u.commitlog_offset,
                            u.commitlog_offset in stale)
            continue
        problem = _unit_problem(u, by_off.get(u.commitlog_offset))
        if problem:
            yield finding("ROCKETMQ_CQ_ENTRY_MISMATCH", str(d), offset=u.queue_offset,
                          message=f"{u.topic}/{u.queue_id}: {problem}", commitlog_offset=u.commitlog_offset)
    for _, q in sorted(batches.items()):
        yield from batch_queue_findings(q, str(d))


def _offset_table_findings(model: StoreModel, d: Path, cq: ConsumeQueueDB) -> Iterator[Finding]:
    """The broker serves a queue's max offset from the offset table's "max" entry (+1), not from the units."""
    _, _, problems = cq.offsets()
    for p in problems:
        yield finding("ROCKETMQ_CQ_INVALID", str(d), message=f"offset table: {p}")
    for (topic, qid), q in sorted(model.queues.items()):
        if q.kv_max_offset is not None and q.kv_max_offset != q.max_offset:
            yield finding("ROCKETMQ_CQ_INVALID", str(d), offset=q.kv_max_offset,
                          message=f"{topic}/{qid}: the offset table's max says the queue ends at {q.kv_max_offset} "
                                  f"but its units end at {q.max_offset}", topic=topic, queue_id=qid)


def consume_queue_findings(model: StoreModel) -> Iterator[Finding]:
    """Walk every queue; each entry must point at a matching message inside the recovered log."""
    by_off = model.by_offset()
    stale = {m.physical_offset: m for m in model.beyond}
    heads: dict[tuple[str, int], list[tuple[int, MessageRef]]] = {
        q: [(m.queue_offset, m) for m in msgs] for q, msgs in model.queue_heads().items()}
    heads |= {q: units for q, units in model.lmq_heads().items() if q in model.queues}  # LMQ dirs on disk only
    for q in model.layout.batch_consume_queues:   # a BatchCQ topic's units are in batchconsumequeue/ (batch_queue)
        heads.pop(q, None)
    if model.layout.rocksdb:
        yield from rocksdb_queue_findings(model)
    for (topic, qid), state in ((k, v) for k, v in model.queues.items() if v.files):
        d = model.layout.root / "consumequeue" / topic / str(qid)
        for item in walk_consumequeue(state.files, file_size=state.file_size or None):
            if isinstance(item, Finding):
                yield item
                continue
            e = item
            if not e.is_valid or e.is_pre_blank or e.commitlog_offset < model.min_offset:
                continue
            path = str(d / file_name(e.queue_offset * CQ_STORE_UNIT_SIZE - e.position))
            if e.commitlog_offset >= model.max_offset:
                yield _past_end(model, path, e.position, topic, qid, e.queue_offset, e.commitlog_offset,
                                e.commitlog_offset in stale)
                continue
            problem = _entry_problem(e, by_off.get(e.commitlog_offset), topic, qid)
            if problem:
                yield finding("ROCKETMQ_CQ_ENTRY_MISMATCH", path, position=e.position, offset=e.queue_offset,
                              message=f"{topic}/{qid}: {problem}", commitlog_offset=e.commitlog_offset)
    for (topic, qid), units in heads.items():
        queue = model.queues.get((topic, qid))
        pending = [(o, m) for o, m in units if queue is None or o >= queue.max_offset]
        if pending:
            behind = [o for o, _ in pending]
            yield finding("ROCKETMQ_CQ_ENTRY_MISMATCH", str(model.layout.root / "consumequeue" / topic / str(qid)),
                          offset=behind[0], severity=Severity.INFO,
                          message=f"{topic}/{qid}: {len(behind)} messages (queue offsets {behind[0]}"
                                  f"..{behind[-1]}) have no consume-queue entry yet; "
                                  + _dispatch_note(model, [m for _, m in pending]), messages=len(behind))


def _dispatch_note(model: StoreModel, behind: list[MessageRef]) -> str:
    """When the broker dispatches them: at start; on a DLedger store only up to the committed entry's end
    (`DLedgerCommitLog#getData` returns nothing at or past `committedPos`), the rest once a leader commits it, if
    no leader truncates it first (docs/reference/rocketmq.md §15.4, §15.6)."""
    committed = model.dledger.committed_offset if model.dledger is not None else None
    if model.dledger is None or committed is None or behind[-1].end <= committed:
        return "the broker dispatches them at start"
    past = sum(1 for m in behind if m.end > committed)
    return (f"{past} of them lie past the DLedger committed index {model.dledger.committed_index} (offset "
            f"{committed}): dispatched only once a leader commits them, lost if a leader's log does not hold them")


def infer_hash_slot_num(buf: bytes | memoryview) -> int | None:
    """The `maxHashSlotNum` an index file was written with, judged from its chains.

    The file does not store it; the default is tried first, then slots:entries
    of 1:4 (the default ratio), then every geometry that fits (small files only).
    A count is accepted when every written entry is reachable from its own slot.
    """
    n = len(buf)
    candidates = [DEFAULT_HASH_SLOT_NUM]
    if (n - HEADER_SIZE) % (SLOT_SIZE + 4 * ENTRY_SIZE) == 0:
        candidates.append((n - HEADER_SIZE) // (SLOT_SIZE + 4 * ENTRY_SIZE))
    if n <= _SEARCH_LIMIT:
        candidates += range(1, (n - HEADER_SIZE) // SLOT_SIZE + 1)
    for s in candidates:
        rest = n - HEADER_SIZE - s * SLOT_SIZE
        if s <= 0 or rest < 2 * ENTRY_SIZE or rest % ENTRY_SIZE:
            continue
        if _chains_consistent(IndexFile(buf, hash_slot_num=s)):
            return s
    return None


def fallback_slots(n: int) -> int | None:
    """The default geometry when it fits the size, else slots:entries of 1:4."""
    if n >= HEADER_SIZE + DEFAULT_HASH_SLOT_NUM * SLOT_SIZE + ENTRY_SIZE \
            and (n - HEADER_SIZE - DEFAULT_HASH_SLOT_NUM * SLOT_SIZE) % ENTRY_SIZE == 0:
        return DEFAULT_HASH_SLOT_NUM
    if n > HEADER_SIZE and (n - HEADER_SIZE) % (SLOT_SIZE + 4 * ENTRY_SIZE) == 0:
        return (n - HEADER_SIZE) // (SLOT_SIZE + 4 * ENTRY_SIZE)
    return None


def _chains_consistent(f: IndexFile) -> bool:
    """Every written entry sits in exactly the chain of its own slot, linked backwards."""
    if not 1 <= f.header.index_count <= f.index_num or f.header.hash_slot_count > f.hash_slot_num:
        return False
    count, reached = f.used_count, 0
    for i, v in enumerate(f.slot_table()):
        if v <= 0:
            continue
        if v >= count:
            return False
        for e in f.chain(i):
            if e.key_hash % f.hash_slot_num != i or not 0 <= e.prev_index < e.number:
                return False
            reached += 1
    return reached == count - 1


def index_findings(model: StoreModel, path: Path, hash_slot_num: int | None) -> Iterator[Finding]:
    """Structure (header counts, slots, chains) and every entry against the message it names."""
    try:
        with mapped(path) as buf:
            yield from _index_buffer(model, buf, str(path), hash_slot_num)
    except UnreadableInput as e:
        yield from_unreadable(e, str(path))


def _index_buffer(model: StoreModel, buf: memoryview, path: str, hash_slot_num: int | None) -> Iterator[Finding]:
    if len(buf) < HEADER_SIZE:
        yield finding("ROCKETMQ_INDEX_INVALID", path, position=0, message=f"{len(buf)} bytes: no 40-byte header")
        return
    slots = hash_slot_num or infer_hash_slot_num(buf)
    if slots is None:
        slots = fallback_slots(len(buf))
        yield finding("ROCKETMQ_INDEX_INVALID", path, position=0,
                      message="no slot count makes the hash chains consistent (corrupt slots or chains)"
                              + (f"; checking with {slots} slots" if slots else ""))
        if slots is None:
            return
    try:
        f = IndexFile(buf, hash_slot_num=slots)
    except FormatError as err:
        yield finding("ROCKETMQ_INDEX_INVALID", path, position=err.position, message=err.message)
        return
    yield from f.check(path)
    entries_at = HEADER_SIZE + slots * SLOT_SIZE
    reached: set[int] = set()
    table = f.slot_table()
    for i, v in enumerate(table):
        if v <= 0:
            continue
        for e in f.chain(i):   # chain() takes a hash; i % slots == i
            reached.add(e.number)
            if e.key_hash % slots != i:
                yield finding("ROCKETMQ_INDEX_INVALID", path, position=entries_at + e.number * ENTRY_SIZE,
                              message=f"entry {e.number} hashes to slot {e.key_hash % slots} but sits in the "
                                      f"chain of slot {i}")
    by_off = model.by_offset()
    last = None
    for e in f.entries():
        last = e
        pos = entries_at + e.number * ENTRY_SIZE
        if e.number not in reached:
            yield finding("ROCKETMQ_INDEX_INVALID", path, position=pos,
                          message=f"entry {e.number} is not reachable from its slot; lookups never find it")
        if e.phy_offset < model.min_offset:
            continue
        if e.phy_offset >= model.max_offset:
            yield finding("ROCKETMQ_INDEX_INVALID", path, position=pos, offset=e.phy_offset,
                          severity=Severity.WARNING,
                          message=f"entry {e.number} points at {e.phy_offset}, past the log end "
                                  f"{model.max_offset} (index files survive truncation)")
            continue
        m = by_off.get(e.phy_offset)
        if m is None or e.key_hash not in {index_key_hash(k) for k in m.keys}:
            yield finding("ROCKETMQ_INDEX_INVALID", path, position=pos, offset=e.phy_offset,
                          severity=Severity.WARNING,
                          message=f"entry {e.number}: " + ("no message starts at this offset" if m is None
                                                           else "none of the message's keys has this hash"))
    if last is not None and f.header.end_phy_offset != last.phy_offset:
        yield finding("ROCKETMQ_INDEX_INVALID", path, position=24,
                      message=f"header end offset {f.header.end_phy_offset} != last entry's {last.phy_offset}")


def checkpoint_findings(model: StoreModel) -> Iterator[Finding]:
    """The file itself, then its timestamps and confirm offset against the log."""
    p = model.layout.checkpoint
    if p is None:
        return
    try:
        data = read_small(p, limit=1 << 20)
    except UnreadableInput as e:
        yield from_unreadable(e, str(p))
        return
    yield from check_checkpoint(data, str(p))
    cp = model.checkpoint
    if cp is None:
        return
    newest = max((m.store_timestamp for m in model.messages), default=0)
    newest_cq = max((m.store_timestamp for m in model.messages if m.dispatched), default=0)
    for pos, name, value, limit in ((0, "physicMsgTimestamp", cp.physic_msg_timestamp, newest),
                                    (8, "logicsMsgTimestamp", cp.logics_msg_timestamp, newest_cq),
                                    (16, "indexMsgTimestamp", cp.index_msg_timestamp, newest)):
        if value > limit:
            yield finding("ROCKETMQ_CHECKPOINT_AHEAD", str(p), position=pos,
                          message=f"{name} {value} is later than the newest message in the log ({limit}): "
                                  "data the broker had flushed is missing", value=value, newest=limit)
    if cp.confirm_phy_offset > model.max_offset:
        yield finding("ROCKETMQ_CHECKPOINT_AHEAD", str(p), position=32, offset=cp.confirm_phy_offset,
                      message=f"confirmPhyOffset {cp.confirm_phy_offset} is past the log end {model.max_offset}")


def abort_findings(model: StoreModel) -> Iterator[Finding]:
    if model.abort.present and model.layout.abort is not None:
        pid = f" (broker PID {model.abort.pid})" if model.abort.pid is not None else ""
        yield finding("ROCKETMQ_ABORT_PRESENT", str(model.layout.abort), position=0,
                      message=f"abort file present{pid}: the last shutdown was not clean; the broker runs the "
                              "abnormal recovery", pid=model.abort.pid, previous_pid=model.abort.bak_pid)


def epoch_findings(model: StoreModel) -> tuple[list[Finding], list[Path]]:
    main = model.layout.epoch_file
    bak = model.layout.root / "epochFileCheckpoint.bak"
    if main is None:
        return [], []
    read = [main] + ([bak] if bak.is_file() else [])
    out = []
    try:
        text = read_small(main, limit=16 << 20).decode("utf-8", "replace")
        parse_epoch_file(text)
    except (FormatError, UnreadableInput) as err:
        out.append(finding("ROCKETMQ_EPOCH_FILE_INVALID", str(main), position=getattr(err, "position", None),
                           message=f"{err}" + ("; the broker falls back to epochFileCheckpoint.bak"
                                             if bak.is_file() else "")))
    try:
        entries, _ = read_epoch_file(main)
    except (FormatError, UnreadableInput):
        return out, read
    for e in entries:
        if e.start_offset > model.max_offset:
            out.append(finding("ROCKETMQ_EPOCH_FILE_INVALID", str(main), offset=e.start_offset,
                               severity=Severity.WARNING,
                               message=f"epoch {e.epoch} starts at {e.start_offset}, past the log end "
                                       f"{model.max_offset}"))
    return out, read


def config_db_findings(d: Path) -> Iterator[Finding]:
    """A RocksDB config store (`ConfigRocksDBStorage`): it must open, and every value must be the JSON the
    broker's `decode*` parses."""
    try:
        cfg = read_config_db(d)
    except UnreadableInput as e:
        yield finding("ROCKETMQ_CONFIG_INVALID", str(d), severity=Severity.ERROR,
                      message=f"cannot be verified: {e}")
        return
    for p in cfg.problems:
        yield finding("ROCKETMQ_CONFIG_INVALID", str(d), message=p)


def config_findings(path: Path) -> Iterator[Finding]:
    try:
        config_json.loads(read_small(path))
    except (FormatError, UnreadableInput) as e:
        yield finding("ROCKETMQ_CONFIG_INVALID", str(path), position=getattr(e, "position", None), message=str(e))
