"""`repair --in-place --backup DIR`: repair the replicas where they are, for operators who ask for it.

The whole run, replay included, holds every replica's log dir as its broker does (its `.lock`,
`formats.locks.broker_lock`: a running broker or a second in-place repair of the same replicas is
refused at once, whatever backup dir it names) and the backup dir against other replog runs (`claim`).

Order of operations, each step durable before the next:
1. write a journal listing the replicas (state `backing-up`), then back up every replica's partition
   dir and its log dir's checkpoints to DIR (copied, fsynced, hashes verified); state `backed-up`;
2. write every repaired partition into a staging dir beside its original
   (all before any swap: a follower's fetched batches come from the leader's original files);
3. swap each staging dir and original with one atomic
   `renameat2(RENAME_EXCHANGE)`, record the swap in the journal, rewrite the
   log dir's checkpoint entries;
4. delete the staging dirs (now the old data; the backup keeps a copy).
A failure before the first swap changes nothing: the staging dirs and the backup are removed, and the
same command can simply be run again. A kill at any point leaves each partition either old or new, never
mixed; running the command again with the same backup then either finishes that cleanup and starts over
(killed before the journal said `staged`: no replica was touched, and a partial backup is never restored
from) or restores every replica from the backup (killed later), so an interrupted repair can always be
undone.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from replog.formats.errors import ReplogError, UnsafeOutput
from replog.formats.fileio import TEMP_SUFFIX, atomic_write, fsync_dir, read_small, writing
from replog.formats.kafka import checkpoint, names
from replog.formats.locks import broker_lock, claim
from replog.recovery.kafka.repair import RepairedReplica, agrees_with, byte_runs
from replog.recovery.kafka.replay import ReplayResult
from replog.recovery.kafka.replica import load_replica
from replog.recovery.kafka.segment_writer import write_partition_runs
from replog.recovery.outputs import evidence_roots, refuse_evidence

JOURNAL = "journal.json"
STAGING_SUFFIX = ".replog-staging"
# Journal states in which no replica has been changed: `staged` is saved before the first swap.
UNTOUCHED = ("backing-up", "backed-up")
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
    with writing(dst):
        dst.mkdir(parents=True, exist_ok=True)
    for item in sorted(src.iterdir()):
        if item.is_file():
            with writing(dst / item.name):
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


@contextlib.contextmanager
def holding(partition_dirs: Iterable[str | os.PathLike[str]], backup: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the backup dir and every replica's log dir (see the module docstring) for the block.

    Taken before the replicas are read: a plan made from data another run is about to swap away would
    copy byte ranges of files that no longer hold them. A backup inside or around an input is refused
    first (`refuse_evidence`)."""
    parts = [Path(p) for p in partition_dirs]
    target = refuse_evidence(backup, evidence_roots(parts))
    with writing(target.parent):
        target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        stack.enter_context(claim(target, "backup dir"))
        for log_dir in sorted({Path(os.path.abspath(p)).parent for p in parts}):
            if log_dir.is_dir():   # else there is no replica to load there, and loading says so
                stack.enter_context(broker_lock(log_dir))
        yield


def restore(backup: Path) -> list[str]:
    """Put every replica of an interrupted in-place repair back as the backup holds it.

    A run stopped while backing up had touched no replica: its partial backup is only discarded."""
    journal = _journal(backup)
    if journal is None:
        raise ReplogError(f"{backup} holds no in-place repair journal")
    with holding([rep["path"] for rep in journal["replicas"]], backup):
        if journal["state"] in UNTOUCHED:
            _discard(backup, journal)
            return []
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


def _discard(backup: Path, journal: dict[str, Any]) -> None:
    """Undo a run that swapped nothing (its journal in an `UNTOUCHED` state): its staging dirs and its backup
    (copies of untouched originals) go, the journal last: a kill in between leaves a journal that still says
    no replica was touched, never one that would restore from a partial backup."""
    for rep in journal["replicas"]:
        shutil.rmtree(rep["path"] + STAGING_SUFFIX, ignore_errors=True)
    for child in backup.iterdir():
        if child.name == JOURNAL:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    (backup / JOURNAL).unlink(missing_ok=True)
    fsync_dir(backup)


def _back_up(result: ReplayResult, backup: Path) -> dict[str, Any]:
    """Step 1; the journal comes first, so a run killed while copying is recognised and discarded."""
    for leftover in backup.glob(".*" + TEMP_SUFFIX) if backup.is_dir() else []:
        leftover.unlink()    # the journal's temporary file of a run killed while writing it first
    if backup.exists() and any(backup.iterdir()):
        raise UnsafeOutput(f"backup dir {backup} is not empty")
    with writing(backup):
        backup.mkdir(parents=True, exist_ok=True)
    journal: dict[str, Any] = {"state": "backing-up", "replicas": [
        {"name": r.replica.name, "path": os.path.abspath(r.replica.path), "swapped": False} for r in result.replicas]}
    _save(backup, journal)
    for entry in journal["replicas"]:
        part = Path(entry["path"])
        _copy_verified(part, backup / entry["name"] / part.name)
        for name in _ROOT_FILES:
            if (part.parent / name).is_file():
                with writing(backup / entry["name"] / name):
                    shutil.copyfile(part.parent / name, backup / entry["name"] / name)
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
    """Back up, then swap each replica for its repaired self (see the module docstring), holding the log dirs
    and the backup dir throughout (`holding`; a caller that read the replicas under it keeps it)."""
    from replog.recovery.kafka.quorum import refuse_repair
    refuse_repair(result)
    backup = Path(backup)
    with holding([r.replica.path for r in result.replicas], backup):
        previous = _journal(backup) if backup.exists() else None
        if previous is not None and previous["state"] in UNTOUCHED:
            _discard(backup, previous)    # killed while backing up: nothing was touched, start over
        elif previous is not None and previous["state"] not in ("done", "restored"):
            restore(backup)
            raise ReplogError(f"an interrupted in-place repair was found in {backup}; every replica was restored "
                              "from it. Run the repair again with a new, empty backup dir.")
        created = not backup.exists()
        try:
            journal = _back_up(result, backup)
            _stage(result, backup, journal)
        except BaseException:   # before the first swap (a full disk, say): nothing was changed, nothing stays
            _undo_unswapped(backup, created)
            raise
        return _swap_all(result, backup, journal)


def _undo_unswapped(backup: Path, created: bool) -> None:
    """After a failure before any swap: the staging dirs and the backup go (`_discard`), the backup dir too
    when this run created it; the same command can then simply run again."""
    journal = _journal(backup) if backup.is_dir() else None
    if journal is not None and journal["state"] in UNTOUCHED:
        _discard(backup, journal)
    if created:
        with contextlib.suppress(OSError):
            backup.rmdir()


def _stage(result: ReplayResult, backup: Path, journal: dict[str, Any]) -> None:
    """Step 2: every staging dir is written before any swap (fetched batches come from the leader's originals)."""
    for entry, r in zip(journal["replicas"], result.replicas, strict=True):
        write_partition_runs(Path(entry["path"] + STAGING_SUFFIX), byte_runs(r.final.log),
                             topic_id=r.final.topic_id, epochs=r.final.epochs, start_offset=r.final.local_start,
                             tiered=r.final.local_log_start_offset is not None)
    journal["state"] = "staged"
    _save(backup, journal)


def _swap_all(result: ReplayResult, backup: Path, journal: dict[str, Any]) -> list[RepairedReplica]:
    """Steps 3 and 4, then each replica reloaded and compared with the leader."""
    pairs = list(zip(journal["replicas"], result.replicas, strict=True))
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
