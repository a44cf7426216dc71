"""A RocketMQ store as a model: message metadata, recovered log end, queues, checkpoint, epochs.

Bodies stay on disk: each message keeps only where it is and what identifies it
(docs/reference/rocketmq.md §2.2). `max_offset` is what the broker's recovery keeps (§7.2-§7.4):
the scan starts at the segment the broker version's rule selects (`recovery_rule`),
validates records with body CRC on, and stops at the first record that fails (a
BLANK moves to the next file). Everything at or after it is the dirty tail.
"""
from __future__ import annotations

import os
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import mapped
from replog.formats.findings import Finding
from replog.formats.rocketmq import commitlog as cl
from replog.formats.rocketmq.abort import AbortMarker, read_abort
from replog.formats.rocketmq.checkpoint import Checkpoint, read_checkpoint
from replog.formats.rocketmq.commitlog_walk import walk_commitlog
from replog.formats.rocketmq.consumequeue import read_entries
from replog.formats.rocketmq.epoch_file import EpochEntry, read_epoch_file
from replog.formats.rocketmq.index_file import message_keys
from replog.formats.rocketmq.rocksdb_store import CONSUMEQUEUE, RocksCQUnit, consume_queue_db, db_files
from replog.formats.rocketmq.store import StoreLayout, detect_store
from replog.recovery.progress import Tally
from replog.recovery.rocketmq.dledger_log import DLedgerLog, read_dledger
from replog.recovery.rocketmq.lmq import LMQ_QUEUE_ID, lmq_targets
from replog.recovery.rocketmq.recovery_rule import NEWEST, RecoveryRule, start_index

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_" + "X" * 4  # the delay-queue topic; its name really ends in four X
_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
# messageDelayLevel default: level n (1-based) -> delay in ms
DELAY_LEVELS_MS = {i + 1: int(t[:-1]) * _UNITS[t[-1]] for i, t in enumerate(
    "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h".split())}


@dataclass(frozen=True, slots=True)
class MessageRef:
    """Metadata of one commitlog record; `physical_offset` is where it really is."""

    physical_offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    body_crc: int
    crc_valid: bool
    store_timestamp: int
    born_timestamp: int
    sys_flag: int
    tags_code: int
    keys: tuple[str, ...]          # index keys, `topic#key` (UNIQ_KEY, then KEYS words)
    props_crc: int                 # zlib.crc32 of the raw properties: part of the identity
    file: str
    position: int
    offset_field: int              # the PHYSICALOFFSET field as stored
    delay_level: int = 0           # DELAY property (schedule topic)
    prepared_offset: int = 0       # PREPARED TRANSACTION OFFSET field: a committed message's half message
    lmq: tuple[tuple[str, int], ...] = ()     # LMQ queues (queue id 0) and queue offsets it is dispatched to
    extra: tuple[tuple[str, str], ...] = ()   # what the system-topic rules read (`system_fields`)

    @property
    def end(self) -> int:
        return self.physical_offset + self.size

    @property
    def transaction(self) -> int:
        return self.sys_flag & cl.TRANSACTION_MASK

    @property
    def dispatched(self) -> bool:
        """PREPARED and ROLLBACK messages get no consume-queue entry (§2.4)."""
        return self.transaction not in (cl.TRANSACTION_PREPARED, cl.TRANSACTION_ROLLBACK)

    @property
    def indexed(self) -> bool:
        return self.transaction != cl.TRANSACTION_ROLLBACK

    @property
    def signature(self) -> tuple[object, ...]:
        """What two replicas must agree on for a record to be the same record."""
        return (self.size, self.body_crc, self.topic, self.queue_id, self.queue_offset,
                self.store_timestamp, self.born_timestamp, self.sys_flag, self.props_crc)

    @property
    def cq_tags_code(self) -> int:
        """The consume-queue tag slot: delivery time for the schedule topic, else the tag hash (§2.9)."""
        if self.topic == SCHEDULE_TOPIC and self.delay_level > 0:
            return self.store_timestamp + DELAY_LEVELS_MS.get(self.delay_level, 1000)
        return self.tags_code

    def user_keys(self) -> list[str]:
        return [k.split("#", 1)[1] for k in self.keys]

    @property
    def batch_size(self) -> int:
        """Queue offsets the record takes: INNER_NUM of an inner batch (BatchCQ topics), else 1."""
        n = self.field("INNER_NUM")
        return int(n) if n is not None and n.isdigit() and len(n) < 6 else 1

    def field(self, name: str) -> str | None:
        """A property (or "body") kept in `extra`, None when not kept."""
        return next((v for k, v in self.extra if k == name), None)


