"""A DLedger commit log read into the store model's terms (docs/reference/rocketmq.md §15).

Each entry's body is one commit-log message at `pos + 48`, the offset consume queues point at
(`DLedgerCommitLog`'s append hook), so the store model's messages, queues and checks apply unchanged. What the
broker keeps is `DLedgerMmapFileStore#recover`'s: the scan from the third-last data file up to the first defect
(`processOffset`, to which it also truncates the consume queues: `DLedgerCommitLog#recover`); what it serves is
up to the committed entry's end (`DLedgerCommitLog#getMaxOffset` = `committedPos`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.findings import Finding, Severity, finding, from_error
from replog.formats.rocketmq import commitlog as cl
from replog.formats.rocketmq import dledger as dl
from replog.formats.rocketmq.store import StoreLayout
from replog.recovery.progress import Tally

if TYPE_CHECKING:
    from replog.recovery.rocketmq.store_model import MessageRef

_ToRef = Callable[[cl.Message, str], "MessageRef"]   # store_model.to_ref (passed in: the model imports this module)


@dataclass(frozen=True, slots=True)
class EntryRef:
    """One entry as Raft sees it (index, term, where) and the message its body holds (None: undecodable)."""

    index: int
    term: int
    pos: int
    size: int
    message: MessageRef | None

    @property
    def end(self) -> int:
        return self.pos + self.size

    def same_as(self, other: EntryRef) -> bool:
        """`DLedgerEntry#equals` (size, magic, index, term, channel, pos, body), the body by its message's
        signature: what a follower's compare accepts (`DLedgerEntryPusher#handleDoCompare`)."""
        mine = None if self.message is None else self.message.signature
        theirs = None if other.message is None else other.message.signature
        return (self.index, self.term, self.pos, self.size, mine) == (other.index, other.term, other.pos,
                                                                      other.size, theirs)


@dataclass
class DLedgerLog:
    """One peer's Raft log: its entries (those the broker's recovery keeps), its files and its small files' words."""

    peer: str                                    # selfId (`dledger-<selfId>`)
    directory: Path
    entries: list[EntryRef] = field(default_factory=list)
    beyond: list[EntryRef] = field(default_factory=list)   # decodable entries past the recovery's end
    committed_index: int | None = None           # dledger checkpoint `committedIndex`
    checkpoint_end_index: int | None = None      # dledger checkpoint `endIndex`
    current_term: int | None = None              # `currterm`
    vote_leader: str | None = None

    @property
    def last_index(self) -> int:
        return self.entries[-1].index if self.entries else -1

    @property
    def last_term(self) -> int:
        return self.entries[-1].term if self.entries else -1

    @property
    def first_index(self) -> int:
        return self.entries[0].index if self.entries else -1

    def end_of(self, index: int | None) -> int | None:
        """The end of entry `index` (capped at the last: `updateCommittedIndex`), None when unknown."""
        if index is None or index < 0 or not self.entries:
            return None
        at = min(index, self.last_index) - self.first_index
        return self.entries[at].end if at >= 0 else None

    @property
    def committed_offset(self) -> int | None:
        """What the broker serves once recovered: `committedPos`, the committed entry's end."""
        return self.end_of(self.committed_index)

    def to_dict(self) -> dict[str, object]:
        return {"peer": self.peer, "directory": str(self.directory), "entries": len(self.entries),
                "first_index": self.first_index, "last_index": self.last_index, "last_term": self.last_term,
                "committed_index": self.committed_index, "committed_offset": self.committed_offset,
                "checkpoint_end_index": self.checkpoint_end_index, "current_term": self.current_term,
                "vote_leader": self.vote_leader, "dropped_entries": len(self.beyond)}


@dataclass
class DLedgerRead:
    """`read_dledger`'s answer, in the pieces `load_store` builds its model from."""

    log: DLedgerLog
    files: list[tuple[int, Path]]
    file_size: int
    messages: list[MessageRef]
    beyond: list[MessageRef]
    findings: list[Finding]
    max_offset: int
    scan_start: int
    walk_end: int
    files_read: list[Path]


def choose_peer(layout: StoreLayout) -> tuple[Path, list[Finding]]:
    """The `dledger-<selfId>` dir to read: the only one, or the first with data files (a finding names the rest)."""
    dirs = layout.dledger_dirs
    if not dirs:
        raise UnreadableInput(f"{layout.root}: a DLedger directory without data/ files")
    with_data = [d for d in dirs if dl.mapped_files(d / dl.DATA)] or dirs
    chosen = with_data[0]
    if len(dirs) == 1:
        return chosen, []
    return chosen, [finding("UNKNOWN_FILE", str(d), severity=Severity.WARNING,
                            message=f"another DLedger peer directory; replog read {chosen.name}")
                    for d in dirs if d != chosen]


