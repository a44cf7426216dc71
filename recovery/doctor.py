"""`diagnose`: every defect under the given paths, for any system, located and ordered.

A path is dispatched with `formats.discovery`: Kafka log dirs, partition dirs
and single files go to `recovery.kafka.doctor`, RocketMQ stores to
`recovery.rocketmq.doctor`. Every file read goes through one `Evidence`
(read-only, hashed); inputs are re-hashed at the end and a change is reported.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replog.formats.discovery import DirKind, roots_under
from replog.formats.errors import UnreadableInput
from replog.formats.fileio import EntryType, entry_type
from replog.formats.findings import FINDING, Finding, Severity, finding
from replog.formats.shape import Field, Shape
from replog.recovery.evidence import Evidence
from replog.recovery.kafka import doctor as kafka_doctor
from replog.recovery.kafka.checks_broker import PartitionOffsets
from replog.recovery.progress import Progress, Tally

_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass
class DoctorReport:
    inputs: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    partitions: list[PartitionOffsets] = field(default_factory=list)  # Kafka partitions checked
    stores: list[dict[str, str]] = field(default_factory=list)        # RocketMQ stores: path, store_type (manifest)

    @property
    def summary(self) -> dict[str, int]:
        counts = {s: 0 for s in Severity}
        for f in self.findings:
            counts[f.severity] += 1
        return {"errors": counts[Severity.ERROR], "warnings": counts[Severity.WARNING],
                "infos": counts[Severity.INFO]}

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return DOCTOR_REPORT.dump(self)


DOCTOR_REPORT = Shape("inputs", Field("findings", shape=FINDING.without("details")), "summary")


def diagnose(paths: list[Path], progress: Progress | None = None, algorithm: str = "sha256") -> DoctorReport:
    """Check every path; raises `UnreadableInput` for a path that is not there or holds nothing we know.

    `progress` hears (bytes, total bytes, files, total files) as each file is read and hashed;
    `algorithm` names the evidence hash (`evidence.HASHES`).
    """
    for path in paths:
        if not os.path.exists(path):
            raise UnreadableInput(f"{path}: no such file or directory")
    tally = Tally.of(progress, paths)
    ev = Evidence(tally=tally, algorithm=algorithm)
    try:
        return _diagnose(ev, paths)
    finally:
        ev.close()


def _diagnose(ev: Evidence, paths: list[Path]) -> DoctorReport:
    report = DoctorReport()
    for path in paths:
        p = Path(path)
        if entry_type(p) is EntryType.DIRECTORY:
            for kind, root in roots_under(p):
                if kind is DirKind.ROCKETMQ_STORE:
                    report.stores.append(_store_entry(root))
                found, parts = _DIR_CHECKS[kind](ev, root)
                report.findings += found
                report.partitions += parts
        else:
            report.findings += kafka_doctor.check_file(ev, p)
    report.findings += _unread_files(ev, paths, report.findings)
    for changed in ev.changed_since():
        report.findings.append(finding("INPUT_CHANGED", changed))
    for unhashed in ev.too_large_to_hash():
        report.findings.append(finding("INPUT_NOT_HASHED", unhashed))
    report.inputs = ev.listing()
    report.findings.sort(key=_order)
    return report


def _unread_files(ev: Evidence, paths: list[Path], findings: list[Finding]) -> list[Finding]:
    """Every regular file under a directory input goes in the manifest, read by a check or not: a file no check
    reads (a name tiered storage's `remote-log-index-cache/` does not write, a store's files of features
    replog does not check) is hashed and reported once, unless a finding already names it. Symbolic links are
    not followed."""
    named = {f.path for f in findings}
    out: list[Finding] = []
    for p in paths:
        if entry_type(Path(p)) is not EntryType.DIRECTORY:
            continue
        for folder, dirs, files in os.walk(p):
            dirs.sort()
            for name in sorted(files):
                path = Path(folder) / name
                if ev.seen(path) or entry_type(path) is not EntryType.REGULAR:
                    continue
                ev.note(path)
                if str(path) not in named:
                    out.append(finding("UNKNOWN_FILE", str(path),
                                       message="no check reads this file; hashed for the evidence manifest"))
    return out


def _store_entry(root: Path) -> dict[str, str]:
    """What the evidence manifest says of a RocketMQ store: where, and its `storeType` (file consume queues, or
    RocksDB databases that need their own reader)."""
    from replog.formats.rocketmq.rocksdb_store import store_type
    return {"path": str(root), "system": "rocketmq", "store_type": store_type(root)}


def _store(ev: Evidence, root: Path) -> tuple[list[Finding], list[PartitionOffsets]]:
    """A RocketMQ store: its own checks, every file it read hashed like the rest."""
    from replog.recovery.rocketmq.doctor import diagnose_store  # a Kafka check need not load RocketMQ's
    findings, files = diagnose_store(root)
    for f in files:
        ev.note(Path(f))
    return findings, []


_DIR_CHECKS: dict[DirKind, Callable[[Evidence, Path], tuple[list[Finding], list[PartitionOffsets]]]] = {
    DirKind.KAFKA_LOG_DIR: kafka_doctor.check_log_dir,
    DirKind.KAFKA_PARTITION_DIR: kafka_doctor.check_partition_with_parent,
    DirKind.ROCKETMQ_STORE: _store,
}


def _order(f: Finding) -> tuple[str, int, str, int, str]:
    return (str(Path(f.path).parent), _SEVERITY_ORDER[f.severity], f.path,
            f.position if f.position is not None else -1, f.code)
