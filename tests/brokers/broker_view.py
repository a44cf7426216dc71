"""What the brokers did, read with the brokers' own means and never with replog's parsers: DumpLogSegments (the
real kafka-dump-log of the lab's version) for batches and for the controller's metadata log (its
`--cluster-metadata-decoder` JSON), the broker's log lines for truncations, and the plain-text checkpoints a clean
stop writes (`replication-offset-checkpoint`: version, count, then `topic partition offset`).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.brokers.dumplog import java_command

FIELD = re.compile(r"(\w+): (\S+)")


@dataclass(frozen=True)
class DumpedBatch:
    """One batch line of kafka-dump-log: the fields a replica comparison needs."""
    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int
    valid: bool


def dump_lines(version: str, files: list[Path], options: list[str] | None = None) -> dict[Path, list[str]]:
    """What the real kafka-dump-log prints for each file (with `options`), by one run (one JVM for all files)."""
    if not files:
        return {}
    with tempfile.TemporaryDirectory(prefix="broker-view-") as scratch:
        cmd = java_command(version, files, options or [], Path(scratch))
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"kafka-dump-log failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    out: dict[Path, list[str]] = {}
    current: list[str] = []
    for line in done.stdout.splitlines():
        if line.startswith("Dumping "):
            current = out.setdefault(Path(line[len("Dumping "):].strip()), [])
        else:
            current.append(line)
    return out


def dump_segments(version: str, files: list[Path]) -> dict[Path, list[DumpedBatch]]:
    """Every batch of each `.log` file, as kafka-dump-log prints them."""
    return {path: [_batch(dict(FIELD.findall(line))) for line in lines if line.startswith(("baseOffset:", "offset:"))]
            for path, lines in dump_lines(version, files).items()}


def dump_entries(version: str, snapshots: list[Path]) -> dict[Path, list[str]]:
    """Each producer snapshot's entry lines as kafka-dump-log prints them."""
    return {path: [line.strip() for line in lines if line.strip().startswith("producerId:")]
            for path, lines in dump_lines(version, snapshots).items()}


def _batch(fields: dict[str, str]) -> DumpedBatch:
    base = int(fields.get("baseOffset", fields.get("offset", "-1")))
    return DumpedBatch(base, int(fields.get("lastOffset", base)), int(fields.get("partitionLeaderEpoch", "-1")),
                       int(fields["crc"]), fields.get("isvalid", fields.get("isValid", "true")) == "true")


def segments(partition_dir: Path) -> list[Path]:
    return sorted(partition_dir.glob("*.log"))


def replica_batches(version: str, partition_dirs: dict[str, Path]) -> dict[str, list[DumpedBatch]]:
    """Each named replica's batches in offset order, all replicas dumped by one JVM."""
    files = {name: segments(d) for name, d in partition_dirs.items()}
    dumped = dump_segments(version, [f for fs in files.values() for f in fs])
    return {name: [b for f in fs for b in dumped.get(f, [])] for name, fs in files.items()}


def log_end(batches: list[DumpedBatch], start: int = 0) -> int:
    return batches[-1].last_offset + 1 if batches else start


def checkpoint(log_dir: Path, name: str, topic: str, partition: int = 0) -> int | None:
    """One partition's offset in a text checkpoint (`0`, count, `topic partition offset` lines), None if absent."""
    path = log_dir / name
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and int(parts[1]) == partition:
            return int(parts[2])
    return None


def truncations(broker_output: str, topic: str, partition: int = 0) -> list[int]:
    """The offsets a broker truncated the partition to, in the order it logged them: `Truncating to offset N`
    (UnifiedLog, INFO), `Truncate and start at offset N` (its full truncation, DEBUG), the fetcher's
    `Truncate fully and reset fetch offset ... to the current leader's start offset N` and the follower's
    `... will start the log from offset N` (Partition, when the leader's first batch straddles an empty log)."""
    tp = re.escape(f"{topic}-{partition}")
    patterns = (rf"partition={tp}[, ].*?(?:Truncating to offset|Truncate and start at offset) (\d+)",
                rf"reset fetch offset for partition {tp} from \d+ to the current leader's start offset (\d+)",
                rf"Unexpected offset in append to {tp}\..*?will start the log from offset (\d+)")
    found = [(m.start(), int(m.group(1))) for p in patterns for m in re.finditer(p, broker_output)]
    return [offset for _, offset in sorted(found)]


@dataclass(frozen=True)
class ProducerBatch:
    """A batch line of kafka-dump-log with the producer's fields (idempotent and transactional writes)."""
    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int


