"""Writing a partition dir a broker can start from, streamed from byte ranges of existing files.

The batches to write lie in input files already (the segments of replicas, a
recovered log, a temporary file of batches): a `ByteRun` names a stretch of
whole, valid batches in one of them. `write_partition_runs` rolls segments the
way the broker does (`segment.bytes`, 32-bit relative offsets), copies each
segment's bytes kernel-side (`filecopy.OutputFile.copy`), builds its `.index`,
`.timeindex` and `.txnindex` from the columns of the same rows
(`hop.hop_blocks`, `rebuild.IndexBuilder`), advances the producer state and the
leader-epoch cache over them, and writes producer snapshots at every roll and
at the log end, the `leader-epoch-checkpoint` and `partition.metadata`.

Memory is one block of columns, whatever the partition: no segment's bytes
and no Python object per batch are ever held. Every file is written under a
unique temporary name, fsynced, verified (the `.log` read back against a
checksum of its source ranges) and renamed; a failure removes what the call
wrote. The output is byte for byte what the reference writer (segments joined
in memory, walked by `SegmentWalk`, indexed by `rebuild_indexes`) makes of the
same batches: tests hold the two equal.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from replog.formats.filecopy import METHODS, OutputFile, SourceFile, open_source
from replog.formats.fileio import atomic_write
from replog.formats.jit import kernel
from replog.formats.kafka import checkpoint, names, txn_index
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.hop import hop_blocks
from replog.formats.kafka.partition_files import is_live_segment
from replog.formats.kafka.partition_metadata import PartitionMetadata, build_partition_metadata
from replog.formats.kafka.producer_snapshot import build_producer_snapshot
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.logdir import use_fast_walk
from replog.recovery.kafka.producer_state import ProducerState
from replog.recovery.kafka.rebuild import INDEX_INTERVAL_BYTES, IndexBuilder, assign_epochs
from replog.recovery.kafka.segment_pass import markers

DEFAULT_SEGMENT_BYTES = 1 << 30
INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class ByteRun:
    """Whole, valid batches lying back to back in one input file: bytes [start, end) of `file`."""

    file: str
    start: int
    end: int
    base_offset: int   # the base offset of the segment `file` (the walk's relative offsets)


@dataclass
class WrittenPartition:
    path: str
    segment_bases: list[int] = field(default_factory=list)
    log_end_offset: int = 0
    epochs: EpochCache = field(default_factory=EpochCache)
    files: list[str] = field(default_factory=list)


class SegmentWriter:
    """One segment being written: its `.log` copied from the sources block by block, its indexes built
    from the same blocks' columns, the producer state (and the epoch cache, when given) advanced over them.

    `close` commits the files (verified, renamed) and returns their names; `discard` drops them.
    """

    def __init__(self, directory: Path, base_offset: int, producers: ProducerState, *,
                 epochs: EpochCache | None = None, interval: int = INDEX_INTERVAL_BYTES,
                 compiled: bool = False, method: str = METHODS[0]) -> None:
        self.directory, self.base_offset = directory, base_offset
        self.producers, self.epochs = producers, epochs
        self.indexes = IndexBuilder(base_offset, interval, compiled=compiled)
        self.next_offset: int | None = None  # after the last batch appended
        self.files: list[OutputFile] = []
        try:
            self.log = self._open("log", method)
            self.index, self.time_index = self._open("index"), self._open("timeindex")
        except BaseException:
            self.discard()
            raise
        self.txn_index: OutputFile | None = None  # written only when a transaction aborts in the segment

    def _open(self, kind: str, method: str = METHODS[0]) -> OutputFile:
        out = OutputFile(self.directory / names.segment_file_name(self.base_offset, kind), method)
        self.files.append(out)
        return out

    def append(self, source: SourceFile, block: BatchBlock) -> None:
        """The rows of `block`, back to back in `source`, are the segment's next batches."""
        if not len(block):
            return
        self.log.copy(source, int(block.position[0]), int(block.position[-1] + block.size[-1]))
        offsets, times = self.indexes.feed(block)
        self.index.write(offsets)
        self.time_index.write(times)
        if self.epochs is not None:
            assign_epochs(self.epochs, block)
        aborted = self.producers.update_block(block, markers(source.buf, block))
        if aborted:
            if self.txn_index is None:
                self.txn_index = self._open("txnindex")
            self.txn_index.write(txn_index.write_txn_index(aborted))
        self.next_offset = int(block.last_offset[-1]) + 1

    def close(self) -> list[str]:
        """Commit the segment's files, in the order the reference writer writes them; their names."""
        self.time_index.write(self.indexes.finish())
        for out in self.files:
            out.commit()
        return [out.path.name for out in self.files]

    def discard(self) -> None:
        """Drop the segment's files, committed or not (after a failure)."""
        for out in self.files:
            out.discard()
            if out.committed:
                out.path.unlink(missing_ok=True)