@dataclass
class QueueState:
    """One `consumequeue/<topic>/<queueId>` as found on disk."""

    topic: str
    queue_id: int
    files: list[Path]
    file_size: int
    min_offset: int | None = None      # first real (non-pre-blank) queue offset
    max_offset: int = 0                # next queue offset (logical end / 20)
    max_physic_offset: int = 0         # offset + size of the last valid entry
    kv_max_offset: int | None = None   # RocksDB stores: the offset table's "max" entry + 1 (what the broker serves)
    kv_min_offset: int | None = None   # RocksDB stores: the offset table's "min" entry

    @property
    def served_min_offset(self) -> int | None:
        """The min offset the broker serves: a RocksDB store's offset-table "min" entry when there is one
        (`RocksDBConsumeQueueOffsetTable#getMinCqOffset`, tag rocketmq-all-5.3.3: found by a binary search over the
        keys, so a BatchCQ topic's sparse keys can put it inside the queue, `rocksdb_batch`), else the first unit."""
        return self.kv_min_offset if self.kv_min_offset is not None else self.min_offset


@dataclass
class StoreModel:
    name: str
    path: str
    layout: StoreLayout
    file_size: int
    files: list[tuple[int, Path]]                 # (start offset, path), 20-digit names only
    messages: list[MessageRef]                    # records below max_offset, in log order
    beyond: list[MessageRef]                      # decodable records at or past max_offset (stale)
    walk_findings: list[Finding]
    max_offset: int
    scan_start: int                               # first byte the recovery scan validated
    walk_end: int                                 # end of the last decodable record anywhere
    checkpoint: Checkpoint | None
    epochs: list[EpochEntry]
    abort: AbortMarker
    queues: dict[tuple[str, int], QueueState] = field(default_factory=dict)
    files_read: list[Path] = field(default_factory=list)
    rule: RecoveryRule = NEWEST                   # the broker version's rule for the scan's start file
    abnormal: bool = False                        # the scan was the abnormal recovery's
    dledger: DLedgerLog | None = None             # a DLedger commit log: its Raft entries (dledger_log)

    @property
    def min_offset(self) -> int:
        return self.files[0][0] if self.files else 0

    def recovery(self) -> dict[str, object]:
        """Which recovery the model is: the broker version's rule, normal or abnormal, where the scan began.
        A DLedger log has one recovery whatever the abort file says (`DLedgerCommitLog#recover`)."""
        if self.dledger is not None:
            return {"rule": "dledger", "broker_version": self.rule.to_dict().get("broker_version"),
                    "mode": "dledger", "scan_start": self.scan_start}
        return self.rule.to_dict() | {"mode": "abnormal" if self.abnormal else "normal", "scan_start": self.scan_start}

    @property
    def confirm_offset(self) -> int | None:
        """checkpoint byte 32 (5.1.1+); None when zero ("unknown") or absent."""
        if self.checkpoint is None or self.checkpoint.confirm_phy_offset <= 0:
            return None
        return self.checkpoint.confirm_phy_offset

    @property
    def last_epoch(self) -> int | None:
        return self.epochs[-1].epoch if self.epochs else None

    def by_offset(self) -> dict[int, MessageRef]:
        return {m.physical_offset: m for m in self.messages}

    def file_at(self, offset: int) -> tuple[int, Path] | None:
        for start, path in self.files:
            if start <= offset < start + self.file_size:
                return start, path
        return None

    def queue_heads(self) -> dict[tuple[str, int], list[MessageRef]]:
        """Dispatched messages per (topic, queue id), in log order."""
        out: dict[tuple[str, int], list[MessageRef]] = defaultdict(list)
        for m in self.messages:
            if m.dispatched:
                out[(m.topic, m.queue_id)].append(m)
        return out

    def lmq_heads(self) -> dict[tuple[str, int], list[tuple[int, MessageRef]]]:
        """(queue offset, message) per LMQ queue the dispatched messages' multi-dispatch fills, in log order."""
        out: dict[tuple[str, int], list[tuple[int, MessageRef]]] = defaultdict(list)
        for m in self.messages:
            if m.dispatched:
                for name, offset in m.lmq:
                    out[(name, LMQ_QUEUE_ID)].append((offset, m))
        return out


