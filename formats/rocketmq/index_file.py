"""Hash index files (`index/yyyyMMddHHmmssSSS`): header, slot table, entries.

`INDEX_HEADER` and `INDEX_ENTRY` (construct) are the source of truth
(docs/reference/rocketmq.md §4, `IndexHeader`, `IndexFile`); the struct twins are the fast path.
The file does not record its own geometry: the slot count is a broker setting
(`maxHashSlotNum`) and the entry capacity follows from the file size. Entry
numbers start at 1; slot and `prev` values are entry numbers (0 = none).
"""
from __future__ import annotations

import dataclasses
import struct
import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import construct as cs

from replog.formats.errors import FormatError
from replog.formats.findings import Finding, finding
from replog.formats.layout import struct_of
from replog.formats.rocketmq.commitlog import java_string_hash

INDEX_HEADER = cs.Struct(
    "begin_timestamp" / cs.Int64sb,
    "end_timestamp" / cs.Int64sb,
    "begin_phy_offset" / cs.Int64sb,
    "end_phy_offset" / cs.Int64sb,
    "hash_slot_count" / cs.Int32sb,   # slots in use
    "index_count" / cs.Int32sb,       # next entry number (starts at 1)
)
INDEX_ENTRY = cs.Struct(
    "key_hash" / cs.Int32sb,
    "phy_offset" / cs.Int64sb,
    "time_diff" / cs.Int32sb,         # seconds since begin_timestamp
    "prev_index" / cs.Int32sb,        # previous entry number in the slot's chain
)
HEADER = struct_of(INDEX_HEADER)
ENTRY = struct_of(INDEX_ENTRY)
HEADER_SIZE = HEADER.size   # 40
SLOT_SIZE = 4
ENTRY_SIZE = ENTRY.size     # 20
DEFAULT_HASH_SLOT_NUM = 5_000_000
DEFAULT_INDEX_NUM = 20_000_000
_SLOT = struct.Struct(">i")
_INT_MAX = 2**31 - 1
_CODE = "ROCKETMQ_INDEX_INVALID"


def index_key_hash(key: str) -> int:
    """`IndexFile#indexKeyHashMethod`: abs(String.hashCode), Integer.MIN_VALUE -> 0."""
    h = abs(java_string_hash(key))
    return 0 if h > _INT_MAX else h


def build_key(topic: str, key: str) -> str:
    """`IndexService#buildKey`: `topic#key`."""
    return f"{topic}#{key}"


def message_keys(topic: str, properties: dict[str, str]) -> list[str]:
    """Index keys of a message in `IndexService#buildIndex` order: UNIQ_KEY, then KEYS words."""
    keys = []
    if "UNIQ_KEY" in properties:
        keys.append(build_key(topic, properties["UNIQ_KEY"]))
    keys += [build_key(topic, k) for k in properties.get("KEYS", "").split(" ") if k]
    return keys


def file_size_for(hash_slot_num: int, index_num: int) -> int:
    return HEADER_SIZE + hash_slot_num * SLOT_SIZE + index_num * ENTRY_SIZE


@dataclass(frozen=True, slots=True)
class IndexHeader:
    begin_timestamp: int = 0
    end_timestamp: int = 0
    begin_phy_offset: int = 0
    end_phy_offset: int = 0
    hash_slot_count: int = 0
    index_count: int = 1


@dataclass(frozen=True, slots=True)
class IndexEntry:
    number: int
    key_hash: int
    phy_offset: int
    time_diff: int
    prev_index: int


