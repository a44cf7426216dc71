"""`repair --in-place --backup DIR`: repair the replicas where they are, for operators who ask for it.

Order of operations, each step durable before the next:
1. back up every replica's partition dir and its log dir's checkpoints to
   DIR (copied, fsynced, hashes verified) and write a journal;
2. write every repaired partition into a staging dir beside its original
   (all before any swap: a follower's fetched batches come from the leader's
   original files);
3. swap each staging dir and original with one atomic
   `renameat2(RENAME_EXCHANGE)`, record the swap in the journal, rewrite the
   log dir's checkpoint entries;
4. delete the staging dirs (now the old data; the backup keeps a copy).
A kill at any point leaves each partition either old or new, never mixed;
running the command again with the same backup first restores every
replica from the backup, so an interrupted repair can always be undone.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from replog.formats.errors import ReplogError, UnsafeOutput
from replog.formats.fileio import atomic_write, fsync_dir, read_small
from replog.formats.kafka import checkpoint, names
from replog.recovery.kafka.repair import RepairedReplica, agrees_with, byte_runs
from replog.recovery.kafka.replay import ReplayResult
from replog.recovery.kafka.replica import load_replica
from replog.recovery.kafka.segment_writer import write_partition_runs

JOURNAL = "journal.json"
STAGING_SUFFIX = ".replog-staging"
_ROOT_FILES = (names.REPLICATION_OFFSET_CHECKPOINT, names.RECOVERY_POINT_OFFSET_CHECKPOINT,
               names.LOG_START_OFFSET_CHECKPOINT)


def exchange(a: Path, b: Path) -> None:
    """Atomically swap two directory entries (Linux renameat2 with RENAME_EXCHANGE)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        raise ReplogError("in-place repair needs renameat2 (Linux, glibc >= 2.28) for an atomic swap")
    if fn(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        err = ctypes.get_errno()
        raise ReplogError(f"cannot swap {a} and {b}: {os.strerror(err)}")
    fsync_dir(a.parent)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _copy_verified(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for item in sorted(src.iterdir()):
        if item.is_file():
            shutil.copyfile(item, dst / item.name)
            with open(dst / item.name, "rb+") as f:
                os.fsync(f.fileno())
            if _sha256(item) != _sha256(dst / item.name):
                raise ReplogError(f"backup of {item} does not match the original")
    fsync_dir(dst)


def _journal(backup: Path) -> dict[str, Any] | None:
    path = backup / JOURNAL
    return json.loads(read_small(path)) if path.is_file() else None


def _save(backup: Path, journal: dict[str, Any]) -> None:
    atomic_write(backup / JOURNAL, json.dumps(journal, indent=2).encode())


def restore(backup: Path) -> list[str]:
    """Put every replica of an interrupted in-place repair back as the backup holds it."""
    journal = _journal(backup)
    if journal is None:
        raise ReplogError(f"{backup} holds no in-place repair journal")
    restored = []
    for rep in journal["replicas"]:
        part, staging = Path(rep["path"]), Path(rep["path"] + STAGING_SUFFIX)
        if staging.exists():
            shutil.rmtree(staging)
        _copy_verified(backup / rep["name"] / part.name, staging)
        exchange(staging, part)
        shutil.rmtree(staging)
        for name in _ROOT_FILES:  # as they were: restored, or removed when they did not exist
            saved = backup / rep["name"] / name
            if saved.is_file():
                atomic_write(part.parent / name, saved.read_bytes())
            elif (part.parent / name).is_file():
                (part.parent / name).unlink()
        restored.append(rep["name"])
    journal["state"] = "restored"
    _save(backup, journal)
    return restored


def _back_up(result: ReplayResult, backup: Path) -> dict[str, Any]:
    if backup.exists() and any(backup.iterdir()):
        raise UnsafeOutput(f"backup dir {backup} is not empty")
    for r in result.replicas:
        for src in [Path(r.replica.path)]:
            if backup.resolve().is_relative_to(src.parent.resolve()):
                raise UnsafeOutput(f"backup dir {backup} must not be inside the log dir {src.parent}")
    journal: dict[str, Any] = {"state": "backing-up", "replicas": []}
    for r in result.replicas:
        part = Path(r.replica.path)
        _copy_verified(part, backup / r.replica.name / part.name)
        for name in _ROOT_FILES:
            if (part.parent / name).is_file():
                shutil.copyfile(part.parent / name, backup / r.replica.name / name)
        journal["replicas"].append({"name": r.replica.name, "path": str(part), "swapped": False})
    journal["state"] = "backed-up"
    _save(backup, journal)
    return journal


def _update_root_checkpoints(log_dir: Path, tp: tuple[str, int], values: dict[str, int]) -> None:
    for name, value in values.items():
        path = log_dir / name
        current = checkpoint.parse_offset_checkpoint(read_small(path)) if path.is_file() else {}
        current[tp] = value
        atomic_write(path, checkpoint.build_offset_checkpoint(current))


def repair_in_place(result: ReplayResult, backup: str | os.PathLike[str]) -> list[RepairedReplica]:
    """Back up, then swap each replica for its repaired self (see the module docstring)."""
    backup = Path(backup)
    previous = _journal(backup) if backup.exists() else None
    if previous is not None and previous["state"] not in ("done", "restored"):
        restore(backup)
        raise ReplogError(f"an interrupted in-place repair was found in {backup}; every replica was restored "
                          "from it. Run the repair again with a new, empty backup dir.")
    journal = _back_up(result, backup)
    pairs = list(zip(journal["replicas"], result.replicas, strict=True))
    for entry, r in pairs:  # stage every replica first: fetched batches are read from the leader's originals
        write_partition_runs(Path(entry["path"] + STAGING_SUFFIX), byte_runs(r.final.log),
                             topic_id=r.final.topic_id, epochs=r.final.epochs, start_offset=r.final.log_start_offset)
    journal["state"] = "staged"
    _save(backup, journal)
    for entry, r in pairs:
        part = Path(entry["path"])
        exchange(Path(entry["path"] + STAGING_SUFFIX), part)
        entry["swapped"] = True
        _save(backup, journal)
        _update_root_checkpoints(part.parent, (r.final.topic, r.final.partition), {
            names.REPLICATION_OFFSET_CHECKPOINT: r.final.high_watermark,
            names.RECOVERY_POINT_OFFSET_CHECKPOINT: r.final.log_end_offset,
            names.LOG_START_OFFSET_CHECKPOINT: r.final.log_start_offset})
    for entry, _ in pairs:
        shutil.rmtree(entry["path"] + STAGING_SUFFIX)
    journal["state"] = "done"
    _save(backup, journal)
    leader = load_replica(next(e["path"] for e in journal["replicas"] if e["name"] == result.leader.name))
    report = []
    for entry in journal["replicas"]:
        rep = load_replica(entry["path"], entry["name"])
        prefix, identical = agrees_with(rep, leader)
        report.append(RepairedReplica(entry["name"], entry["path"], rep.log_end_offset, rep.high_watermark,
                                      identical, [] if prefix else ["not a prefix of the leader"]))
    return report
