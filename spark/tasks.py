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

A unit with `fs` set lives behind a pyarrow filesystem: its files are streamed
to a scratch dir (`spark.remote`) and scanned there with the same code.
Replica sets (the `replicas` table) are `spark.replica_sets`.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Generator, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from replog.formats.discovery import is_partition_dir
from replog.formats.errors import ReplogError
from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding
from replog.formats.kafka import names
from replog.formats.kafka.partition_files import live_segment_bases
from replog.recovery.evidence import Evidence
from replog.recovery.kafka import checks_broker, checks_segments, doctor
from replog.recovery.kafka.checks_broker import PartitionOffsets
from replog.recovery.kafka.logdir import (
    BrokerCheckpoints,
    PartitionSummary,
    SegmentSummary,
    SummaryFold,
    flags,
    read_broker_checkpoints,
    summarize_partition,
    summary_from_walk,
    use_fast_walk,
)
from replog.recovery.kafka.segment_pass import SegmentResult, Walked, segment_blocks
from replog.spark import remote, schemas

TableBatch = tuple[str, pa.RecordBatch]

SPLIT_BYTES = 256 << 20     # a partition dir above this becomes several units


@dataclass(frozen=True)
class Unit:
    """One task's input, small enough to ship as JSON.

    `offsets` holds this partition's entries of the root checkpoints read once
    on the driver: a key per checkpoint file present, its value None when the
    file does not list the partition.
    """

    kind: str                  # "partition" | "segments" | "log_dir" | "store"
    broker: str
    log_dir: str
    path: str
    offsets: dict[str, int | None] = field(default_factory=dict)
    positions: dict[str, int | None] = field(default_factory=dict)  # of those entries in their files
    size: int = 0              # bytes on disk, to balance tasks
    split: bool = False        # a light partition unit: its segments units do the heavy work
    segments: list[int] | None = None   # a segments unit's base offsets
    fs: str | None = None      # packed pyarrow filesystem holding `path` (None: a local path)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Unit:
        return cls(**d)


def log_dir_units(broker: str, log_dir: str, split_bytes: int | None = SPLIT_BYTES) -> list[Unit]:
    """The units of one log dir: one per partition dir (as `ls`/`doctor` list them, split when
    larger than `split_bytes`; None: never), one for the root."""
    root = Path(log_dir)
    cps = read_broker_checkpoints(root)
    units = [Unit("log_dir", broker, str(root), str(root))]
    for name in sorted(os.listdir(root)):
        p = root / name
        if is_partition_dir(p):
            units += partition_units(Unit("partition", broker, str(root), str(p), *_offsets_of(cps, name)),
                                     _file_sizes(p), split_bytes)
    return units


def remote_log_dir_units(broker: str, filesystem: Any, log_dir: str,
                         split_bytes: int | None = SPLIT_BYTES) -> list[Unit]:
    """`log_dir_units` of a log dir behind a pyarrow filesystem: listed remotely, root checkpoints
    streamed to a scratch dir and read with the local reader."""
    packed = remote.pack(filesystem)
    infos = remote.listing(filesystem, log_dir)
    with remote.scratch() as tmp:
        remote.mirror(filesystem, log_dir, tmp, only=set(names.ROOT_OFFSET_CHECKPOINTS))
        cps = read_broker_checkpoints(tmp)
    units = [Unit("log_dir", broker, log_dir, log_dir, fs=packed)]
    for info in infos:
        listing = remote.listing(filesystem, info.path)
        if info.type.name != "Directory" or not remote.is_partition_dir(filesystem, info.path, listing):
            continue
        sizes = {i.base_name: i.size or 0 for i in listing if i.type.name == "File"}
        units += partition_units(Unit("partition", broker, log_dir, info.path,
                                      *_offsets_of(cps, info.base_name), fs=packed), sizes, split_bytes)
    return units


def _offsets_of(cps: BrokerCheckpoints, name: str) -> tuple[dict[str, int | None], dict[str, int | None]]:
    parsed = names.parse_partition_dir(name)
    tp = (parsed.topic, parsed.partition) if parsed else ("", -1)
    offsets = {attr: getattr(cps, attr).get(tp) for attr in names.ROOT_OFFSET_CHECKPOINTS.values()
               if getattr(cps, attr) is not None}
    return offsets, {attr: cps.line_positions.get(attr, {}).get(tp) for attr in offsets}


