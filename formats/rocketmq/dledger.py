"""DLedger commit log (RocketMQ 4.5-4.9 `enableDLegerCommitLog`, openmessaging/dledger 0.3.x): entries, index
records, the Raft checkpoint and term files, the walker and a writer (docs/reference/rocketmq.md §15).

Layout of one peer (`DLedgerConfig#getDefaultPath`: `<storePathRootDir>/dledger-<selfId>`, the root given by
`DLedgerCommitLog`'s constructor): `data/` mapped files named by their 20-digit start position, each a run of
entries and an end-of-file BLANK (magic -1, `MmapFileList#preAppend`); `index/` mapped files of 32-byte records, one
per entry index at `index * 32` (`DLedgerMmapFileStore.INDEX_UNIT_SIZE`); `checkpoint` (`endIndex`,
`committedIndex`: `persistCheckPoint`) and `currterm` (`currTerm`, `voteLeader`: `MemberState`) as Java properties.

An entry (`DLedgerEntryCoder#encode`) is a 48-byte header then the body; the body is one ordinary commit-log
message whose PHYSICALOFFSET field the broker's append hook sets to `pos + BODY_OFFSET` (`DLedgerCommitLog`'s
constructor), which is the offset consume queues point at. dledger 0.3.x never sets `chainCrc` nor `bodyCrc` (no
caller of `setChainCrc`/`setBodyCrc`): they are 0; the body's own message CRC is what a reader can check.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import construct as cs

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import atomic_write, mapped
from replog.formats.findings import Finding, Severity, finding, from_unreadable
from replog.formats.layout import struct_of
from replog.formats.rocketmq.offset_names import offset_files

ENTRY_MAGIC = 1              # DLedgerMmapFileStore.MAGIC_1 (= CURRENT_MAGIC)
BLANK_MAGIC = -1             # MmapFileList.BLANK_MAGIC_CODE
MIN_BLANK_LEN = 8            # MmapFileList.MIN_BLANK_LEN
INDEX_UNIT_SIZE = 32         # DLedgerMmapFileStore.INDEX_UNIT_SIZE
HEADER_SIZE = 44             # DLedgerEntry.HEADER_SIZE: a valid entry's size must exceed it
BODY_OFFSET = 48             # DLedgerEntry.BODY_OFFSET
PHY_POS_POSITION = 28        # MessageDecoder.PHY_POS_POSITION: the message's PHYSICALOFFSET field
DEFAULT_INDEX_FILE_SIZE = INDEX_UNIT_SIZE * 5 * 1024 * 1024   # DLedgerConfig.mappedFileSizeForEntryIndex
CHECKPOINT = "checkpoint"
CURRTERM = "currterm"
DATA, INDEX = "data", "index"
RECOVERY_FILES = 3           # DLedgerMmapFileStore#recover starts at the third-last data file

ENTRY_HEADER = cs.Struct(
    "magic" / cs.Int32sb,
    "size" / cs.Int32sb,         # header + body
    "index" / cs.Int64sb,
    "term" / cs.Int64sb,
    "pos" / cs.Int64sb,          # where the entry starts in the data files
    "channel" / cs.Int32sb,      # reserved
    "chain_crc" / cs.Int32sb,
    "body_crc" / cs.Int32sb,
    "body_size" / cs.Int32sb,
)
INDEX_RECORD = cs.Struct(        # DLedgerEntryCoder#encodeIndex
    "magic" / cs.Int32sb,
    "pos" / cs.Int64sb,
    "size" / cs.Int32sb,
    "index" / cs.Int64sb,
    "term" / cs.Int64sb,
)
_HEADER = struct_of(ENTRY_HEADER)
INDEX_STRUCT = _INDEX = struct_of(INDEX_RECORD)


@dataclass(frozen=True, slots=True)
class Entry:
    """One DLedger entry's header, where it is (`file_start` + `position`) and what it says of itself."""

    magic: int
    size: int
    index: int
    term: int
    pos: int
    channel: int
    chain_crc: int
    body_crc: int
    body_size: int
    file_start: int
    position: int

    @property
    def end(self) -> int:
        return self.pos + self.size

    @property
    def message_offset(self) -> int:
        """The commit-log offset of the message in the body (what consume queues hold)."""
        return self.pos + BODY_OFFSET

    @property
    def identity(self) -> tuple[int, int, int, int, int]:
        """What `DLedgerEntry#equals` compares, but the body bytes: a follower keeps an entry only when equal."""
        return self.index, self.term, self.pos, self.size, self.magic