def roll_rows(size, first, last, state, segment_bytes, start_offset, rolls, bases):
    """`writer.roll_segments`' rule over the next rows (a `jit.kernel`): the rows that start a segment.

    A row starts one when no segment is open, when it would take the open one past `segment_bytes`
    (an empty segment takes any batch), or when its last offset is out of the open segment's 32-bit
    range; the first segment's base is min(start_offset, first offset). `state` carries (a segment is
    open, its base, its bytes) from block to block. Fills `rolls` and `bases`; returns how many.
    """
    is_open, base, used = state[0], state[1], state[2]
    n = 0
    for i in range(len(size)):
        if (is_open == 0 or (used + size[i] > segment_bytes and used > 0)
                or (base <= _INT64_MAX - INT32_MAX and last[i] > base + INT32_MAX)):
            base = first[i] if is_open else min(start_offset, first[i])
            is_open, used = 1, size[i]
            rolls[n], bases[n] = i, base
            n += 1
        else:
            used += size[i]
    state[0], state[1], state[2] = is_open, base, used
    return n


class _Sources:
    """The input file the current run lies in, open (runs come file after file: one is open at a time)."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._open: SourceFile | None = None

    def __enter__(self) -> _Sources:
        return self

    def __exit__(self, *_: object) -> None:
        self._stack.close()

    def of(self, run: ByteRun) -> SourceFile:
        if self._open is None or self._open.path != run.file:
            self._stack.close()
            self._open = self._stack.enter_context(open_source(run.file, live=is_live_segment(run.file)))
        return self._open


def write_segment(directory: str | os.PathLike[str], base_offset: int, runs: Iterable[ByteRun],
                  producers: ProducerState, *, epochs: EpochCache | None = None,
                  interval: int = INDEX_INTERVAL_BYTES) -> list[str]:
    """Write one segment (no roll) of the batches of `runs` into `directory`; the names of its files.

    `producers` (and `epochs`, when given) are advanced over its batches, as `write_partition_runs`
    advances them; on failure the segment's files are removed.
    """
    runs = list(runs)
    compiled = use_fast_walk(sum(run.end - run.start for run in runs))
    writer = SegmentWriter(Path(directory), base_offset, producers, epochs=epochs, interval=interval,
                           compiled=compiled)
    try:
        with _Sources() as sources:
            for run in runs:
                source = sources.of(run)
                for block in hop_blocks(source.buf, run.file, run.start, run.end, compiled=compiled):
                    writer.append(source, block)
        return writer.close()
    except BaseException:
        writer.discard()
        raise


class _Partition:
    """The segments of a partition as they are written: the open one, the roll state, the sources."""

    def __init__(self, out: Path, result: WrittenPartition, segment_bytes: int, start_offset: int,
                 interval: int, observe: Callable[[BatchBlock], None] | None = None) -> None:
        self.out, self.result, self.observe = out, result, observe
        self.segment_bytes, self.start_offset, self.interval = segment_bytes, start_offset, interval
        self.epochs, self.producers = EpochCache(), ProducerState()
        self.tiered = False          # keep the epoch entries below the first segment (`_with_remote_entries`)
        self.roll_state = np.zeros(3, dtype=np.int64)
        self.segment: SegmentWriter | None = None
        self.method = METHODS[0]
        self.bytes_seen = 0

    @property
    def compiled(self) -> bool:
        """Whether the per-row rules pay for numba: from the partition's first few MiB on."""
        return use_fast_walk(self.bytes_seen)

    def add(self, source: SourceFile, run: ByteRun) -> None:
        self.bytes_seen += run.end - run.start
        compiled = self.compiled
        rolls_of = kernel(roll_rows, compiled)
        for block in hop_blocks(source.buf, run.file, run.start, run.end, compiled=compiled):
            if self.observe is not None:
                self.observe(block)
            n = len(block)
            rolls, bases = np.empty((2, n), dtype=np.int64)
            count = rolls_of(block.size, block.base_offset, block.last_offset, self.roll_state, self.segment_bytes,
                             self.start_offset, rolls, bases)
            done = 0
            for row, base in zip(rolls[:count].tolist(), bases[:count].tolist(), strict=True):
                self._append(source, block[done:row])
                self._roll(base)
                done = row
            self._append(source, block[done:])

    def _append(self, source: SourceFile, block: BatchBlock) -> None:
        if len(block):
            if self.segment is None:  # cannot be: the first row of a partition opens its first segment
                raise RuntimeError("rows before the first segment")
            self.segment.append(source, block)

    def _roll(self, base: int) -> None:
        """Close the open segment, snapshot the producers at `base`, open the segment starting there."""
        if self.segment is not None:
            self._close_segment()
            self._put_snapshot(base)
        self.segment = SegmentWriter(self.out, base, self.producers, epochs=self.epochs, interval=self.interval,
                                     compiled=self.compiled, method=self.method)

    def _close_segment(self) -> None:
        seg = self.segment
        if seg is None:
            return
        self.result.files += seg.close()  # on failure the segment stays open: `discard` drops its files
        self.segment = None
        self.method = seg.log.method
        self.result.segment_bases.append(seg.base_offset)
        self.result.log_end_offset = seg.next_offset if seg.next_offset is not None else seg.base_offset

    def finish(self, epochs: EpochCache | None, topic_id: str | None) -> None:
        if self.segment is None:  # no batches: one empty segment at the start offset
            self._roll(self.start_offset)
        self._close_segment()
        self._put_snapshot(self.result.log_end_offset)
        # The batches written say where each epoch starts (what the broker's recovery assigns); of `epochs`
        # only the entries at or past the log end are kept (a leader elected that has not written yet): an
        # entry the batches contradict is never copied into an output.
        leo = self.result.log_end_offset
        self.result.epochs = self.epochs if epochs is None else self.epochs.with_entries_from(epochs, leo)
        if self.tiered:
            self.result.epochs = _with_remote_entries(self.result.epochs, epochs, self.start_offset)
        self._put(names.LEADER_EPOCH_CHECKPOINT, checkpoint.build_leader_epoch_checkpoint(self.result.epochs.entries))
        if topic_id is not None:
            self._put(names.PARTITION_METADATA, build_partition_metadata(PartitionMetadata(0, topic_id)))

    def _put_snapshot(self, offset: int) -> None:
        entries = self.producers.snapshot_entries()
        self._put(names.segment_file_name(offset, "snapshot"), build_producer_snapshot(entries))

    def _put(self, name: str, data: bytes) -> None:
        atomic_write(self.out / name, data)
        self.result.files.append(name)

    def discard(self) -> None:
        """After a failure: drop the open segment's temporary files and every file written so far."""
        if self.segment is not None:
            self.segment.discard()
        for name in self.result.files:
            (self.out / name).unlink(missing_ok=True)