def partition_units(unit: Unit, sizes: dict[str, int], split_bytes: int | None) -> list[Unit]:
    """One unit, or a light unit plus groups of consecutive segments of about `split_bytes` each."""
    total = sum(sizes.values())
    unit = replace(unit, size=total)
    if split_bytes is None or total <= split_bytes:
        return [unit]
    logs = [(base, sizes[names.segment_file_name(base, "log")]) for base in live_segment_bases(sizes)]
    groups: list[list[int]] = [[]]
    acc = 0
    for base, size in logs:
        if groups[-1] and acc + size > split_bytes:
            groups.append([])
            acc = 0
        groups[-1].append(base)
        acc += size
    light = replace(unit, split=True)   # still walks every segment's framing: weigh it fully
    by_base = dict(logs)
    return [light] + [replace(unit, kind="segments", segments=g, size=sum(by_base[b] for b in g))
                      for g in groups if g]


def _file_sizes(p: Path) -> dict[str, int]:
    try:
        return {e.name: e.stat().st_size for e in os.scandir(p) if e.is_file()}
    except OSError:
        return {}


def store_unit(broker: str, path: str, filesystem: Any = None) -> Unit:
    """A RocketMQ store: one unit (its checks need the whole commitlog in order)."""
    if filesystem is not None:
        return Unit("store", broker, path, path, size=remote.tree_bytes(filesystem, path),
                    fs=remote.pack(filesystem))
    size = sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
    return Unit("store", broker, path, path, size=size)


def checkpoints_for(unit: Unit) -> BrokerCheckpoints:
    """The broker checkpoints as `summarize_partition` would have read them, for this partition."""
    parsed = names.parse_partition_dir(Path(unit.path).name)
    tp = (parsed.topic, parsed.partition) if parsed else ("", -1)
    offsets: dict[str, Any] = {attr: ({} if v is None else {tp: v}) for attr, v in unit.offsets.items()}
    cps = BrokerCheckpoints(**offsets)
    cps.line_positions = {attr: {tp: v} for attr, v in unit.positions.items() if v is not None}
    return cps


def run_unit(unit: Unit, *, with_batches: bool = True) -> Iterator[TableBatch]:
    """Every table's rows for one unit; damage is data, so bad input never raises here."""
    where = _where(unit)
    try:
        if unit.fs is not None:
            yield from run_remote_unit(unit, with_batches=with_batches)
        elif unit.kind == "log_dir":
            yield "findings", findings_batch(where, log_dir_findings(Path(unit.path)))
        elif unit.kind == "store":
            yield from store_tables(unit)
        elif unit.kind == "segments":
            yield from segment_group_tables(unit, with_batches)
        else:
            yield from partition_tables(unit, with_batches and not unit.split)
    except (ReplogError, OSError) as e:
        yield "findings", findings_batch(where, [finding("UNREADABLE_FILE", unit.path, message=str(e))])
    except Exception as e:  # noqa: BLE001 - one bad dir must not fail the fleet job
        yield "findings", findings_batch(where, [finding("INTERNAL_ERROR", unit.path,
                                                         message=f"{type(e).__name__}: {e}")])


def partition_tables(unit: Unit, with_batches: bool) -> Iterator[TableBatch]:
    """A partition unit: doctor's pass over each segment (`doctor.partition_pass`; no record decoding
    when the unit is split), whose blocks also make the `ls` summary and, with `with_batches`, the
    batch rows; then the partition's `partitions`, `segments` and `findings` rows.

    A segment doctor cannot read gets no summary from the pass: `summarize_partition` then reads it
    itself and raises as `ls` would, so the unit reports it unreadable, as before."""
    where = _where(unit)
    cps = checkpoints_for(unit)
    steps = doctor.partition_pass(Evidence(hash_files=False), Path(unit.path), cps, Path(unit.log_dir),
                                  deep=not unit.split)
    summaries = PassSummaries()
    while True:
        try:
            step = next(steps)
        except StopIteration as done:
            _, found = done.value
            break
        summaries.feed(step)
        if with_batches and isinstance(step, Walked):
            yield "batches", batch_rows(where, step)
    part = summarize_partition(unit.path, cps, summaries=summaries.by_base)
    yield "partitions", partition_batch(unit, part, found)
    yield "segments", segments_batch(where, part, found)
    yield "findings", findings_batch(where, found)