@dataclass(frozen=True, slots=True)
class IndexRecord:
    magic: int
    pos: int
    size: int
    index: int
    term: int


@dataclass(frozen=True)
class Peer:
    """One peer's DLedger directory: `dledger-<selfId>` and what its small files say."""

    root: Path
    self_id: str
    data_files: list[tuple[int, Path]]
    index_files: list[tuple[int, Path]]
    checkpoint: dict[str, str]          # endIndex, committedIndex (empty when absent)
    currterm: dict[str, str]            # currTerm, voteLeader

    @property
    def committed_index(self) -> int | None:
        return parse_int(self.checkpoint.get("committedIndex"))

    @property
    def current_term(self) -> int | None:
        return parse_int(self.currterm.get("currTerm"))


def parse_int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file as `IOUtils.properties2String` writes it (`key=value` lines); {} when absent."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return {}
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.lstrip().startswith(("#", "!")):
            out[key.strip()] = value.strip()
    return out


def mapped_files(directory: Path) -> list[tuple[int, Path]]:
    """(start, path) of a `MmapFileList` dir: 20-digit names in order (`MmapFileList#doLoad` sorts by name)."""
    return offset_files(directory)


def find_peers(root: Path) -> list[Path]:
    """`dledger-<selfId>` dirs holding a `data/` dir, under the store root or its `commitlog/`."""
    out = []
    for base in (root, root / "commitlog"):
        if base.is_dir():
            out += sorted(p for p in base.iterdir() if p.is_dir() and p.name.startswith("dledger-")
                          and (p / DATA).is_dir())
    return out


def read_peer(directory: Path) -> Peer:
    return Peer(directory, directory.name.removeprefix("dledger-"), mapped_files(directory / DATA),
                mapped_files(directory / INDEX), read_properties(directory / CHECKPOINT),
                read_properties(directory / CURRTERM))


def _entry(buf: bytes | memoryview, position: int, file_start: int) -> Entry:
    magic, size, index, term, pos, channel, chain_crc, body_crc, body_size = _HEADER.unpack_from(buf, position)
    return Entry(magic, size, index, term, pos, channel, chain_crc, body_crc, body_size, file_start, position)


def read_header(buf: bytes | memoryview, position: int, *, file_start: int = 0) -> Entry | None:
    """The entry header at `position`; None where the file ends: a BLANK, a zero size (`recover`'s "to the end")
    or too few bytes left for a header. A header that cannot be an entry raises `FormatError`."""
    if len(buf) - position < _HEADER.size:
        return None
    entry = _entry(buf, position, file_start)
    magic, size = entry.magic, entry.size
    if magic == BLANK_MAGIC or size == 0:
        return None
    where = file_start + position
    if magic != ENTRY_MAGIC:
        raise FormatError("ROCKETMQ_DLEDGER_ENTRY_INVALID", f"entry magic {magic} at {where} (expected 1)",
                          position=position, offset=where)
    if size <= HEADER_SIZE or entry.body_size + BODY_OFFSET != size or size > len(buf) - position:
        raise FormatError("ROCKETMQ_DLEDGER_ENTRY_INVALID", f"entry size {size}, body size {entry.body_size} at "
                          f"{where} disagree ({len(buf) - position} bytes left)", position=position, offset=where)
    if entry.pos != where:
        raise FormatError("ROCKETMQ_DLEDGER_ENTRY_INVALID", f"entry pos field {entry.pos} at {where}",
                          position=position, offset=where)
    return entry


@dataclass
class Walk:
    """What `walk_peer` found beyond the entries: where the broker's recovery stops and the last entry it keeps."""

    recovered_end: int = 0
    last_index: int = -1
    last_term: int = -1
    first_index: int = -1
    entries: int = 0


