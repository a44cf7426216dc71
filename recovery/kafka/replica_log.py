"""A replica's batches left on disk: pieces of segment files, and what the replication protocol asks of them.

Loading a replica walks each segment once (startup recovery) and keeps, per
stretch of kept batches (a `Piece`), only counts, a sparse position index (one
mark per walk block, ~16 MiB), the epoch runs and the log's offset-bucket
digests. Memory grows with segments and epoch changes, not with batches. What
the protocol needs later -- where a truncation cuts, which leader batches a
fetch copies, what a follower loses, where two replicas first differ -- is
answered by walking again only the bytes around that point.

A piece can also hold its batches as rows in memory (`rows`): replicas built
for reasoning and tests (`replica.replica_from_batches`) take the same paths.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from replog.formats.errors import UnreadableInput
from replog.formats.fileio import mapped
from replog.formats.kafka.blocks import ROW, BatchBlock, walk_blocks
from replog.formats.kafka.columns import CHUNK
from replog.formats.kafka.partition_files import is_live_segment

# marks: one column per walk block: where it starts and what lies before it in the piece
M_POS, M_BASE, M_BATCHES, M_RECORDS, M_PREV_LAST = range(5)
BLOCK_ROWS = CHUNK  # batches per block of a walk: one mark per block
RUNS_CAP = 1 << 16  # epoch runs kept exactly per piece; beyond, same-epoch runs across gaps merge (picture only)
_EMPTY_RUNS = np.empty((3, 0), dtype=np.int64)


def ref_epochs(block: BatchBlock) -> np.ndarray:
    """The epoch the protocol sees per batch: the leader epoch of v2 batches, -1 for legacy ones."""
    return np.where(block.magic == 2, block.partition_leader_epoch, -1)


@dataclass(frozen=True, eq=False)
class Piece:
    """Consecutive kept batches, back to back in bytes [position, end_position) of segment `file` (whose
    base offset is `base_offset`)."""

    file: str
    base_offset: int
    position: int
    end_position: int
    batches: int
    records: int
    first_offset: int        # base offset of its first batch
    last_offset: int         # last offset of its last batch
    min_base: int            # lowest base offset in it (== first_offset when ordered)
    max_last: int            # highest last offset in it (== last_offset when ordered)
    ordered: bool            # every batch starts after the one before it ended
    marks: np.ndarray = field(repr=False)   # M_* rows, one column per walk block
    runs: np.ndarray = field(repr=False)    # first offset, end offset, epoch: see `PieceBuilder._feed_runs`
    rows: BatchBlock | None = field(default=None, repr=False)

    @property
    def nbytes(self) -> int:
        return self.end_position - self.position

    def blocks(self, start: int | None = None) -> Iterator[BatchBlock]:
        """Its batches from byte `start` (a batch boundary; default its first) on, as blocks."""
        start = self.position if start is None else start
        if self.rows is not None:
            pos = self.rows.position
            yield self.rows[(pos >= start) & (pos < self.end_position)]
            return
        yield from walk_range(self.file, self.base_offset, start, self.end_position)


def walk_range(file: str, base: int, start: int, end: int) -> Iterator[BatchBlock]:
    """The batches of bytes [start, end) of a segment, known valid (loading walked them), as blocks.

    The compiled walk reads them once it is loaded (a large log loaded it), else the reference walk."""
    from replog.recovery.kafka.logdir import use_fast_walk
    compiled = use_fast_walk(end - start, 0 if "replog.formats.kafka.fastwalk" in sys.modules else None)
    with mapped(file, live=is_live_segment(file), windows=True) as buf:
        if len(buf) < end:
            raise UnreadableInput(f"{file}: shorter than when it was loaded ({len(buf)} < {end} bytes)")
        view = buf[start:end]
        walk, blocks = walk_blocks(view, file, base, compiled, BLOCK_ROWS)
        try:
            for block in blocks:
                block.cols[ROW["position"]] += start
                yield block
            if walk.valid_bytes != end - start:
                raise UnreadableInput(f"{file}: changed since it was loaded (bytes {start}..{end})")
        finally:
            close = getattr(blocks, "close", None)
            if close is not None:
                close()  # the walk lets go of the map before it is closed
            del walk, blocks
            view.release()


class PieceBuilder:
    """Accumulates blocks of consecutive batches of one file into a `Piece` (counts, marks, runs)."""

    def __init__(self, file: str, base: int, keep_rows: bool = False) -> None:
        self.file, self.base_offset, self.keep_rows = file, base, keep_rows
        self.position = self.end_position = -1
        self.batches = self.records = 0
        self.first = self.last = self.prev_epoch = -1
        self.min_base, self.max_last, self.ordered = 2**63 - 1, -2**63, True
        self.marks: list[list[int]] = []
        self.runs: list[np.ndarray] = []
        self.run_count = 0
        self.rows: list[BatchBlock] = []

    def __bool__(self) -> bool:
        return self.batches > 0

    def feed(self, block: BatchBlock) -> None:
        """Add `block`'s rows (which follow the previous ones in the file)."""
        n = len(block)
        if not n:
            return
        base, last = block.base_offset, block.last_offset
        first_pos = int(block.position[0])
        if self.batches == 0:
            self.position, self.first = first_pos, int(base[0])
        self.marks.append([first_pos, int(base[0]), self.batches, self.records, self.last if self.batches else -1])
        prev_last = np.concatenate(([self.last], last[:-1])) if self.batches else np.concatenate(([0], last[:-1]))
        increasing = base[1:] > last[:-1]
        if self.batches:
            self.ordered = self.ordered and int(base[0]) > self.last
        self.ordered = self.ordered and bool(increasing.all())
        self._feed_runs(base, last, ref_epochs(block), prev_last)
        self.batches += n
        self.records += int(block.count.sum())
        self.last, self.end_position = int(last[-1]), int(block.position[-1] + block.size[-1])
        self.min_base, self.max_last = min(self.min_base, int(base.min())), max(self.max_last, int(last.max()))
        if self.keep_rows:
            self.rows.append(block.copy())

    def _feed_runs(self, base: np.ndarray, last: np.ndarray, epochs: np.ndarray, prev_last: np.ndarray) -> None:
        """Runs of batches with one epoch and no gap (`replay_view.epoch_runs`' rule, kept per piece)."""
        prev_epoch = np.concatenate(([self.prev_epoch], epochs[:-1]))
        starts = (epochs != prev_epoch) | (base != prev_last + 1)
        if self.batches == 0:
            starts[0] = True
        idx = np.flatnonzero(starts)
        if self.runs and (not len(idx) or idx[0]):   # the block's first rows continue the open run
            self.runs[-1][1, -1] = last[idx[0] - 1 if len(idx) else -1] + 1
        if len(idx):
            ends = np.concatenate((idx[1:], [len(base)])) - 1
            self.runs.append(np.stack((base[idx], last[ends] + 1, epochs[idx])))
            self.run_count += len(idx)
        self.prev_epoch = int(epochs[-1])
        if self.run_count > RUNS_CAP:
            merged = merge_runs(np.concatenate(self.runs, axis=1), across_gaps=True)
            self.runs, self.run_count = [merged], merged.shape[1]

    def piece(self) -> Piece:
        runs = np.concatenate(self.runs, axis=1) if self.runs else _EMPTY_RUNS
        rows = BatchBlock.concat(self.rows) if self.keep_rows else None
        return Piece(self.file, self.base_offset, self.position, self.end_position, self.batches, self.records,
                     self.first, self.last, self.min_base, self.max_last, self.ordered,
                     np.array(self.marks, dtype=np.int64).T.reshape(5, -1), runs, rows)