class PassSummaries:
    """The `ls` summary of every segment a doctor pass walked, from its steps: the blocks go through
    `SummaryFold`, the segment's end (`SegmentResult`) gives the walk's counts and findings."""

    def __init__(self) -> None:
        self.by_base: dict[int, SegmentSummary] = {}
        self._fold: SummaryFold | None = None

    def feed(self, step: doctor.PartitionStep) -> None:
        if isinstance(step, Walked):
            if self._fold is None:
                self._fold = SummaryFold(_empty_summary(step.segment))
            self._fold.feed(step.block, step.valid_bytes)
            return
        summary = self._fold.summary if self._fold is not None else _empty_summary(step)
        self.by_base[step.base_offset] = summary_from_walk(summary, step.batch_count, step.first_base_offset,
                                                           step.valid_bytes, step.findings)
        self._fold = None


def _empty_summary(seg: SegmentResult) -> SegmentSummary:
    return SegmentSummary(str(seg.path), seg.base_offset, seg.size)


# -- split partitions ------------------------------------------------------------------


def segment_group_tables(unit: Unit, with_batches: bool) -> Iterator[TableBatch]:
    """A segments unit: doctor's record decoding of its segments (findings and their counts), batch rows."""
    where = _where(unit)
    found: list[Finding] = []
    counts = []
    for base in unit.segments or []:
        path = Path(unit.path) / names.segment_file_name(base, "log")
        deep = yield from segment_tables(where, path, base, with_batches)
        found += deep
        if deep:
            counts.append({"partition_path": unit.path, "path": str(path), **_counts(deep)})
    yield "findings", findings_batch(where, found)
    yield "split_counts", pa.RecordBatch.from_pylist(counts, schema=schemas.SPLIT_COUNTS)


def segment_tables(where: dict[str, Any], path: Path, base: int,
                   with_batches: bool) -> Generator[TableBatch, None, list[Finding]]:
    """One pass over a segment of a split partition: its batch rows, and what doctor's deep pass adds
    to the light unit's framing walk (`RecordCheck`: every record decoded, same cap), returned."""
    try:
        with mapped(path) as buf:
            records = checks_segments.RecordCheck(buf, str(path))
            for walked in segment_blocks(buf, path, base, compiled=use_fast_walk(len(buf)), checks=[records]):
                if with_batches:
                    yield "batches", batch_rows(where, walked)
            return records.finish()
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
    """A store's `stores` row (from `load_store`) and its findings (from `diagnose_store`)."""
    from replog.recovery.rocketmq.doctor import diagnose_store
    from replog.recovery.rocketmq.store_model import load_store

    where = _where(unit)
    found, _ = diagnose_store(unit.path)
    model = load_store(unit.path, Path(unit.path).name)
    row = {"broker": unit.broker, "store": model.name, "path": unit.path,
           "commitlog_min_offset": model.min_offset if model.files else None,
           "commitlog_max_offset": model.max_offset, "messages": len(model.messages), "queues": len(model.queues),
           "abort_present": model.abort.present, "confirm_offset": model.confirm_offset,
           "latest_epoch": model.last_epoch, **_counts(found)}
    yield "stores", pa.RecordBatch.from_pylist([row], schema=schemas.STORES)
    yield "findings", findings_batch(where, found)


# -- remote units ----------------------------------------------------------------------


def run_remote_unit(unit: Unit, *, with_batches: bool = True) -> Iterator[TableBatch]:
    """Stream the unit's files to scratch (bounded ranged reads), scan the copy, name the remote paths.
    The scratch copy lives until the unit's last rows are handed out."""
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
        for table, batch in run_unit(copy, with_batches=with_batches):
            yield table, _renamed(batch, str(log_dir), unit.log_dir)


def _renamed(batch: pa.RecordBatch, local: str, remote_root: str) -> pa.RecordBatch:
    """Scratch paths back to the remote ones, in every path-bearing column."""
    cols = []
    for name, col in zip(batch.schema.names, batch.columns, strict=True):
        if name in ("log_dir", "path", "partition_path", "message") and pa.types.is_string(col.type):
            col = pc.replace_substring(col, local, remote_root)
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=batch.schema)