def _with_remote_entries(written: EpochCache, epochs: EpochCache | None, start: int) -> EpochCache:
    """`written` behind `epochs`' entries below the first segment (`start`), for a partition with remote storage
    (`write_partition_runs(tiered=True)`): its epoch cache starts at the log start, below the local segments (it
    keeps the cache from
    the log start: LogLoader `truncateFromStartAsyncFlush(logStartOffsetCheckpoint)`), and the brokers' remote log
    manager deletes every remote segment whose epochs the leader's cache does not hold (apache/kafka core/src/main/
    java/kafka/log/remote/RemoteLogManager.java `isRemoteSegmentWithinLeaderEpochs`, 3.9): dropping them would
    delete the remote data."""
    below = [e for e in (epochs.entries if epochs is not None else []) if e.start_offset < start]
    return EpochCache(below).with_entries_from(written, start) if below else written


def write_partition_runs(out_dir: str | os.PathLike[str], runs: Iterable[ByteRun], *,
                         segment_bytes: int = DEFAULT_SEGMENT_BYTES, topic_id: str | None = None,
                         epochs: EpochCache | None = None, start_offset: int = 0,
                         interval: int = INDEX_INTERVAL_BYTES,
                         observe: Callable[[BatchBlock], None] | None = None,
                         tiered: bool = False) -> WrittenPartition:
    """Write the batches of `runs`, in order, as a partition dir under `out_dir` (created; empty or new).

    The epoch checkpoint comes from the batches; `epochs` (the replica's cache) adds only its entries at
    or past the log end (a leader that was elected but never wrote keeps its entry). `observe` sees
    every block of written batches (header fields only: no CRC is computed here). On failure nothing
    this call wrote is left behind.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = WrittenPartition(str(out), log_end_offset=start_offset)
    partition = _Partition(out, result, segment_bytes, start_offset, interval, observe)
    partition.tiered = tiered
    try:
        with _Sources() as sources:
            for run in runs:
                partition.add(sources.of(run), run)
        partition.finish(epochs, topic_id)
    except BaseException:
        partition.discard()
        raise
    return result
