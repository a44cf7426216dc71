"""Summaries of Kafka log dirs and partition dirs: the model behind `ls`.

A scan walks every segment once (metadata only, memory flat) and derives the
offsets the broker would see (docs/reference/kafka.md §16.1): log start offset, log end
offset, high watermark and recovery point from the broker's checkpoints.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replog.formats.discovery import DirKind, is_partition_dir
from replog.formats.errors import FormatError, NotRegularFile, UnreadableInput
from replog.formats.fileio import EntryType, entry_type, is_regular, mapped, read_small
from replog.formats.findings import Finding, finding, from_error, from_unreadable
from replog.formats.kafka import checkpoint, meta_properties, names
from replog.formats.kafka.checkpoint import EpochEntry
from replog.formats.kafka.partition_files import list_partition_files
from replog.formats.kafka.segment import SegmentWalk
from replog.formats.kafka.txn_index import AbortedTxn
from replog.recovery.kafka.checks_segments import entry_findings, transient_finding
from replog.recovery.progress import Tally

if TYPE_CHECKING:
    import numpy as np

    from replog.formats.kafka.blocks import BatchBlock


@dataclass
class SegmentSummary:
    """What one pass over a `.log` found, without its batches: the one segment-scan result.

    `ls` fills it from a walk (`summarize_segment`), doctor's pass from its blocks (`segment_pass`), and a
    fleet scan has both done in one pass (the pass's result, folded by `SummaryFold`). Each fills what it
    walks for: the timestamps and epoch starts come from `SummaryFold`; the end position, highest last
    offset, ABORT markers, record findings and `reused` from the pass."""

    path: str
    base_offset: int
    size: int
    batch_count: int = 0                   # framed batches, valid or not
    first_offset: int | None = None        # base offset of the first framed batch
    valid_bytes: int = 0
    valid_next_offset: int | None = None   # last offset + 1 of the last batch recovery keeps
    first_timestamp: int | None = None
    max_timestamp: int | None = None
    epoch_starts: list[EpochEntry] = field(default_factory=list)  # epoch changes seen in batches
    findings: list[Finding] = field(default_factory=list)
    end_position: int = 0
    max_last_offset: int | None = None     # highest last offset of any framed batch
    aborted: list[AbortedTxn] = field(default_factory=list)  # ABORT markers met, as the .txnindex holds them
    record_findings: list[Finding] = field(default_factory=list)  # the record decode's (`RecordCheck`), if run
    reused: bool = False                   # fed from a recorded walk: the segment was not read


@dataclass
class PartitionSummary:
    path: str
    topic: str
    partition: int
    state: str
    segments: list[SegmentSummary] = field(default_factory=list)
    transient_files: list[str] = field(default_factory=list)
    log_start_offset: int = 0
    log_end_offset: int = 0
    high_watermark: int | None = None
    recovery_point: int | None = None
    epoch_checkpoint: list[EpochEntry] | None = None
    findings: list[Finding] = field(default_factory=list)
    log_start_checkpointed: int | None = None    # its log-start-offset-checkpoint entry
    local_log_start_offset: int | None = None    # below the log start's records: in remote storage (`tiered`)
    remote_storage: Any = None                   # the profile's remote.storage.enable `Setting`, once applied

    @property
    def local_start(self) -> int:
        """Where its local segments start (`UnifiedLog.localLogStartOffset`)."""
        return self.log_start_offset if self.local_log_start_offset is None else self.local_log_start_offset

    @property
    def bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def latest_epoch(self) -> int | None:
        if self.epoch_checkpoint:
            return self.epoch_checkpoint[-1].epoch
        starts = [e for s in self.segments for e in s.epoch_starts]
        return starts[-1].epoch if starts else None

    @property
    def first_timestamp(self) -> int | None:
        ts = [s.first_timestamp for s in self.segments if s.first_timestamp is not None]
        return min(ts) if ts else None

    @property
    def max_timestamp(self) -> int | None:
        ts = [s.max_timestamp for s in self.segments if s.max_timestamp is not None]
        return max(ts) if ts else None

    def all_findings(self) -> list[Finding]:
        return self.findings + [f for s in self.segments for f in s.findings]


@dataclass
class BrokerCheckpoints:
    """The log-dir root checkpoints, each mapping (topic, partition) -> offset."""

    high_watermarks: dict[tuple[str, int], int] | None = None
    recovery_points: dict[tuple[str, int], int] | None = None
    log_start_offsets: dict[tuple[str, int], int] | None = None
    cleaner_offsets: dict[tuple[str, int], int] | None = None
    findings: list[Finding] = field(default_factory=list)
    line_positions: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)  # by attribute name


@dataclass
class LogDirSummary:
    path: str
    checkpoints: BrokerCheckpoints
    clean_shutdown: bool
    partitions: list[PartitionSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def read_broker_checkpoints(log_dir: str | os.PathLike[str],
                            read: Callable[[Path], bytes] = read_small) -> BrokerCheckpoints:
    """Parse the root checkpoints that exist; a malformed one becomes a finding.

    `read` lets doctor route every read through its evidence log (hashing).
    """
    out = BrokerCheckpoints()
    for name, attr in names.ROOT_OFFSET_CHECKPOINTS.items():
        path = Path(log_dir) / name
        if entry_type(path) is EntryType.MISSING:
            continue
        try:
            data = read(path)
            setattr(out, attr, checkpoint.parse_offset_checkpoint(data))
            out.line_positions[attr] = checkpoint.offset_checkpoint_positions(data)
        except FormatError as e:
            out.findings.append(from_error(e, str(path)))
        except UnreadableInput as e:
            out.findings.append(from_unreadable(e, str(path)))
    return out


def node_id(log_dir: str | os.PathLike[str]) -> int | None:
    """node.id / broker.id from the log dir's meta.properties; None when absent or unreadable."""
    meta = Path(log_dir) / names.META_PROPERTIES
    if not is_regular(meta):
        return None
    try:
        return meta_properties.parse_meta_properties(read_small(meta)).node_id
    except (FormatError, UnreadableInput):
        return None


FAST_WALK_BYTES = 8 << 20  # segments above this are walked by the numba kernel (its import costs ~0.6 s)


FAST_WALK_BATCHES = 30_000  # ~0.45 s of the reference walk (~15 us a batch): what loading the kernel costs


def use_fast_walk(size: int, threshold: int | None = None, buf: bytes | memoryview | None = None) -> bool:
    """True when a segment of `size` bytes pays for the compiled walk (and numba is installed).

    The reference walk's cost is its batches more than its bytes: given the segment (`buf`) and no
    explicit `threshold`, a smaller segment of many small batches (estimated from its first) takes the
    kernel too, e.g. 4 MiB of 1-record batches, whose ~45k batches the reference walks in ~0.7 s."""
    small = size <= (FAST_WALK_BYTES if threshold is None else threshold)
    if small and (threshold is not None or buf is None or estimated_batches(buf) <= FAST_WALK_BATCHES):
        return False
    from replog.formats.kafka.fastwalk import HAVE_NUMBA
    return HAVE_NUMBA


def estimated_batches(buf: bytes | memoryview) -> int:
    """How many batches `buf` holds if all were the size of its first (0 when the first is unreadable)."""
    if len(buf) < 12:
        return 0
    first = 12 + int.from_bytes(bytes(buf[8:12]), "big", signed=True)
    return len(buf) // first if 12 < first <= len(buf) else 0


class RisingEpochs:
    """Epoch starts by recovery's rule: a v2 batch starts an epoch only when its epoch exceeds all before."""

    def __init__(self) -> None:
        self.top = -1
        self.starts: list[EpochEntry] = []

    def feed(self, epoch: int, base_offset: int) -> None:
        if epoch > self.top:
            self.top = epoch
            self.starts.append(EpochEntry(epoch, base_offset))

    def feed_columns(self, epoch: np.ndarray, base: np.ndarray) -> None:
        """`feed` over columns; Python runs only on the rows where the running maximum grows."""
        import numpy as np
        if not len(epoch):
            return
        before = np.maximum.accumulate(np.concatenate(([self.top], epoch)))[:-1]
        for i in np.flatnonzero(epoch > before).tolist():
            self.feed(int(epoch[i]), int(base[i]))


def summarize_segment(path: Path, base_offset: int, fast_threshold: int | None = None, *,
                      live: bool = False) -> SegmentSummary:
    """One pass over a segment: counts, offsets, timestamps, epoch changes, findings.

    Segments larger than `fast_threshold` (default `FAST_WALK_BYTES`) are walked
    by the compiled kernel and summarised over its columns; same answer (tested).
    A `live` one (the broker may be writing it) is read with pread, never mapped.
    """
    with mapped(path, live=live, windows=True) as buf:
        summary = SegmentSummary(str(path), base_offset, len(buf))
        if use_fast_walk(len(buf), fast_threshold, buf):
            walk = _summarize_fast(buf, summary)
        else:
            walk = _summarize_reference(buf, summary)
        summary_from_walk(summary, walk.batch_count, walk.first_offset, walk.valid_bytes, walk.findings)
    return summary


def summary_from_walk(summary: SegmentSummary, batch_count: int, first_offset: int | None, valid_bytes: int,
                      findings: list[Finding]) -> SegmentSummary:
    """What a segment's summary takes from its finished walk rather than from its batches."""
    summary.batch_count, summary.first_offset = batch_count, first_offset
    summary.valid_bytes, summary.findings = valid_bytes, findings
    return summary


def _summarize_reference(buf: memoryview, summary: SegmentSummary) -> SegmentWalk:
    walk = SegmentWalk(buf, summary.path, summary.base_offset)
    epochs = RisingEpochs()
    for b in walk.batches():
        if b.end > walk.valid_bytes:
            continue
        summary.valid_next_offset = b.next_offset
        if b.max_timestamp >= 0:
            first = b.first_timestamp if b.first_timestamp >= 0 else b.max_timestamp
            _timestamps(summary, first, b.max_timestamp)
        if b.magic == 2:
            epochs.feed(b.partition_leader_epoch, b.base_offset)
    summary.epoch_starts = epochs.starts
    return walk


def _timestamps(summary: SegmentSummary, first: int, maximum: int) -> None:
    summary.max_timestamp = maximum if summary.max_timestamp is None else max(summary.max_timestamp, maximum)
    summary.first_timestamp = first if summary.first_timestamp is None else min(summary.first_timestamp, first)


class SummaryFold:
    """`_summarize_reference`'s rules over a walk's blocks, vectorised per block: the next offset,
    timestamps and epoch starts of the batches recovery keeps. Fed by our own compiled walk, or by
    a pass that walks the segment for other checks too (a fleet scan rides doctor's)."""

    def __init__(self, summary: SegmentSummary) -> None:
        self.summary, self.epochs = summary, RisingEpochs()
        summary.epoch_starts = self.epochs.starts

    def feed(self, block: BatchBlock, valid_bytes: int) -> None:
        """The next block of the segment, with the walk's `valid_bytes` when it was handed out."""
        import numpy as np
        kept = int(np.searchsorted(block.end, valid_bytes, side="right"))
        if not kept:
            return
        block = block[:kept]
        summary = self.summary
        summary.valid_next_offset = int(block.last_offset[-1]) + 1
        max_ts = block.max_timestamp
        stamped = max_ts >= 0
        if stamped.any():
            first = np.where(block.first_timestamp >= 0, block.first_timestamp, max_ts)[stamped]
            _timestamps(summary, int(first.min()), int(max_ts[stamped].max()))
        v2 = block.magic == 2
        self.epochs.feed_columns(block.partition_leader_epoch[v2], block.base_offset[v2])


def _summarize_fast(buf: memoryview, summary: SegmentSummary) -> SegmentWalk:
    """`_summarize_reference` over the kernel's batch blocks (`SummaryFold`)."""
    from replog.formats.kafka.fastwalk import FastWalk
    walk = FastWalk(buf, summary.path, summary.base_offset)
    fold = SummaryFold(summary)
    for block in walk.blocks():
        fold.feed(block, walk.valid_bytes)
    return walk.reference


def summarize_partition(path: str | os.PathLike[str], checkpoints: BrokerCheckpoints | None = None, *,
                        fast_threshold: int | None = None,
                        summaries: Mapping[int, SegmentSummary] | None = None,
                        tally: Tally | None = None) -> PartitionSummary:
    """Scan one partition dir; offsets from its segments and the broker checkpoints.

    `summaries` (by base offset) are segments a caller has already summarised from its own pass
    (a fleet scan, from doctor's); the others are walked here. `tally` counts each segment done.
    """
    p = Path(path)
    parsed = names.parse_partition_dir(p.name)
    if parsed is None:
        raise UnreadableInput(f"{p}: not a topic-partition directory name")
    part = PartitionSummary(str(p), parsed.topic, parsed.partition, parsed.state)
    files = list_partition_files(p)
    for path, seg in files.transient:
        part.transient_files.append(path.name)
        part.findings.append(transient_finding(path, seg))
    part.findings += [f for f in entry_findings(files) if f.severity.value != "info"]
    for base, path in files.logs.items():
        given = (summaries or {}).get(base)
        part.segments.append(given if given is not None else
                             _summarize_or_note(path, base, fast_threshold, files.live(path)))
        if tally is not None:
            tally.done(path)
    _read_epoch_checkpoint(p, part)
    _derive_offsets(part, checkpoints or BrokerCheckpoints())
    return part


def _summarize_or_note(path: Path, base: int, fast_threshold: int | None, live: bool) -> SegmentSummary:
    """`summarize_segment`, or an empty summary carrying why the segment could not be read:
    one unreadable segment marks its partition, it does not end the overview."""
    try:
        return summarize_segment(path, base, fast_threshold, live=live)
    except UnreadableInput as e:
        return SegmentSummary(str(path), base, 0, findings=[from_unreadable(e, str(path))])


def _read_epoch_checkpoint(p: Path, part: PartitionSummary) -> None:
    path = p / names.LEADER_EPOCH_CHECKPOINT
    if not is_regular(path):
        return  # absent, or not a regular file (`entry_findings` reports that)
    try:
        part.epoch_checkpoint = checkpoint.parse_leader_epoch_checkpoint(read_small(path))
    except FormatError as e:
        part.findings.append(from_error(e, str(path)))
    except UnreadableInput as e:
        part.findings.append(from_unreadable(e, str(path)))


def _derive_offsets(part: PartitionSummary, cps: BrokerCheckpoints) -> None:
    """LSO, LEO, HW and recovery point as the broker derives them at load."""
    tp = (part.topic, part.partition)
    first_base = part.segments[0].base_offset if part.segments else 0
    lso_cp = (cps.log_start_offsets or {}).get(tp)
    part.log_start_checkpointed = lso_cp
    part.log_start_offset = max(lso_cp or 0, first_base)
    last = part.segments[-1] if part.segments else None
    if last is None:
        part.log_end_offset = part.log_start_offset
    else:
        part.log_end_offset = last.valid_next_offset if last.valid_next_offset is not None else last.base_offset
    if cps.high_watermarks is not None:
        part.high_watermark = cps.high_watermarks.get(tp)
    if cps.recovery_points is not None:
        part.recovery_point = cps.recovery_points.get(tp)


def summarize_log_dir(path: str | os.PathLike[str], tally: Tally | None = None) -> LogDirSummary:
    """Scan a broker log dir: its root checkpoints and every partition dir in it (`tally`: segments done).

    A partition that cannot be read (an unlistable dir, a symlink loop with a partition's name)
    is still listed, empty, with the finding that says why; only an unlistable log dir raises.
    """
    p = Path(path)
    cps = read_broker_checkpoints(p)
    summary = LogDirSummary(str(p), cps, os.path.lexists(p / names.CLEAN_SHUTDOWN), findings=list(cps.findings))
    try:
        entries = sorted(os.listdir(p))
    except OSError as e:
        raise UnreadableInput(f"cannot list {p}: {e.strerror}") from None
    for name in entries:
        part = _partition_entry(p / name, cps, tally)
        if part is not None:
            summary.partitions.append(part)
    return summary


def summarize_roots(roots: list[tuple[DirKind, Path]],
                    tally: Tally | None = None) -> tuple[list[PartitionSummary], list[Finding]]:
    """The partitions of Kafka log dirs and partition dirs (as `discovery.find_roots` gives them),
    and the log dirs' own findings (their root checkpoints). A partition dir given on its own uses its
    parent's checkpoints; one that cannot be listed raises `UnreadableInput`. `tally`: segments done."""
    parts: list[PartitionSummary] = []
    found: list[Finding] = []
    for kind, root in roots:
        if kind is DirKind.KAFKA_LOG_DIR:
            summary = summarize_log_dir(root, tally)
            parts += summary.partitions
            found += summary.findings
        elif kind is DirKind.KAFKA_PARTITION_DIR:
            parts.append(summarize_partition(root, read_broker_checkpoints(root.parent), tally=tally))
    return parts, found


def _partition_entry(path: Path, cps: BrokerCheckpoints, tally: Tally | None = None) -> PartitionSummary | None:
    """The summary of a log-dir entry named like a partition (None for any other entry)."""
    parsed = names.parse_partition_dir(path.name)
    if parsed is None:
        return None
    kind = entry_type(path)
    if kind is EntryType.DIRECTORY:
        if not is_partition_dir(path):
            return None
        try:
            return summarize_partition(path, cps, tally=tally)
        except UnreadableInput as e:
            problem = from_unreadable(e, str(path))
    elif kind in (EntryType.REGULAR, EntryType.MISSING):
        return None  # a stray file: doctor notes it, it holds no partition
    elif kind is EntryType.INACCESSIBLE:
        problem = finding("UNREADABLE_FILE", str(path), message=f"{path.name}: cannot be examined")
    else:
        problem = from_unreadable(NotRegularFile(str(path), kind.value, "a partition directory"), str(path))
    return PartitionSummary(str(path), parsed.topic, parsed.partition, parsed.state, findings=[problem])


def flags(part: PartitionSummary) -> list[str]:
    """Short markers for anything odd, for one-line overviews."""
    out = sorted({f.code.removeprefix("KAFKA_").lower().replace("_", "-")
                  for f in part.all_findings() if f.severity.value != "info"})
    if part.high_watermark is not None and part.high_watermark > part.log_end_offset:
        out.append("hw>leo")
    if part.epoch_checkpoint and part.epoch_checkpoint[-1].start_offset > part.log_end_offset:
        out.append("epoch>leo")
    if part.state != "live":
        out.append(part.state)
    return out