def walk_peer(peer: Peer, walk: Walk | None = None) -> Iterator[tuple[Entry, memoryview] | Finding]:
    """Every entry of the data files (with the mapped file it is in) and every defect, in order.

    Continuity is `DLedgerMmapFileStore#recover`'s (dledger-all-0.3.1.2): each index the previous + 1, terms never
    decreasing. The recovery scan starts at `scan_start` and stops at its first structural or continuity defect:
    `walk.recovered_end` is that `processOffset`. An entry that differs from its index record is reported but does
    not stop the scan: `recover` truncates the index there and rewrites it from the data (`needWriteIndex`). A
    structural defect ends its file's walk; the next file is walked from its start, so every defect is reported."""
    walk = walk if walk is not None else Walk()
    files = peer.data_files
    stopped = False
    prev: Entry | None = None
    with IndexReader(peer.index_files) as index:
        scan_from = scan_start(files, index)
        walk.recovered_end = scan_from
        for start, path in files:
            try:
                with mapped(path) as buf:
                    for item in _walk_file(buf, start, str(path), start == files[-1][0]):
                        if isinstance(item, Finding):
                            stopped = stopped or start >= scan_from
                            yield item
                            continue
                        defects = _continuity(item, prev, str(path))
                        yield from defects
                        yield from index.check(item, str(path))
                        if start >= scan_from and not stopped:
                            if defects:
                                stopped = True
                            else:
                                walk.recovered_end = item.end
                                walk.last_index, walk.last_term = item.index, item.term
                        if walk.first_index < 0:
                            walk.first_index = item.index
                        walk.entries += 1
                        prev = item
                        yield item, buf
                    if not stopped and start >= scan_from and walk.recovered_end < start:
                        walk.recovered_end = start
            except UnreadableInput as err:
                stopped = True
                yield from_unreadable(err, str(path))


def scan_start(files: list[tuple[int, Path]], index: IndexReader) -> int:
    """Where `DLedgerMmapFileStore#recover` starts its scan: the third-last data file, stepping back a file while
    that file's first entry fails the pre-check (a valid header at the file's start that its index record repeats:
    "Pre check data and index failed"); the first file when none passes (the loop leaves its index at 0)."""
    if not files:
        return 0
    for start, path in reversed(files[:max(1, len(files) - RECOVERY_FILES + 1)]):
        try:
            with mapped(path) as buf:
                entry = read_header(buf, 0, file_start=start)
        except (FormatError, UnreadableInput):
            continue
        if entry is not None and not index.check(entry, str(path)):
            return start
    return files[0][0]


def _walk_file(buf: memoryview, start: int, path: str, is_last: bool) -> Iterator[Entry | Finding]:
    position = 0
    while True:
        try:
            entry = read_header(buf, position, file_start=start)
        except FormatError as err:
            yield finding(err.code, path, position=err.position, offset=err.offset, message=err.message)
            return
        if entry is None:
            if not is_last and not _blank_at(buf, position):
                yield finding("ROCKETMQ_DLEDGER_ENTRY_INVALID", path, position=position, offset=start + position,
                              message=f"data file ends at {start + position} without a BLANK before the last file: "
                                      "the broker's recovery stops here (a zero size ends its scan)")
            return
        yield entry
        position += entry.size


def _blank_at(buf: memoryview, position: int) -> bool:
    return len(buf) - position >= 4 and int.from_bytes(buf[position:position + 4], "big", signed=True) == BLANK_MAGIC


def _continuity(entry: Entry, prev: Entry | None, path: str) -> list[Finding]:
    if prev is None:
        return []
    out = []
    if entry.index != prev.index + 1:
        out.append(finding("ROCKETMQ_DLEDGER_CONTINUITY", path, position=entry.position, offset=entry.pos,
                           message=f"entry index {entry.index} after index {prev.index}", index=entry.index))
    if entry.term < prev.term:
        out.append(finding("ROCKETMQ_DLEDGER_CONTINUITY", path, position=entry.position, offset=entry.pos,
                           message=f"entry {entry.index} has term {entry.term} below the previous {prev.term}",
                           index=entry.index))
    return out


class IndexReader:
    """Index records by entry index, read through read-only maps of the `index/` files (opened as needed)."""

    def __init__(self, files: list[tuple[int, Path]]) -> None:
        self.files = dict(files)
        self.size = _file_size(files)
        self._stack = ExitStack()
        self._maps: dict[int, memoryview | None] = {}

    def __enter__(self) -> IndexReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def record(self, index: int) -> IndexRecord | None:
        at = index * INDEX_UNIT_SIZE
        start = at - at % self.size if self.size else 0
        buf = self._map(start)
        if buf is None or at - start + INDEX_UNIT_SIZE > len(buf):
            return None
        return IndexRecord(*_INDEX.unpack_from(buf, at - start))

    def _map(self, start: int) -> memoryview | None:
        if start not in self._maps:
            path = self.files.get(start)
            self._maps[start] = None
            if path is not None:
                try:
                    self._maps[start] = self._stack.enter_context(mapped(path))
                except UnreadableInput:
                    pass
        return self._maps[start]

    def check(self, entry: Entry, path: str) -> list[Finding]:
        """`recover`'s data-to-index comparison: the record at `index * 32` repeats magic, pos, size, index, term."""
        rec = self.record(entry.index)
        want = IndexRecord(entry.magic, entry.pos, entry.size, entry.index, entry.term)
        if rec == want:
            return []
        said = "no index record" if rec is None else f"index record {rec}"
        return [finding("ROCKETMQ_DLEDGER_INDEX_MISMATCH", path, position=entry.position, offset=entry.pos,
                        message=f"entry {entry.index}: {said}, the data says {want}", index=entry.index,
                        index_position=entry.index * INDEX_UNIT_SIZE)]