class IndexFile:
    """Read-only view of one index file held in `buf` (bytes or a read-only map).

    `hash_slot_num` must be the broker's `maxHashSlotNum`; the entry capacity is
    derived from the size. Construction raises `FormatError` when they disagree.
    """

    def __init__(self, buf: bytes | memoryview, *, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM) -> None:
        if hash_slot_num <= 0:
            raise ValueError("hash_slot_num must be positive")
        rest = len(buf) - HEADER_SIZE - hash_slot_num * SLOT_SIZE
        if len(buf) < HEADER_SIZE or rest < 0 or rest % ENTRY_SIZE:
            raise FormatError(_CODE, f"{len(buf)} bytes is not 40 + {hash_slot_num} slots * 4 + n * 20",
                              position=0)
        self.buf = buf
        self.hash_slot_num = hash_slot_num
        self.index_num = rest // ENTRY_SIZE
        self.header = IndexHeader(*HEADER.unpack_from(buf, 0))
        self._entries_at = HEADER_SIZE + hash_slot_num * SLOT_SIZE

    @property
    def used_count(self) -> int:
        """Entry numbers 1 .. used_count-1 are written (index_count clamped to the file)."""
        return max(1, min(self.header.index_count, self.index_num))

    def slot(self, i: int) -> int:
        if not 0 <= i < self.hash_slot_num:
            raise IndexError(i)
        return _SLOT.unpack_from(self.buf, HEADER_SIZE + i * SLOT_SIZE)[0]

    def slot_table(self) -> array:
        """All slot values as a native int array (one copy, C speed)."""
        table = array("i", bytes(self.buf[HEADER_SIZE:self._entries_at]))
        if sys.byteorder == "little":
            table.byteswap()
        return table

    def entry(self, number: int) -> IndexEntry:
        if not 0 <= number < self.index_num:
            raise FormatError(_CODE, f"entry {number} outside 0..{self.index_num - 1}")
        pos = self._entries_at + number * ENTRY_SIZE
        return IndexEntry(number, *ENTRY.unpack_from(self.buf, pos))

    def entries(self) -> Iterator[IndexEntry]:
        """Written entries in put order (1 .. used_count-1)."""
        for n in range(1, self.used_count):
            yield self.entry(n)

    def chain(self, key_hash: int) -> Iterator[IndexEntry]:
        """Entries of the slot of `key_hash`, newest first, as `selectPhyOffset` walks them.

        Bounded by the index count, so a corrupt (cyclic) chain cannot hang.
        """
        n = self.slot(key_hash % self.hash_slot_num)
        count = self.header.index_count
        for _ in range(self.used_count - 1):
            if n <= 0 or n > count or n >= self.index_num:
                return
            e = self.entry(n)
            yield e
            if e.prev_index == n:
                return
            n = e.prev_index

    def lookup(self, key: str, begin: int = 0, end: int = 2**63 - 1) -> list[int]:
        """Physical offsets whose entry hash matches `key` with store time in [begin, end].

        Like the broker this never compares the key itself: read the records to confirm.
        """
        h = index_key_hash(key)
        out = []
        for e in self.chain(h):
            if e.time_diff < 0:
                break
            t = self.header.begin_timestamp + e.time_diff * 1000
            if e.key_hash == h and begin <= t <= end:
                out.append(e.phy_offset)
            if t < begin:
                break
        return out

    def check(self, path: str = "") -> Iterator[Finding]:
        """Structural findings: header counts, slot values, chain links and slot membership."""
        h = self.header
        if not 1 <= h.index_count <= self.index_num:
            yield finding(_CODE, path, position=36, message=f"index count {h.index_count} outside "
                          f"1..{self.index_num}")
        count = self.used_count
        slots = self.slot_table()
        if slots and (min(slots) < 0 or max(slots) >= count):
            for i, v in enumerate(slots):
                if v < 0 or v >= count:
                    yield finding(_CODE, path, position=HEADER_SIZE + i * SLOT_SIZE,
                                  message=f"slot {i} points at entry {v}, outside 0..{count - 1}")
        used_slots = len(slots) - slots.count(0)
        if used_slots != h.hash_slot_count:
            yield finding(_CODE, path, position=32,
                          message=f"header says {h.hash_slot_count} slots in use, {used_slots} are")
        for e in self.entries():
            pos = self._entries_at + e.number * ENTRY_SIZE
            if not 0 <= e.prev_index < e.number:
                yield finding(_CODE, path, position=pos, message=f"entry {e.number} links to "
                              f"{e.prev_index}, not an earlier entry")
            if e.key_hash < 0 or e.time_diff < 0:
                yield finding(_CODE, path, position=pos,
                              message=f"entry {e.number}: negative key hash or time diff")


def parse_header(data: bytes | memoryview) -> IndexHeader:
    if len(data) < HEADER_SIZE:
        raise FormatError(_CODE, f"{len(data)} bytes is shorter than the 40-byte header", position=0)
    return IndexHeader(*HEADER.unpack_from(data, 0))


class IndexWriter:
    """Builds an index file in memory with the broker's `putKey` rules."""

    def __init__(self, *, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM, index_num: int = DEFAULT_INDEX_NUM,
                 inherit_end_phy_offset: int = 0, inherit_end_timestamp: int = 0) -> None:
        """`inherit_*`: the previous file's end values, which a new file starts with."""
        if hash_slot_num <= 0 or index_num <= 1:
            raise ValueError("need at least one slot and two entry positions")
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.buf = bytearray(file_size_for(hash_slot_num, index_num))
        self._entries_at = HEADER_SIZE + hash_slot_num * SLOT_SIZE
        self.begin_timestamp = self.end_timestamp = inherit_end_timestamp
        self.begin_phy_offset = self.end_phy_offset = inherit_end_phy_offset
        self.hash_slot_count = 0
        self.index_count = 1

    @property
    def is_full(self) -> bool:
        return self.index_count >= self.index_num

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """`IndexFile#putKey`; False when the file is full."""
        if self.is_full:
            return False
        key_hash = index_key_hash(key)
        slot_pos = HEADER_SIZE + (key_hash % self.hash_slot_num) * SLOT_SIZE
        (slot_value,) = _SLOT.unpack_from(self.buf, slot_pos)
        if slot_value <= 0 or slot_value > self.index_count:
            slot_value = 0
        diff = (store_timestamp - self.begin_timestamp) // 1000 if store_timestamp >= self.begin_timestamp \
            else -((self.begin_timestamp - store_timestamp) // 1000)  # Java division truncates
        diff = 0 if self.begin_timestamp <= 0 else min(max(diff, 0), _INT_MAX)
        pos = self._entries_at + self.index_count * ENTRY_SIZE
        ENTRY.pack_into(self.buf, pos, key_hash, phy_offset, diff, slot_value)
        _SLOT.pack_into(self.buf, slot_pos, self.index_count)
        if self.index_count <= 1:
            self.begin_phy_offset, self.begin_timestamp = phy_offset, store_timestamp
        if slot_value == 0:
            self.hash_slot_count += 1
        self.index_count += 1
        self.end_phy_offset, self.end_timestamp = phy_offset, store_timestamp
        return True

    def header(self) -> IndexHeader:
        return IndexHeader(self.begin_timestamp, self.end_timestamp, self.begin_phy_offset,
                           self.end_phy_offset, self.hash_slot_count, self.index_count)

    def to_bytes(self) -> bytes:
        HEADER.pack_into(self.buf, 0, *dataclasses.astuple(self.header()))
        return bytes(self.buf)


def build_index(triples: Iterable[tuple[str, int, int]], *, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
                index_num: int = DEFAULT_INDEX_NUM) -> bytes:
    """Index file bytes for (key, phyOffset, storeTimestamp) triples; raises when they overflow it."""
    w = IndexWriter(hash_slot_num=hash_slot_num, index_num=index_num)
    for key, phy, ts in triples:
        if not w.put_key(key, phy, ts):
            raise ValueError(f"index full after {index_num - 1} keys")
    return w.to_bytes()
