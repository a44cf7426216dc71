"""What a scan keeps of each sealed segment so that the next scan need not read it again.

Every Kafka segment but the active one is immutable once rolled (the broker appends to the active
segment only; docs/reference/kafka.md §2). A scan records, for every sealed segment it walks, the walk itself: its
batch columns (the blocks every check reads), the transaction markers among them, its outcome
(valid bytes, end position, the walk's findings) and the record decode's findings. A later scan
given this one's output (`fleet scan --since DIR`) reuses that record (`segment_pass.reuse_blocks`)
instead of reading the segment, when the segment is unchanged: same path, size, mtime and inode,
and the same CRC in the first and last batch headers (read from the file: two headers, not the
segment). Everything downstream of the walk (epochs, producer state, indexes, summaries, batch
rows) runs again on the reused blocks, so a rescan's tables are those of a full scan.

On disk, under OUT/_cache/: per task, `blocks-<scan>-<task>.arrow` (Arrow IPC file, zstd: the
recorded batch rows in record batches of about `ROWS` rows, a segment's rows consecutive from a given
row of a given record batch, read back by index) and `index-<task>.parquet` (one row per recorded
segment, `INDEX`). The driver of the next scan reads the index and hands each unit the entries of
its partition whose file metadata still match (`candidates`); the executor checks the CRCs. A rescan
hard-links the earlier block files into its own cache (`inherit`) and indexes the segments it
reused again (`Recorder.carry`), so each scan's cache is complete on its own and the earlier scan
may be deleted; block files no entry refers to any more are removed (`prune`).
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TypedDict

import pyarrow as pa
import pyarrow.parquet as pq

from replog.formats.errors import ReplogError
from replog.formats.fileio import mapped
from replog.formats.findings import Finding, Severity
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.columns import BATCH_SCHEMA
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.logdir import SegmentSummary
from replog.recovery.kafka.segment_pass import Markers, Walked
from replog.spark.schemas import I32, I64, FindingFields, Str, rows_of, schema_of
from replog.spark.sinks import IpcSink, ParquetSink

CACHE_DIR = "_cache"
BLOCK_SCHEMA = pa.schema([f for f in BATCH_SCHEMA if f.name != "path"])
class CachedFinding(FindingFields):
    """A walk's finding as the index keeps it (`details` as JSON)."""
    details: Str | None


class MarkerRow(TypedDict):
    """A transaction marker of the walk by batch position (control type None: not a marker the pass read)."""
    position: I64
    control_type: I32 | None
    coordinator_epoch: I32 | None


class IndexEntry(TypedDict):
    """One recorded segment: its file metadata, where its rows are in the block files, the walk's outcome."""
    partition_path: Str
    path: Str
    base_offset: I64
    size: I64
    mtime_ns: I64
    inode: I64
    first_crc: I64 | None
    last_crc: I64 | None
    last_position: I64 | None             # null: no batch
    file: Str
    first_batch: I32
    first_row: I32
    rows: I64
    valid_bytes: I64
    end_position: I64
    findings: list[CachedFinding]
    record_findings: list[CachedFinding]
    markers: list[MarkerRow]


INDEX = schema_of(IndexEntry)
Stat = tuple[int, int, int]   # size, mtime_ns, inode
ROWS = 1 << 16                # batch rows per record batch of a block file (small segments share one)
Index = dict[str, dict[int, IndexEntry]]   # partition path -> base offset -> index row


def file_stat(st: os.stat_result) -> Stat:
    return st.st_size, st.st_mtime_ns, st.st_ino


# -- findings and markers as cache rows --------------------------------------------------------


def _finding_row(f: Finding) -> CachedFinding:
    return {"code": f.code, "severity": f.severity.value, "path": f.path, "position": f.position,
            "offset": f.offset, "message": f.message,
            "details": json.dumps(f.details, default=str) if f.details else None}


def _finding(row: CachedFinding) -> Finding:
    return Finding(row["code"], row["path"], row["position"], row["offset"], row["message"],
                   Severity(row["severity"]), json.loads(row["details"]) if row["details"] else {})


def _marker_rows(markers: Markers) -> list[MarkerRow]:
    return [{"position": pos, "control_type": None if m is None else m[0],
             "coordinator_epoch": None if m is None else m[1]} for pos, m in sorted(markers.items())]


def _markers(rows: list[MarkerRow]) -> Markers:
    return {r["position"]: (None if r["control_type"] is None or r["coordinator_epoch"] is None
                            else (r["control_type"], r["coordinator_epoch"])) for r in rows}


# -- recording (executors) ------------------------------------------------------------------------