def _file_size(files: list[tuple[int, Path]]) -> int:
    sizes = [p.stat().st_size for _, p in files]
    return max(sizes, default=0) or DEFAULT_INDEX_FILE_SIZE


def index_tail(peer: Peer, last_index: int) -> Finding | None:
    """An index record written past the data's last entry (the broker truncates the index to `(last + 1) * 32`
    when it recovers): a sign the data lost entries its index still lists."""
    with IndexReader(peer.index_files) as index:
        rec = index.record(last_index + 1)
    if rec is None or rec.magic == 0:
        return None
    return finding("ROCKETMQ_DLEDGER_INDEX_MISMATCH", str(peer.root / INDEX), offset=rec.pos,
                   position=(last_index + 1) * INDEX_UNIT_SIZE, severity=Severity.WARNING,
                   message=f"index record for entry {rec.index} (term {rec.term}) past the last data entry "
                           f"{last_index}: the broker drops it when it recovers", index=rec.index)


# --- writer -----------------------------------------------------------------------------------

def encode_entry(*, body: bytes, index: int, term: int, pos: int, magic: int = ENTRY_MAGIC, channel: int = 0,
                 chain_crc: int = 0, body_crc: int = 0) -> bytes:
    """`DLedgerEntryCoder#encode` of one entry."""
    return _HEADER.pack(magic, BODY_OFFSET + len(body), index, term, pos, channel, chain_crc, body_crc,
                        len(body)) + body


def encode_index(entry: Entry) -> bytes:
    return encode_index_record(IndexRecord(entry.magic, entry.pos, entry.size, entry.index, entry.term))


class DLedgerWriter:
    """Lays entries into data and index files as `DLedgerMmapFileStore#appendAsLeader` does, with the broker's
    append hook (the message's PHYSICALOFFSET becomes `pos + 48`) and the BLANK that closes a full data file."""

    def __init__(self, file_size: int, index_file_size: int = INDEX_UNIT_SIZE * 1024) -> None:
        self.file_size = file_size
        self.index_file_size = index_file_size
        self.data: dict[int, bytearray] = {}
        self.index: dict[int, bytearray] = {}
        self.entries: list[Entry] = []
        self._pos = 0

    def append(self, message: bytes, term: int) -> Entry:
        """Append one commit-log message (as `commitlog.build_message` encodes it) in `term`."""
        size = BODY_OFFSET + len(message)
        if size + MIN_BLANK_LEN > self.file_size:
            raise ValueError(f"a {size}-byte entry never fits a {self.file_size}-byte file")
        if size + MIN_BLANK_LEN > self.file_size - self._pos % self.file_size:
            self._close_file()
        body = bytearray(message)
        if len(body) >= PHY_POS_POSITION + 8:
            body[PHY_POS_POSITION:PHY_POS_POSITION + 8] = (self._pos + BODY_OFFSET).to_bytes(8, "big", signed=True)
        index = len(self.entries) and self.entries[-1].index + 1
        raw = encode_entry(body=bytes(body), index=index, term=term, pos=self._pos)
        self._put(self.data, self.file_size, self._pos, raw)
        entry = _entry(raw, 0, self._pos - self._pos % self.file_size)
        entry = replace(entry, position=self._pos % self.file_size)
        self._put(self.index, self.index_file_size, index * INDEX_UNIT_SIZE, encode_index(entry))
        self.entries.append(entry)
        self._pos += size
        return entry

    def _close_file(self) -> None:
        left = self.file_size - self._pos % self.file_size
        self._put(self.data, self.file_size, self._pos, encode_blank(left))
        self._pos += left

    @staticmethod
    def _put(files: dict[int, bytearray], size: int, at: int, raw: bytes) -> None:
        start = at - at % size
        buf = files.setdefault(start, bytearray(size))
        buf[at - start:at - start + len(raw)] = raw

    def write_to(self, directory: str | os.PathLike[str], *, committed_index: int | None = None,
                 term: int | None = None) -> Path:
        """Write `data/`, `index/`, `checkpoint` and `currterm` under `directory` (a `dledger-<selfId>` dir)."""
        root = Path(directory)
        for sub, files in ((DATA, self.data), (INDEX, self.index)):
            (root / sub).mkdir(parents=True, exist_ok=True)
            for start, buf in files.items():
                atomic_write(root / sub / f"{start:020d}", bytes(buf))
        last = self.entries[-1].index if self.entries else -1
        committed = last if committed_index is None else committed_index
        write_checkpoint_file(root, last, committed)
        last_term = self.entries[-1].term if self.entries else 0
        atomic_write(root / CURRTERM, f"currTerm={last_term if term is None else term}\n".encode())
        return root