def merge_runs(runs: np.ndarray, across_gaps: bool = False) -> np.ndarray:
    """Adjacent runs of one epoch merged when contiguous (or, `across_gaps`, whenever the next starts later)."""
    if runs.shape[1] < 2:
        return runs
    same = runs[2, 1:] == runs[2, :-1]
    joins = same & ((runs[0, 1:] >= runs[1, :-1]) if across_gaps else (runs[0, 1:] == runs[1, :-1]))
    heads = np.flatnonzero(np.concatenate(([True], ~joins)))
    tails = np.concatenate((heads[1:], [runs.shape[1]])) - 1
    return np.stack((runs[0, heads], runs[1, tails], runs[2, heads]))


def build_piece(file: str, base: int, blocks: Iterable[BatchBlock], keep_rows: bool = False) -> Piece | None:
    builder = PieceBuilder(file, base, keep_rows)
    for block in blocks:
        builder.feed(block)
    return builder.piece() if builder else None


@dataclass(frozen=True)
class Cut:
    """Where the first batch whose last offset reaches an offset lies in a piece."""

    position: int
    batches: int        # before it, in the piece
    records: int
    prev_last: int      # last offset of the batch before it (-1: none)
    base_offset: int    # its own base offset


def locate(piece: Piece, offset: int) -> Cut | None:
    """The first batch of `piece` (in log order) whose last offset is >= `offset`."""
    if piece.max_last < offset:
        return None
    start, batches, records, prev_last = piece.position, 0, 0, -1
    if piece.ordered and piece.marks.shape[1] and piece.rows is None:
        k = max(int(np.searchsorted(piece.marks[M_BASE], offset, side="right")) - 1, 0)
        start, batches, records, prev_last = (int(v) for v in piece.marks[[M_POS, M_BATCHES, M_RECORDS,
                                                                            M_PREV_LAST], k])
    for block in piece.blocks(start):
        hit = np.flatnonzero(block.last_offset >= offset)
        if len(hit):
            i = int(hit[0])
            before = block[:i]
            return Cut(int(block.position[i]), batches + i, records + int(before.count.sum()),
                       int(block.last_offset[i - 1]) if i else prev_last, int(block.base_offset[i]))
        batches, records = batches + len(block), records + int(block.count.sum())
        prev_last = int(block.last_offset[-1]) if len(block) else prev_last
    return None


