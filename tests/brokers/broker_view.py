"""What the brokers did, read with the brokers' own means and never with replog's parsers: DumpLogSegments (the
real kafka-dump-log of the lab's version) for batches, the broker's log lines for truncations, and the plain-text
checkpoints a clean stop writes (`replication-offset-checkpoint`: version, count, then `topic partition offset`).
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

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