@dataclass
class _Open:
    """The segment being recorded: its file metadata, first block and markers so far."""

    partition_path: str
    stat: Stat
    first_batch: int = 0
    first_row: int = 0
    rows: int = 0
    first_crc: int | None = None
    last: tuple[int, int] | None = None     # (position, crc) of the last batch seen
    markers: Markers = field(default_factory=dict)


class Recorder:
    """One task's cache files: `record` the blocks of each sealed segment as its pass walks them, `end`
    the segment with its outcome; `close` commits both files (nothing when nothing was recorded)."""

    def __init__(self, out: Path, task: int, scan: str) -> None:
        self.dir, self.task = out / CACHE_DIR, task
        self.blocks_path = self.dir / f"blocks-{scan}-{task:05d}.arrow"
        self._blocks: IpcSink | None = None
        self._index: ParquetSink | None = None
        self._open: dict[str, _Open] = {}
        self._pending: list[pa.RecordBatch] = []   # rows for the next record batch of the block file
        self._pending_rows = 0
        self._index_rows: list[IndexEntry] = []
        self.rows = 0

    def begin(self, partition_path: str, path: Path, stat: Stat) -> None:
        """A sealed segment whose walk is about to be recorded (with its metadata before the walk)."""
        if self._blocks is None:
            self.dir.mkdir(exist_ok=True)
            self._blocks = IpcSink(self.blocks_path, BLOCK_SCHEMA)
        self._open[str(path)] = _Open(partition_path, stat)

    def recording(self, walked: Walked) -> bool:
        """Whether the segment of this block is being recorded here."""
        return str(walked.segment.path) in self._open

    def record(self, walked: Walked, chunk: pa.RecordBatch) -> None:
        """One block of a segment begun here (`chunk`: its rows typed as the batch table's, with `path`)."""
        seg = self._open.get(str(walked.segment.path))
        if seg is None or self._blocks is None or not len(walked.block):
            return
        if self._pending_rows and self._pending_rows + chunk.num_rows > ROWS:
            self._flush_blocks()
        if not seg.rows:
            seg.first_batch, seg.first_row = self._blocks.batches, self._pending_rows
        self._pending.append(chunk.drop_columns(["path"]))
        self._pending_rows += chunk.num_rows
        seg.rows += chunk.num_rows
        if self._pending_rows >= ROWS:
            self._flush_blocks()
        if seg.first_crc is None:
            seg.first_crc = int(walked.block.crc[0])
        seg.last = (int(walked.block.position[-1]), int(walked.block.crc[-1]))
        seg.markers.update(walked.markers)

    def end(self, result: SegmentSummary) -> None:
        """The segment's pass is over: index it (unless it was reused or not begun here)."""
        seg = self._open.pop(str(result.path), None)
        if seg is None or result.reused:
            return
        size, mtime, inode = seg.stat
        self._write({
            "partition_path": seg.partition_path, "path": str(result.path), "base_offset": result.base_offset,
            "size": size, "mtime_ns": mtime, "inode": inode, "first_crc": seg.first_crc,
            "last_crc": seg.last[1] if seg.last else None, "last_position": seg.last[0] if seg.last else None,
            "file": self.blocks_path.name, "first_batch": seg.first_batch, "first_row": seg.first_row,
            "rows": seg.rows,
            "valid_bytes": result.valid_bytes, "end_position": result.end_position,
            "findings": [_finding_row(f) for f in result.findings],
            "record_findings": [_finding_row(f) for f in result.record_findings],
            "markers": _marker_rows(seg.markers)})

    def carry(self, entry: IndexEntry) -> None:
        """Index again a segment reused from `entry` (its blocks stay in the file they are in)."""
        self._write({**entry, "file": _relative(Path(entry["file"]), self.dir)})

    def _write(self, row: IndexEntry) -> None:
        self._index_rows.append(row)
        self.rows += 1
        if len(self._index_rows) >= 4096:
            self._flush_index()

    def _flush_blocks(self) -> None:
        if self._pending and self._blocks is not None:
            batches = pa.Table.from_batches(self._pending, BLOCK_SCHEMA).combine_chunks().to_batches()
            self._blocks.write(batches[0] if len(batches) == 1 else pa.concat_batches(batches))
        self._pending, self._pending_rows = [], 0

    def _flush_index(self) -> None:
        if not self._index_rows:
            return
        if self._index is None:
            self.dir.mkdir(exist_ok=True)
            self._index = ParquetSink(self.dir / f"index-{self.task:05d}.parquet", INDEX)
        self._index.write(pa.RecordBatch.from_pylist(self._index_rows, schema=INDEX))
        self._index_rows = []

    def close(self) -> None:
        self._flush_blocks()
        self._flush_index()
        for sink in (self._blocks, self._index):
            if sink is not None:
                sink.close()

    def discard(self) -> None:
        for sink in (self._blocks, self._index):
            if sink is not None:
                sink.discard()