def split(piece: Piece, cut: Cut) -> tuple[Piece | None, Piece | None]:
    """`piece` before and from `cut` (either may be empty)."""
    if cut.batches == 0:
        return None, piece
    if not piece.ordered or piece.rows is not None:  # rare or small: recount both halves by walking
        file, base, keep_rows = piece.file, piece.base_offset, piece.rows is not None
        return (build_piece(file, base, _bounded(piece, piece.position, cut.position), keep_rows),
                build_piece(file, base, _bounded(piece, cut.position, piece.end_position), keep_rows))
    m = piece.marks
    left = m[M_POS] < cut.position
    head_runs, tail_runs = _split_runs(piece.runs, cut.prev_last + 1, cut.base_offset)
    head = replace(piece, end_position=cut.position, batches=cut.batches, records=cut.records,
                   last_offset=cut.prev_last, max_last=cut.prev_last, marks=m[:, left], runs=head_runs)
    rest = m[:, ~left].copy()
    rest[M_BATCHES] -= cut.batches
    rest[M_RECORDS] -= cut.records
    first = np.array([[cut.position], [cut.base_offset], [0], [0], [-1]], dtype=np.int64)
    tail = replace(piece, position=cut.position, batches=piece.batches - cut.batches,
                   records=piece.records - cut.records, first_offset=cut.base_offset, min_base=cut.base_offset,
                   marks=np.concatenate((first, rest), axis=1), runs=tail_runs)
    return head, tail


def _bounded(piece: Piece, start: int, end: int) -> Iterator[BatchBlock]:
    for block in piece.blocks(start):
        keep = block.position < end
        yield block[keep]
        if not keep.all():
            return


def _split_runs(runs: np.ndarray, head_end: int, tail_first: int) -> tuple[np.ndarray, np.ndarray]:
    """Ordered runs clipped to offsets below `head_end` and from `tail_first` on."""
    head = runs[:, runs[0] < head_end].copy()
    if head.shape[1]:
        head[1, -1] = min(int(head[1, -1]), head_end)
    tail = runs[:, runs[1] > tail_first].copy()
    if tail.shape[1]:
        tail[0, 0] = max(int(tail[0, 0]), tail_first)
    return head, tail


