"""The `.index` / `.timeindex` checks of `index_check`, fed the segment's batches block by block.

`OffsetIndexCheck` / `TimeIndexCheck` take `BatchBlock`s in file order (e.g.
from `FastWalk.blocks()`) and the index as columns (`read_offset_index_columns`
/ `read_time_index_columns`), and give exactly the findings of
`index_check.check_offset_index` / `check_time_index` for all the batches at
once. They keep the index entries and a few values of the last batch seen,
never the batches; each block is handled with a few numpy searches, Python
touches only the entries that end up in a finding.

Both assume what a walk yields: batch positions strictly ascending. Where a
damaged log's offsets are not in order, the list form's binary search over
them has no meaning; the streaming form then answers with the first batch that
qualifies in file order (see `OffsetIndexCheck` and `TimeIndexCheck`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Literal

import numpy as np

from replog.formats.findings import Finding, FindingSink
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.index_check import MAX_FINDINGS
from replog.formats.kafka.offset_index import (
    INT64_MAX,
    INT64_MIN,
    IndexColumns,
    OffsetIndexColumns,
    OffsetIndexEntry,
    absolute_offsets,
    kept_slots,
)
from replog.formats.kafka.time_index import TimeIndexColumns, TimeIndexEntry

# --- streaming forms -----------------------------------------------------------------------------

# What the streaming checks decide per entry (int8 codes); NONE = no finding.
_NONE, _OUT_OF_RANGE, _NOT_START, _REACHED, _NO_END, _WAITING, _UNDECIDED = range(7)  # offset index
_IN_NO_BATCH, _MISMATCH = 1, 2                                           # time index


def _entry_column(entries: OffsetIndexColumns | TimeIndexColumns | Sequence[OffsetIndexEntry | TimeIndexEntry],
                  name: str, field: int) -> np.ndarray:
    """The entries' other column than offsets (positions or timestamps) as int64, from columns or a list."""
    if isinstance(entries, IndexColumns):
        return np.asarray(getattr(entries, name), dtype=np.int64)
    return np.array([e[field] for e in entries], dtype=np.int64)


class _EntryOffsets:
    """The entries' offsets as int64 (`int64`), exact for the slots that get a finding (`exact`).

    An offset above INT64_MAX (a base offset within 2^31 of it) is stored as
    INT64_MAX and flagged in `over` (None when there is none): no batch offset
    reaches it; its exact value is kept aside. `field` is where the offset
    sits in an entry of a sequence.
    """

    def __init__(self, entries, base_offset: int, field: int) -> None:
        if isinstance(entries, IndexColumns):
            if entries.base_offset != base_offset:
                raise ValueError(f"index read with base offset {entries.base_offset}, checked with {base_offset}")
            self.int64, self.over = absolute_offsets(base_offset, entries.relative_offsets)
            over = np.flatnonzero(self.over) if self.over is not None else np.empty(0, dtype=np.int64)
            self._exact = {int(s): base_offset + int(entries.relative_offsets[s]) for s in over}
            return
        values = [e[field] for e in entries]
        if any(v < INT64_MIN for v in values):
            raise ValueError("an index offset below INT64_MIN")
        self._exact = {s: v for s, v in enumerate(values) if v > INT64_MAX}
        self.int64 = np.array([min(v, INT64_MAX) for v in values], dtype=np.int64)
        self.over = None
        if self._exact:
            self.over = np.zeros(len(values), dtype=bool)
            self.over[list(self._exact)] = True

    def exact(self, slot: int) -> int:
        return self._exact.get(slot, int(self.int64[slot]))

    def nbytes(self) -> int:
        return self.int64.nbytes + (self.over.nbytes if self.over is not None else 0)