def to_ref(msg: cl.Message, path: str) -> MessageRef:
    keys = tuple(message_keys(msg.topic, msg.properties)) if msg.kind == "message" else ()
    return MessageRef(msg.commitlog_offset, msg.size, msg.topic, msg.queue_id, msg.queue_offset, msg.body_crc,
                      msg.crc_valid, msg.store_timestamp, msg.born_timestamp, msg.sys_flag, msg.tags_code, keys,
                      zlib.crc32(msg.properties_raw), path, msg.position, msg.physical_offset,
                      _delay_level(msg.properties.get("DELAY")), msg.prepared_transaction_offset,
                      lmq_targets(msg.topic, msg.properties), system_fields(msg))


# Properties each system topic's rules read (transactions: `TransactionalMessageBridge#parseHalfMessageInner`;
# the bodies of op and revive messages: `TransactionalMessageServiceImpl#fillOpRemoveMap`, `PopReviveService`).
HALF_TOPIC, OP_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"
REVIVE_PREFIX = "rmq_sys_REVIVE_LOG_"        # PopAckConstants.REVIVE_TOPIC + cluster name
TIMER_TOPIC = "rmq_sys_wheel_timer"          # TimerMessageStore.TIMER_TOPIC
_KEPT = {HALF_TOPIC: ("REAL_TOPIC", "REAL_QID", "UNIQ_KEY", "__transactionId__"), OP_TOPIC: ("TAGS",)}
INNER_BATCH_FLAG = 0x80                      # MessageSysFlag.INNER_BATCH_FLAG: one record, INNER_NUM messages
_BODY_LIMIT = 1 << 16                        # op bodies stop at transactionOpMsgMaxSize (4096); revive JSON is small


def system_fields(msg: cl.Message) -> tuple[tuple[str, str], ...]:
    """What the transaction and POP rules need of a half, op or revive message (nothing for other topics), and
    the UNIQ_KEY of a committed transactional message."""
    topic = msg.topic
    if topic.startswith(REVIVE_PREFIX):
        names: tuple[str, ...] = ("TAGS",)
    elif held_revive(msg):
        names = ("TAGS", "REAL_TOPIC", "REAL_QID")
    elif msg.sys_flag & INNER_BATCH_FLAG:
        names = ("INNER_NUM", "INNER_BASE")
    else:
        names = _KEPT.get(topic, ("UNIQ_KEY",) if msg.sys_flag & cl.TRANSACTION_MASK else ())
    if not names:
        return ()
    out = tuple((k, msg.properties[k]) for k in names if k in msg.properties)
    if topic == OP_TOPIC or topic.startswith(REVIVE_PREFIX) or held_revive(msg):
        out += (("body", msg.body[:_BODY_LIMIT].decode("utf-8", "replace")),)
    return out


def held_revive(msg: cl.Message) -> bool:
    """A POP checkpoint or ack the timer holds: with `timerWheelEnable` the broker writes revive messages with a
    deliver time (`PopMessageProcessor#buildCkMsg`, `AckMessageProcessor#appendAck`, `PopBufferMergeService`:
    `setDeliverTimeMs`), so `HookUtils#handleScheduleMessage` puts them in the timer topic, the revive topic kept in
    REAL_TOPIC, until that time (seen in a 5.3.3 store stopped within the invisible time: tests/brokers/
    rocketmq_pop_bcq.py)."""
    return msg.topic == TIMER_TOPIC and msg.properties.get("REAL_TOPIC", "").startswith(REVIVE_PREFIX)