# -- reusing (executors) ------------------------------------------------------------------------


@dataclass
class CachedWalk:
    """A recorded walk (`segment_pass.RecordedWalk`) read back from the cache files: the walk's outcome as its
    index row recorded it (`of`); its markers and blocks are read from the row when asked."""

    entry: IndexEntry
    size: int
    valid_bytes: int
    end_position: int
    findings: list[Finding]
    record_findings: list[Finding]

    @classmethod
    def of(cls, entry: IndexEntry) -> CachedWalk:
        return cls(entry, int(entry["size"]), int(entry["valid_bytes"]), int(entry["end_position"]),
                   [_finding(r) for r in entry["findings"]], [_finding(r) for r in entry["record_findings"]])

    @cached_property
    def markers(self) -> Markers:
        return _markers(self.entry["markers"])

    def blocks(self) -> Iterator[BatchBlock]:
        """The recorded rows, a block per record batch they lie in (at most `ROWS` rows each)."""
        with pa.memory_map(self.entry["file"]) as source:
            reader = pa.ipc.open_file(source)
            batch, skip, left = self.entry["first_batch"], self.entry["first_row"], self.entry["rows"]
            while left > 0:
                part = reader.get_batch(batch).slice(skip, left)
                yield BatchBlock.from_arrow(part)
                left -= part.num_rows
                batch, skip = batch + 1, 0


def unchanged(entry: IndexEntry, path: Path) -> bool:
    """The segment at `path` is the one `entry` recorded: same size, mtime and inode, and the same CRC in
    the headers of its first and last batches (read at the recorded positions)."""
    try:
        if file_stat(os.stat(path)) != (entry["size"], entry["mtime_ns"], entry["inode"]):
            return False
        if entry["last_position"] is None:
            return True
        with mapped(path) as buf:
            walk = SegmentWalk(buf, str(path))
            first, last = walk.read_at(0, len(buf)), walk.read_at(entry["last_position"], len(buf))
    except (OSError, ReplogError):
        return False
    return (first is not None and last is not None and first.crc == entry["first_crc"]
            and last.crc == entry["last_crc"])


# -- planning (driver) --------------------------------------------------------------------------


def _relative(path: Path, folder: Path) -> str:
    """A block file's name when it is in `folder` (the index's own), else its full path."""
    return path.name if path.parent == folder else str(path)


def load_index(folder: Path) -> Index:
    """The recorded segments of the cache in `folder` (each `file` resolved against it): partition path ->
    base offset -> index row. Entries whose block file is gone are left out."""
    files = sorted(folder.glob("index-*.parquet")) if folder.is_dir() else []
    out: Index = {}
    for f in files:
        for row in rows_of(pq.read_table(f, schema=INDEX), IndexEntry):
            row["file"] = str(folder / row["file"])
            if Path(row["file"]).is_file():
                out.setdefault(row["partition_path"], {})[row["base_offset"]] = row
    return out


def inherit(since: Path, out: Path) -> Index:
    """A rescan's start: the earlier scan's block files hard-linked into OUT's cache (where a link
    cannot be made, the entries keep pointing into the earlier scan), and its index read."""
    old, new = since / CACHE_DIR, out / CACHE_DIR
    index = load_index(old)
    new.mkdir(parents=True, exist_ok=True)
    moved: dict[str, str] = {}
    for blocks in sorted(old.glob("blocks-*.arrow")) if old.is_dir() else []:
        try:
            os.link(blocks, new / blocks.name)
            moved[str(blocks)] = str(new / blocks.name)
        except OSError:
            continue
    for rows in index.values():
        for row in rows.values():
            row["file"] = moved.get(row["file"], row["file"])
    return index


def prune(out: Path) -> int:
    """Remove the block files of OUT's cache that no entry of its index refers to; how many."""
    folder = out / CACHE_DIR
    used = {Path(row["file"]).name for rows in load_index(folder).values() for row in rows.values()
            if Path(row["file"]).parent == folder}
    removed = 0
    for blocks in sorted(folder.glob("blocks-*.arrow")) if folder.is_dir() else []:
        if blocks.name not in used:
            blocks.unlink()
            removed += 1
    return removed


def candidates(index: Index, partition_path: str,
               stats: dict[int, Stat]) -> list[IndexEntry]:
    """The recorded segments of a partition that look unchanged (`stats`: base offset -> file metadata of
    its sealed segments, the active one left out); the executor checks their CRCs (`unchanged`)."""
    recorded = index.get(partition_path, {})
    return [recorded[base] for base, stat in sorted(stats.items())
            if base in recorded and (recorded[base]["size"], recorded[base]["mtime_ns"],
                                     recorded[base]["inode"]) == stat]