class _InKeyOrder:
    """The slots of an index visited by ascending key (position or offset), in runs.

    An index in order (the normal case) is visited in place: no sorted copy,
    no permutation. `upto(key, side)` returns the next slots whose key is below
    (`left`) or up to (`right`) `key`; `rest()` the ones never reached.
    """

    def __init__(self, keys: np.ndarray) -> None:
        if len(keys) < 2 or bool((keys[1:] >= keys[:-1]).all()):
            self.order, self.keys = None, keys
        else:
            self.order = np.argsort(keys, kind="stable")
            self.keys = keys[self.order]
        self.next = 0

    def upto(self, key: int, side: Literal["left", "right"]) -> np.ndarray:
        hi = int(np.searchsorted(self.keys, key, side=side))
        return self._take(hi)

    def rest(self) -> np.ndarray:
        return self._take(len(self.keys))

    def _take(self, hi: int) -> np.ndarray:
        lo, self.next = self.next, max(self.next, hi)
        if hi <= lo:
            return np.empty(0, dtype=np.int64)
        return np.arange(lo, hi, dtype=np.int64) if self.order is None else self.order[lo:hi]

    def nbytes(self) -> int:
        """Bytes of its own arrays: none for keys in order, a permutation and a sorted copy otherwise."""
        return 0 if self.order is None else self.order.nbytes + self.keys.nbytes


class _StreamCheck(ABC):
    """What both streaming checks share: blocks fed in file order, each entry's verdict (0: no finding),
    settled at `finish` and turned into findings in slot order under the `MAX_FINDINGS` cap."""

    path: str
    _verdict: np.ndarray
    _done: bool

    def feed(self, block: BatchBlock) -> None:
        """Check the entries this block (the next batches of the segment, in file order) decides."""
        if self._done:
            raise RuntimeError("feed after finish")
        if len(block):
            self._feed(block)

    def finish(self) -> list[Finding]:
        """The findings, once every block has been fed (then the check is spent)."""
        if not self._done:
            self._done = True
            self._settle()
        sink = FindingSink(self.path, MAX_FINDINGS)
        for slot in kept_slots(sink, np.flatnonzero(self._verdict)):
            self._add(sink, slot)
        return sink.result()

    @abstractmethod
    def _feed(self, block: BatchBlock) -> None:
        """Check the index entries this block of batches decides."""

    @abstractmethod
    def _settle(self) -> None:
        """Decide what no block decided: the end of the segment is known."""

    @abstractmethod
    def _add(self, sink: FindingSink, slot: int) -> None:
        """The finding of a failed slot, into `sink`."""


