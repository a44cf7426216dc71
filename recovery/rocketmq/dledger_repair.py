"""`repair --protocol dledger`: every peer of a DLedger group written as a store the group starts from
(docs/reference/rocketmq.md §15.7).

What a peer does not survive on its own (dledger 0.3.1.2, `DLedgerMmapFileStore#recover`): the recovery never
checks a body's CRC, so a flipped byte in an entry is kept and served; an index record that disagrees with its
entry (zeroed, short or missing `index/` file) ends the scan there and the data after it is truncated; a
checkpoint `committedIndex` past the log is capped (`updateCommittedIndex`). So each peer is written as:
- the replay's leader: its entries cut before the first defective one (an undecodable body, a body whose CRC or
  PHYSICALOFFSET is wrong, a break in index, term or position);
- a follower: its own entries up to the replay's common index (`DLedgerEntryPusher#doCompare`) and the leader's
  cut end, cut at its own first defect, then the leader's entries after that, byte-for-byte (a follower's entry is
  the leader's bytes: `DLedgerEntry` carries index, term and pos, the body's PHYSICALOFFSET is pos + 48), so every
  peer holds the leader's log and the group elects among equal logs;
- the data files of the input's size, the `index/` files rebuilt from the entries (`dledger.write_index_files`, the
  reader's layout), the checkpoint's committedIndex capped at the last entry written, `currterm` and `config/`
  copied, consume queues and message index rebuilt for the committed messages (what `DLedgerCommitLog` has
  dispatched: reput stops at `committedPos`; the rest is dispatched once the group commits it).
Each written store is read back: its entries must equal those planned and `doctor` must find no error.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from replog.formats.fileio import atomic_write, read_small
from replog.formats.findings import Severity
from replog.formats.rocketmq import dledger as dl
from replog.formats.rocketmq.checkpoint import Checkpoint, write_checkpoint
from replog.recovery.outputs import mark_complete
from replog.recovery.rocketmq.dledger_log import DLedgerLog, EntryRef
from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.ha_result import HAReplayResult, ReplicaOutcome
from replog.recovery.rocketmq.recover import (
    copy_metadata,
    cq_file_size,
    index_geometry,
    rebuild_consume_queues,
    rebuild_index,
)
from replog.recovery.rocketmq.repair import RepairedStore
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel, load_store


@dataclass
class RepairedPeer(RepairedStore):
    """A repaired DLedger peer: `RepairedStore`'s fields plus the Raft log written (additive JSON keys)."""

    peer: str = ""
    first_index: int = -1
    last_index: int = -1
    committed_index: int = -1
    own_entries: int = 0                       # entries written from the peer's own files
    fetched_entries: int = 0                   # entries written from the leader's files
    cut: str | None = None                     # why the peer's own entries stop early (a defect), if they do


@dataclass
class _Plan:
    """What one peer is written from: (entry, model whose files hold it) in index order, and why it was cut."""

    entries: list[tuple[EntryRef, StoreModel]] = field(default_factory=list)
    own: int = 0
    cut: str | None = None


def defect(entry: EntryRef, prev: EntryRef | None, file_size: int) -> str | None:
    """Why `entry` cannot be kept after `prev`: what `DLedgerMmapFileStore#recover` does not check (the body's
    message and CRC: `DLedgerCommitLog` serves it as stored) or a break in the chain it does check."""
    m = entry.message
    if m is None:
        return "its body is no readable message"
    if not m.crc_valid:
        return "its message body CRC is wrong"
    if m.offset_field != m.physical_offset:
        return f"its message says PHYSICALOFFSET {m.offset_field}, not pos + 48 = {m.physical_offset}"
    if prev is None:
        return None
    if entry.index != prev.index + 1 or entry.term < prev.term:
        return f"index {entry.index} term {entry.term} after index {prev.index} term {prev.term}"
    next_file = prev.end - prev.end % file_size + file_size
    if entry.pos != prev.end and not (entry.pos == next_file and prev.end + dl.MIN_BLANK_LEN <= next_file):
        return f"it starts at {entry.pos}, not where entry {prev.index} ends ({prev.end})"
    return None


def cut_at_defect(entries: list[EntryRef], file_size: int) -> tuple[list[EntryRef], str | None]:
    """The entries before the first defective one, and the reason of the cut (None: all kept)."""
    prev = None
    for i, e in enumerate(entries):
        why = defect(e, prev, file_size)
        if why is not None:
            return entries[:i], f"entry {e.index} at {e.pos}: {why}"
        prev = e
    return entries, None


def _log(model: StoreModel) -> DLedgerLog:
    assert model.dledger is not None, f"{model.name} is not a DLedger store"
    return model.dledger