def encode_blank(left: int) -> bytes:
    """The BLANK that closes a data file `left` bytes before its end (`MmapFileList#preAppend`: magic -1, then
    the blank's size)."""
    return BLANK_MAGIC.to_bytes(4, "big", signed=True) + left.to_bytes(4, "big", signed=True)


def encode_index_record(record: IndexRecord) -> bytes:
    """`DLedgerEntryCoder#encodeIndex`, from the same `INDEX_RECORD` layout the reader unpacks."""
    return _INDEX.pack(record.magic, record.pos, record.size, record.index, record.term)


@dataclass(frozen=True, slots=True)
class Placed:
    """One entry to write: `size` bytes of `source` from `position`, landing at data position `pos`."""

    pos: int
    size: int
    index: int
    term: int
    source: Path
    position: int


def write_data_files(directory: Path, entries: list[Placed], file_size: int) -> list[Path]:
    """Data files of `file_size` bytes holding `entries` (in pos order) byte-for-byte at their positions, each
    file but the last closed by a BLANK after its last entry; one file open at a time (memory stays flat)."""
    from replog.formats.fileio import atomic_file
    directory.mkdir(parents=True, exist_ok=True)
    by_file: dict[int, list[Placed]] = {}
    for e in entries:
        start = e.pos - e.pos % file_size
        if e.pos + e.size + MIN_BLANK_LEN > start + file_size:
            raise ValueError(f"entry {e.index} at {e.pos} crosses the data file end at {start + file_size}")
        by_file.setdefault(start, []).append(e)
    written = []
    starts = sorted(by_file)
    for start in starts:
        target = directory / f"{start:020d}"
        with atomic_file(target) as out:
            for e in by_file[start]:
                out.seek(e.pos - start)
                with mapped(e.source) as buf:
                    out.write(buf[e.position:e.position + e.size])
            if start != starts[-1]:
                end = by_file[start][-1].pos + by_file[start][-1].size - start
                out.seek(end)
                out.write(encode_blank(file_size - end))
            out.truncate(file_size)
        written.append(target)
    return written


def write_index_files(directory: Path, entries: list[Placed], file_size: int) -> list[Path]:
    """The `index/` files for `entries` (consecutive indexes): one record at `index * 32` each, zeros elsewhere,
    as `DLedgerMmapFileStore#appendAsLeader` writes them; one file in memory at a time."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    buf: bytearray | None = None
    start = -1
    for e in entries:
        at = e.index * INDEX_UNIT_SIZE
        if buf is None or not start <= at < start + file_size:
            if buf is not None:
                written.append(_flush_index(directory, start, buf))
            start, buf = at - at % file_size, bytearray(file_size)
        buf[at - start:at - start + INDEX_UNIT_SIZE] = encode_index_record(
            IndexRecord(ENTRY_MAGIC, e.pos, e.size, e.index, e.term))
    if buf is not None:
        written.append(_flush_index(directory, start, buf))
    return written


def _flush_index(directory: Path, start: int, buf: bytearray) -> Path:
    target = directory / f"{start:020d}"
    atomic_write(target, bytes(buf))
    return target


def write_checkpoint_file(directory: Path, end_index: int, committed_index: int) -> None:
    """`DLedgerMmapFileStore#persistCheckPoint`'s properties: `endIndex` and `committedIndex`."""
    atomic_write(directory / CHECKPOINT, f"endIndex={end_index}\ncommittedIndex={committed_index}\n".encode())