class OffsetIndexCheck(_StreamCheck):
    """`check_offset_index`, fed the segment's batches block by block.

    `entries`: the `.index` as `OffsetIndexColumns` (from
    `read_offset_index_columns`) or as a sequence of `OffsetIndexEntry`.
    Feed every `BatchBlock` of the segment in file order with `feed`, then
    `finish()` returns exactly the findings `check_offset_index` gives for all
    the batches at once (codes, positions, offsets, messages, details, order,
    the cap of `MAX_FINDINGS`).

    Memory (`nbytes`): the entries, a verdict and two message values per entry
    (33 bytes an entry; 49 for an index out of position order, visited through
    a sorted copy), the entries still waiting for the batch that ends their
    append (8 bytes each, at most all of them), and the position, last offset
    and end of the last batch seen. Nothing grows with the number of batches;
    no block is kept past `feed`.

    How an entry (O, P) is decided, block by block:
    - entries are visited in position order; those with P up to the block's
      last batch start are matched against the block's starts (searchsorted):
      P is a batch start or not (then its message waits for `finish`, which
      knows the end of the last framed batch, `framed_end`);
    - at a batch start: a damaged batch (crc_valid 0) settles it; the batch
      before (the previous row, or the last batch of the previous block) must
      not reach O; then the first batch at or after P whose last offset
      reaches O must end exactly at O. That batch is found with a searchsorted
      over the running maximum of the block's last offsets; an entry no batch
      of its block reaches waits for the next blocks ("carried"), and at
      `finish` none ever will.

    With last offsets ascending (any intact log) "the first batch at or after P
    reaching O" is what the list form's `bisect_left` finds; in a log whose
    offsets go back it is still the batch the broker's lookup would stop at.
    """

    def __init__(self, entries: OffsetIndexColumns | Sequence[OffsetIndexEntry], *, base_offset: int,
                 log_size: int, path: str = "") -> None:
        self.base_offset, self.log_size, self.path = base_offset, log_size, path
        self._offsets = _EntryOffsets(entries, base_offset, field=0)
        positions = _entry_column(entries, "positions", 1)
        self._positions = positions
        n = len(positions)
        offsets = self._offsets.int64
        not_default = (offsets != base_offset) | (positions != 0)
        if self._offsets.over is not None:
            not_default |= self._offsets.over
        self._verdict = np.full(n, _UNDECIDED, dtype=np.int8)
        self._verdict[~not_default] = _NONE
        self._verdict[not_default & (positions >= log_size)] = _OUT_OF_RANGE
        # aux values of a finding's message: REACHED (last offset, position) of the batch before;
        # NO_END (base offset, last offset) of the batch at P
        self._aux = np.zeros((2, n), dtype=np.int64)
        self._by_position = _InKeyOrder(positions)
        self._waiting = np.empty(0, dtype=np.int64)       # slots looking for the batch ending at O
        self._batches = 0
        self._prev_position = self._prev_last = 0         # the last batch seen
        self._framed_end = 0
        self._done = False

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays the check keeps (entries, verdicts, the carried entries)."""
        return (self._offsets.nbytes() + self._positions.nbytes + self._verdict.nbytes + self._aux.nbytes
                + self._by_position.nbytes() + self._waiting.nbytes)

    def _feed(self, block: BatchBlock) -> None:
        n = len(block)
        starts, lasts = block.position, block.last_offset
        reach = np.maximum.accumulate(lasts)
        if self._waiting.size:
            self._waiting = self._resolve_waiting(self._waiting, lasts, reach)
        slots = self._by_position.upto(int(starts[-1]), "right")
        slots = slots[self._verdict[slots] == _UNDECIDED]
        if slots.size:
            self._match(slots, block, reach)
        self._batches += n
        self._prev_position, self._prev_last = int(starts[-1]), int(lasts[-1])
        self._framed_end = int(starts[-1] + block.size[-1])

    def _resolve_waiting(self, slots: np.ndarray, lasts: np.ndarray, reach: np.ndarray) -> np.ndarray:
        """Entries carried from earlier blocks: the first batch of this block reaching O decides."""
        offsets = self._offsets.int64[slots]
        j = np.searchsorted(reach, offsets, side="left")
        found = j < len(lasts)  # (an offset above INT64_MAX never waits: it was settled at its match)
        done, j = slots[found], j[found]
        self._verdict[done] = np.where(lasts[j] == offsets[found], _NONE, _NO_END)
        return slots[~found]

    def _match(self, slots: np.ndarray, block: BatchBlock, reach: np.ndarray) -> None:
        """Entries whose position is at most the block's last batch start."""
        starts, lasts, n = block.position, block.last_offset, len(block)
        self._verdict[slots] = _NONE  # decided here: unless a rule below says otherwise, fine
        positions = self._positions[slots]
        k = np.searchsorted(starts, positions, side="left")  # < n: positions <= starts[-1]
        at_start = starts[k] == positions
        self._verdict[slots[~at_start]] = _NOT_START
        slots, k = slots[at_start], k[at_start]
        intact = block.crc_valid[k] != 0
        slots, k = slots[intact], k[intact]
        if not slots.size:
            return
        offsets = self._offsets.int64[slots]
        over = self._offsets.over[slots] if self._offsets.over is not None else np.zeros(len(slots), bool)
        before = np.maximum(k - 1, 0)
        prev_last = np.where(k > 0, lasts[before], self._prev_last)
        prev_position = np.where(k > 0, starts[before], self._prev_position)
        has_prev = (k > 0) | (self._batches > 0)
        reached = has_prev & (prev_last >= offsets) & ~over
        self._verdict[slots[reached]] = _REACHED
        self._aux[0, slots[reached]] = prev_last[reached]
        self._aux[1, slots[reached]] = prev_position[reached]
        keep = ~reached
        slots, k, offsets, over = slots[keep], k[keep], offsets[keep], over[keep]
        self._aux[0, slots] = block.base_offset[k]
        self._aux[1, slots] = lasts[k]
        self._verdict[slots[over]] = _NO_END  # above INT64_MAX: no batch reaches it
        slots, k, offsets = slots[~over], k[~over], offsets[~over]
        # the first batch at or after row k with last >= O; the running maximum finds it when no
        # earlier row of the block reaches O (always, unless the block's last offsets go back)
        clean = (k == 0) | (reach[np.maximum(k - 1, 0)] < offsets)
        j = np.full(len(slots), n, dtype=np.int64)
        j[clean] = np.searchsorted(reach, offsets[clean], side="left")
        for m in np.flatnonzero(~clean).tolist():
            hits = np.flatnonzero(lasts[k[m]:] >= offsets[m])
            j[m] = k[m] + hits[0] if hits.size else n
        found = j < n
        self._verdict[slots[found]] = np.where(lasts[j[found]] == offsets[found], _NONE, _NO_END)
        waiting = slots[~found]
        self._verdict[waiting] = _WAITING
        self._waiting = np.concatenate([self._waiting, waiting]) if self._waiting.size else waiting

    def _settle(self) -> None:
        self._verdict[self._verdict == _UNDECIDED] = _NOT_START  # past the last batch start
        self._verdict[self._waiting] = _NO_END                   # no batch ever reached O
        self._waiting = self._waiting[:0]

    def _add(self, sink: FindingSink, slot: int) -> None:
        at, offset, position = slot * 8, self._offsets.exact(slot), int(self._positions[slot])
        verdict, a, b = int(self._verdict[slot]), int(self._aux[0, slot]), int(self._aux[1, slot])
        if verdict == _OUT_OF_RANGE:
            sink.add("KAFKA_INDEX_OUT_OF_RANGE", at, offset,
                     f"slot {slot}: position {position} is past the end of the log ({self.log_size} bytes)")
        elif verdict == _NOT_START:
            where = "inside the damaged tail" if position >= self._framed_end else "not at a batch start"
            sink.add("KAFKA_INDEX_BAD_ENTRY", at, offset, f"slot {slot}: position {position} is {where}")
        elif verdict == _REACHED:
            sink.add("KAFKA_INDEX_BAD_ENTRY", at, offset,
                     f"slot {slot}: offset {offset} is already reached by the batch before position "
                     f"{position} (last offset {a})", batch_position=b)
        else:
            sink.add("KAFKA_INDEX_BAD_ENTRY", at, offset,
                     f"slot {slot}: no batch at or after position {position} ends at offset {offset} "
                     f"(batch there: {a}..{b})", batch_position=position)


