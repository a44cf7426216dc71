"""What one executor task does: scan one unit, return Arrow record batches per table.

Pure functions, no Spark: a unit is a partition dir (or a log dir's root
files, or a RocketMQ store) of one broker. A partition is read in one pass per
segment, doctor's (`recovery.kafka.doctor.partition_pass`: every check, over
blocks of batch columns, from the compiled walk above `FAST_WALK_BYTES`); the
very blocks its checks read also feed the segment summaries of `ls`
(`logdir.SummaryFold`, then `summarize_partition`) and the batch table
(`BatchBlock.to_arrow`), so each segment is opened and walked once and memory
is bounded by one block, whatever the partition holds.

A partition dir larger than `split_bytes` becomes one light `partition` unit
(ls summary and doctor's checks with framing/CRC walks only: everything that
needs the partition's batches in order) and `segments` units, groups of
consecutive segments, doing the per-segment heavy work in one pass each:
decoding every record (doctor's `RecordCheck`) and the batch table. Their
finding counts are added to the light unit's rows afterwards
(`apply_split_counts`, or the same join in Spark), so split and unsplit scans
give equal tables.

Walks of sealed segments are recorded for the next scan, and reused from an
earlier scan's record instead of read when the segment is unchanged
(`spark.cache`). Without the batch table, a block gives the few columns the
replica comparison reads (`replica_batches`, internal).

A unit with `fs` set lives behind a pyarrow filesystem: its files are streamed
to a scratch dir (`spark.remote`) and scanned there with the same code.
Units are planned in `spark.units`, rows built in `spark.rows`; replica sets
(the `replicas` table) are `spark.replica_sets`.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from replog.formats.discovery import is_partition_dir
from replog.formats.errors import ReplogError
from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding
from replog.formats.kafka import names
from replog.recovery.evidence import Evidence
from replog.recovery.kafka import checks_broker, checks_segments, doctor
from replog.recovery.kafka.checks_broker import PartitionOffsets
from replog.recovery.kafka.logdir import SegmentSummary, SummaryFold, summarize_partition, use_fast_walk
from replog.recovery.kafka.segment_pass import Walked, segment_blocks
from replog.spark import cache, remote, schemas
from replog.spark.digests import digest_rows
from replog.spark.identity import read_identity
from replog.spark.rows import (
    batch_rows,
    findings_batch,
    partition_batch,
    replica_batch_rows,
    segments_batch,
    severity_counts,
    unit_place,
)
from replog.spark.schemas import SplitCountsRow, StoreRow, Where
from replog.spark.units import Unit, checkpoints_for, file_stats, sealed_stats

TableBatch = tuple[str, pa.RecordBatch]


@dataclass
class Context:
    """What a task hands every unit it runs: whether the batch table is written, where the walks of
    sealed segments are recorded for the next scan (`spark.cache`; None: nowhere), the size above which
    a segment takes the compiled walk (None: doctor's default; a fleet scan gives 0, so every segment
    is walked by the same kernels), whether the blocks' digests are written for the replica comparison
    (`spark.digests`; a scan's tasks write them), and the counts of segments read and reused."""

    with_batches: bool = True
    recorder: cache.Recorder | None = None
    fast_threshold: int | None = None
    digests: bool = False
    replica_rows: bool = True   # without the batch table: the comparison's rows (a scan reads local ones again)
    counts: Counter[str] = field(default_factory=Counter)

    def count(self, seg: SegmentSummary) -> None:
        kind = "reused" if seg.reused else "read"
        self.counts[f"segments_{kind}"] += 1
        self.counts[f"bytes_{kind}"] += seg.size


def run_unit(unit: Unit, *, with_batches: bool = True, context: Context | None = None) -> Iterator[TableBatch]:
    """Every table's rows for one unit; damage is data, so bad input never raises here."""
    context = Context(with_batches) if context is None else context
    where = unit_place(unit)
    try:
        if unit.fs is not None:
            yield from run_remote_unit(unit, context)
        elif unit.kind == "log_dir":
            yield "findings", findings_batch(where, log_dir_findings(Path(unit.path)))
        elif unit.kind == "store":
            yield from store_tables(unit)
        elif unit.kind == "segments":
            yield from segment_group_tables(unit, context)
        elif unit.kind == "tail":
            from replog.spark.tail import tail_tables
            yield from tail_tables(unit)
        else:
            yield from partition_tables(unit, context)
    except (ReplogError, OSError) as e:
        yield "findings", findings_batch(where, [finding("UNREADABLE_FILE", unit.path, message=str(e))])
    except Exception as e:  # noqa: BLE001 - one bad dir must not fail the fleet job
        yield "findings", findings_batch(where, [finding("INTERNAL_ERROR", unit.path,
                                                         message=f"{type(e).__name__}: {e}")])


def partition_tables(unit: Unit, context: Context) -> Iterator[TableBatch]:
    """A partition unit: doctor's pass over each segment (`doctor.partition_pass`; a light unit leaves
    the record decoding of `covered` segments to its segments units), whose blocks also make the `ls`
    summary and the batch rows, and are recorded for the next scan; then the partition's
    `partitions`, `segments` and `findings` rows. Sealed segments the unit brings recorded walks of
    are reused when unchanged (`cache.unchanged`), not read.

    A segment doctor cannot read gets no summary from the pass: `summarize_partition` then reads it
    itself and raises as `ls` would, so the unit reports it unreadable, as before."""
    where = unit_place(unit)
    cps = checkpoints_for(unit)
    covered = set(unit.covered or ())
    entries = {e["base_offset"]: e for e in unit.reuse or ()}
    sealed = sealed_stats(file_stats(Path(unit.path))) if context.recorder is not None else {}
    steps = doctor.partition_pass(Evidence(hash_files=False), Path(unit.path), cps, Path(unit.log_dir),
                                  deep=lambda base: base not in covered, fast_threshold=context.fast_threshold,
                                  recorded=_recorded(entries) if entries else None)
    summaries = PassSummaries()
    current: SegmentSummary | None = None
    while True:
        try:
            step = next(steps)
        except StopIteration as done:
            _, found = done.value
            break
        summaries.feed(step)
        if isinstance(step, Walked):
            seg = step.segment
            if seg is not current:
                current = seg
                if context.recorder is not None and seg.base_offset in sealed and seg.base_offset not in covered \
                        and not seg.reused:
                    context.recorder.begin(unit.path, Path(seg.path), sealed[seg.base_offset])
            if seg.base_offset not in covered:
                yield from block_tables(where, step, context)
        else:
            if step.base_offset not in covered:
                context.count(step)
            if context.recorder is not None and step.reused:
                context.recorder.carry(entries[step.base_offset])
            elif context.recorder is not None:
                context.recorder.end(step)
    part = summarize_partition(unit.path, cps, summaries=summaries.by_base)
    yield "partitions", partition_batch(unit, part, found)
    yield "segments", segments_batch(where, part, found)
    yield "findings", findings_batch(where, found)


def _recorded(entries: dict[int, cache.IndexEntry]) -> doctor.Recorded:
    """The unit's recorded walks, each handed to the pass when its segment is sealed and unchanged."""

    def recorded(base: int, path: Path, active: bool) -> cache.CachedWalk | None:
        entry = entries.get(base)
        return cache.CachedWalk.of(entry) if entry is not None and not active and cache.unchanged(entry, path) else None

    return recorded


def block_tables(where: Where, walked: Walked, context: Context) -> Iterator[TableBatch]:
    """One block's rows: the batch table's, or (without it) what the replica comparison reads; and the
    block recorded when its segment is."""
    recorder = context.recorder
    recording = recorder is not None and recorder.recording(walked)
    chunk = walked.block.to_arrow(str(walked.segment.path)) if context.with_batches or recording else None
    if context.with_batches:
        yield "batches", batch_rows(where, walked, chunk)
    elif context.replica_rows:
        yield "replica_batches", replica_batch_rows(where, walked)
    if context.digests:
        yield "replica_digests", digest_rows(where, walked.block)
    if recording and recorder is not None and chunk is not None:
        recorder.record(walked, chunk)


class PassSummaries:
    """The `ls` summary of every segment a doctor pass walked: the pass's own result (`SegmentSummary`),
    its blocks folded by `SummaryFold` for the timestamps and epoch starts."""

    def __init__(self) -> None:
        self.by_base: dict[int, SegmentSummary] = {}
        self._fold: SummaryFold | None = None

    def feed(self, step: doctor.PartitionStep) -> None:
        if isinstance(step, Walked):
            if self._fold is None:
                self._fold = SummaryFold(step.segment)
            self._fold.feed(step.block, step.valid_bytes)
            return
        self.by_base[step.base_offset] = step
        self._fold = None


# -- split partitions ------------------------------------------------------------------


def segment_group_tables(unit: Unit, context: Context) -> Iterator[TableBatch]:
    """A segments unit: doctor's record decoding of its segments (findings and their counts), batch rows."""
    where = unit_place(unit)
    found: list[Finding] = []
    counts: list[SplitCountsRow] = []
    sealed = sealed_stats(file_stats(Path(unit.path))) if context.recorder is not None else {}
    for base in unit.segments or []:
        path = Path(unit.path) / names.segment_file_name(base, "log")
        deep = yield from segment_tables(where, path, base, context, unit.path if base in sealed else None,
                                         sealed.get(base))
        found += deep
        if deep:
            counts.append({"partition_path": unit.path, "path": str(path), **severity_counts(deep)})
    yield "findings", findings_batch(where, found)
    yield "split_counts", pa.RecordBatch.from_pylist(counts, schema=schemas.SPLIT_COUNTS)


class _MarkersOnly:
    """A state feed that keeps nothing: fed, the pass decodes the transaction markers (for the record)."""

    def feed_block(self, block: Any, path: str, markers: Any) -> list[Any]:
        return []


def segment_tables(where: Where, path: Path, base: int, context: Context,
                   partition_path: str | None = None,
                   stat: cache.Stat | None = None) -> Generator[TableBatch, None, list[Finding]]:
    """One pass over a segment of a split partition: its batch rows, and what doctor's deep pass adds
    to the light unit's framing walk (`RecordCheck`: every record decoded, same cap), returned. With
    `stat` (a sealed segment's metadata before the walk), the walk is recorded for the next scan."""
    recorder = context.recorder if stat is not None and partition_path is not None else None
    try:
        with mapped(path) as buf:
            fast = use_fast_walk(len(buf), context.fast_threshold, buf)
            records = checks_segments.RecordCheck(buf, str(path), fast if context.fast_threshold is not None else None)
            if recorder is not None and partition_path is not None and stat is not None:
                recorder.begin(partition_path, path, stat)
            steps = segment_blocks(buf, path, base, compiled=fast, checks=[records],
                                   state=_MarkersOnly() if recorder is not None else None)
            while True:
                try:
                    walked = next(steps)
                except StopIteration as done:
                    seg: SegmentSummary = done.value
                    break
                yield from block_tables(where, walked, context)
            seg.record_findings = records.finish()
            context.count(seg)
            if recorder is not None:
                recorder.end(seg)
            return seg.record_findings
    except ReplogError:
        return []   # unreadable: the light unit's pass reports it


def apply_split_counts(partitions: pa.Table, segments: pa.Table, counts: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Add the segments units' finding counts to the light units' rows (what fleet does with a Spark join)."""
    if not counts.num_rows:
        return partitions, segments
    by_part: dict[str, Counter[str]] = {}
    by_seg: dict[str, Counter[str]] = {}
    for r in counts.to_pylist():
        for key, into in ((r["partition_path"], by_part), (r["path"], by_seg)):
            into.setdefault(key, Counter()).update({k: r[k] for k in ("errors", "warnings", "infos")})

    def add(t: pa.Table, extra: dict[str, Counter[str]], schema: pa.Schema) -> pa.Table:
        rows = t.to_pylist()
        for r in rows:
            for k, v in extra.get(r["path"], {}).items():
                r[k] += v
            if "damaged" in r:
                r["damaged"] = r["errors"] > 0 or r["valid_bytes"] < r["size"]
        return pa.Table.from_pylist(rows, schema=schema)

    return add(partitions, by_part, schemas.PARTITIONS), add(segments, by_seg, schemas.SEGMENTS)


# -- RocketMQ stores -------------------------------------------------------------------


def store_tables(unit: Unit) -> Iterator[TableBatch]:
    """A store's `stores` row (from `load_store`, its identity from its config: `spark.identity`) and its
    findings (from `diagnose_store`)."""
    from replog.recovery.rocketmq.doctor import diagnose_store
    from replog.recovery.rocketmq.store_model import load_store

    where = unit_place(unit)
    found, _ = diagnose_store(unit.path)
    model = load_store(unit.path, Path(unit.path).name)
    ident = read_identity("rocketmq", unit.path)
    row: StoreRow = {"cluster": unit.cluster, "broker": unit.broker, "broker_name": ident.broker_name,
           "broker_id": ident.node_id, "role": ident.role, "store": model.name, "path": unit.path,
           "commitlog_min_offset": model.min_offset if model.files else None,
           "commitlog_max_offset": model.max_offset, "messages": len(model.messages), "queues": len(model.queues),
           "abort_present": model.abort.present, "confirm_offset": model.confirm_offset,
           "latest_epoch": model.last_epoch, **severity_counts(found)}
    yield "stores", pa.RecordBatch.from_pylist([row], schema=schemas.STORES)
    yield "findings", findings_batch(where, found)


# -- remote units ----------------------------------------------------------------------


def run_remote_unit(unit: Unit, context: Context) -> Iterator[TableBatch]:
    """Stream the unit's files to scratch (bounded ranged reads), scan the copy, name the remote paths.
    The scratch copy lives until the unit's last rows are handed out. Nothing is recorded (a rescan of
    a remote dir reads it all again)."""
    filesystem = remote.unpack(unit.fs)
    with remote.scratch() as tmp:
        log_dir = tmp / (remote.base_name(unit.log_dir) or "root")
        if unit.kind == "log_dir":
            parts = {i.base_name for i in remote.listing(filesystem, unit.path) if i.type.name == "Directory"
                     and remote.is_partition_dir(filesystem, i.path)}
            remote.mirror(filesystem, unit.path, log_dir, empty_dirs=parts)
            local = log_dir
        elif unit.kind == "store":
            local = log_dir
            remote.mirror(filesystem, unit.path, local, recursive=True)
        else:
            local = log_dir / remote.base_name(unit.path)
            only = None if unit.kind != "segments" else {names.segment_file_name(b, "log") for b in unit.segments or []}
            remote.mirror(filesystem, unit.path, local, only=only)
        copy = replace(unit, fs=None, log_dir=str(log_dir), path=str(local))
        local_context = replace(context, recorder=None, replica_rows=True)
        for table, batch in run_unit(copy, context=local_context):
            yield table, _renamed(batch, str(log_dir), unit.log_dir)
        context.counts.update(local_context.counts)


def _renamed(batch: pa.RecordBatch, local: str, remote_root: str) -> pa.RecordBatch:
    """Scratch paths back to the remote ones, in every path-bearing column."""
    cols = []
    for name, col in zip(batch.schema.names, batch.columns, strict=True):
        if name not in ("log_dir", "path", "partition_path", "message"):
            pass
        elif pa.types.is_string(col.type):
            col = pc.replace_substring(col, local, remote_root)
        elif pa.types.is_dictionary(col.type) and pa.types.is_string(col.type.value_type):
            col = pa.DictionaryArray.from_arrays(col.indices, pc.replace_substring(col.dictionary, local, remote_root))
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=batch.schema)


def log_dir_findings(root: Path) -> list[Finding]:
    """`doctor`'s findings for a log dir's root: its files, and the checks of the log dir as a whole
    (`doctor.log_dir_checks`: checkpoint membership, tiered storage's log starts, the remote index cache). The
    partitions are known here by their names and first local segment (their listing), not read."""
    ev = Evidence(hash_files=False)
    cps = checks_broker.read_checkpoints(ev, root)
    parts = [PartitionOffsets(str(root / n), p.topic, p.partition, p.state, _first_base(root / n), 0)
             for n in sorted(os.listdir(root)) if is_partition_dir(root / n)
             for p in [names.parse_partition_dir(n)] if p is not None]
    return cps.findings + checks_broker.check_root_files(ev, root) + doctor.log_dir_checks(ev, root, parts, cps)


def _first_base(pdir: Path) -> int | None:
    """The base offset of the partition's first local segment, from its listing (None: none, or unlistable;
    the partition's own unit reports why)."""
    from replog.formats.kafka.partition_files import list_partition_files
    try:
        logs = list_partition_files(pdir).logs
    except (ReplogError, OSError):
        return None
    return min(logs) if logs else None