class _Total:
    """A log's count of one kind (batches, records, bytes: the `Piece` attribute of its own name), the sum over
    its pieces; read-only."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, log: ReplicaLog, owner: type | None = None) -> int:
        return sum(int(getattr(piece, self.name)) for piece in log.pieces)


@dataclass
class ReplicaLog:
    """A log as pieces in log order; the protocol's operations on it walk only what they must."""

    pieces: list[Piece] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.pieces)

    def copy(self) -> ReplicaLog:
        return ReplicaLog(list(self.pieces))

    batches = _Total()
    records = _Total()
    nbytes = _Total()

    @property
    def first_offset(self) -> int:
        return self.pieces[0].first_offset

    @property
    def last_offset(self) -> int:
        return self.pieces[-1].last_offset

    @property
    def ordered(self) -> bool:
        return all(p.ordered for p in self.pieces) and all(
            b.first_offset > a.last_offset for a, b in zip(self.pieces, self.pieces[1:], strict=False))

    def extend(self, other: ReplicaLog) -> None:
        self.pieces.extend(other.pieces)

    def find(self, offset: int) -> tuple[int, Cut] | None:
        """(piece index, cut) of the first batch whose last offset is >= `offset`."""
        for k, piece in enumerate(self.pieces):
            cut = locate(piece, offset)
            if cut is not None:
                return k, cut
        return None

    def _parted(self, offset: int) -> tuple[int, Piece | None, ReplicaLog]:
        """(index of the piece holding the first batch reaching `offset`, what of it lies before,
        every batch from there on); the index is the piece count when no batch reaches it."""
        found = self.find(offset)
        if found is None:
            return len(self.pieces), None, ReplicaLog()
        k, cut = found
        head, tail = split(self.pieces[k], cut)
        return k, head, ReplicaLog(([tail] if tail else []) + self.pieces[k + 1:])

    def cut_at(self, offset: int) -> ReplicaLog:
        """Keep the batches before the first one reaching `offset`; return the rest (`UnifiedLog.truncateTo`)."""
        k, head, removed = self._parted(offset)
        if k < len(self.pieces):
            self.pieces[k:] = [head] if head else []
        return removed

    def from_offset(self, offset: int) -> ReplicaLog:
        """The batches from the first one reaching `offset` on (a view; this log is unchanged)."""
        return self._parted(offset)[2]

    def where(self, keep: Callable[[BatchBlock], np.ndarray]) -> ReplicaLog:
        """The batches `keep` selects (a mask per block), as pieces of consecutive selected batches."""
        out: list[Piece] = []
        for piece in self.pieces:
            builder = PieceBuilder(piece.file, piece.base_offset, piece.rows is not None)
            for block in piece.blocks():
                mask = keep(block)
                for lo, hi in _true_runs(mask):
                    if builder and int(block.position[lo]) != builder.end_position:
                        out.append(builder.piece())
                        builder = PieceBuilder(piece.file, piece.base_offset, piece.rows is not None)
                    builder.feed(block[lo:hi])
            if builder:
                out.append(builder.piece())
        return ReplicaLog(out)

    def blocks(self) -> Iterator[BatchBlock]:
        for piece in self.pieces:
            yield from piece.blocks()

    def epoch_runs(self) -> np.ndarray:
        """(first offset, end offset, epoch) runs of consecutive batches of one epoch, across pieces."""
        if not self.pieces:
            return _EMPTY_RUNS
        return merge_runs(np.concatenate([p.runs for p in self.pieces], axis=1))

    def epoch_starts(self) -> Iterator[tuple[int, int]]:
        """(epoch, first offset) of each run with an epoch, in log order: what a follower assigns on append."""
        for piece in self.pieces:
            runs = piece.runs
            for first, epoch in zip(runs[0][runs[2] >= 0].tolist(), runs[2][runs[2] >= 0].tolist(), strict=True):
                yield epoch, first

    def byte_ranges(self) -> Iterator[tuple[str, int, int, int]]:
        """(file, start, end, segment base) of each piece, consecutive ranges of one file joined."""
        out: tuple[str, int, int, int] | None = None
        for p in self.pieces:
            if out is not None and out[0] == p.file and out[2] == p.position:
                out = (out[0], out[1], p.end_position, out[3])
                continue
            if out is not None:
                yield out
            out = (p.file, p.position, p.end_position, p.base_offset)
        if out is not None:
            yield out


def _true_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[lo, hi) row ranges where `mask` is True."""
    if not len(mask):
        return []
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))