class TimeIndexCheck(_StreamCheck):
    """`check_time_index`, fed the segment's batches block by block.

    `entries`: the `.timeindex` as `TimeIndexColumns` (from
    `read_time_index_columns`) or as a sequence of `TimeIndexEntry`. Feed every
    `BatchBlock` of the segment in file order, then `finish()` returns exactly
    the findings `check_time_index` gives for all the batches at once.

    Memory (`nbytes`): the entries, a verdict and three message values per
    entry (41 bytes an entry; 57 for an index out of offset order), and a few
    values carried from block to block: the last batch seen (position,
    last offset, crc_valid, max timestamp), the running maximum of the base
    offsets, the running maximum timestamp over CRC-valid batches, and whether
    any batch has max timestamp 0 (which decides whether a zero slot 0 is
    padding, known only at `finish`).

    An entry (T, O) belongs to the last batch before the first batch whose base
    offset exceeds O (`bisect_right` over ascending base offsets): entries are
    visited in offset order, each block decides those with O below the running
    maximum of its base offsets (a searchsorted over that maximum); the batch
    may be the last one of the previous block (carried). Entries no batch
    passes belong to the segment's last batch, at `finish`. Whether an offset
    in no batch is out of range or a mismatch depends on the last batch's last
    offset, so that too is settled at `finish`.
    """

    def __init__(self, entries: TimeIndexColumns | Sequence[TimeIndexEntry], *, base_offset: int,
                 path: str = "") -> None:
        self.base_offset, self.path = base_offset, path
        self._offsets = _EntryOffsets(entries, base_offset, field=1)
        timestamps = _entry_column(entries, "timestamps", 0)
        self._timestamps = timestamps
        n = len(timestamps)
        self._zero_slot = bool(n and timestamps[0] == 0 and self._offsets.exact(0) == base_offset)
        self._verdict = np.zeros(n, dtype=np.int8)
        self._aux = np.zeros((3, n), dtype=np.int64)  # MISMATCH: max timestamp, running max, position
        self._by_offset = _InKeyOrder(self._offsets.int64)
        self._batches = 0
        self._first_max = 0           # running maximum of the base offsets
        self._top = -1                # running maximum timestamp of the CRC-valid batches
        self._last = (0, 0, 0, 0)     # last batch seen: position, last offset, crc_valid, max timestamp
        self._has_zero_ts = False
        self._done = False

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays the check keeps (entries and verdicts)."""
        return (self._offsets.nbytes() + self._timestamps.nbytes + self._verdict.nbytes + self._aux.nbytes
                + self._by_offset.nbytes())

    def _feed(self, block: BatchBlock) -> None:
        n = len(block)
        firsts = np.maximum.accumulate(block.base_offset)
        if self._batches:
            np.maximum(firsts, self._first_max, out=firsts)
        stamps = block.max_timestamp
        running = np.maximum.accumulate(np.where(block.crc_valid != 0, stamps, -1))
        np.maximum(running, self._top, out=running)
        slots = self._by_offset.upto(int(firsts[-1]), "left")  # the entries with O below the largest base
        if slots.size:
            row = np.searchsorted(firsts, self._offsets.int64[slots], side="right") - 1
            inside = row >= 0  # row -1: the batch holding O is the previous block's last
            r = np.maximum(row, 0)
            pos, last, crc, mts = self._last
            self._judge(slots, has_batch=inside | (self._batches > 0),
                        position=np.where(inside, block.position[r], pos),
                        last=np.where(inside, block.last_offset[r], last),
                        crc_valid=np.where(inside, block.crc_valid[r], crc),
                        max_ts=np.where(inside, stamps[r], mts),
                        running=np.where(inside, running[r], self._top))
        self._has_zero_ts = self._has_zero_ts or bool((stamps == 0).any())
        self._batches += n
        self._first_max, self._top = int(firsts[-1]), int(running[-1])
        self._last = (int(block.position[-1]), int(block.last_offset[-1]), int(block.crc_valid[-1]),
                      int(stamps[-1]))

    def _judge(self, slots: np.ndarray, *, has_batch, position, last, crc_valid, max_ts, running) -> None:
        offsets = self._offsets.int64[slots]
        in_no_batch = ~np.asarray(has_batch) | (offsets > last)
        if self._offsets.over is not None:
            in_no_batch |= self._offsets.over[slots]
        self._verdict[slots[in_no_batch]] = _IN_NO_BATCH
        ts = self._timestamps[slots]
        wrong = ~in_no_batch & (crc_valid != 0) & ((max_ts != ts) | (running != ts))
        bad = slots[wrong]
        self._verdict[bad] = _MISMATCH
        self._aux[0, bad] = np.broadcast_to(max_ts, slots.shape)[wrong]
        self._aux[1, bad] = np.broadcast_to(running, slots.shape)[wrong]
        self._aux[2, bad] = np.broadcast_to(position, slots.shape)[wrong]

    def _settle(self) -> None:
        slots = self._by_offset.rest()  # past every base offset: the last batch's, if any
        if slots.size:
            pos, last, crc, mts = self._last
            self._judge(slots, has_batch=self._batches > 0, position=pos, last=last, crc_valid=crc,
                        max_ts=mts, running=self._top)
        if self._zero_slot and not self._has_zero_ts:
            self._verdict[0] = _NONE  # zero slot 0 of an empty preallocated index

    def _add(self, sink: FindingSink, slot: int) -> None:
        at, offset, timestamp = slot * 12, self._offsets.exact(slot), int(self._timestamps[slot])
        if self._verdict[slot] == _IN_NO_BATCH:
            beyond = not self._batches or offset > self._last[1]
            sink.add("KAFKA_INDEX_OUT_OF_RANGE" if beyond else "KAFKA_TIMEINDEX_MISMATCH", at, offset,
                     f"slot {slot}: offset {offset} is in no batch of the log")
            return
        max_ts, running, position = (int(v) for v in self._aux[:, slot])
        sink.add("KAFKA_TIMEINDEX_MISMATCH", at, offset,
                 f"slot {slot}: timestamp {timestamp}, but the batch holding offset {offset} has max "
                 f"timestamp {max_ts} and the largest timestamp up to it is {running}",
                 batch_position=position)