def _delay_level(text: str | None) -> int:
    return int(text) if text and text.isdigit() and len(text) < 10 else 0


def recovery_scan(files: list[tuple[int, Path]], start_index: int) -> int:
    """`processOffset` of `CommitLog#recoverAbnormally` from `files[start_index]` (§7.3)."""
    if not files:
        return 0
    for i in range(start_index, len(files)):
        start, path = files[i]
        pos = 0
        try:
            with mapped(path) as buf:
                while True:
                    try:
                        msg = cl.read_message(buf, pos, file_start=start, check_crc=True)
                    except FormatError:
                        return start + pos
                    if msg.kind == "blank":
                        break
                    if not msg.crc_valid:
                        return start + pos
                    pos += msg.size
        except UnreadableInput:
            return start + pos
        if i == len(files) - 1:
            return start + pos   # BLANK in the last file: the log ends at the BLANK
    return files[-1][0]


def _read_queues(layout: StoreLayout, files_read: list[Path]) -> dict[tuple[str, int], QueueState]:
    out = {}
    for (topic, qid), qfiles in layout.consume_queues.items():
        sizes = [p.stat().st_size for p in qfiles]
        state = QueueState(topic, qid, qfiles, cl.infer_file_size(sizes) or 0)
        for p in qfiles:
            files_read.append(p)
            try:
                with mapped(p) as buf:
                    entries = read_entries(buf, file_start=int(p.name))
            except (UnreadableInput, FormatError):
                continue
            for e in entries:
                if not e.is_valid:
                    break
                if e.is_pre_blank:
                    continue
                if state.min_offset is None:
                    state.min_offset = e.queue_offset
                state.max_offset = e.queue_offset + 1
                state.max_physic_offset = max(state.max_physic_offset, e.commitlog_offset + e.size)
        out[(topic, qid)] = state
    return out


def _read_rocksdb_queues(layout: StoreLayout, files_read: list[Path]) -> dict[tuple[str, int], QueueState]:
    """The queues of a `storeType=defaultRocksDB` store from its `consumequeue/` database: units in key order
    (queue offsets ascending per queue), then the offset table (`RocksDBConsumeQueueOffsetTable`: the "max" entry
    is the last unit's queue offset, so the queue's next offset is one more; `getMaxCqOffset`). A database the
    binding cannot open makes the whole store unverifiable: `UnreadableInput`, never "no entry yet". No database
    at all (a `recover`/`repair` output, `rocksdb_repair`) is no queue: the broker starts with an empty one."""
    d = layout.root / CONSUMEQUEUE
    files_read += db_files(d)
    out: dict[tuple[str, int], QueueState] = {}
    if not d.exists():
        return out
    try:
        with consume_queue_db(d) as cq:
            for u in cq.units():
                if not isinstance(u, RocksCQUnit) or u.commitlog_offset < 0 or u.size <= 0:
                    continue
                state = out.get((u.topic, u.queue_id)) or out.setdefault((u.topic, u.queue_id),
                                                                           QueueState(u.topic, u.queue_id, [], 0))
                if state.min_offset is None:
                    state.min_offset = u.queue_offset
                state.max_offset = u.queue_offset + 1
                state.max_physic_offset = max(state.max_physic_offset, u.commitlog_offset + u.size)
            entries, _, _ = cq.offsets()
    except UnreadableInput as err:
        raise UnreadableInput(f"{layout.root}: consume queues in RocksDB (storeType=defaultRocksDB) cannot be "
                              f"verified: {err}") from None
    for o in entries:
        if o.kind == "max":
            out.setdefault((o.topic, o.queue_id), QueueState(o.topic, o.queue_id, [], 0)).kv_max_offset = \
                o.queue_offset + 1
        elif (o.topic, o.queue_id) in out:
            out[(o.topic, o.queue_id)].kv_min_offset = o.queue_offset
    return out