def read_dledger(layout: StoreLayout, tally: Tally | None, to_ref: _ToRef) -> DLedgerRead:
    """Walk one peer's data files: entries, the messages in their bodies and every defect, located."""
    directory, findings = choose_peer(layout)
    peer = dl.read_peer(directory)
    if layout.commitlog_files:
        findings.append(finding("UNKNOWN_FILE", str(layout.commitlog_dir), severity=Severity.WARNING,
                                message="commit-log files beside the DLedger log (a store converted to DLedger): "
                                        "replog reads the DLedger log only"))
    files = peer.data_files
    file_size = cl.infer_file_size(p.stat().st_size for _, p in files) or cl.DEFAULT_FILE_SIZE
    walk = dl.Walk()
    log = DLedgerLog(peer.self_id, directory, committed_index=peer.committed_index,
                     checkpoint_end_index=dl.parse_int(peer.checkpoint.get("endIndex")), current_term=peer.current_term,
                     vote_leader=peer.currterm.get("voteLeader"))
    messages: list[MessageRef] = []
    beyond: list[MessageRef] = []
    pending: list[EntryRef] = []
    for item in dl.walk_peer(peer, walk):
        if isinstance(item, Finding):
            findings.append(item)
            continue
        entry, buf = item
        ref = _message(entry, buf, str(file_of(files, entry.file_start)), findings, to_ref)
        pending.append(EntryRef(entry.index, entry.term, entry.pos, entry.size, ref))
    for e in pending:
        kept = e.end <= walk.recovered_end
        (log.entries if kept else log.beyond).append(e)
        if e.message is not None:
            (messages if kept else beyond).append(e.message)
    tail = dl.index_tail(peer, log.last_index) if peer.index_files else None
    findings += [tail] if tail is not None else []
    findings += _checkpoint_findings(log, directory)
    if tally is not None:
        for _, p in files:
            tally.done(str(p))
    read = [p for _, p in files] + [p for _, p in peer.index_files]
    read += [p for p in (directory / dl.CHECKPOINT, directory / dl.CURRTERM) if p.is_file()]
    walk_end = max([files[0][0] if files else 0] + [e.end for e in pending])
    with dl.IndexReader(peer.index_files) as index:
        scan_start = dl.scan_start(files, index)
    return DLedgerRead(log, files, file_size, messages, beyond, findings, walk.recovered_end, scan_start, walk_end,
                       read)


def file_of(files: list[tuple[int, Path]], start: int) -> Path | str:
    return dict(files).get(start, "")


def _message(entry: dl.Entry, buf: memoryview, path: str, findings: list[Finding], to_ref: _ToRef
             ) -> MessageRef | None:
    """The message in an entry's body, read where it is (`pos + 48`), its CRC checked; None (and a finding)
    when the body is no message."""
    at = entry.position + dl.BODY_OFFSET
    try:
        msg = cl.read_message(buf[:entry.position + entry.size], at, file_start=entry.file_start, check_crc=True)
    except FormatError as err:
        findings.append(from_error(err, path, index=entry.index))
        return None
    if msg.kind != "message" or msg.size != entry.body_size:
        findings.append(finding("ROCKETMQ_DLEDGER_ENTRY_INVALID", path, position=entry.position, offset=entry.pos,
                                message=f"entry {entry.index}: its body is not one message ({msg.kind}, "
                                        f"{msg.size} of {entry.body_size} bytes)", index=entry.index))
        return None
    if not msg.crc_valid:
        findings.append(finding("ROCKETMQ_BODY_CRC_MISMATCH", path, position=at, offset=msg.commitlog_offset,
                                message=f"entry {entry.index}: message body CRC {msg.body_crc} differs from the "
                                        f"body's", index=entry.index))
    if msg.physical_offset != msg.commitlog_offset:
        findings.append(finding("ROCKETMQ_PHYSICAL_OFFSET_MISMATCH", path, position=at, offset=msg.commitlog_offset,
                                message=f"entry {entry.index}: the message says physical offset "
                                        f"{msg.physical_offset}, its entry puts it at {msg.commitlog_offset}",
                                index=entry.index))
    return to_ref(msg, path)


def _checkpoint_findings(log: DLedgerLog, directory: Path) -> list[Finding]:
    """The dledger checkpoint's committed index must lie within the entries the log keeps (`updateCommittedIndex`
    caps it at the end: entries it counted as committed are gone)."""
    c = log.committed_index
    if c is None or c <= log.last_index:
        return []
    return [finding("ROCKETMQ_DLEDGER_CONTINUITY", str(directory / dl.CHECKPOINT), offset=None,
                    severity=Severity.ERROR,
                    message=f"checkpoint committedIndex {c} is past the last entry {log.last_index} the log keeps: "
                            f"{c - log.last_index} committed entries are missing", index=c)]
