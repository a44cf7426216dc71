"""What the brokers did, read with the brokers' own means and never with replog's parsers: DumpLogSegments (the
real kafka-dump-log of the lab's version) for batches, the broker's log lines for truncations, and the plain-text
checkpoints a clean stop writes (`replication-offset-checkpoint`: version, count, then `topic partition offset`).
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.brokers.jars import cache_root, classpath
from tests.brokers.kafka_lab import TOOL_JVM, major

FIELD = re.compile(r"(\w+): (\S+)")


@dataclass(frozen=True)
class DumpedBatch:
    """One batch line of kafka-dump-log: the fields a replica comparison needs."""
    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int
    valid: bool


def dump_log_class(version: str) -> str:
    """DumpLogSegments moved from Scala core to Java kafka-tools in 4.3 (apache/kafka#21223)."""
    newer = tuple(int(x) for x in version.split(".")[:2]) >= (4, 3)
    return "org.apache.kafka.tools.DumpLogSegments" if newer else "kafka.tools.DumpLogSegments"


def dump_segments(version: str, files: list[Path]) -> dict[Path, list[DumpedBatch]]:
    """Every batch of each `.log` file, by one run of the real kafka-dump-log (one JVM for all files)."""
    if not files:
        return {}
    cmd = ["java", *TOOL_JVM, quiet_logging(version), "-cp", classpath(version), dump_log_class(version),
           "--files", ",".join(str(f) for f in files)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"kafka-dump-log failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    out: dict[Path, list[DumpedBatch]] = {}
    current: list[DumpedBatch] | None = None
    for line in done.stdout.splitlines():
        if line.startswith("Dumping "):
            current = out.setdefault(Path(line[len("Dumping "):].strip()), [])
        elif current is not None and line.startswith(("baseOffset:", "offset:")):
            current.append(_batch(dict(FIELD.findall(line))))
    return out


def quiet_logging(version: str) -> str:
    """A JVM option pointing the tool's logging at a config that prints nothing (its stdout stays the dump)."""
    if major(version) >= 4:
        path = cache_root() / "brokers" / "quiet-log4j2.properties"   # Log4j2 parses by the file's extension
        text = "rootLogger.level=OFF\n"
        option = f"-Dlog4j2.configurationFile={path}"
    else:
        path = cache_root() / "brokers" / "quiet-log4j.properties"
        text = "log4j.rootLogger=OFF\n"
        option = f"-Dlog4j.configuration=file:{path}"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return option


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
    """The offsets a broker logged `Truncating to offset N` for the partition (UnifiedLog, every version since
    2.8), plus its full truncations (`truncateFullyAndStartAt`: `Truncate and start at offset N`)."""
    tp = re.escape(f"{topic}-{partition}")
    found = re.findall(rf"partition={tp}[, ].*?(?:Truncating to offset|Truncate and start at offset) (\d+)",
                       broker_output)
    return [int(x) for x in found]


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
    """Every batch of each `.log` file with its producer id, epoch and sequences, by one run of kafka-dump-log."""
    cmd = ["java", *TOOL_JVM, quiet_logging(version), "-cp", classpath(version), dump_log_class(version),
           "--files", ",".join(str(f) for f in files)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"kafka-dump-log failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    out: dict[Path, list[ProducerBatch]] = {}
    current: list[ProducerBatch] | None = None
    for line in done.stdout.splitlines():
        if line.startswith("Dumping "):
            current = out.setdefault(Path(line[len("Dumping "):].strip()), [])
        elif current is not None and line.startswith("baseOffset:"):
            f = dict(FIELD.findall(line))
            current.append(ProducerBatch(int(f["baseOffset"]), int(f["lastOffset"]), int(f["producerId"]),
                                         int(f["producerEpoch"]), int(f["baseSequence"]), int(f["lastSequence"])))
    return out