def load_store(path: str | os.PathLike[str], name: str | None = None, *, abnormal: bool | None = None,
               tally: Tally | None = None, rule: RecoveryRule = NEWEST) -> StoreModel:
    """Model of the store under `path`; raises `UnreadableInput` when it is not a RocketMQ store.

    `abnormal` None follows the abort file, as the broker does; recovery always
    asks for the abnormal scan. `rule` (the broker version's) picks the file the
    CRC-checked scan starts at (`recovery_rule`).
    """
    layout = detect_store(path)
    if layout is None:
        raise UnreadableInput(f"{path}: not a RocketMQ store (no commitlog/ segments or checkpoint)")
    if layout.dledger:
        return _load_dledger(path, name, layout, tally, rule)
    files_read: list[Path] = []
    listed = [(s, p) for s, p in cl.commitlog_files(layout.commitlog_dir) if s >= 0] \
        if layout.commitlog_dir.is_dir() else []
    deleted = cl.deleted_at_load(listed, {p: p.stat().st_size for _, p in listed[-1:]})
    files = listed[:-1] if deleted is not None else listed   # the walk below reports the deleted one
    file_size = cl.infer_file_size(p.stat().st_size for _, p in files) or cl.DEFAULT_FILE_SIZE
    cp = _checkpoint(layout, files_read)
    abort = read_abort(layout.root)
    files_read += [p for p in (layout.abort, layout.abort_bak) if p is not None]
    if abnormal is None:
        abnormal = abort.present
    queues = _read_rocksdb_queues(layout, files_read) if layout.rocksdb else _read_queues(layout, files_read)
    start_idx = start_index(files, cp, abnormal, rule, max((q.max_physic_offset for q in queues.values()), default=0))
    max_offset = recovery_scan(files, start_idx)
    messages: list[MessageRef] = []
    beyond: list[MessageRef] = []
    findings: list[Finding] = []
    walk_end = files[0][0] if files else 0
    path_of = {s: str(p) for s, p in files}
    walking: int | None = None
    for item in walk_commitlog([p for _, p in listed], file_size=file_size):
        if isinstance(item, Finding):
            findings.append(item)
            continue
        if tally is not None and item.file_start != walking:
            if walking is not None:
                tally.done(path_of.get(walking, ""))
            walking = item.file_start
        ref = to_ref(item, path_of.get(item.file_start, ""))
        walk_end = max(walk_end, ref.end)
        (messages if ref.end <= max_offset else beyond).append(ref)
    files_read += [p for _, p in listed]
    if tally is not None:  # every file walked, the last one and those that held nothing valid too
        for _, done in listed:
            tally.done(done)
    epochs: list[EpochEntry] = []
    if layout.epoch_file is not None:
        files_read.append(layout.epoch_file)
        try:
            epochs, _ = read_epoch_file(layout.epoch_file)
        except (FormatError, UnreadableInput):
            epochs = []
    return StoreModel(name or Path(path).resolve().name, str(path), layout, file_size, files, messages, beyond,
                      findings, max_offset, files[start_idx][0] if files else 0, walk_end, cp, epochs, abort,
                      queues, files_read, rule, abnormal)



def _checkpoint(layout: StoreLayout, files_read: list[Path]) -> Checkpoint | None:
    if layout.checkpoint is None:
        return None
    files_read.append(layout.checkpoint)
    try:
        return read_checkpoint(layout.checkpoint)
    except (FormatError, UnreadableInput):
        return None


def _load_dledger(path: str | os.PathLike[str], name: str | None, layout: StoreLayout, tally: Tally | None,
                  rule: RecoveryRule) -> StoreModel:
    """The model of a DLedger store: the messages are the entries' bodies (`dledger_log`); queues, checkpoint and
    abort are the store's own, as for any store."""
    files_read: list[Path] = []
    cp = _checkpoint(layout, files_read)
    abort = read_abort(layout.root)
    files_read += [p for p in (layout.abort, layout.abort_bak) if p is not None]
    queues = _read_queues(layout, files_read)
    read = read_dledger(layout, tally, to_ref)
    return StoreModel(name or Path(path).resolve().name, str(path), layout, read.file_size, read.files,
                      read.messages, read.beyond, read.findings, read.max_offset, read.scan_start, read.walk_end,
                      cp, [], abort, queues, read.files_read + files_read, rule, abort.present, read.log)