def producer_batches(version: str, files: list[Path]) -> dict[Path, list[ProducerBatch]]:
    """Every batch of each `.log` file with its producer id, epoch and sequences, as kafka-dump-log prints them."""
    out: dict[Path, list[ProducerBatch]] = {}
    for path, lines in dump_lines(version, files).items():
        fields = [dict(FIELD.findall(line)) for line in lines if line.startswith("baseOffset:")]
        out[path] = [ProducerBatch(int(f["baseOffset"]), int(f["lastOffset"]), int(f["producerId"]),
                                   int(f["producerEpoch"]), int(f["baseSequence"]), int(f["lastSequence"]))
                     for f in fields]
    return out


@dataclass(frozen=True)
class MetadataRecord:
    """One record of the KRaft metadata log as kafka-dump-log's `--cluster-metadata-decoder` prints it: the
    `payload: {"type": ..., "version": ..., "data": {...}}` of a `| offset: N` line."""
    offset: int
    type: str
    data: dict[str, Any]


METADATA_OFFSET = re.compile(r"^\| offset: (\d+) ")


def metadata_records(version: str, log_dir: Path) -> list[MetadataRecord]:
    """Every record of a controller's `__cluster_metadata-0` segments under `log_dir`, in offset order. The
    segments are copied first: the controller may be running, and the real tool writes beside what it reads. A batch
    the copy caught half-written is cut off by the tool itself (`FileLogInputStream.nextBatch` stops at a batch
    longer than what is left), so a copy shows what the controller had appended, never garbage."""
    segments_now = segments(log_dir / "__cluster_metadata-0")
    with tempfile.TemporaryDirectory(prefix="broker-view-metadata-") as scratch:
        copies = [Path(scratch) / f.name for f in segments_now]
        for original, copied in zip(segments_now, copies, strict=True):
            shutil.copyfile(original, copied)
        dumped = dump_lines(version, copies, ["--cluster-metadata-decoder"])
        lines = [line for f in copies for line in dumped.get(f, [])]
    return [r for r in map(_metadata_record, lines) if r is not None]


def _metadata_record(line: str) -> MetadataRecord | None:
    offset = METADATA_OFFSET.match(line)
    if offset is None or " payload: " not in line:
        return None   # a batch header, a control record (LeaderChange, snapshot markers) or the tool's own notes
    payload = json.loads(line.split(" payload: ", 1)[1])
    return MetadataRecord(int(offset.group(1)), payload["type"], payload.get("data", {}))


def broker_fenced(records: list[MetadataRecord], broker: int) -> bool:
    """Whether the last record that fences or unfences `broker` fences it: a FENCE_BROKER_RECORD, or a
    BROKER_REGISTRATION_CHANGE_RECORD with `fenced` 1 (`BrokerRegistrationFencingChange.FENCE`; -1 unfences, 0 leaves
    it), the record the controller appends in `ReplicationControlManager.handleBrokerFenced` after the partition
    changes that take the broker out of every ISR. A REGISTER_BROKER_RECORD registers it fenced (its `fenced`
    defaults to true) until its first heartbeat unfences it."""
    fenced = False
    for record in records:
        data = record.data
        if record.type == "REGISTER_BROKER_RECORD" and data.get("brokerId") == broker:
            fenced = bool(data.get("fenced", True))
        elif record.type == "BROKER_REGISTRATION_CHANGE_RECORD" and data.get("brokerId") == broker:
            fenced = {1: True, -1: False}.get(int(data.get("fenced", 0)), fenced)
        elif record.type in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD") and data.get("id") == broker:
            fenced = record.type == "FENCE_BROKER_RECORD"
    return fenced


def metadata_partition(records: list[MetadataRecord], topic: str, partition: int = 0) -> dict[str, Any] | None:
    """The partition's leader, ISR and ELR after every record: its PARTITION_RECORD, then each
    PARTITION_CHANGE_RECORD's fields (a field it leaves out is unchanged: `isr` and `eligibleLeaderReplicas` default
    to null, `leader` to -2, no change). None while the topic or the partition is not in the log."""
    topic_ids = [r.data["topicId"] for r in records if r.type == "TOPIC_RECORD" and r.data.get("name") == topic]
    if not topic_ids:
        return None
    state: dict[str, Any] | None = None
    for record in records:
        data = record.data
        if data.get("topicId") != topic_ids[-1] or data.get("partitionId") != partition:
            continue
        if record.type == "PARTITION_RECORD":
            state = {"leader": data["leader"], "isr": data["isr"], "elr": data.get("eligibleLeaderReplicas", []),
                     "last_known_elr": data.get("lastKnownElr", [])}
        elif record.type == "PARTITION_CHANGE_RECORD" and state is not None:
            changes = {"leader": data.get("leader", -2), "isr": data.get("isr"),
                       "elr": data.get("eligibleLeaderReplicas"), "last_known_elr": data.get("lastKnownElr")}
            state |= {k: v for k, v in changes.items() if v is not None and v != -2}
    return state