def log_dir_findings(root: Path) -> list[Finding]:
    """`doctor`'s findings for a log dir's root: its files and checkpoint membership."""
    ev = Evidence(hash_files=False)
    cps = checks_broker.read_checkpoints(ev, root)
    parts = [PartitionOffsets(str(root / n), p.topic, p.partition, p.state, None, 0)
             for n in sorted(os.listdir(root)) if is_partition_dir(root / n)
             for p in [names.parse_partition_dir(n)] if p is not None]
    return cps.findings + checks_broker.check_root_files(ev, root) + checks_broker.check_membership(parts, cps, root)


def _where(unit: Unit) -> dict[str, Any]:
    parsed = names.parse_partition_dir(Path(unit.path).name) if unit.kind in ("partition", "segments") else None
    return {"broker": unit.broker, "log_dir": unit.log_dir,
            "topic": parsed.topic if parsed else None, "partition": parsed.partition if parsed else None}


# -- rows ----------------------------------------------------------------------------


def _counts(found: Iterable[Finding]) -> dict[str, int]:
    sev = [f.severity.value for f in found]
    return {"errors": sev.count("error"), "warnings": sev.count("warning"), "infos": sev.count("info")}


def _epochs(entries: Iterable[Any] | None) -> list[dict[str, int]] | None:
    return None if entries is None else [{"epoch": e.epoch, "start_offset": e.start_offset} for e in entries]


def partition_row(unit: Unit, part: PartitionSummary, found: list[Finding]) -> dict[str, Any]:
    """The `partitions` row: the numbers `ls` shows, the finding counts `doctor` gives."""
    return {**_where(unit), "path": part.path, "state": part.state, "segments": len(part.segments),
            "bytes": part.bytes, "log_start_offset": part.log_start_offset,
            "log_end_offset": part.log_end_offset, "high_watermark": part.high_watermark,
            "recovery_point": part.recovery_point, "latest_epoch": part.latest_epoch,
            "epoch_history": _epochs(part.epoch_checkpoint),
            "batch_epochs": _epochs(e for s in part.segments for e in s.epoch_starts),
            "first_timestamp": part.first_timestamp, "max_timestamp": part.max_timestamp,
            **_counts(found), "flags": flags(part)}


def partition_batch(unit: Unit, part: PartitionSummary, found: list[Finding]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([partition_row(unit, part, found)], schema=schemas.PARTITIONS)


def segments_batch(where: dict[str, Any], part: PartitionSummary, found: list[Finding]) -> pa.RecordBatch:
    """One row per `.log`; finding counts are doctor's findings located in that file."""
    rows = []
    for s in part.segments:
        counts = _counts(f for f in found if f.path == s.path)
        rows.append({**where, "path": s.path, "base_offset": s.base_offset, "size": s.size,
                     "batch_count": s.batch_count, "first_offset": s.first_offset,
                     "valid_bytes": s.valid_bytes, "valid_next_offset": s.valid_next_offset,
                     "first_timestamp": s.first_timestamp, "max_timestamp": s.max_timestamp, **counts,
                     "damaged": counts["errors"] > 0 or s.valid_bytes < s.size})
    return pa.RecordBatch.from_pylist(rows, schema=schemas.SEGMENTS)


def findings_batch(where: dict[str, Any], found: list[Finding]) -> pa.RecordBatch:
    rows = [{**where, "code": f.code, "severity": f.severity.value, "path": f.path,
             "position": f.position, "offset": f.offset, "message": f.message} for f in found]
    return pa.RecordBatch.from_pylist(rows, schema=schemas.FINDINGS)


def batch_rows(where: dict[str, Any], walked: Walked) -> pa.RecordBatch:
    """One block's `batches` rows: where it is, `kept` = recovery keeps the batch, its columns."""
    chunk = walked.block.to_arrow(str(walked.segment.path))
    n = chunk.num_rows
    cols = [pa.repeat(pa.scalar(where[k], schemas.BATCHES.field(k).type), n)
            for k in ("broker", "log_dir", "topic", "partition")]
    cols.append(pa.array(walked.kept, pa.bool_()))
    cols += [chunk.column(i).cast(schemas.BATCHES.field(name).type) for i, name in enumerate(chunk.schema.names)]
    return pa.RecordBatch.from_arrays(cols, schema=schemas.BATCHES)