def plan_peer(r: ReplicaOutcome, leader: StoreModel, leader_entries: list[EntryRef]) -> _Plan:
    """A peer's entries: its own below the replay's truncation and the leader's end, cut at its own first defect,
    then the leader's after them."""
    if r.model is leader:
        return _Plan([(e, leader) for e in leader_entries], len(leader_entries), None)
    top = leader_entries[-1].index if leader_entries else -1
    own = [e for e in _log(r.model).entries if e.index <= top
           and (r.truncated_to is None or e.end <= r.truncated_to)]
    own, cut = cut_at_defect(own, r.model.file_size)
    last = own[-1].index if own else -1
    fetched = [e for e in leader_entries if e.index > last]
    if own and fetched and fetched[0].index != last + 1:
        own, fetched = [], leader_entries          # the leader's log starts past the peer's: take the leader's
    return _Plan([(e, r.model) for e in own] + [(e, leader) for e in fetched], len(own), cut)


def _placed(entries: list[tuple[EntryRef, StoreModel]]) -> list[dl.Placed]:
    out = []
    for e, model in entries:
        where = model.file_at(e.pos)
        assert where is not None, f"entry {e.index} at {e.pos} is in no data file of {model.name}"
        out.append(dl.Placed(e.pos, e.size, e.index, e.term, where[1], e.pos - where[0]))
    return out


def _index_file_size(log: DLedgerLog) -> int:
    files = dl.mapped_files(log.directory / dl.INDEX)
    return max((p.stat().st_size for _, p in files), default=0) or dl.DEFAULT_INDEX_FILE_SIZE


def write_peer(dest: Path, r: ReplicaOutcome, plan: _Plan, file_size: int) -> int:
    """Write one peer's store under `dest`; returns the committed index written."""
    model, log = r.model, _log(r.model)
    peer_dir = dest / log.directory.relative_to(model.layout.root)
    placed = _placed(plan.entries)
    dl.write_data_files(peer_dir / dl.DATA, placed, file_size)
    if placed:
        dl.write_index_files(peer_dir / dl.INDEX, placed, _index_file_size(log))
    else:
        (peer_dir / dl.INDEX).mkdir(parents=True, exist_ok=True)
    last = placed[-1].index if placed else -1
    committed = min(log.committed_index if log.committed_index is not None else -1, last)
    dl.write_checkpoint_file(peer_dir, last, committed)
    if (log.directory / dl.CURRTERM).is_file():
        atomic_write(peer_dir / dl.CURRTERM, read_small(log.directory / dl.CURRTERM))
    messages = [e.message for e, _ in plan.entries if e.index <= committed and e.message is not None]
    _write_store_files(dest, model, messages)
    return committed


def _write_store_files(dest: Path, model: StoreModel, messages: list[MessageRef]) -> None:
    """Consume queues and message index for the committed messages, the store checkpoint, config/ copied."""
    multi = any(m.lmq for m in messages)
    rebuild_consume_queues(dest, messages, cq_file_size(model), multi)
    geometry = index_geometry(model)
    _, index_end = rebuild_index(dest, messages, *geometry) if geometry else (0, 0)
    newest = max((m.store_timestamp for m in messages), default=0)
    newest_cq = max((m.store_timestamp for m in messages if m.dispatched), default=0)
    write_checkpoint(dest / "checkpoint", Checkpoint(newest, newest_cq, index_end, 0, 0))
    copy_metadata(model, dest)


def verify_peer(dest: Path, r: ReplicaOutcome, plan: _Plan, committed: int,
                leader_entries: list[EntryRef]) -> RepairedPeer:
    """Read the written store back: its entries must be the planned ones, doctor must find no error."""
    written = load_store(dest, r.model.name, abnormal=False)
    findings, _ = diagnose_store(dest)
    problems = [f"{f.code} at {f.path}:{f.position}: {f.message}" for f in findings if f.severity is Severity.ERROR]
    log = written.dledger
    got = log.entries if log is not None else []
    want = [e for e, _ in plan.entries]
    if len(got) != len(want) or not all(a.same_as(b) for a, b in zip(got, want, strict=False)):
        problems.append(f"the written log reads back {len(got)} entries, {len(want)} were planned, or they differ")
    identical = len(got) == len(leader_entries) and all(a.same_as(b) for a, b in zip(got, leader_entries,
                                                                                        strict=False))
    counts = {s.value: sum(1 for f in findings if f.severity is s) for s in Severity}
    return RepairedPeer(r.model.name, str(dest), r.role, written.min_offset, written.max_offset, identical, problems,
                        counts, peer=_log(r.model).peer, first_index=want[0].index if want else -1,
                        last_index=want[-1].index if want else -1, committed_index=committed, own_entries=plan.own,
                        fetched_entries=len(want) - plan.own, cut=plan.cut)


def repair_group(result: HAReplayResult, root: Path) -> list[RepairedPeer]:
    """`repair_stores` for a DLedger replay, in its claimed output `root`: every peer written and verified."""
    leader = next(r.model for r in result.replicas if r.role == "leader")
    leader_entries, leader_cut = cut_at_defect(_log(leader).entries, leader.file_size)
    report = []
    for r in result.replicas:
        plan = plan_peer(r, leader, leader_entries)
        if r.model is leader:
            plan.cut = leader_cut
        dest = root / r.model.name
        dest.mkdir(parents=True, exist_ok=True)
        committed = write_peer(dest, r, plan, leader.file_size)
        report.append(verify_peer(dest, r, plan, committed, leader_entries))
    mark_complete(root, f"replog repair: {len(report)} DLedger peers")
    return report
